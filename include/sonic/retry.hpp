// sonic — what to do when a server fails: retry, eject the endpoint, fall back to the CPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "sonic/error.hpp"

namespace sonic {

/// When and how a failed request is tried again. Inference is idempotent: a request whose
/// connection died after it was sent may safely run twice on the servers, and the caller still
/// gets exactly one result.
struct RetryPolicy {
  /// Attempts in total, the first included (1 disables retries).
  int max_attempts = 3;
  /// Backoff before attempt n+1: initial_backoff * multiplier^(n-1), capped at max_backoff, then
  /// randomised by ±jitter (a fraction) so that many clients do not retry in lockstep.
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{1'000};
  double backoff_multiplier = 2.0;
  double jitter = 0.2;
  /// Limit of one attempt; zero lets an attempt use all of the request's remaining time. With a
  /// limit, an attempt that runs out of time is retried (elsewhere when possible) while the
  /// request's own deadline allows.
  std::chrono::milliseconds per_attempt_timeout{0};
  /// Codes worth another attempt. UNAVAILABLE covers refused and lost connections and streams
  /// the server never processed; client mistakes (INVALID_ARGUMENT, NOT_FOUND) never retry.
  std::vector<StatusCode> retryable_codes = {StatusCode::Unavailable};

  bool retryable(StatusCode code) const {
    return std::find(retryable_codes.begin(), retryable_codes.end(), code) != retryable_codes.end();
  }

  /// The pause before attempt `attempt` (2 for the first retry), spread by `jitter`: `draw`,
  /// uniform in [0, 1), picks a point in [1 - jitter, 1 + jitter] times the backoff.
  std::chrono::milliseconds backoff(int attempt, double draw) const {
    double ms = static_cast<double>(initial_backoff.count());
    for (int i = 2; i < attempt; ++i) ms *= backoff_multiplier;
    ms = std::min(ms, static_cast<double>(max_backoff.count()));
    const double spread = 1.0 - jitter + 2.0 * jitter * draw;
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, ms * spread)));
  }
};

/// When an endpoint is taken out of rotation and how it comes back.
struct CircuitBreaker {
  /// Consecutive transport failures (UNAVAILABLE, or a per-attempt timeout) that eject it.
  int failures_to_eject = 3;
  /// How long an ejected endpoint rests before a health probe (ServerReady) may bring it back.
  std::chrono::milliseconds cool_down{1'000};
  /// How often ejected endpoints are probed once their cool-down is over.
  std::chrono::milliseconds probe_interval{250};
  /// With several endpoints, one that answered NOT_FOUND for a model gets no request for that
  /// model for this long (servers may host different models); others are tried at once.
  std::chrono::milliseconds model_recheck{10'000};
};

}  // namespace sonic
