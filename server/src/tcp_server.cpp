#include "tcp_server.hpp"

#include <algorithm>
#include <unordered_map>

#include "connection_watch.hpp"
#include "control_service.hpp"
#include "infer_dispatch.hpp"
#include "net/frame_stream.hpp"
#include "protocol/infer_codec.hpp"
#include "reply_compression.hpp"
#include "request_options.hpp"

namespace sonic::server {

using protocol::tcp::Frame;
using protocol::tcp::FrameKind;
using protocol::tcp::OutgoingFrame;
using protocol::tcp::ZstdPolicy;

namespace {
// Pongs, errors and other copied frames a client leaves unread before the connection stops
// reading from it.
constexpr std::size_t kMaxUnreadCopies = 1 << 20;
// Pings a client may send: a keepalive needs one every few seconds (sonic's clients ping
// every keepalive_interval, a minute by default); a burst of kPingBurst, then kPingsPerSecond.
// More is a flood, and the connection ends (gRPC servers end such connections too).
constexpr double kPingsPerSecond = 10;
constexpr double kPingBurst = 20;
}  // namespace

/// One client connection: requests run on the executor, answers go back in any order. It stops
/// reading while a request waits for memory (the connection's and the server's limits admit it
/// once answers are written), or while its client leaves small answers unread; the client's
/// sends then back up into its socket.
class TcpConnection final : public net::FrameStream {
 public:
  TcpConnection(asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                std::shared_ptr<ServerContext> context,
                std::shared_ptr<net::ConnectionSet<TcpConnection>> set, ConnectionSlot slot,
                std::shared_ptr<ConnectionBudget> budget)
      : FrameStream(std::move(socket), context->options.max_message_bytes, budget,
                    context->tcp_tls),
        io_(std::move(io)),
        context_(std::move(context)),
        set_(std::move(set)),
        slot_(std::move(slot)),
        limits_(context_->options.limits),
        budget_(std::move(budget)),
        models_(context_, io_),
        watch_timer_(*io_) {}

  const std::shared_ptr<asio::io_context>& io_context() const { return io_; }

  void start() {
    watch();  // the handshake timeout covers TLS's handshake too
    auto self = std::static_pointer_cast<TcpConnection>(shared_from_this());
    link().handshake(std::chrono::milliseconds(0), self, [this](std::string why) {
      if (!open()) return;
      if (!why.empty()) return close(why);
      start_reading();
    });
  }

 private:
  bool reading_paused() override {
    if (unwritten_copies() <= kMaxUnreadCopies) return false;
    activity_.last_read = WatchClock::now();  // the client waits for us, not we for it
    return true;
  }

  void on_frame(Frame frame) override {
    activity_.handshake_done = true;
    if (frame.refused) return send(protocol::tcp::encode_error(frame.id, *frame.refused));
    switch (frame.kind) {
      case FrameKind::Ping:
        // Pings that arrived together get one pong: it answers all of them.
        if (pong_read_ == reads()) return;
        pong_read_ = reads();
        if (!ping_allowed()) {
          return on_framing_error(Error(StatusCode::ResourceExhausted,
                                        "too many pings: at most " +
                                            std::to_string(static_cast<int>(kPingsPerSecond)) +
                                            " per second"));
        }
        return send(protocol::tcp::encode_control(FrameKind::Pong));
      case FrameKind::Pong: return;
      case FrameKind::Metadata: return take_metadata(frame);
      case FrameKind::Cancel: return cancel(frame.id);
      case FrameKind::Call:
        if (auto refused = context_->authenticator.refusal(authorization_)) {
          return send(protocol::tcp::encode_error(frame.id, *refused));
        }
        return answer_call(frame);
      case FrameKind::Request:
        if (auto refused = context_->authenticator.refusal(authorization_)) {
          return send(protocol::tcp::encode_error(frame.id, *refused));
        }
        return infer(std::move(frame));
      default:
        return on_framing_error(
            Error(StatusCode::InvalidArgument, "a client sent a frame only servers send"));
    }
  }

  // The client no longer waits for request `id` (proto/tcp_framing.md, cancel frames): its
  // caller goes, so that wherever it waits it is answered unrun.
  void cancel(std::uint64_t id) {
    auto it = callers_.find(id);
    if (it == callers_.end()) return;  // answered already, or never sent
    auto caller = it->second.lock();
    callers_.erase(it);
    if (!caller) return;
    caller->cancel();
    models_.withdraw_cancelled();  // those waiting in this connection's share, at once
  }

  // A token bucket: kPingBurst tokens, kPingsPerSecond more each second.
  bool ping_allowed() {
    const auto now = WatchClock::now();
    ping_tokens_ = std::min(
        kPingBurst, ping_tokens_ + kPingsPerSecond *
                                       std::chrono::duration<double>(now - ping_refilled_).count());
    ping_refilled_ = now;
    if (ping_tokens_ < 1) return false;
    ping_tokens_ -= 1;
    return true;
  }

  void on_framing_error(const Error& error) override {
    send(protocol::tcp::encode_error(0, error));  // say why, then close once it is written
    auto self = shared_from_this();
    asio::post(*io_, [self, why = error.message()] { self->close(why); });
  }

  void on_lost(const std::string&) override {
    watch_timer_.cancel();
    models_.cancel_all();  // nobody waits for their answers any more
    set_->remove(this);
  }

  void watch() {
    auto self = std::static_pointer_cast<TcpConnection>(shared_from_this());
    watch_timer_.expires_after(watch_interval(limits_));
    watch_timer_.async_wait([self](std::error_code ec) {
      if (ec || !self->open()) return;
      const auto now = WatchClock::now();
      ConnectionState state;
      state.busy = self->models_.outstanding() > 0;
      // A frame waiting for memory waits for us, not for its client.
      state.mid_message = self->mid_frame() && !self->waiting_admission();
      if (self->waiting_admission()) self->activity_.last_read = now;
      state.unwritten = self->unwritten_bytes();
      state.last_write = self->last_write_progress();
      if (state.busy) self->activity_.last_busy = now;
      if (auto end = overdue(self->activity_, state, self->limits_, now)) {
        return self->close(end->why);
      }
      self->watch();
    });
  }

  // The client's headers for the frames that follow (proto/tcp_framing.md): its credentials.
  // Each metadata frame replaces the last; at most 64 KiB, one kept per connection.
  void take_metadata(const Frame& frame) {
    auto headers = protocol::tcp::decode_metadata(frame);
    if (!headers) return on_framing_error(headers.error());
    authorization_.clear();
    for (auto& [name, value] : *headers) {
      if (name == "authorization") authorization_ = std::move(value);
    }
  }

  void answer_call(const Frame& frame) {
    auto call = protocol::tcp::decode_call(frame);
    if (!call) return send(protocol::tcp::encode_error(frame.id, call.error()));
    // Regions are a gRPC matter: the TCP port does not serve the shared memory extension.
    ControlContext control{*context_->executor,    context_->options,  nullptr, nullptr,
                           &context_->model_files, &context_->settings};
    const auto method = served_control(call->first, /*shared_memory=*/false);
    auto reply = method ? answer_control(control, *method, call->second)
                        : Result<std::string>(unimplemented(call->first));
    if (!reply) return send(protocol::tcp::encode_error(frame.id, reply.error()));
    send(protocol::tcp::encode_frame(FrameKind::Reply, frame.id, std::move(*reply), {}, nullptr,
                                     {}));
  }

  // Each request's caller waits until the deadline its client sent (the request parameter
  // protocol::kClientTimeoutParameter, counted from the frame's arrival), and is cancelled when
  // the connection is lost.
  void infer(Frame frame) {
    const std::uint64_t id = frame.id;
    const auto arrived = Clock::now();
    const ZstdPolicy compression = tcp_reply_compression(
        context_->options, (frame.flags & protocol::tcp::kCompressResponse) != 0);
    // Answers are encoded (and compressed) where the model ran, written on this thread. The
    // dispatch's completions hold the io_context, not the server: they may come after it
    // stopped.
    auto send_answer = [this, id](OutgoingFrame answer) {
      callers_.erase(id);
      send(std::move(answer));
    };
    if (!frame.compressed.empty()) {
      // Decompressing is the request's work, not the network's: on an executor thread, with the
      // model (a large tensor would stall every connection of this network thread). Its
      // deadline is read with the rest once the frame is decoded there.
      auto caller = std::make_shared<Caller>();
      callers_[id] = caller;
      return models_.run(
          weak_from_this(), caller,
          [frame = std::move(frame), compression, context = context_, budget = budget_, caller,
           arrived]() mutable {
            return run(std::move(frame), compression, *context, budget, caller, arrived);
          },
          [id](Error why) { return protocol::tcp::encode_error(id, why); }, send_answer);
    }
    protocol::ReceivedMessage message{std::move(frame.envelope), std::move(frame.tensors), {}};
    auto request = read_infer_request(std::move(message));
    if (!request) return send(protocol::tcp::encode_error(id, request.error()));
    request->caller(caller_of(*request, arrived));
    callers_[id] = request->caller();
    models_.infer(
        std::move(*request), weak_from_this(),
        [id, compression, budget = budget_](Result<InferResult>&& result) {
          return encode_answer(id, std::move(result), compression, budget);
        },
        send_answer);
  }

  // A request whose tensors may still be compressed, start to finish on the calling thread.
  // `caller` is cancelled with the connection; its deadline comes with the request.
  static OutgoingFrame run(Frame frame, const ZstdPolicy& compression, ServerContext& context,
                           const std::shared_ptr<ConnectionBudget>& budget,
                           const std::shared_ptr<Caller>& caller, Clock::time_point arrived) {
    const std::uint64_t id = frame.id;
    if (caller->cancelled()) {
      return protocol::tcp::encode_error(id, Error(StatusCode::Cancelled, "the connection closed"));
    }
    if (auto ok = protocol::tcp::decompress(frame, budget); !ok) {
      return protocol::tcp::encode_error(id, ok.error());
    }
    protocol::ReceivedMessage message{std::move(frame.envelope), std::move(frame.tensors), {}};
    auto request = read_infer_request(std::move(message));
    if (!request) return protocol::tcp::encode_error(id, request.error());
    take_client_timeout(*caller, *request, arrived);
    request->caller(caller);
    auto admitted = context.executor->admit(*request, context.options.shed_early);
    if (!admitted) return protocol::tcp::encode_error(id, admitted.error());
    return encode_answer(id, context.executor->infer(*request), compression, budget);
  }

  // What an answer frame keeps alive until it is written: the output tensors it references,
  // and the hold on the connection's memory for its bytes.
  struct Kept {
    std::vector<NamedTensor> outputs;
    BudgetHold held;
  };

  static OutgoingFrame encode_answer(std::uint64_t id, Result<InferResult> result,
                                     const ZstdPolicy& compression,
                                     const std::shared_ptr<ConnectionBudget>& budget) {
    if (!result) return protocol::tcp::encode_error(id, result.error());
    auto kept = std::make_shared<Kept>();
    kept->outputs = result->outputs();
    auto frame = protocol::tcp::encode_frame(FrameKind::Response, id,
                                             protocol::infer_response_envelope(*result),
                                             kept->outputs, kept, compression);
    kept->held = BudgetHold(budget, frame.bytes);
    return frame;
  }

  std::shared_ptr<asio::io_context> io_;
  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<net::ConnectionSet<TcpConnection>> set_;
  ConnectionSlot slot_;
  const ServerLimits& limits_;
  std::shared_ptr<ConnectionBudget> budget_;
  InferDispatch models_;  // where this connection's requests run
  // The callers of the requests under way, by id, for the client's cancel frames: one entry
  // per request the connection holds, gone with its answer.
  std::unordered_map<std::uint64_t, std::weak_ptr<Caller>> callers_;
  std::uint64_t pong_read_ = ~std::uint64_t{0};  // the read whose pings were answered
  std::string authorization_;                    // from the last metadata frame
  double ping_tokens_ = kPingBurst;
  WatchClock::time_point ping_refilled_ = WatchClock::now();
  ConnectionActivity activity_;
  asio::steady_timer watch_timer_;
};

// At the cap, a newcomer is refused: a TCP connection does not say when it waits.
static_assert(!EvictsWaiting<TcpConnection>::value);

TcpServer::TcpServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : context_(context),
      acceptor_(context, threads, context->options.tcp_port.value_or(0),
                server_connections(context)) {}

void TcpServer::start() {
  acceptor_.start([this](asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                         ConnectionSlot slot) {
    auto budget = std::make_shared<ConnectionBudget>(
        context_->memory, context_->options.limits.max_connection_buffered_bytes);
    return std::make_shared<TcpConnection>(std::move(socket), io, context_, acceptor_.connections(),
                                           std::move(slot), std::move(budget));
  });
}

void TcpServer::stop() {
  acceptor_.stop([](TcpConnection& connection) { connection.close("server stopping"); });
}

}  // namespace sonic::server
