#include "executor/response_parameters.hpp"

#include <string>
#include <utility>

#include "protocol/names.hpp"
#include "protocol/utf8.hpp"

namespace sonic {

Result<void> set_response_parameters(const InferRequest& request, Parameters parameters) {
  return detail::ResponseParametersScope::attach(request, std::move(parameters));
}

}  // namespace sonic

namespace sonic::detail {

namespace {

ResponseParametersScope*& innermost() {
  thread_local ResponseParametersScope* scope = nullptr;
  return scope;
}

std::size_t bytes_of(const std::string& name, const Parameter& value) {
  const auto* text = std::get_if<std::string>(&value);
  return name.size() + (text ? text->size() : sizeof(std::int64_t));
}

Parameters& step_parameters() {
  thread_local Parameters parameters;
  return parameters;
}

}  // namespace

void hold_step_parameters(Parameters parameters) { step_parameters() = std::move(parameters); }

Parameters take_step_parameters() { return std::exchange(step_parameters(), {}); }

bool reserved_response_parameter(std::string_view name) {
  // Those the servers set: the stream's final flag (Triton's stream_infer_handler.cc sets it
  // after the model's, so that the server's value is what the client sees) and sonic's own
  // (timings, present and future).
  return name == protocol::kFinalResponse || name.substr(0, 6) == "sonic_";
}

ResponseParametersScope::ResponseParametersScope(const InferRequest* const* requests,
                                                 std::size_t count)
    : requests_(requests), count_(count), outer_(innermost()), thread_(std::this_thread::get_id()) {
  innermost() = this;
}

ResponseParametersScope::ResponseParametersScope(const InferRequest& request)
    : ResponseParametersScope(&single_, 1) {
  single_ = &request;
}

ResponseParametersScope::ResponseParametersScope(const std::vector<const InferRequest*>& requests)
    : ResponseParametersScope(requests.data(), requests.size()) {}

ResponseParametersScope::~ResponseParametersScope() { innermost() = outer_; }

std::size_t ResponseParametersScope::find(const InferRequest& request) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (requests_[i] == &request) return i;
  }
  return count_;
}

Parameters ResponseParametersScope::take(const InferRequest& request) {
  if (std::this_thread::get_id() != thread_ || parameters_.empty()) return {};
  const std::size_t i = find(request);
  return i < count_ ? std::exchange(parameters_[i], {}) : Parameters{};
}

Result<void> ResponseParametersScope::attach(const InferRequest& request, Parameters parameters) {
  ResponseParametersScope* scope = innermost();
  std::size_t index = 0;
  for (; scope; scope = scope->outer_) {
    index = scope->find(request);
    if (index < scope->count_) break;
  }
  if (!scope) {
    return Error(StatusCode::FailedPrecondition,
                 "response parameters are attached on the thread that runs the model's "
                 "function, while it runs, to the request it was given");
  }
  // The wire writes them as protobuf strings and JSON, which hold UTF-8 only (a client's
  // protobuf library refuses a string field that is not).
  for (const auto& [name, value] : parameters) {
    const auto* text = std::get_if<std::string>(&value);
    if (!protocol::is_utf8(name) || (text && !protocol::is_utf8(*text))) {
      return Error(StatusCode::InvalidArgument,
                   "a response parameter's name or string value is not UTF-8");
    }
  }
  if (scope->parameters_.empty()) scope->parameters_.resize(scope->count_);
  Parameters& slot = scope->parameters_[index];
  Parameters merged = slot;
  for (auto& [name, value] : parameters) {
    if (!reserved_response_parameter(name)) merged[name] = std::move(value);
  }
  std::size_t bytes = 0;
  for (const auto& [name, value] : merged) bytes += bytes_of(name, value);
  if (merged.size() > kMaxResponseParameters || bytes > kMaxResponseParameterBytes) {
    return Error(StatusCode::ResourceExhausted,
                 "a model may attach at most " + std::to_string(kMaxResponseParameters) +
                     " response parameters of " + std::to_string(kMaxResponseParameterBytes) +
                     " bytes to a response; this one would carry " + std::to_string(merged.size()) +
                     " of " + std::to_string(bytes) + " bytes");
  }
  slot = std::move(merged);
  return {};
}

}  // namespace sonic::detail
