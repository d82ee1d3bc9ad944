// The pause between connection attempts to one endpoint after failures.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include "sonic/options.hpp"

namespace sonic::net {

/// Exponential backoff with ±20 % jitter between failed connection attempts
/// (ClientOptions::reconnect_backoff, doubling up to reconnect_backoff_max). Not thread-safe:
/// a connection's owner keeps one on its network thread.
class ReconnectBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ReconnectBackoff(const ClientOptions& options)
      : initial_(options.reconnect_backoff), max_(options.reconnect_backoff_max) {}

  /// Whether a client's calls that meet the backoff should wait for the next attempt rather
  /// than fail at once. Failing fast helps only when the client has somewhere else to go
  /// (another endpoint, the CPU fallback); alone, it would just spend the request's retries
  /// while the server restarts. A waiting call still ends by its deadline.
  static bool calls_wait(const ClientOptions& options) {
    return options.endpoints.size() == 1 && !options.resolution.each_address &&
           options.fallback == nullptr;
  }

  /// When the next attempt may be made.
  Clock::time_point next_attempt() const { return next_; }

  /// A connection attempt succeeded: the next failure starts from the initial pause.
  void succeeded() {
    failures_ = 0;
    next_ = {};
  }

  /// A connection attempt failed for `why`: no new attempt before the pause is over.
  void failed(std::string why) {
    ++failures_;
    why_ = std::move(why);
    double ms = static_cast<double>(initial_.count());
    for (int i = 1; i < failures_ && ms < static_cast<double>(max_.count()); ++i) ms *= 2;
    ms = std::min(ms, static_cast<double>(max_.count()));
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    next_ = Clock::now() +
            std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000 * jitter(random_)));
  }

  /// How long until a new attempt may be made; zero or less when it may be made now.
  Clock::duration wait() const { return next_ - Clock::now(); }

  /// Why the last attempt failed ("Connection refused").
  const std::string& why() const { return why_; }

 private:
  std::chrono::milliseconds initial_, max_;
  int failures_ = 0;
  Clock::time_point next_{};
  std::string why_;
  std::mt19937 random_{std::random_device{}()};
};

}  // namespace sonic::net
