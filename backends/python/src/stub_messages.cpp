#include "stub_messages.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <variant>

namespace sonic::python_backend {

using json = nlohmann::json;

namespace {

// The parameters that say where a request stands in a sequence.
bool is_sequence_parameter(const std::string& key) {
  return key == "sequence_id" || key == "sequence_start" || key == "sequence_end";
}

}  // namespace

Result<json> header_of(const Frame& frame) {
  json header = json::parse(frame.header, nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("type") ||
      !header["type"].is_string()) {
    return Error(StatusCode::DataLoss, "a message that is not a JSON object with a type");
  }
  return header;
}

std::string message_of(const json& header) {
  if (header.contains("message") && header["message"].is_string()) {
    return header["message"].get<std::string>();
  }
  return header.dump();
}

std::string dump_header(const json& header) {
  return header.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> string_field(const json& message, const char* key, std::string fallback) {
  auto it = message.find(key);
  if (it == message.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return Error(StatusCode::InvalidArgument,
                 std::string(key) + " is " + it->type_name() + ", not a string");
  }
  return it->get<std::string>();
}

json parameters_json(const Parameters& parameters) {
  json out = json::object();
  for (const auto& [key, value] : parameters) {
    if (is_sequence_parameter(key)) continue;
    std::visit([&, name = key](const auto& v) { out[name] = v; }, value);
  }
  return out;
}

json correlation_id_of(const Parameters& parameters) {
  auto it = parameters.find("sequence_id");
  if (it == parameters.end()) return 0;
  if (const auto* text = std::get_if<std::string>(&it->second)) return *text;
  if (const auto* number = std::get_if<std::int64_t>(&it->second)) {
    return static_cast<std::uint64_t>(*number);
  }
  if (const auto* number = std::get_if<std::uint64_t>(&it->second)) return *number;
  return 0;
}

std::uint32_t sequence_flags_of(const Parameters& parameters) {
  auto set = [&](const char* key) {
    auto it = parameters.find(key);
    const bool* value = it == parameters.end() ? nullptr : std::get_if<bool>(&it->second);
    return value && *value;
  };
  return (set("sequence_start") ? 1U : 0U) | (set("sequence_end") ? 2U : 0U);
}

Result<void> apply_bls_options(const json& header, InferRequest& request) {
  auto invalid = [](const std::string& what) {
    return Error(StatusCode::InvalidArgument, "a BLS request's " + what);
  };
  auto text = string_field(header, "parameters", "{}");
  if (!text) return invalid(text.error().message());
  const json parameters = json::parse(*text, nullptr, false);
  if (!parameters.is_object()) return invalid("parameters are not a JSON object");
  for (const auto& [key, value] : parameters.items()) {
    if (value.is_boolean()) {
      request.parameter(key, value.get<bool>());
    } else if (value.is_number_unsigned()) {
      request.parameter(key, value.get<std::uint64_t>());
    } else if (value.is_number_integer()) {
      request.parameter(key, value.get<std::int64_t>());
    } else if (value.is_string()) {
      request.parameter(key, value.get<std::string>());
    } else {
      return invalid("parameter '" + key + "' is not a bool, an int or a str");
    }
  }
  const json flags = header.value("flags", json(0));
  const json id = header.value("correlation_id", json(0));
  if (!flags.is_number_unsigned() || !(id.is_number_unsigned() || id.is_string())) {
    return invalid("correlation_id or flags are of the wrong type");
  }
  const bool start = (flags.get<std::uint64_t>() & 1U) != 0;
  const bool end = (flags.get<std::uint64_t>() & 2U) != 0;
  if (id.is_string() && !id.get<std::string>().empty()) {
    request.sequence(id.get<std::string>(), start, end);
  } else if (id.is_number_unsigned() && id.get<std::uint64_t>() != 0) {
    request.sequence(id.get<std::uint64_t>(), start, end);
  }
  const json timeout = header.value("timeout", json(0));
  if (!timeout.is_number_unsigned()) return invalid("timeout is not a number");
  if (timeout.get<std::uint64_t>() > 0) {
    // Far beyond any wait: a limit too large for the clock is none.
    const auto micros = std::min<std::uint64_t>(timeout.get<std::uint64_t>(), 1ULL << 50);
    request.server_timeout(std::chrono::microseconds(static_cast<std::int64_t>(micros)));
  }
  return {};
}

Result<Parameters> response_parameters_of(const json& response) {
  if (!response.contains("parameters") || response["parameters"].is_null()) return Parameters{};
  const json& text = response["parameters"];
  const json parameters =
      text.is_string() ? json::parse(text.get<std::string>(), nullptr, false) : json();
  if (!parameters.is_object()) {
    return Error(StatusCode::Internal, "a response's parameters are not a JSON object");
  }
  Parameters out;
  for (const auto& [key, value] : parameters.items()) {
    constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (value.is_boolean()) {
      out[key] = value.get<bool>();
    } else if (value.is_number_unsigned() && value.get<std::uint64_t>() <= kInt64Max) {
      out[key] = static_cast<std::int64_t>(value.get<std::uint64_t>());
    } else if (value.is_number_integer() && !value.is_number_unsigned()) {
      out[key] = value.get<std::int64_t>();
    } else if (value.is_string()) {
      out[key] = value.get<std::string>();
    } else {
      return Error(StatusCode::Internal, "Unsupported value type on parameters");
    }
  }
  return out;
}

json error_json(const Error& error) {
  return {{"message", error.message()}, {"code", to_string(error.code())}};
}

StatusCode code_named(const std::string& name) {
  for (int i = 0; i <= 16; ++i) {
    const auto code = static_cast<StatusCode>(i);
    if (name == to_string(code)) return code;
  }
  return StatusCode::Internal;
}

}  // namespace sonic::python_backend
