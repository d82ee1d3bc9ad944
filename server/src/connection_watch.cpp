#include "connection_watch.hpp"

#include <algorithm>
#include <cstdio>

namespace sonic::server {

namespace {
std::string seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}
}  // namespace

std::optional<Overdue> overdue(const ConnectionActivity& activity, const ConnectionState& state,
                               const ServerLimits& limits, WatchClock::time_point now) {
  using std::chrono::milliseconds;
  if (!activity.handshake_done && limits.handshake_timeout.count() > 0 &&
      now - activity.accepted > limits.handshake_timeout) {
    return Overdue{"the client did not finish its handshake within " +
                   seconds(limits.handshake_timeout)};
  }
  if (limits.stall_timeout.count() > 0) {
    if (state.mid_message && now - activity.last_read > limits.stall_timeout) {
      return Overdue{"the client stopped in the middle of a message for " +
                     seconds(limits.stall_timeout)};
    }
    if (state.unwritten > 0 && now - state.last_write > limits.stall_timeout) {
      return Overdue{"the client read none of its answers for " + seconds(limits.stall_timeout)};
    }
  }
  // Pings do not count: only calls keep a connection from being idle (gRPC's rule too).
  if (!state.busy && limits.idle_timeout.count() > 0 &&
      now - activity.last_busy > limits.idle_timeout) {
    return Overdue{"the connection was idle for " + seconds(limits.idle_timeout), true};
  }
  return std::nullopt;
}

std::chrono::milliseconds watch_interval(const ServerLimits& limits) {
  std::chrono::milliseconds shortest{1000};
  for (auto timeout : {limits.handshake_timeout, limits.idle_timeout, limits.stall_timeout}) {
    if (timeout.count() > 0) shortest = std::min(shortest, timeout / 4);
  }
  return std::clamp(shortest, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
}

}  // namespace sonic::server
