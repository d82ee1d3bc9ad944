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

ResponseParametersScope::ResponseParametersScope(const std::vector<const InferRequest*>& requests)
    : outer_(innermost()), thread_(std::this_thread::get_id()) {
  slots_.reserve(requests.size());
  for (const InferRequest* request : requests) slots_.push_back({request, {}});
  innermost() = this;
}

ResponseParametersScope::~ResponseParametersScope() { innermost() = outer_; }

ResponseParametersScope::Slot* ResponseParametersScope::find(const InferRequest& request) {
  for (auto& slot : slots_) {
    if (slot.request == &request) return &slot;
  }
  return nullptr;
}

Parameters ResponseParametersScope::take(const InferRequest& request) {
  if (std::this_thread::get_id() != thread_) return {};
  Slot* slot = find(request);
  return slot ? std::exchange(slot->parameters, {}) : Parameters{};
}

Result<void> ResponseParametersScope::attach(const InferRequest& request, Parameters parameters) {
  Slot* slot = nullptr;
  for (auto* scope = innermost(); scope && !slot; scope = scope->outer_)
    slot = scope->find(request);
  if (!slot) {
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
  Parameters merged = slot->parameters;
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
  slot->parameters = std::move(merged);
  return {};
}

}  // namespace sonic::detail
