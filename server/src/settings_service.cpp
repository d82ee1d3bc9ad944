#include "settings_service.hpp"

#include <cstdint>
#include <limits>
#include <variant>

#include "control_service.hpp"
#include "protocol/invalid.hpp"

namespace sonic::server {

namespace {

namespace pc = protocol;
using protocol::invalid;

// Triton's UNSUPPORTED, which its gRPC frontend answers as UNIMPLEMENTED.
Error unsupported(const std::string& what) {
  return Error(StatusCode::Unimplemented, what + " can not be updated through network protocol");
}

const pc::LogSettingMap& default_log() {
  static const pc::LogSettingMap settings{
      {"log_file", std::string()}, {"log_info", true},
      {"log_warning", true},       {"log_error", true},
      {"log_verbose_level", 0u},   {"log_format", std::string("default")}};
  return settings;
}

const pc::TraceSettingMap& default_trace() {
  static const pc::TraceSettingMap settings{{"trace_level", {"OFF"}}, {"trace_rate", {"1000"}},
                                            {"trace_count", {"-1"}},  {"log_frequency", {"0"}},
                                            {"trace_file", {""}},     {"trace_mode", {"triton"}}};
  return settings;
}

// Triton's checks of one log setting (grpc_server.cc, the logging handler).
Result<void> check_log(const std::string& name, const pc::LogSetting& value) {
  if (name == "log_file") return unsupported("log file location");
  if (name == "log_info" || name == "log_warning" || name == "log_error") {
    if (!std::holds_alternative<bool>(value)) return invalid("expect boolean for '" + name + "'");
  } else if (name == "log_verbose_level") {
    if (!std::holds_alternative<std::uint32_t>(value)) {
      return invalid("expect int32 for '" + name + "'");
    }
  } else if (name == "log_format") {
    const auto* format = std::get_if<std::string>(&value);
    if (!format) return invalid("expect string for '" + name + "'");
    if (*format != "default" && *format != "ISO8601") {
      return invalid("invalid argument for log_format, got: " + *format);
    }
  }
  return {};
}

// A number setting of one value within [low, high], in Triton's words when it is not.
Result<void> check_number(const std::string& name, const std::vector<std::string>& values,
                          long long low, long long high) {
  if (values.size() != 1) return invalid("expect only 1 value for '" + name + "'");
  const std::string& text = values.front();
  std::size_t used = 0;
  long long number = 0;
  try {
    number = std::stoll(text, &used);
  } catch (const std::exception&) {
    return invalid("Unable to parse '" + name + "', got: " + text);
  }
  if (used != text.size() || number < low || number > high) {
    return invalid("Unable to parse '" + name + "', value is out of range [ " +
                   std::to_string(low) + ", " + std::to_string(high) + " ], got: " + text);
  }
  return {};
}

// Triton's checks of one trace setting (grpc_server.cc, the trace handler); an empty list,
// which clears the setting, is always fine.
Result<void> check_trace(const std::string& name, const std::vector<std::string>& values) {
  if (name == "trace_file") return unsupported("trace file location");
  if (values.empty()) return {};
  if (name == "trace_level") {
    for (const auto& level : values) {
      if (level == "OFF" && values.size() > 1) {
        return invalid("Expect only one trace level 'OFF' is specified");
      }
    }
    return {};
  }
  constexpr long long kUint32Max = std::numeric_limits<std::uint32_t>::max();
  if (name == "trace_rate" || name == "log_frequency")
    return check_number(name, values, 0, kUint32Max);
  if (name == "trace_count") {
    return check_number(name, values, -1, std::numeric_limits<std::int32_t>::max());
  }
  return {};
}

// The trace levels Triton keeps of a list: OFF, or TIMESTAMPS and TENSORS (others are ignored;
// none left, no change).
std::vector<std::string> known_levels(const std::vector<std::string>& values) {
  std::vector<std::string> kept;
  for (const auto& level : values) {
    if (level == "OFF" || level == "TIMESTAMPS" || level == "TENSORS") kept.push_back(level);
  }
  return kept;
}

}  // namespace

ServerSettings::ServerSettings() : log_(default_log()), trace_(default_trace()) {}

Result<pc::LogSettingMap> ServerSettings::update_log(const pc::LogSettingMap& changes) {
  for (const auto& [name, value] : changes) {
    if (auto ok = check_log(name, value); !ok) return ok.error();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, value] : changes) {
    if (log_.count(name)) log_[name] = value;
  }
  return log_;
}

Result<pc::TraceSettingMap> ServerSettings::update_trace(const std::string& model,
                                                         const pc::TraceSettingMap& changes) {
  for (const auto& [name, values] : changes) {
    if (auto ok = check_trace(name, values); !ok) return ok.error();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pc::TraceSettingMap& target = model.empty() ? trace_ : models_[model];
  for (const auto& [name, values] : changes) {
    if (!default_trace().count(name)) continue;  // Triton ignores what it does not know
    if (values.empty()) {
      if (model.empty()) {
        target[name] = default_trace().at(name);
      } else {
        target.erase(name);
      }
      continue;
    }
    auto kept = name == "trace_level" ? known_levels(values) : values;
    if (!kept.empty()) target[name] = std::move(kept);
  }
  pc::TraceSettingMap effective = trace_;
  if (!model.empty()) {
    for (const auto& [name, values] : models_[model]) effective[name] = values;
  }
  // As Triton's answer: the trace file and log frequency only in its own (triton) mode.
  if (effective["trace_mode"] != std::vector<std::string>{"triton"}) {
    effective.erase("trace_file");
    effective.erase("log_frequency");
  }
  return effective;
}

Result<std::string> answer_log_settings(const ControlContext& context, std::string_view request) {
  auto changes = pc::decode_log_settings(request);
  if (!changes) return changes.error();
  auto settings = context.settings->update_log(*changes);
  if (!settings) return settings.error();
  return pc::encode_log_settings(*settings);
}

Result<std::string> answer_trace_setting(const ControlContext& context, std::string_view request) {
  auto change = pc::decode_trace_setting_request(request);
  if (!change) return change.error();
  if (!change->model.empty() && !context.executor.has_model(change->model, "")) {
    return invalid("Request for unknown model : " + change->model);
  }
  auto settings = context.settings->update_trace(change->model, change->settings);
  if (!settings) return settings.error();
  return pc::encode_trace_settings(*settings);
}

}  // namespace sonic::server
