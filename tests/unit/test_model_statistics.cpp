// One model's counters (src/executor/model_statistics.hpp): what each update adds, the merged
// executions by batch size, the moving mean of execution times, and the snapshot.
#include "executor/model_statistics.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <vector>

using namespace std::chrono_literals;

namespace {
sonic::InferRequest statistics_request(const std::vector<float>& values, sonic::Shape shape) {
  return sonic::InferRequest("m").input("INPUT0", sonic::Tensor::view(values, std::move(shape)));
}
}  // namespace

TEST_CASE("a model's counters: successes, failures, inferences, queue time") {
  sonic::detail::ModelCounters counters;
  const auto before_ms =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  counters.count_success(4, 10ns);
  // A failure counts no inference, no execution: only itself, under its cause.
  counters.count_failure(sonic::detail::FailureReason::Backend, 5ns);
  counters.count_success(1, 20ns);
  counters.queue.add(3ns);
  auto s = counters.snapshot("m", "2");
  CHECK(s.name == "m");
  CHECK(s.version == "2");
  CHECK(s.success.count == 2);
  CHECK(s.success.ns == 30);
  CHECK(s.fail.count == 1);
  CHECK(s.fail.ns == 5);
  CHECK(s.failures.backend == 1);
  CHECK(s.failures.rejected == 0);
  CHECK(s.failures.other == 0);
  CHECK(s.inference_count == 5);
  CHECK(s.execution_count == 2);
  CHECK(s.queue.count == 1);
  CHECK(s.queue.ns == 3);
  CHECK(s.compute_infer.count == 0);
  CHECK(s.last_inference_ms >= before_ms);
  CHECK(s.batch_stats.empty());
}

TEST_CASE("merged executions are counted by batch size, in order of size") {
  sonic::detail::ModelCounters counters;
  const auto t0 = sonic::Clock::now();
  counters.count_batch(6, t0, t0 + 1us, t0 + 3us, t0 + 6us);
  counters.count_batch(3, t0, t0 + 2us, t0 + 3us, t0 + 4us);
  counters.count_batch(6, t0, t0 + 1us, t0 + 3us, t0 + 6us);
  auto s = counters.snapshot("m", "1");
  REQUIRE(s.batch_stats.size() == 2);
  CHECK(s.batch_stats[0].batch_size == 3);
  CHECK(s.batch_stats[0].compute_input.count == 1);
  CHECK(s.batch_stats[0].compute_input.ns == 2000);
  CHECK(s.batch_stats[1].batch_size == 6);
  CHECK(s.batch_stats[1].compute_input.count == 2);
  CHECK(s.batch_stats[1].compute_input.ns == 2000);
  CHECK(s.batch_stats[1].compute_infer.ns == 4000);
  CHECK(s.batch_stats[1].compute_output.ns == 6000);
  // The model's own phases count every execution, whatever its size.
  CHECK(s.compute_input.count == 3);
  CHECK(s.compute_input.ns == 4000);
  CHECK(s.compute_infer.ns == 5000);
  CHECK(s.compute_output.ns == 7000);
  CHECK(s.inference_count == 15);
  CHECK(s.execution_count == 3);
  CHECK(s.last_inference_ms > 0);
  CHECK(s.success.count == 0);  // each request's success is its caller's to count
}

TEST_CASE("the moving mean of execution times weighs the latest by 1/8") {
  sonic::detail::ModelCounters counters;
  CHECK(counters.recent_compute_ns() == -1);  // none yet: not a quick model
  counters.remember_compute_time(800ns);
  CHECK(counters.recent_compute_ns() == 800);  // the first is the mean
  counters.remember_compute_time(1600ns);
  CHECK(counters.recent_compute_ns() == 900);
  counters.remember_compute_time(100ns);
  CHECK(counters.recent_compute_ns() == 800);
}

TEST_CASE("the pace: time between executions' ends, only while the model stays busy") {
  sonic::detail::ModelCounters counters;
  const auto t0 = sonic::Clock::time_point(1s);
  counters.admitted();  // one request alone: its end says nothing of a pace
  counters.execution_ended(t0);
  counters.execution_ended(t0 + 40ms);
  CHECK(counters.recent_interval_ns() == -1);
  for (int i = 0; i < 8; ++i) counters.admitted();  // busy: nine under way
  counters.execution_ended(t0 + 100ms);             // the first busy end: no interval yet
  CHECK(counters.recent_interval_ns() == -1);
  counters.execution_ended(t0 + 140ms);
  CHECK(counters.recent_interval_ns() == 40'000'000);  // the first is the mean
  counters.execution_ended(t0 + 220ms);
  CHECK(counters.recent_interval_ns() == 45'000'000);  // 40 + (80 - 40) / 8
  // Idle between: the gap until the next end is a pause, not the model's pace.
  for (int i = 0; i < 8; ++i) counters.answered();
  counters.execution_ended(t0 + 1s);
  for (int i = 0; i < 8; ++i) counters.admitted();
  counters.execution_ended(t0 + 2s);
  CHECK(counters.recent_interval_ns() == 45'000'000);
  counters.execution_ended(t0 + 2s + 50ms);
  CHECK(counters.recent_interval_ns() == 45'625'000);  // 45 + (50 - 45) / 8
}

TEST_CASE("a request's inferences: its batch elements, with a batch dimension") {
  sonic::Model batching;
  batching.max_batch_size = 8;
  sonic::Model plain;
  std::vector<float> values(15), none;
  CHECK(sonic::detail::inferences_in(batching, statistics_request(values, {5, 3})) == 5);
  CHECK(sonic::detail::inferences_in(plain, statistics_request(values, {5, 3})) == 1);
  CHECK(sonic::detail::inferences_in(batching, statistics_request(none, {0, 3})) == 1);
  CHECK(sonic::detail::inferences_in(batching, sonic::InferRequest("m")) == 1);
}

TEST_CASE("a model's failures by cause, and its pending requests") {
  using sonic::detail::FailureReason;
  sonic::detail::ModelCounters counters;
  counters.count_failure(FailureReason::Rejected, 1ns);
  counters.count_failure(FailureReason::Rejected, 1ns);
  counters.count_failure(FailureReason::Other, 1ns);
  counters.queued();
  counters.queued();
  counters.queued();
  counters.started(2);  // a batch of two left the queue
  auto s = counters.snapshot("m", "1");
  CHECK(s.fail.count == 3);
  CHECK(s.failures.rejected == 2);
  CHECK(s.failures.other == 1);
  CHECK(s.failures.backend == 0);
  CHECK(s.pending == 1);
  counters.started();
  CHECK(counters.snapshot("m", "1").pending == 0);
}
