#include "request_options.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/infer_codec.hpp"
#include "protocol/invalid.hpp"
#include "protocol/names.hpp"

namespace sonic::server {

namespace {

using protocol::invalid;

// Triton's wording for a parameter of the wrong type.
Error wrong_type(std::string_view name, std::string_view expected) {
  return invalid("invalid value type for '" + std::string(name) + "' parameter, expected " +
                 std::string(expected) + ".");
}

// The one "triton_" parameter Triton lets a client set.
constexpr std::string_view kAllowedTritonParameter = protocol::kEnableEmptyFinalResponse;

}  // namespace

Result<void> check_request_options(const InferRequest& request) {
  for (const auto& [name, value] : request.parameters()) {
    if (name == "sequence_id") {
      if (!std::holds_alternative<std::int64_t>(value) &&
          !std::holds_alternative<std::string>(value)) {
        return wrong_type(name, "int64_param or string_param");
      }
    } else if (name == "sequence_start" || name == "sequence_end") {
      if (!std::holds_alternative<bool>(value)) return wrong_type(name, "bool_param");
    } else if (name == "priority") {
      if (const auto* level = std::get_if<std::int64_t>(&value)) {
        if (*level < 0) return invalid("invalid value for 'priority', expected value >= 0.");
      } else if (!std::holds_alternative<std::uint64_t>(value)) {
        return wrong_type(name, "int64_param or uint64_param");
      }
    } else if (name == "timeout") {
      if (!std::holds_alternative<std::int64_t>(value)) return wrong_type(name, "int64_param");
    } else if (name == protocol::kClientTimeoutParameter) {
      const auto* signed_value = std::get_if<std::int64_t>(&value);
      if (signed_value ? *signed_value < 0 : !std::holds_alternative<std::uint64_t>(value)) {
        return invalid("'" + name + "' must be a number of microseconds, not negative");
      }
    } else if (name.rfind("triton_", 0) == 0 && name != kAllowedTritonParameter) {
      return invalid(
          "parameter keys starting with 'triton_' are reserved for Triton usage. Only the "
          "following keys starting with 'triton_' are allowed: " +
          std::string(kAllowedTritonParameter));
    }
  }
  return {};
}

namespace {

// A timeout past any real wait (a client may send 2^64 - 1 microseconds) is none: added to the
// clock it would overflow.
constexpr std::uint64_t kLongestUs = std::uint64_t{365} * 24 * 3600 * 1'000'000;

void shorten(Caller& caller, Clock::time_point arrived, std::uint64_t us) {
  if (us < kLongestUs) {
    caller.shorten_deadline(arrived + std::chrono::microseconds(static_cast<std::int64_t>(us)));
  }
}

}  // namespace

void take_client_timeout(Caller& caller, const InferRequest& request, Clock::time_point arrived) {
  auto it = request.parameters().find(protocol::kClientTimeoutParameter);
  if (it == request.parameters().end()) return;
  if (const auto* us = std::get_if<std::int64_t>(&it->second); us && *us >= 0) {
    shorten(caller, arrived, static_cast<std::uint64_t>(*us));
  } else if (const auto* u = std::get_if<std::uint64_t>(&it->second)) {
    shorten(caller, arrived, *u);
  }
}

std::shared_ptr<Caller> caller_of(const InferRequest& request, Clock::time_point arrived,
                                  std::optional<std::chrono::nanoseconds> transport_timeout) {
  auto caller = std::make_shared<Caller>();
  if (transport_timeout) {
    shorten(*caller, arrived,
            static_cast<std::uint64_t>(
                std::chrono::ceil<std::chrono::microseconds>(*transport_timeout).count()));
  }
  take_client_timeout(*caller, request, arrived);
  return caller;
}

Result<InferRequest> read_infer_request(protocol::ReceivedMessage message) {
  auto request = protocol::decode_infer_request(std::move(message));
  if (!request) return request.error();
  if (auto ok = check_request_options(*request); !ok) return ok.error();
  return request;
}

}  // namespace sonic::server
