// sonic — what to do when a server fails: retry, eject the endpoint, fall back to the CPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "sonic/error.hpp"

namespace sonic {

/// How many retries a client may send: gRPC's retry throttling (gRFC A6, "retryThrottling"), a
/// token bucket per endpoint, so that retries stay a bounded share of the traffic and a
/// struggling server is not buried under them.
///
/// Each endpoint's bucket starts full, at max_tokens. An attempt that fails there with a
/// retryable code (RetryPolicy::retryable_codes, or a per-attempt timeout) takes one token; a
/// success gives token_ratio back, up to max_tokens. A retry may go to an endpoint only while
/// its bucket holds more than max_tokens / 2. Another code (INVALID_ARGUMENT, NOT_FOUND, ...)
/// neither takes nor gives. First attempts are never throttled, nor is the retry of a request
/// that never left the client (Error::never_sent(): no connection could be made, say), which
/// takes no token either: gRPC retries those transparently, and they cost no server anything.
/// An early refusal (WOULD_MISS_DEADLINE, answered at once) takes no token (RetryPolicy).
///
/// A retry is charged to the endpoint it goes to, not the one that failed: the endpoint that
/// failed loses its token, and the retry may only land where the bucket is above half. An
/// endpoint whose attempts keep failing therefore stops receiving retries (its own and other
/// endpoints'), while a healthy endpoint still takes the retries of a failing one; with a single
/// endpoint this is gRPC's rule exactly. Whatever else fails, the retries that fail at an
/// endpoint number at most max_tokens / 2 plus token_ratio per success it served.
///
/// A retry the budget refuses goes to the fallback when one serves the model (it adds no
/// server load), else the request fails with the last attempt's error
/// (ClientStats::throttled_retries counts them).
struct RetryBudget {
  /// Tokens in a full bucket; 0 disables throttling. It sets the burst of retries an endpoint
  /// takes before it must earn them back: 49 from a full bucket of 100. gRPC's examples use
  /// 10 (a burst of 4), but one sonic endpoint is often a proxy or a Kubernetes service in front
  /// of many replicas, and a replica that dies fails at once every call the client had sent it:
  /// with 10 tokens, 8 of 827 requests of 8 threads failed when one of two replicas behind
  /// HAProxy was killed (tests/python/test_proxies.py), with 100 none. What bounds retries under
  /// a lasting failure is token_ratio, not this: at most max_tokens / 2 retries in all, plus one
  /// per 1 / token_ratio successes. Raise it for clients with more than about 50 calls in flight
  /// to one endpoint. gRPC allows (0, 1000].
  double max_tokens = 100;
  /// Tokens a success gives back; gRPC allows (0, 1]. 0.1, gRPC's usual value: in the long run
  /// retries add at most 10 % to the attempts a failing endpoint sees.
  double token_ratio = 0.1;

  bool enabled() const { return max_tokens > 0; }
};

/// When and how a failed request is tried again. Inference is idempotent: a request whose
/// connection died after it was sent may safely run twice on the servers, and the caller still
/// gets exactly one result.
///
/// Servers may ask for less, and are heeded:
/// - Pushback (Error::pushback()): gRPC's grpc-retry-pushback-ms trailer, or on http:// an
///   HTTP 429 or 503 with Retry-After (seconds, or an HTTP-date). The endpoint gets no new
///   attempts, first or retried, of any request of this client until the pushback has passed;
///   other endpoints and the fallback still do. When only pushed-back endpoints could take a
///   request, it goes to the fallback if one serves its model, else it waits for the earliest
///   of them, within its deadline. A pushback that is not a non-negative number (gRFC A6's "do
///   not retry") ends the request's remote attempts: the fallback, or that error.
/// - RESOURCE_EXHAUSTED is not retried unless listed in retryable_codes (the fallback may
///   answer it), as gRPC does.
/// - An early refusal (UNAVAILABLE with the reason WOULD_MISS_DEADLINE: the server's queue is
///   longer than the request's remaining time) moves the request at once, with no backoff, to an
///   endpoint that has not refused it, or when none is left to the fallback, or fails it. It is
///   an attempt (max_attempts) but not a sign of a broken server: it never counts toward the
///   circuit breaker, and takes no retry token. A refusal against per_attempt_timeout, shorter
///   than the request's own deadline, says only that the attempt's time was too short: the
///   next attempt, wherever it goes (the same server too), has the whole deadline, once.
/// Neither pushback nor a refusal counts toward ejection (CircuitBreaker).
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
  /// Retry throttling, per endpoint (on by default; see RetryBudget).
  RetryBudget budget;

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
