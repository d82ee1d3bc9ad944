// Retry throttling's arithmetic: gRPC's token bucket (gRFC A6), as its RetryThrottler keeps it.
#include "client/retry_throttle.hpp"

#include <doctest/doctest.h>

using sonic::RetryBudget;
using sonic::detail::BudgetState;
using sonic::detail::RetryThrottle;

namespace {

RetryThrottle throttle(double max_tokens, double token_ratio) {
  RetryBudget budget;
  budget.max_tokens = max_tokens;
  budget.token_ratio = token_ratio;
  return RetryThrottle(budget);
}

}  // namespace

TEST_CASE("a full bucket allows retries until a failure leaves half of it or less") {
  const auto bucket = throttle(10, 0.1);
  BudgetState state;
  CHECK(bucket.tokens(state) == 10.0);
  int allowed = 0;
  for (int failure = 0; failure < 10; ++failure) {
    bucket.failed(state);
    allowed += bucket.allows_retry(state);
  }
  // 9, 8, 7 and 6 tokens left allow one; 5 and below do not (gRPC: "above the threshold").
  CHECK(allowed == 4);
  CHECK(bucket.tokens(state) == 0.0);
  bucket.failed(state);  // never below zero
  CHECK(bucket.tokens(state) == 0.0);
}

TEST_CASE("successes give token_ratio back, exactly, up to max_tokens") {
  const auto bucket = throttle(10, 0.1);
  BudgetState state;
  for (int i = 0; i < 10; ++i) bucket.failed(state);
  for (int i = 0; i < 51; ++i) bucket.succeeded(state);
  CHECK(bucket.tokens(state) == doctest::Approx(5.1));  // counted in thousandths: no drift
  CHECK(bucket.allows_retry(state));
  bucket.failed(state);
  CHECK_FALSE(bucket.allows_retry(state));
  for (int i = 0; i < 1000; ++i) bucket.succeeded(state);
  CHECK(bucket.tokens(state) == 10.0);
}

TEST_CASE("max_tokens 0 turns throttling off") {
  const auto bucket = throttle(0, 0.1);
  BudgetState state;
  for (int i = 0; i < 100; ++i) bucket.failed(state);
  CHECK(bucket.allows_retry(state));
}
