#include "stub_messages.hpp"

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
