// What the routes of the HTTP/REST port share: the path's parts, Triton's JSON answers and its
// error bodies ({"error": "..."}) with the HTTP status Triton derives from the error's code
// (server src/http_server.cc, HttpCodeFromError).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_server.hpp"
#include "sonic/error.hpp"

namespace sonic::server {

/// The HTTP status Triton's frontend answers an error of `code` with.
int http_status(StatusCode code);

/// A JSON answer (any nlohmann::json flavour: ordered ones keep their order).
template <typename Json>
HttpReply json_reply(int status, const Json& body) {
  return {status, "application/json", body.dump(), {}};
}

/// Triton's error body: {"error": message}.
HttpReply error_reply(int status, const std::string& message);
/// The same for an Error, its status from its code; an error with a reason (Error::reason())
/// carries it too, as "reason", where gRPC carries it in its status details: a client that
/// reads only "error" (Triton's) is unaffected.
HttpReply error_reply(const Error& error);

/// Triton's answer to a method a route does not take.
HttpReply method_not_allowed();

/// The path's parts between slashes: "/v2/models/m/ready" is {"v2", "models", "m", "ready"}.
std::vector<std::string_view> path_segments(std::string_view path);

/// A model route: v2/models/NAME[/versions/VERSION][/ACTION].
struct ModelRoute {
  std::string name, version, action;
};
/// The model route `parts` name, or nothing.
std::optional<ModelRoute> model_route(const std::vector<std::string_view>& parts);

/// A request body as JSON: null for an empty one, an error (400, in Triton's words) for one that
/// does not parse or is not an object.
Result<nlohmann::json> json_body(std::string_view body);

}  // namespace sonic::server
