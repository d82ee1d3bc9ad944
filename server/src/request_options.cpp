#include "request_options.hpp"

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
    } else if (name.rfind("triton_", 0) == 0 && name != kAllowedTritonParameter) {
      return invalid(
          "parameter keys starting with 'triton_' are reserved for Triton usage. Only the "
          "following keys starting with 'triton_' are allowed: " +
          std::string(kAllowedTritonParameter));
    }
  }
  return {};
}

Result<InferRequest> read_infer_request(protocol::ReceivedMessage message) {
  auto request = protocol::decode_infer_request(std::move(message));
  if (!request) return request.error();
  if (auto ok = check_request_options(*request); !ok) return ok.error();
  return request;
}

}  // namespace sonic::server
