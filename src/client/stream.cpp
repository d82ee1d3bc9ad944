// sonic — InferStream: a stream's calls, over the transport's stream and its delivery.
#include "sonic/stream.hpp"

#include <utility>

#include "client/stream_delivery.hpp"
#include "sonic/validate.hpp"

namespace sonic {

InferStream::InferStream(const Opener& open, StreamCallback on_response,
                         const StreamOptions& options,
                         std::shared_ptr<detail::ThreadPool> callbacks,
                         std::function<void(std::exception_ptr)> threw)
    : delivery_(std::make_shared<detail::StreamDelivery>(std::move(on_response),
                                                         std::move(callbacks), std::move(threw))) {
  auto opened = open(
      deadline_after(options.timeout),
      [delivery = delivery_](StreamResponse response) {
        detail::StreamDelivery::push(delivery, std::move(response));
      },
      [delivery = delivery_](Result<void> outcome) {
        detail::StreamDelivery::end(delivery, std::move(outcome));
      });
  stream_ = std::move(opened).value();  // throws sonic::Error (UNIMPLEMENTED, say)
}

InferStream::InferStream(InferStream&&) noexcept = default;

InferStream::~InferStream() {
  if (!stream_) return;  // moved from
  if (!delivery_->ended()) cancel();
  stream_.reset();  // returns once the transport's call has ended
  if (!delivery_->in_callback()) (void)delivery_->wait();  // how it ended: nobody asks now
}

Result<void> InferStream::send(InferRequest request) {
  if (auto ok = check_request(request); !ok) return ok;
  return stream_->send(std::move(request));
}

void InferStream::close() { stream_->close(); }

void InferStream::cancel() {
  delivery_->drop();
  stream_->cancel();
}

Result<void> InferStream::wait() { return delivery_->wait(); }

bool InferStream::ended() const { return delivery_->ended(); }

}  // namespace sonic
