// The estimate admission refuses by (src/executor/answer_estimate.hpp): the model's measured
// pace when it has one, rounds of its executions' own time when not, and the tenth kept in hand.
#include "executor/answer_estimate.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using sonic::detail::expected_answer;
using sonic::detail::ModelPace;
using sonic::detail::would_miss_deadline;

namespace {
// Eight instances sharing one engine, one execution ending every 40 ms: each execution's own
// time counts its wait for the seven others, 320 ms.
ModelPace shared_engine(std::int64_t ahead) {
  ModelPace pace;
  pace.ahead = ahead;
  pace.at_once = 8;
  pace.took = 320ms;
  pace.interval = 40ms;
  return pace;
}
}  // namespace

TEST_CASE("with a measured pace, a request ends after those ahead and its own, at that pace") {
  CHECK(expected_answer(shared_engine(8)) == 360ms);  // 9 x 40 ms
  CHECK(expected_answer(shared_engine(20)) == 840ms);
  // Never sooner than one execution's own time.
  CHECK(expected_answer(shared_engine(0)) == 320ms);
  CHECK(expected_answer(shared_engine(-3)) == 320ms);  // a count that raced below zero
}

TEST_CASE("without a measured pace, executions ahead run in rounds of those that run at once") {
  ModelPace pace = shared_engine(8);
  pace.interval = 0ns;
  CHECK(expected_answer(pace) == 640ms);  // two rounds of 320 ms
  pace.ahead = 7;
  CHECK(expected_answer(pace) == 320ms);  // all seven run beside it
  pace.at_once = 1;
  pace.took = 20ms;
  CHECK(expected_answer(pace) == 160ms);
}

TEST_CASE("a batched model takes up to max_batch_size requests per execution") {
  ModelPace pace;
  pace.ahead = 17;
  pace.per_execution = 8;
  pace.took = 30ms;
  CHECK(expected_answer(pace) == 90ms);  // two full executions ahead, then its own
  pace.interval = 10ms;
  CHECK(expected_answer(pace) == 30ms);  // 3 x 10 ms, but not under one execution's time
}

TEST_CASE("a request misses its deadline when the answer and a tenth in hand exceed it") {
  CHECK_FALSE(would_miss_deadline(360ms, 520ms));  // 360 + 52 <= 520
  CHECK(would_miss_deadline(640ms, 520ms));
  CHECK_FALSE(would_miss_deadline(450ms, 500ms));  // exactly meets it
  CHECK(would_miss_deadline(451ms, 500ms));
  CHECK(would_miss_deadline(1ms, -5ms));  // already past
}
