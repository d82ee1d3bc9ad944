#include "http_api.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string_view>
#include <vector>

#include "control_service.hpp"
#include "http_control_routes.hpp"
#include "http_infer_json.hpp"
#include "http_replies.hpp"
#include "paced_inflate.hpp"
#include "protocol/compression.hpp"
#include "protocol/control_codec.hpp"
#include "request_options.hpp"
#include "shm_registry.hpp"

namespace sonic::server {

namespace {

using nlohmann::json;

// The largest inference body decoded on the network thread (see HttpApi::infer): a few
// microseconds of JSON at most.
constexpr std::size_t kDecodeHereBytes = 16 << 10;

// What a request asked for: how its outputs are written, and the regions it uses.
struct Asked {
  HttpInferRequest http;
  ShmUse shm;
};

class HttpApi : public std::enable_shared_from_this<HttpApi> {
 public:
  explicit HttpApi(std::shared_ptr<ServerContext> context) : context_(std::move(context)) {}

  void handle(HttpRequest request, HttpRespond respond) {
    const auto parts = path_segments(request.path);
    const auto control_route = protocol::match_control_route(parts);
    // Probes carry no token: health is answered to anyone, as the gRPC health check is.
    const bool probe = control_route && (control_route->method == ControlMethod::ServerLive ||
                                         control_route->method == ControlMethod::ServerReady);
    if (!probe) {
      if (auto refused = context_->authenticator.refusal(request.header("authorization"))) {
        return respond(error_reply(*refused));
      }
    }
    if (control_route)
      return respond(answer_http_control(control(request), *control_route, request));
    auto route = model_route(parts);
    // As Triton: a path it does not serve is 400.
    if (!route || route->action != "infer") return respond({400, {}, {}, {}});
    if (request.method != "POST") return respond(method_not_allowed());
    return infer(std::move(*route), std::move(request), std::move(respond));
  }

 private:
  // The control calls as the gRPC port answers them, for this request's client.
  ControlContext control(const HttpRequest& request) const {
    return {*context_->executor,
            context_->options,
            context_->options.shared_memory ? &context_->shared_memory : nullptr,
            request.client,
            &context_->model_files,
            &context_->settings};
  }

  // A small body is decoded on the network thread, and a quick model's request (every one with
  // inline_models) runs there too, as on the gRPC and TCP ports (infer_dispatch.hpp): two
  // hand-overs between threads would be most of such a request's time. A larger body is
  // decoded, run and encoded on the executor's pool: its JSON must not hold the network thread.
  void infer(ModelRoute route, HttpRequest request, HttpRespond respond) {
    std::optional<std::size_t> json_length;
    if (const auto& declared = request.header("inference-header-content-length");
        !declared.empty()) {
      json_length = net::parse_http_length(declared);
      if (!json_length) {
        return respond(error_reply(400, "malformed Inference-Header-Content-Length"));
      }
    }
    auto body_encoding = encoding_of(request.header("content-encoding"));
    if (!body_encoding) return respond(error_reply(body_encoding.error()));
    // Answers are compressed for a client that asks (Triton: Accept-Encoding, gzip first).
    const std::string& accept = request.header("accept-encoding");
    const Compression answer_encoding =
        protocol::accepts(accept, Compression::Gzip)      ? Compression::Gzip
        : protocol::accepts(accept, Compression::Deflate) ? Compression::Deflate
                                                          : Compression::None;
    respond = [respond = std::move(respond), answer_encoding](HttpReply reply) mutable {
      respond(compressed(std::move(reply), answer_encoding));
    };
    if (*body_encoding != Compression::None) {
      return infer_compressed(std::move(route), std::move(request), *body_encoding, json_length,
                              std::move(respond));
    }
    const auto arrived = Clock::now();
    if (request.body.size <= kDecodeHereBytes) {
      auto decoded = decode_http_infer(route.name, route.version, request.body.bytes,
                                       request.body.view(), json_length);
      if (!decoded) return respond(error_reply(decoded.error()));
      return run(std::move(*decoded), client_of(request), request.caller, arrived, {},
                 std::move(respond), true);
    }
    context_->executor->run_async([self = shared_from_this(), route = std::move(route),
                                   body = std::move(request.body), json_length,
                                   client = client_of(request), caller = std::move(request.caller),
                                   arrived, respond = std::move(respond)]() mutable {
      auto decoded =
          decode_http_infer(route.name, route.version, body.bytes, body.view(), json_length);
      if (!decoded) return respond(error_reply(decoded.error()));
      self->run(std::move(*decoded), client, caller, arrived, {}, std::move(respond), false);
    });
  }

  // Who sent `request`, for its tensors in shared memory: asked here, on the connection's
  // network thread (HttpRequest::client), as decoding and running may be on the pool.
  static ShmClient client_of(const HttpRequest& request) {
    return request.client ? request.client() : ShmClient{};
  }

  // A body with a Content-Encoding, inflated on the executor's pool a slice at a time
  // (paced_inflate.hpp) within max_message_bytes and max_inflate_ratio, its inflated bytes held
  // in the connection's memory budget (at most what the compressed bytes may inflate to) from
  // before they are made until the answer is written; a server short of that memory answers
  // UNAVAILABLE at once.
  void infer_compressed(ModelRoute route, HttpRequest request, Compression encoding,
                        std::optional<std::size_t> json_length, HttpRespond respond) {
    const ServerOptions& options = context_->options;
    const std::size_t bound = protocol::inflate_bound(request.body.size, options.max_inflate_ratio,
                                                      options.max_message_bytes);
    if (!request.budget->admit(bound)) {
      return respond(error_reply(
          Error(StatusCode::Unavailable, "the server's memory for requests is in use: try again")));
    }
    request.budget->settle(bound);
    auto held = std::make_shared<BudgetHold>(request.budget, bound);
    inflate_paced(
        context_->executor, std::move(request.body), encoding, options.max_inflate_ratio,
        options.max_message_bytes,
        [self = shared_from_this(), route = std::move(route), held, json_length,
         client = client_of(request), caller = std::move(request.caller), arrived = Clock::now(),
         respond = std::move(respond)](Result<HttpBody> inflated) mutable {
          if (!inflated) return respond(error_reply(inflated.error()));
          auto decoded = decode_http_infer(route.name, route.version, inflated->bytes,
                                           inflated->view(), json_length);
          if (!decoded) return respond(error_reply(decoded.error()));
          self->run(std::move(*decoded), client, caller, arrived, held, std::move(respond), false);
        });
  }

  // Runs a decoded request for `caller` (its deadline the one the request carries, counted from
  // `arrived`), admitted first (counted on its model, and refused at once when it would miss
  // its deadline); on the calling thread when it may (`here`: the network thread, a quick
  // model or inline_models), else on the pool. `held` is kept until the answer. Tensors in
  // shared memory are bound to `client`'s regions first, as on the gRPC port (the same
  // registry, checks and limits): inputs become views of them (CUDA ones, host copies),
  // outputs are written there once the model ran; a region stays mapped until the answer even
  // if it is unregistered meanwhile.
  void run(HttpInferRequest decoded, const ShmClient& client, const std::shared_ptr<Caller>& caller,
           Clock::time_point arrived, std::shared_ptr<BudgetHold> held, HttpRespond respond,
           bool here) {
    InferRequest infer_request = std::move(decoded.request);
    auto asked = std::make_shared<Asked>();
    asked->http = std::move(decoded);
    if (SharedMemoryRegistry::uses_shared_memory(infer_request)) {
      auto bound = context_->shared_memory.bind(client, infer_request);
      if (!bound) return respond(error_reply(bound.error()));
      asked->shm = std::move(*bound);
    }
    if (caller) {
      take_client_timeout(*caller, infer_request, arrived);
      infer_request.caller(caller);
    }
    auto& executor = *context_->executor;
    const ServerOptions& options = context_->options;
    auto admitted = executor.admit(infer_request, options.shed_early);
    if (!admitted) return respond(reply_of(admitted.error(), *asked));
    if (here && options.inline_models) {
      return respond(reply_of(executor.infer(infer_request), *asked));
    }
    if (here) {
      if (auto quick = executor.infer_if_quick(infer_request, options.quick_model_budget)) {
        return respond(reply_of(std::move(*quick), *asked));
      }
    }
    executor.infer_async(
        std::move(infer_request),
        [self = shared_from_this(), asked, held = std::move(held), admission = std::move(*admitted),
         respond = std::move(respond)](Result<InferResult> result) mutable {
          Admission answered = std::move(admission);  // off the model's count
          respond(self->reply_of(std::move(result), *asked));
        });
  }

  // What a Content-Encoding names: none, gzip or deflate; Triton's words for another.
  static Result<Compression> encoding_of(const std::string& content_encoding) {
    if (content_encoding.empty()) return Compression::None;
    if (auto known = protocol::parse_encoding(content_encoding)) return *known;
    return Error(StatusCode::Unimplemented,
                 "unsupported Content-Encoding '" + content_encoding + "': gzip and deflate are");
  }

  // `reply` with its body (and tail) compressed as `encoding` says, as Triton compresses an
  // answer whenever the client accepts it; as it is for none, and for an error.
  static HttpReply compressed(HttpReply reply, Compression encoding) {
    if (encoding == Compression::None || reply.status != 200) return reply;
    std::vector<std::string_view> pieces{reply.body};
    pieces.insert(pieces.end(), reply.tail.begin(), reply.tail.end());
    std::string packed = protocol::compress_bytes(pieces, encoding, protocol::kDefaultLevel);
    reply.body = std::move(packed);
    reply.tail.clear();
    reply.tail_owner.reset();
    reply.extra_headers +=
        "Content-Encoding: " + std::string(protocol::encoding_name(encoding)) + "\r\n";
    return reply;
  }

  // The answer to an inference request, or its error; its outputs bound for regions written
  // there first.
  HttpReply reply_of(Result<InferResult> result, const Asked& asked) {
    if (!result) return error_reply(result.error());
    if (!asked.shm.empty()) {
      if (auto placed = context_->shared_memory.complete(asked.shm, *result); !placed) {
        return error_reply(placed.error());
      }
    }
    auto encoded = encode_http_infer(*result, asked.http);
    if (!encoded) return error_reply(encoded.error());
    HttpReply reply{200, "application/json", std::move(encoded->body), {}};
    if (encoded->json_length) {
      reply.content_type = "application/octet-stream";
      reply.extra_headers =
          "Inference-Header-Content-Length: " + std::to_string(*encoded->json_length) + "\r\n";
      // The outputs' bytes are written from the tensors themselves, which the reply holds.
      auto tensors = std::make_shared<std::vector<Tensor>>(std::move(encoded->binary));
      for (const Tensor& tensor : *tensors) {
        reply.tail.emplace_back(reinterpret_cast<const char*>(tensor.data()), tensor.byte_size());
      }
      reply.tail_owner = std::move(tensors);
    }
    return reply;
  }

  std::shared_ptr<ServerContext> context_;
};

}  // namespace

HttpService http_api_service(std::shared_ptr<ServerContext> context) {
  HttpService service;
  // A request's body is bounded as a gRPC message is, and held in the server's memory budget
  // while it is read and answered. More connections than the metrics port: inference clients.
  service.limits = HttpLimits{16 << 10, context->options.max_message_bytes,
                              context->options.limits.max_connections};
  auto api = std::make_shared<HttpApi>(std::move(context));
  service.handle = [api](HttpRequest request, HttpRespond respond) {
    // JSON of the wrong shape (a name that is a number, say) makes nlohmann/json throw where a
    // route reads it: the request is answered 400 all the same, once, and the connection goes
    // on, rather than waiting for an answer that never comes.
    auto answered = std::make_shared<std::atomic<bool>>(false);
    HttpRespond once = [respond = std::move(respond), answered](HttpReply reply) {
      if (!answered->exchange(true)) respond(std::move(reply));
    };
    try {
      api->handle(std::move(request), once);
    } catch (const json::exception& e) {
      once(error_reply(400, std::string("malformed request JSON: ") + e.what()));
    }
  };
  return service;
}

}  // namespace sonic::server
