#include "http_replies.hpp"

namespace sonic::server {

// INTERNAL 500, NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED (gRPC's UNIMPLEMENTED) 501, the
// rest 400. UNAUTHENTICATED, which Triton never answers, is 401.
int http_status(StatusCode code) {
  switch (code) {
    case StatusCode::Internal: return 500;
    case StatusCode::NotFound: return 404;
    case StatusCode::Unavailable: return 503;
    case StatusCode::Unimplemented: return 501;
    case StatusCode::Unauthenticated: return 401;
    default: return 400;
  }
}

HttpReply error_reply(int status, const std::string& message) {
  return json_reply(status, nlohmann::json{{"error", message}});
}

HttpReply error_reply(const Error& error) {
  if (error.reason().empty()) return error_reply(http_status(error.code()), error.message());
  return json_reply(http_status(error.code()),
                    nlohmann::json{{"error", error.message()}, {"reason", error.reason()}});
}

HttpReply method_not_allowed() { return error_reply(405, "Method Not Allowed"); }

std::vector<std::string_view> path_segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    const std::size_t end = path.find('/');
    out.push_back(path.substr(0, end));
    path.remove_prefix(end == std::string_view::npos ? path.size() : end);
  }
  return out;
}

std::optional<ModelRoute> model_route(const std::vector<std::string_view>& parts) {
  if (parts.size() < 3 || parts[0] != "v2" || parts[1] != "models") return std::nullopt;
  ModelRoute route{std::string(parts[2]), {}, {}};
  std::size_t next = 3;
  if (parts.size() >= 5 && parts[3] == "versions") {
    route.version = std::string(parts[4]);
    next = 5;
  }
  if (parts.size() == next + 1) route.action = std::string(parts[next]);
  if (parts.size() > next + 1) return std::nullopt;
  return route;
}

// Triton reads every such body with EVBufferToJson, whose failure is INVALID_ARG: "failed to
// parse the request JSON buffer: ..." (the rest is rapidjson's own words).
Result<nlohmann::json> json_body(std::string_view body) {
  if (body.empty()) return nlohmann::json();
  nlohmann::json parsed = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Error(StatusCode::InvalidArgument, "failed to parse the request JSON buffer");
  }
  return parsed;
}

}  // namespace sonic::server
