// sonic — retry throttling: gRPC's token bucket (gRFC A6, "retryThrottling"), one per endpoint,
// deciding whether a retry may go there (RetryBudget in sonic/retry.hpp says why and how).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sonic/retry.hpp"

namespace sonic::detail {

/// An endpoint's retry budget: the thousandths of a token spent below a full bucket (0: full,
/// as a new endpoint's is). Guarded by whatever guards the endpoint (SlotTable::mutex).
struct BudgetState {
  std::int64_t spent_milli = 0;
};

/// The bucket's arithmetic, on a BudgetState the caller guards. Pure and const, so any thread
/// may call it. Counted in thousandths of a token, as gRPC's RetryThrottler counts
/// (src/core/client_channel/retry_throttle.cc keeps "milli_tokens", taking 1000 per failure and
/// adding milli_token_ratio per success, clamped to [0, max]), so that successes add up exactly.
class RetryThrottle {
 public:
  explicit RetryThrottle(const RetryBudget& budget)
      : max_milli_(to_milli(budget.max_tokens)), ratio_milli_(to_milli(budget.token_ratio)) {}

  /// An attempt failed there with a retryable code: one token less, never below zero.
  void failed(BudgetState& state) const {
    state.spent_milli = std::min(state.spent_milli + 1000, max_milli_);
  }
  /// An attempt succeeded there: token_ratio more, never above max_tokens.
  void succeeded(BudgetState& state) const {
    state.spent_milli = std::max<std::int64_t>(state.spent_milli - ratio_milli_, 0);
  }
  /// Whether a retry may go there: more than half of max_tokens left. gRPC's RecordFailure
  /// allows one "as long as the new value is above the threshold (max_milli_tokens / 2)".
  /// Always, with throttling off (max_tokens 0).
  bool allows_retry(const BudgetState& state) const {
    return max_milli_ == 0 || max_milli_ - state.spent_milli > max_milli_ / 2;
  }
  /// The tokens left, for statistics.
  double tokens(const BudgetState& state) const {
    return static_cast<double>(max_milli_ - state.spent_milli) / 1000.0;
  }

 private:
  // Thousandths of a token; negative or absurd options are taken as 0 and 10^9 tokens.
  static std::int64_t to_milli(double tokens) {
    if (!(tokens > 0)) return 0;
    return static_cast<std::int64_t>(std::llround(std::min(tokens, 1e9) * 1000.0));
  }

  std::int64_t max_milli_;
  std::int64_t ratio_milli_;
};

}  // namespace sonic::detail
