#include "client/model_pins.hpp"

namespace sonic::detail {

namespace {

// The pinned version of `model`, or null when it has none.
const std::string* pinned_version(const Routing& routing, const std::string& model) {
  if (routing.pins.empty()) return nullptr;
  auto pin = routing.pins.find(model);
  if (pin == routing.pins.end() || pin->second.version.empty()) return nullptr;
  return &pin->second.version;
}

}  // namespace

Result<void> apply_pin(const Routing& routing, InferRequest& request) {
  const std::string* pinned = pinned_version(routing, request.model_name());
  if (!pinned) return {};
  if (request.model_version().empty()) {
    request.version(*pinned);
  } else if (request.model_version() != *pinned) {
    return Error(StatusCode::FailedPrecondition,
                 "model '" + request.model_name() + "' is pinned to version " + *pinned +
                     " (ClientOptions::routing.pins); the request asks for version " +
                     request.model_version());
  }
  return {};
}

Result<void> check_pin(const Routing& routing, const InferRequest& request,
                       const InferResult& result) {
  const std::string* pinned = pinned_version(routing, request.model_name());
  if (!pinned || result.model_version().empty() || result.model_version() == *pinned) return {};
  return Error(StatusCode::FailedPrecondition,
               "model '" + request.model_name() + "' is pinned to version " + *pinned +
                   ", but the server answered from version " + result.model_version());
}

}  // namespace sonic::detail
