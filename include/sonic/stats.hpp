// sonic — what a client did: counters per client and per endpoint, as a struct and as JSON.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic {

/// How serious a log message is.
enum class LogLevel : std::uint8_t { Debug, Info, Warning, Error };

inline const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "unknown";
}

/// Where a client's log messages go (sonic never prints). Called from sonic's threads; keep it
/// quick and thread-safe.
using LogHook = std::function<void(LogLevel, const std::string&)>;

/// One endpoint as the client sees it.
struct EndpointStats {
  std::string url;
  bool healthy = true;            ///< false while ejected by the circuit breaker
  std::uint64_t outstanding = 0;  ///< attempts in flight now
  std::uint64_t attempts = 0;     ///< attempts sent there
  std::uint64_t failures = 0;     ///< attempts that failed there
  std::uint64_t ejections = 0;    ///< times the circuit breaker took it out
  std::uint64_t latency_ns = 0;   ///< summed latency of its successful attempts
  std::uint64_t successes = 0;
  std::uint64_t pushbacks = 0;  ///< answers that asked for a pause (Error::pushback())
  /// Early refusals: UNAVAILABLE with the reason WOULD_MISS_DEADLINE (a busy server, not a
  /// broken one), each moved elsewhere at once.
  std::uint64_t refusals = 0;
  /// Its retry budget now (RetryBudget): retries may go there while this is above half of
  /// max_tokens.
  double retry_tokens = 0;
};

/// Cumulative counters of a client.
struct SONIC_EXPORT ClientStats {
  /// Requests sent through the client's request path (infer / infer_async / infer_future):
  /// a merged request of client-side batching counts once, a chunk of infer_chunked once each.
  std::uint64_t requests = 0;
  /// Callers' requests that client-side batching merged (ClientOptions::batching), and the
  /// merged requests it sent for them: their ratio is the batch it achieved.
  std::uint64_t batched_requests = 0;
  std::uint64_t merged_requests = 0;
  std::uint64_t succeeded = 0;  ///< completed with a result (remote or local)
  std::uint64_t failed = 0;     ///< completed with an error
  std::uint64_t retries = 0;    ///< attempts after the first
  std::uint64_t fallbacks = 0;  ///< requests run on the CPU executor
  /// Retries the retry budget refused (RetryPolicy::budget): those requests went to the
  /// fallback, or failed with their last attempt's error.
  std::uint64_t throttled_retries = 0;
  /// Callbacks that held a network thread past its budget (CallbackThread::Network), which
  /// then moved its connections on; after the first, the client's callbacks run on the
  /// callback threads.
  std::uint64_t slow_callbacks = 0;
  /// Exceptions that escaped a completion callback. sonic catches them (a network or callback
  /// thread must go on serving every other request) and logs each at LogLevel::Error; the
  /// request counts as delivered. Use forward_exceptions() to hand them to your framework.
  std::uint64_t callback_exceptions = 0;
  std::array<std::uint64_t, 17> failures_by_code{};  ///< indexed by StatusCode
  std::vector<EndpointStats> endpoints;

  /// The counters as one JSON object (failure codes by name, endpoints as an array).
  std::string to_json() const;
};

}  // namespace sonic
