// The gRPC transport: sonic::Transport for one client and endpoint, over the endpoint's
// channel (shared with the process's other clients of it). Registers the "grpc" URL scheme, and
// "grpcs" for gRPC over TLS.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client_connection.hpp"
#include "grpc_stream.hpp"
#include "net/bearer_token.hpp"
#include "net/call_routes.hpp"
#include "net/channel.hpp"
#include "net/resolve.hpp"
#include "net/tls.hpp"
#include "protocol/control_calls.hpp"
#include "protocol/control_methods.hpp"
#include "protocol/infer_codec.hpp"

namespace sonic::grpc {

namespace {

using protocol::ReceivedMessage;
using Routes = net::CallRoutes<ClientConnection, ClientCall>;

// Turns the steps a call passed into durations; a step not seen leaves its part zero.
void record_timing(InferTiming& t, const CallTimes& at, Clock::time_point begun,
                   Clock::time_point decoding) {
  auto span = [](Clock::time_point from, Clock::time_point to) {
    return from == Clock::time_point{} || to == Clock::time_point{} || to < from
               ? std::chrono::nanoseconds{0}
               : std::chrono::duration_cast<std::chrono::nanoseconds>(to - from);
  };
  auto now = Clock::now();
  t.serialize = span(begun, at.encoded);
  t.queue = span(at.encoded, at.started);
  t.send = span(at.started, at.sent);
  t.wait = span(at.sent, at.first_byte);
  t.receive = span(at.first_byte, at.last_byte);
  t.deserialize = span(decoding, now);
  t.total = span(begun, now);
}

class GrpcTransport final : public Transport {
 public:
  GrpcTransport(const Endpoint& endpoint, const ClientOptions& options,
                std::shared_ptr<net::TlsContext> tls)
      // One connection per URL: grpc:// and grpcs:// differ in their settings anyway.
      : routes_(net::routes_for<ClientConnection, ClientCall>(endpoint, options, std::move(tls),
                                                              net::ShareBy::kUrl)),
        headers_(options.headers),
        credentials_(options.bearer_token),
        max_message_bytes_(options.max_message_bytes),
        compression_(options.compression.grpc),
        stream_window_bytes_(options.stream_window_bytes),
        wait_for_reconnect_(net::ReconnectBackoff::calls_wait(options)) {}

  // Cancels this client's calls (only its own: the channel may serve other clients), and
  // returns once every one of them has completed.
  ~GrpcTransport() override { routes_.close_and_wait(); }

  void infer_async(const InferRequest& request, Deadline deadline,
                   std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) override {
    auto begun = Clock::now();
    const Routes::Route route = routes_.for_inference();
    auto body = protocol::encode_infer_request(request, max_message_bytes_);
    if (!body) return route.fail(std::move(done), body.error());
    // Compressed on the caller's thread, as the message was encoded: the network thread only
    // writes it.
    const Compression compression = request.compression().value_or(compression_);
    std::shared_ptr<protocol::OutgoingBody> packed;
    if (compression != Compression::None) {
      packed = protocol::compress_message(**body, compression, protocol::kDefaultLevel);
    }
    const bool compressed = packed != nullptr;  // else none, or it would not shrink: as it is
    if (compressed) body = std::move(packed);
    auto call = make_call(std::string(protocol::kModelInfer), std::move(*body), deadline,
                          protocol::kRawOutputField);
    call->times.encoded = Clock::now();
    call->headers = request.headers();
    if (auto ok = add_credentials(call->headers); !ok) {
      return route.fail(std::move(done), ok.error());
    }
    if (compressed) {
      call->headers.emplace_back("grpc-encoding", protocol::encoding_name(compression));
    }
    // Outputs the request placed in shared memory: the response need not say they are there.
    auto placed = protocol::outputs_in_shared_memory(request);
    // The call is alive whenever `done` runs (see ClientCall::done): its times may be read.
    call->done = [done = std::move(done), times = &call->times, begun,
                  placed = std::move(placed)](Result<ReceivedMessage> message) mutable {
      if (!message) return done(message.error());
      auto decoding = Clock::now();
      auto result =
          protocol::decode_infer_response(std::move(*message), placed.empty() ? nullptr : &placed);
      if (result) record_timing(result->timing(), *times, begun, decoding);
      done(std::move(result));
    };
    if (cancel) Calls::watch(*cancel, route.channel, call);
    start(route, std::move(call));
  }

  Result<std::unique_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response,
      Callback<void> done) override {
    auto headers = headers_;
    if (auto ok = add_credentials(headers); !ok) return ok.error();
    return open_grpc_stream(routes_.shared().channel, routes_.shared().book, std::move(headers),
                            max_message_bytes_, stream_window_bytes_, compression_, deadline,
                            std::move(on_response), std::move(done));
  }

  void control_async(ControlRequest request, Deadline deadline,
                     Callback<ControlAnswer> done) override {
    protocol::control_by_messages(*this, &GrpcTransport::unary, std::move(request), deadline,
                                  std::move(done));
  }

 private:
  // One unary call of the service: `request` is the method's serialized request message.
  void unary(ControlMethod method, std::string request, Deadline deadline,
             Callback<std::string> done) {
    auto body = std::make_shared<protocol::OutgoingBody>();
    body->append_owned(request);
    const Routes::Route& route = routes_.shared();
    if (auto ok = body->finish(max_message_bytes_); !ok) {
      return route.fail(std::move(done), ok.error());
    }
    auto call = make_call(std::string(method_name(method)), std::move(body), deadline, 0);
    if (auto ok = add_credentials(call->headers); !ok) {
      return route.fail(std::move(done), ok.error());
    }
    call->done = [done = std::move(done)](Result<ReceivedMessage> message) mutable {
      if (!message) return done(message.error());
      done(std::move(message->envelope));
    };
    start(route, std::move(call));
  }

  std::shared_ptr<ClientCall> make_call(std::string method,
                                        std::shared_ptr<protocol::OutgoingBody> body,
                                        Deadline deadline, std::uint32_t raw_field) {
    auto call = std::make_shared<ClientCall>(std::move(method), std::move(body), deadline,
                                             raw_field, max_message_bytes_);
    call->wait_for_reconnect = wait_for_reconnect_;
    return call;
  }

  // The bearer token's header among the call's metadata (net::Credentials).
  Result<void> add_credentials(std::vector<std::pair<std::string, std::string>>& headers) const {
    return credentials_.add_to([&headers](std::string value) {
      headers.emplace_back(net::kAuthorization, std::move(value));
    });
  }

  void start(const Routes::Route& route, std::shared_ptr<ClientCall> call) {
    for (const auto& header : headers_) call->headers.push_back(header);
    Calls::start(route.book, route.channel, std::move(call));
  }

  Routes routes_;
  std::vector<std::pair<std::string, std::string>> headers_;
  net::Credentials credentials_;
  std::size_t max_message_bytes_;
  Compression compression_;          // of requests that do not choose
  std::size_t stream_window_bytes_;  // what a stream's undelivered responses may hold
  bool wait_for_reconnect_;
};

const bool registered = [] {
  transport_registry().set_resolver(&net::resolve_addresses);
  transport_registry().add("grpc",
                           [](const Endpoint& endpoint,
                              const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
                             return std::unique_ptr<Transport>(
                                 std::make_unique<GrpcTransport>(endpoint, options, nullptr));
                           });
  transport_registry().add("grpcs",
                           [](const Endpoint& endpoint,
                              const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
                             auto tls =
                                 net::client_tls_context(options.tls, net::TlsPurpose::kGrpc);
                             if (!tls) return tls.error();
                             return std::unique_ptr<Transport>(std::make_unique<GrpcTransport>(
                                 endpoint, options, std::move(*tls)));
                           });
  return true;
}();

}  // namespace

}  // namespace sonic::grpc

// Referenced by the anchor object linked into every program that uses sonic::grpc, so that
// the library, and the registration above, are part of the program (see SonicLibrary.cmake).
extern "C" {
SONIC_EXPORT int sonic_grpc_registration_anchor = 1;
}
