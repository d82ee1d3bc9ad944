// The http:// and https:// transports: KServe v2 over HTTP/REST, as Triton's HTTP frontend
// (port 8000) and tritonclient.http speak it. Inference carries its tensors as Triton's binary
// tensor data, written from the caller's memory and read into aligned buffers without a copy;
// control calls go to their REST routes (rest_codec.hpp). The process's clients of an endpoint
// share its keep-alive connections (HttpPool), as they share a gRPC connection.
#include <memory>
#include <string>
#include <utility>

#include "http_pool.hpp"
#include "net/bearer_token.hpp"
#include "net/call_routes.hpp"
#include "net/codec_timing.hpp"
#include "net/tls.hpp"
#include "protocol/compression.hpp"
#include "protocol/infer_codec.hpp"
#include "rest_control.hpp"

namespace sonic::http {

namespace {

using Routes = net::CallRoutes<HttpPool, HttpCall>;
using Calls = Routes::Book;

// A header field's value may not hold a line break: it would end the field and let the text
// after it write fields (or a request) of its own.
bool safe_field(std::string_view text) {
  return text.find_first_of("\r\n") == std::string_view::npos && !text.empty();
}

class HttpTransport final : public Transport {
 public:
  HttpTransport(const Endpoint& endpoint, const ClientOptions& options,
                std::shared_ptr<net::TlsContext> tls)
      : routes_(net::routes_for<HttpPool, HttpCall>(endpoint, options, std::move(tls),
                                                    net::ShareBy::kAddress)),
        host_(endpoint.host.find(':') == std::string::npos ? endpoint.host
                                                           : '[' + endpoint.host + ']'),
        authority_(host_ + ':' + std::to_string(endpoint.port)),
        max_message_bytes_(options.max_message_bytes),
        compression_(options.compression.grpc),
        wait_for_reconnect_(net::ReconnectBackoff::calls_wait(options)),
        headers_(options.headers),
        credentials_(options.bearer_token) {}

  // Cancels this client's calls (only its own: the connections may serve other clients), and
  // returns once every one of them has completed.
  ~HttpTransport() override { routes_.close_and_wait(); }

  void infer_async(const InferRequest& request, Deadline deadline,
                   std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) override {
    const Routes::Route route = routes_.for_inference();
    auto call = std::make_shared<HttpCall>();
    const auto begun = Clock::now();
    // The tensors' bytes are borrowed: the caller keeps the request until `done` runs.
    call->request = encode_rest_infer(request, protocol::client_timeout_us(deadline));
    call->binary_answer = true;
    call->json_length = call->request.json.size();
    if (call->request.json.size() + call->request.binary_bytes > max_message_bytes_) {
      return route.fail(std::move(done), Error(StatusCode::ResourceExhausted,
                                               "request of " +
                                                   std::to_string(call->request.json.size() +
                                                                  call->request.binary_bytes) +
                                                   " bytes exceeds max_message_bytes (" +
                                                   std::to_string(max_message_bytes_) + ")"));
    }
    if (const Compression compression = request.compression().value_or(compression_);
        compression != Compression::None) {
      compress(*call, compression);
    }
    if (auto head = make_head(*call, request.headers()); !head) {
      return route.fail(std::move(done), head.error());
    }
    const auto encoded = Clock::now();
    // Outputs the request placed in shared memory: the answer need not say they are there.
    auto placed = protocol::outputs_in_shared_memory(request);
    call->done = [done = std::move(done), begun, encoded,
                  placed = std::move(placed)](Result<HttpAnswer> answer) mutable {
      if (!answer) return done(answer.error());
      if (answer->status != 200) {
        Error refused = rest_error(answer->status, answer->body);
        if (answer->retry_after) refused.set_pushback(*answer->retry_after);
        return done(std::move(refused));
      }
      const auto decoding = Clock::now();
      if (answer->parsed.is_null()) {  // no binary data: the JSON is not parsed yet
        auto parsed = parse_rest_answer(answer->body);
        if (!parsed) return done(parsed.error());
        answer->parsed = std::move(*parsed);
      }
      auto result = decode_rest_infer(answer->parsed, std::move(answer->parts), answer->part_sizes,
                                      placed.empty() ? nullptr : &placed);
      if (result) net::record_codec_timing(result->timing(), begun, encoded, decoding);
      done(std::move(result));
    };
    if (cancel) Calls::watch(*cancel, route.channel, call);
    start(route, std::move(call), deadline);
  }

  // Typed calls go straight to their REST routes and back (rest_control.hpp).
  void control_async(ControlRequest request, Deadline deadline,
                     Callback<ControlAnswer> done) override {
    const Routes::Route& route = routes_.shared();
    auto rest = encode_rest_request(request);
    if (!rest) return route.fail(std::move(done), rest.error());
    auto call = std::make_shared<HttpCall>();
    call->request = std::move(*rest);
    if (auto head = make_head(*call, {}); !head) return route.fail(std::move(done), head.error());
    call->done = [done = std::move(done),
                  request = std::move(request)](Result<HttpAnswer> answer) mutable {
      if (!answer) return done(answer.error());
      done(decode_rest_answer(request, answer->status, answer->body));
    };
    start(route, std::move(call), deadline);
  }

 private:
  // The body (JSON and tensors) as one gzip or deflate stream, which Triton's HTTP frontend
  // inflates (Content-Encoding); made on the caller's thread, so that callers compress in
  // parallel. The answer may then come compressed too (Accept-Encoding).
  static void compress(HttpCall& call, Compression compression) {
    RestRequest& r = call.request;
    std::vector<std::string_view> pieces{r.json};
    for (const auto& bytes : r.binary) {
      pieces.emplace_back(static_cast<const char*>(bytes.data), bytes.size);
    }
    r.json = protocol::compress_bytes(pieces, compression, protocol::kDefaultLevel);
    r.binary.clear();
    r.binary_bytes = 0;
    call.encoding = compression;
  }

  // The request line and header fields of `call`, with the client's and the request's own
  // header fields and its bearer token. INVALID_ARGUMENT for a field that would break the head;
  // the token's own error when it cannot be had.
  Result<void> make_head(HttpCall& call,
                         const std::vector<std::pair<std::string, std::string>>& extra) const {
    const RestRequest& r = call.request;
    std::string& head = call.head;
    head = r.method + ' ' + r.target + " HTTP/1.1\r\nHost: " + authority_ + "\r\n";
    if (!r.json.empty() || r.method == "POST") {
      const std::size_t length = r.json.size() + r.binary_bytes;
      if (call.binary_answer) {
        head += "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: " +
                std::to_string(call.json_length) + "\r\n";
      } else {
        head += "Content-Type: application/json\r\n";
      }
      head += "Content-Length: " + std::to_string(length) + "\r\n";
    }
    if (call.encoding != Compression::None) {
      const std::string name(protocol::encoding_name(call.encoding));
      head += "Content-Encoding: " + name + "\r\nAccept-Encoding: " + name + "\r\n";
    }
    for (const auto* fields : {&headers_, &extra}) {
      for (const auto& [name, value] : *fields) {
        if (!safe_field(name) || name.find(':') != std::string::npos || !safe_field(value)) {
          return Error(StatusCode::InvalidArgument,
                       "header '" + name + "' cannot be sent: names and values are one line");
        }
        head += name + ": " + value + "\r\n";
      }
    }
    auto credentials = credentials_.add_to(
        [&head](std::string value) { head += "Authorization: " + value + "\r\n"; });
    if (!credentials) return credentials.error();
    head += "\r\n";
    return {};
  }

  void start(const Routes::Route& route, std::shared_ptr<HttpCall> call, Deadline deadline) {
    call->deadline = deadline;
    call->wait_for_reconnect = wait_for_reconnect_;
    Calls::start(route.book, route.channel, std::move(call));
  }

  Routes routes_;
  const std::string host_;
  const std::string authority_;  // the Host field: host:port, an IPv6 literal in brackets
  const std::size_t max_message_bytes_;
  const Compression compression_;  // of requests that do not choose
  const bool wait_for_reconnect_;
  const std::vector<std::pair<std::string, std::string>> headers_;
  const net::Credentials credentials_;
};

const bool registered = [] {
  for (bool tls : {false, true}) {
    transport_registry().add(
        tls ? "https" : "http",
        [tls](const Endpoint& endpoint,
              const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
          std::shared_ptr<net::TlsContext> context;
          if (tls) {
            auto made = net::client_tls_context(options.tls,
                                                net::TlsPurpose::kFrames);  // no ALPN: HTTP/1.1
            if (!made) return made.error();
            context = std::move(*made);
          }
          return std::unique_ptr<Transport>(
              std::make_unique<HttpTransport>(endpoint, options, std::move(context)));
        });
  }
  return true;
}();

}  // namespace

}  // namespace sonic::http

// Referenced by the anchor object linked into every program that uses sonic::http (see
// SonicLibrary.cmake).
extern "C" {
SONIC_EXPORT int sonic_http_registration_anchor = 1;
}
