// Triton's logging and trace extensions: the server's run-time settings that LogSettings and
// TraceSetting read and change, over gRPC and HTTP alike (control_service.cpp dispatches to
// these handlers).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "protocol/settings_codec.hpp"
#include "sonic/error.hpp"

namespace sonic::server {

struct ControlContext;

/// The settings, as tritonserver starts with them (--log-* and --trace-config defaults):
/// logs at info, warning and error, verbose level 0, the default format, to the console;
/// traces OFF, rate 1000, count -1 (unbounded), log frequency 0, Triton's trace mode. A
/// model's trace settings are the global ones, overridden by those set for the model.
/// Thread-safe.
class ServerSettings {
 public:
  ServerSettings();

  /// Applies `changes` (all, or none when one is wrong) and returns the log settings; Triton's
  /// errors and words for a setting of the wrong type, an unknown log format, and a log file
  /// (which cannot be changed over the network). Settings it does not know are ignored.
  Result<protocol::LogSettingMap> update_log(const protocol::LogSettingMap& changes);

  /// Applies `changes` to `model`'s trace settings (empty: the global ones) and returns that
  /// model's settings. An empty list clears a setting: the model's falls back to the global
  /// one, a global one to its default.
  Result<protocol::TraceSettingMap> update_trace(const std::string& model,
                                                 const protocol::TraceSettingMap& changes);

 private:
  std::mutex mutex_;
  protocol::LogSettingMap log_;
  protocol::TraceSettingMap trace_;                          // global
  std::map<std::string, protocol::TraceSettingMap> models_;  // each model's own
};

/// LogSettings: the serialized response to a serialized request.
Result<std::string> answer_log_settings(const ControlContext& context, std::string_view request);
/// TraceSetting; a model named in the request must be ready (Triton's INVALID_ARGUMENT).
Result<std::string> answer_trace_setting(const ControlContext& context, std::string_view request);

}  // namespace sonic::server
