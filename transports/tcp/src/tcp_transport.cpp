// The tcp:// and tcp+zstd:// transports, and tcp+tls:// and tcp+zstd+tls:// over TLS: KServe v2
// messages in sonic's frames (proto/tcp_framing.md) over one TCP connection per endpoint, shared by
// the process's clients of it; many requests in flight, answered in any order. Compression happens
// on the caller's thread, so that several callers compress in parallel; everything else runs on the
// connection's network thread.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client_stream.hpp"
#include "net/bearer_token.hpp"
#include "net/call_routes.hpp"
#include "net/codec_timing.hpp"
#include "net/tls.hpp"
#include "protocol/control_calls.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::tcp {

namespace {

using protocol::tcp::Frame;
using protocol::tcp::FrameKind;

// Request ids, unique in the process and hence on every connection, whoever shares it.
std::atomic<std::uint64_t> next_id{1};

using Routes = net::CallRoutes<ClientStream, TcpCall>;
using Calls = Routes::Book;

class TcpTransport final : public Transport {
 public:
  TcpTransport(const Endpoint& endpoint, const ClientOptions& options, bool zstd,
               std::shared_ptr<net::TlsContext> tls)
      // tcp:// and tcp+zstd:// differ per request (the frames say): one connection serves both,
      // and one TLS connection serves tcp+tls:// and tcp+zstd+tls://.
      : routes_(net::routes_for<ClientStream, TcpCall>(endpoint, options, std::move(tls),
                                                       net::ShareBy::kAddress)),
        compression_{zstd, options.compression.zstd_level, options.compression.adaptive},
        max_message_bytes_(options.max_message_bytes),
        wait_for_reconnect_(net::ReconnectBackoff::calls_wait(options)),
        // The token travels in a metadata frame, whose header values are bounded like an
        // error's text: one that fits always makes a frame.
        credentials_(options.bearer_token, protocol::tcp::kMaxErrorBytes - 32) {}

  // Cancels this client's calls (only its own: the connection may serve other clients), and
  // returns once every one of them has completed.
  ~TcpTransport() override { routes_.close_and_wait(); }

  void infer_async(const InferRequest& request, Deadline deadline,
                   std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) override {
    const Routes::Route route = routes_.for_inference();
    auto call = std::make_shared<TcpCall>();
    call->id = next_id++;
    if (auto ok = add_credentials(*call); !ok) return route.fail(std::move(done), ok.error());
    auto begun = Clock::now();
    // The frame references the request's tensors (raw ones are not copied), which the caller
    // keeps until `done` runs.
    // The deadline goes with the request (tcp_framing.md), so that the server gives up with it.
    std::string envelope = protocol::infer_request_envelope(request);
    if (auto left = protocol::client_timeout_us(deadline)) {
      protocol::append_request_parameter(envelope, protocol::kClientTimeoutParameter, *left);
    }
    call->frame = protocol::tcp::encode_frame(
        FrameKind::Request, call->id, std::move(envelope), request.inputs(), nullptr, compression_,
        compression_.zstd ? protocol::tcp::kCompressResponse : 0);
    if (call->frame.raw_tensor_bytes > max_message_bytes_) {
      return route.fail(std::move(done),
                        Error(StatusCode::ResourceExhausted,
                              "request of " + std::to_string(call->frame.raw_tensor_bytes) +
                                  " tensor bytes exceeds max_message_bytes (" +
                                  std::to_string(max_message_bytes_) + ")"));
    }
    auto encoded = Clock::now();
    call->done = [done = std::move(done), begun, encoded](Result<Frame> answer) mutable {
      if (!answer) return done(answer.error());
      if (answer->kind != FrameKind::Response) {
        return done(Error(StatusCode::Internal, "the server answered a request with a " +
                                                    std::to_string(static_cast<int>(answer->kind)) +
                                                    " frame"));
      }
      auto decoding = Clock::now();
      protocol::ReceivedMessage message{
          std::move(answer->envelope), std::move(answer->tensors), {}};
      auto result = protocol::decode_infer_response(std::move(message));
      if (result) net::record_codec_timing(result->timing(), begun, encoded, decoding);
      done(std::move(result));
    };
    if (cancel) Calls::watch(*cancel, route.channel, call);
    start(route, std::move(call), deadline);
  }

  void control_async(ControlRequest request, Deadline deadline,
                     Callback<ControlAnswer> done) override {
    protocol::control_by_messages(*this, &TcpTransport::unary, std::move(request), deadline,
                                  std::move(done));
  }

 private:
  // One unary call of the service: `request` is the method's serialized request message.
  void unary(ControlMethod method, std::string request, Deadline deadline,
             Callback<std::string> done) {
    auto call = std::make_shared<TcpCall>();
    call->id = next_id++;
    if (auto ok = add_credentials(*call); !ok) {
      return routes_.shared().fail(std::move(done), ok.error());
    }
    call->frame = protocol::tcp::encode_call(call->id, std::string(method_name(method)), request);
    call->done = [done = std::move(done), method](Result<Frame> answer) mutable {
      if (!answer) return done(answer.error());
      if (answer->kind != FrameKind::Reply) {
        return done(Error(StatusCode::Internal,
                          "malformed " + std::string(method_name(method)) + " reply from server"));
      }
      done(std::move(answer->envelope));
    };
    start(routes_.shared(), std::move(call), deadline);
  }

  // The bearer token's header (net::Credentials); the connection sends it in a metadata frame
  // before the call's frame when the server has not heard it yet.
  Result<void> add_credentials(TcpCall& call) const {
    return credentials_.add_to(
        [&call](std::string value) { call.authorization = std::move(value); });
  }

  void start(const Routes::Route& route, std::shared_ptr<TcpCall> call, Deadline deadline) {
    call->deadline = deadline;
    call->wait_for_reconnect = wait_for_reconnect_;
    Calls::start(route.book, route.channel, std::move(call));
  }

  Routes routes_;
  protocol::tcp::ZstdPolicy compression_;
  std::size_t max_message_bytes_;
  bool wait_for_reconnect_;
  net::Credentials credentials_;
};

const bool registered = [] {
  for (bool zstd : {false, true}) {
    for (bool tls : {false, true}) {
      std::string scheme = std::string(zstd ? "tcp+zstd" : "tcp") + (tls ? "+tls" : "");
      transport_registry().add(
          scheme,
          [zstd, tls](const Endpoint& endpoint,
                      const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
            std::shared_ptr<net::TlsContext> context;
            if (tls) {
              auto made = net::client_tls_context(options.tls, net::TlsPurpose::kFrames);
              if (!made) return made.error();
              context = std::move(*made);
            }
            return std::unique_ptr<Transport>(
                std::make_unique<TcpTransport>(endpoint, options, zstd, std::move(context)));
          });
    }
  }
  return true;
}();

}  // namespace

}  // namespace sonic::tcp

// Referenced by the anchor object linked into every program that uses sonic::tcp (see
// SonicLibrary.cmake).
extern "C" {
SONIC_EXPORT int sonic_tcp_registration_anchor = 1;
}
