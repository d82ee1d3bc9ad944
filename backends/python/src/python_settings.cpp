#include "python_settings.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace sonic::python_backend {

namespace {

Error invalid(const std::string& message) { return Error(StatusCode::InvalidArgument, message); }

Result<std::uint64_t> number_parameter(const repository::ModelConfig& config,
                                       const std::string& key, std::uint64_t fallback) {
  auto it = config.parameters.find(key);
  if (it == config.parameters.end()) return fallback;
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE) {
    return invalid("parameter " + key + " is \"" + text +
                   "\"; it takes a whole number (of milliseconds, or bytes)");
  }
  return static_cast<std::uint64_t>(value);
}

}  // namespace

Result<Settings> settings_of(const repository::ModelConfig& config) {
  Settings settings;
  auto execute = number_parameter(config, "execute_timeout_ms",
                                  static_cast<std::uint64_t>(settings.execute_timeout.count()));
  if (!execute) return execute.error();
  auto initialize =
      number_parameter(config, "initialize_timeout_ms",
                       static_cast<std::uint64_t>(settings.initialize_timeout.count()));
  if (!initialize) return initialize.error();
  auto finalize = number_parameter(config, "finalize_timeout_ms",
                                   static_cast<std::uint64_t>(settings.finalize_timeout.count()));
  if (!finalize) return finalize.error();
  auto wait = number_parameter(config, "instance_wait_timeout_ms",
                               static_cast<std::uint64_t>(settings.instance_wait_timeout.count()));
  if (!wait) return wait.error();
  auto bytes = number_parameter(config, "max_message_bytes", settings.limits.max_buffer_bytes);
  if (!bytes) return bytes.error();
  constexpr std::uint64_t kMaxMillis = std::uint64_t{1} << 40;  // a wait that cannot overflow
  if (*execute > kMaxMillis || *initialize > kMaxMillis || *finalize > kMaxMillis ||
      *wait > kMaxMillis) {
    return invalid("a timeout parameter is larger than " + std::to_string(kMaxMillis) + " ms");
  }
  settings.execute_timeout = std::chrono::milliseconds(*execute);
  settings.initialize_timeout = std::chrono::milliseconds(*initialize);
  settings.finalize_timeout = std::chrono::milliseconds(*finalize);
  settings.instance_wait_timeout = std::chrono::milliseconds(*wait);
  settings.limits.max_buffer_bytes = *bytes;
  return settings;
}

std::optional<std::chrono::steady_clock::time_point> deadline_after(
    std::chrono::milliseconds limit) {
  if (limit.count() == 0) return std::nullopt;
  return std::chrono::steady_clock::now() + limit;
}

}  // namespace sonic::python_backend
