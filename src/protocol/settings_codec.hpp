// The codecs of Triton's two settings methods, LogSettings and TraceSetting
// (proto/grpc_service.proto), as the gRPC messages and as the REST bodies of Triton's HTTP
// frontend (server src/http_server.cc: HandleLogging, HandleTrace).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// One log setting: log_info, log_warning and log_error are booleans, log_verbose_level a
/// count, log_file and log_format strings (LogSettingsRequest.SettingValue).
using LogSetting = std::variant<bool, std::uint32_t, std::string>;
/// Log settings by name: a request's changes, or a response's whole settings.
using LogSettingMap = std::map<std::string, LogSetting>;

/// LogSettingsRequest and LogSettingsResponse, which have the same shape.
SONIC_EXPORT std::string encode_log_settings(const LogSettingMap& settings);
SONIC_EXPORT Result<LogSettingMap> decode_log_settings(std::string_view bytes);

/// Trace settings by name, each a list of values (trace_level may have several; an empty list
/// in a request clears the setting).
using TraceSettingMap = std::map<std::string, std::vector<std::string>>;

/// TraceSettingRequest: a model's settings (an empty name: the global ones) and the changes.
struct TraceSettingChange {
  std::string model;
  TraceSettingMap settings;
};
SONIC_EXPORT std::string encode_trace_setting_request(const TraceSettingChange& request);
SONIC_EXPORT Result<TraceSettingChange> decode_trace_setting_request(std::string_view bytes);
/// TraceSettingResponse.
SONIC_EXPORT std::string encode_trace_settings(const TraceSettingMap& settings);
SONIC_EXPORT Result<TraceSettingMap> decode_trace_settings(std::string_view bytes);

// REST: Triton's bodies. Log settings are plain JSON values; trace settings are strings, with
// trace_level a list, and null to clear one.

/// A POST v2/logging body as the request's changes; INVALID_ARGUMENT, in Triton's words, for a
/// body that is not an object or a value of no setting's type.
SONIC_EXPORT Result<LogSettingMap> log_settings_from_rest(const nlohmann::json& body);
SONIC_EXPORT nlohmann::json log_settings_to_rest(const LogSettingMap& settings);
/// A POST v2[/models/NAME]/trace/setting body as the request's changes.
SONIC_EXPORT Result<TraceSettingMap> trace_settings_from_rest(const nlohmann::json& body);
SONIC_EXPORT nlohmann::json trace_settings_to_rest(const TraceSettingMap& settings);

}  // namespace sonic::protocol
