#include "settings_codec.hpp"

#include <utility>

#include "invalid.hpp"
#include "proto_json.hpp"

namespace sonic::protocol {

namespace {

using nlohmann::json;

// The messages go through protobuf's JSON mapping (proto_json.hpp), whose descriptors know
// their oneof and map fields.
Result<json> parsed_message(std::string_view type, std::string_view bytes, bool request) {
  auto text = message_to_json(type, bytes);
  if (!text) {
    return Error(request ? StatusCode::InvalidArgument : StatusCode::Internal,
                 text.error().message());
  }
  return json::parse(*text);
}

std::string message_bytes(std::string_view type, const json& fields) {
  // The JSON is made here from typed values: it always fits its message.
  return message_from_json(type, fields.dump()).value();
}

json log_values_json(const LogSettingMap& settings) {
  json out = json::object();
  for (const auto& [name, value] : settings) {
    if (const auto* flag = std::get_if<bool>(&value)) {
      out[name] = {{"bool_param", *flag}};
    } else if (const auto* count = std::get_if<std::uint32_t>(&value)) {
      out[name] = {{"uint32_param", *count}};
    } else {
      out[name] = {{"string_param", std::get<std::string>(value)}};
    }
  }
  return out;
}

Result<LogSettingMap> log_values(const json& message) {
  LogSettingMap settings;
  auto found = message.find("settings");
  if (found == message.end()) return settings;
  for (const auto& [name, value] : found->items()) {
    if (value.contains("bool_param")) {
      settings[name] = value["bool_param"].get<bool>();
    } else if (value.contains("uint32_param")) {
      settings[name] = value["uint32_param"].get<std::uint32_t>();
    } else if (value.contains("string_param")) {
      settings[name] = value["string_param"].get<std::string>();
    }
  }
  return settings;
}

json trace_values_json(const TraceSettingMap& settings) {
  json out = json::object();
  for (const auto& [name, values] : settings) out[name] = {{"value", values}};
  return out;
}

TraceSettingMap trace_values(const json& message) {
  TraceSettingMap settings;
  auto found = message.find("settings");
  if (found == message.end()) return settings;
  for (const auto& [name, value] : found->items()) {
    auto& list = settings[name];
    if (auto values = value.find("value"); values != value.end()) {
      for (const auto& v : *values) list.push_back(v.get<std::string>());
    }
  }
  return settings;
}

}  // namespace

std::string encode_log_settings(const LogSettingMap& settings) {
  return message_bytes("inference.LogSettingsResponse", {{"settings", log_values_json(settings)}});
}

Result<LogSettingMap> decode_log_settings(std::string_view bytes) {
  auto message = parsed_message("inference.LogSettingsRequest", bytes, true);
  if (!message) return message.error();
  return log_values(*message);
}

std::string encode_trace_setting_request(const TraceSettingChange& request) {
  json fields{{"settings", trace_values_json(request.settings)}};
  if (!request.model.empty()) fields["model_name"] = request.model;
  return message_bytes("inference.TraceSettingRequest", fields);
}

Result<TraceSettingChange> decode_trace_setting_request(std::string_view bytes) {
  auto message = parsed_message("inference.TraceSettingRequest", bytes, true);
  if (!message) return message.error();
  return TraceSettingChange{message->value("model_name", std::string()), trace_values(*message)};
}

std::string encode_trace_settings(const TraceSettingMap& settings) {
  return message_bytes("inference.TraceSettingResponse",
                       {{"settings", trace_values_json(settings)}});
}

Result<TraceSettingMap> decode_trace_settings(std::string_view bytes) {
  auto message = parsed_message("inference.TraceSettingResponse", bytes, false);
  if (!message) return message.error();
  return trace_values(*message);
}

// Triton's HandleLogging reads booleans, an unsigned number and strings, by the setting's
// name; its answer has the same shape.
Result<LogSettingMap> log_settings_from_rest(const json& body) {
  LogSettingMap settings;
  if (body.is_null()) return settings;
  if (!body.is_object()) return invalid("log settings must be a JSON object");
  for (const auto& [name, value] : body.items()) {
    if (value.is_boolean()) {
      settings[name] = value.get<bool>();
    } else if (value.is_number_unsigned() &&
               value.get<std::uint64_t>() <= std::numeric_limits<std::uint32_t>::max()) {
      settings[name] = static_cast<std::uint32_t>(value.get<std::uint64_t>());
    } else if (value.is_string()) {
      settings[name] = value.get<std::string>();
    } else {
      return invalid("expect a boolean, an unsigned number or a string for '" + name + "'");
    }
  }
  return settings;
}

json log_settings_to_rest(const LogSettingMap& settings) {
  json out = json::object();
  for (const auto& [name, value] : settings) {
    std::visit([&out, &name = name](const auto& v) { out[name] = v; }, value);
  }
  return out;
}

// Triton's HandleTrace: each value a string or a list of strings; null clears the setting.
Result<TraceSettingMap> trace_settings_from_rest(const json& body) {
  TraceSettingMap settings;
  if (body.is_null()) return settings;
  if (!body.is_object()) return invalid("trace settings must be a JSON object");
  for (const auto& [name, value] : body.items()) {
    auto& list = settings[name];
    if (value.is_null()) continue;
    for (const auto& item : value.is_array() ? value : json::array({value})) {
      if (!item.is_string())
        return invalid("expect a string or a list of strings for '" + name + "'");
      list.push_back(item.get<std::string>());
    }
  }
  return settings;
}

json trace_settings_to_rest(const TraceSettingMap& settings) {
  json out = json::object();
  for (const auto& [name, values] : settings) {
    if (name == "trace_level") {
      out[name] = values;
    } else {
      out[name] = values.empty() ? std::string() : values.front();
    }
  }
  return out;
}

}  // namespace sonic::protocol
