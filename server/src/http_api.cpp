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
#include "reply_compression.hpp"
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

// An inference request's way from its body to its answer: who sent it (read on the network
// thread, as decoding may be on the pool), who waits and since when, how the answer is
// compressed, where it runs, and the memory held for an inflated body until the answer.
struct Way {
  ShmClient client;
  std::shared_ptr<Caller> caller;
  Clock::time_point arrived;
  Compression encoding = Compression::None;
  HttpRequest::Models models;
  std::shared_ptr<BudgetHold> held;
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

  // A small body is decoded on the network thread, a larger one on the executor's pool: its
  // JSON must not hold the network thread. Either then runs through the connection's dispatch
  // (infer_dispatch.hpp), as on the gRPC and TCP ports: a quick model's request (every one with
  // inline_models) on the network thread, where two hand-overs between threads would be most
  // of its time; the rest on the pool, encoded there.
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
    Way way{client_of(request),
            std::move(request.caller),
            Clock::now(),
            reply_compression(kHttpReplyLevel, request.header("accept-encoding")),
            std::move(request.models),
            {}};
    if (*body_encoding != Compression::None) {
      return infer_compressed(std::move(route), std::move(request), *body_encoding, json_length,
                              std::move(way), std::move(respond));
    }
    if (request.body.size <= kDecodeHereBytes) {
      auto decoded = decode_http_infer(route.name, route.version, request.body.bytes,
                                       request.body.view(), json_length);
      if (!decoded) return respond(error_reply(decoded.error()));
      return run(std::move(*decoded), std::move(way), std::move(respond));
    }
    context_->executor->run_async([self = shared_from_this(), route = std::move(route),
                                   body = std::move(request.body), json_length,
                                   way = std::move(way), respond = std::move(respond)]() mutable {
      auto decoded =
          decode_http_infer(route.name, route.version, body.bytes, body.view(), json_length);
      if (!decoded) return respond(error_reply(decoded.error()));
      self->run(std::move(*decoded), std::move(way), std::move(respond));
    });
  }

  // Who sent `request`, for its tensors in shared memory: asked here, on the connection's
  // network thread (HttpRequest::client), as decoding may be on the pool.
  static ShmClient client_of(const HttpRequest& request) {
    return request.client ? request.client() : ShmClient{};
  }

  // A body with a Content-Encoding, inflated on the executor's pool a slice at a time
  // (paced_inflate.hpp) within max_message_bytes and max_inflate_ratio, its inflated bytes held
  // in the connection's memory budget (at most what the compressed bytes may inflate to) from
  // before they are made until the answer is written; a server short of that memory answers
  // UNAVAILABLE at once.
  void infer_compressed(ModelRoute route, HttpRequest request, Compression encoding,
                        std::optional<std::size_t> json_length, Way way, HttpRespond respond) {
    const ServerOptions& options = context_->options;
    const std::size_t bound = protocol::inflate_bound(request.body.size, options.max_inflate_ratio,
                                                      options.max_message_bytes);
    if (!request.budget->admit(bound)) {
      return respond(error_reply(
          Error(StatusCode::Unavailable, "the server's memory for requests is in use: try again")));
    }
    request.budget->settle(bound);
    way.held = std::make_shared<BudgetHold>(request.budget, bound);
    inflate_paced(
        context_->executor, std::move(request.body), encoding, options.max_inflate_ratio,
        options.max_message_bytes,
        [self = shared_from_this(), route = std::move(route), json_length, way = std::move(way),
         respond = std::move(respond)](Result<HttpBody> inflated) mutable {
          if (!inflated) return respond(error_reply(inflated.error()));
          auto decoded = decode_http_infer(route.name, route.version, inflated->bytes,
                                           inflated->view(), json_length);
          if (!decoded) return respond(error_reply(decoded.error()));
          self->run(std::move(*decoded), std::move(way), std::move(respond));
        });
  }

  // Runs a decoded request for `way.caller` (its deadline the one the request carries, counted
  // from `way.arrived`) through the connection's dispatch, on the connection's thread (posted
  // there from the pool; dropped when the connection is gone, as nobody reads its answer).
  // Tensors in shared memory are bound to the client's regions first, as on the gRPC port (the
  // same registry, checks and limits): inputs become views of them (CUDA ones, host copies),
  // outputs are written there once the model ran; a region stays mapped until the answer even
  // if it is unregistered meanwhile.
  void run(HttpInferRequest decoded, Way way, HttpRespond respond) {
    InferRequest infer_request = std::move(decoded.request);
    auto asked = std::make_shared<Asked>();
    asked->http = std::move(decoded);
    if (SharedMemoryRegistry::uses_shared_memory(infer_request)) {
      auto bound = context_->shared_memory.bind(way.client, infer_request);
      if (!bound) return respond(error_reply(bound.error()));
      asked->shm = std::move(*bound);
    }
    if (way.caller) {
      take_client_timeout(*way.caller, infer_request, way.arrived);
      infer_request.caller(way.caller);
    }
    const HttpRequest::Models models = std::move(way.models);
    // The answer is encoded (and compressed) where the model ran; `held` is kept until then.
    auto dispatch = [self = shared_from_this(), models, request = std::move(infer_request), asked,
                     held = std::move(way.held), encoding = way.encoding,
                     respond = std::move(respond)]() mutable {
      models.dispatch->infer(
          std::move(request), models.owner,
          [self, asked, held, encoding](Result<InferResult>&& result) {
            return compressed(self->reply_of(std::move(result), *asked), encoding);
          },
          std::move(respond));
    };
    if (models.io->get_executor().running_in_this_thread()) return dispatch();
    asio::post(*models.io, [owner = models.owner, dispatch = std::move(dispatch)]() mutable {
      if (auto alive = owner.lock()) dispatch();
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
