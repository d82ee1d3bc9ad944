// sonic — one model's statistics: the merged executions by batch size, and the snapshot of
// every counter into sonic::ModelStatistics.
#include "executor/model_statistics.hpp"

#include <algorithm>

namespace sonic::detail {

namespace {

void accumulate(Duration& duration, Clock::duration elapsed) {
  duration.count += 1;
  duration.ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}

}  // namespace

void ModelCounters::count_batch(std::uint64_t inferences, Clock::time_point t0,
                                Clock::time_point t1, Clock::time_point t2, Clock::time_point t3) {
  compute_input.add(t1 - t0);
  compute_infer.add(t2 - t1);
  compute_output.add(t3 - t2);
  {
    std::lock_guard<std::mutex> lock(batch_mutex_);
    BatchCounters& counters = by_batch_size_[inferences];
    accumulate(counters.compute_input, t1 - t0);
    accumulate(counters.compute_infer, t2 - t1);
    accumulate(counters.compute_output, t3 - t2);
  }
  inference_count_.fetch_add(inferences, std::memory_order_relaxed);
  execution_count_.fetch_add(1, std::memory_order_relaxed);
  last_inference_ms_.store(now_ms(), std::memory_order_relaxed);
}

ModelStatistics ModelCounters::snapshot(const std::string& name, const std::string& version) const {
  ModelStatistics s;
  s.name = name;
  s.version = version;
  s.last_inference_ms = last_inference_ms_.load(std::memory_order_relaxed);
  s.inference_count = inference_count_.load(std::memory_order_relaxed);
  s.execution_count = execution_count_.load(std::memory_order_relaxed);
  s.success = success.read();
  s.fail = fail.read();
  const auto failures_for = [this](FailureReason reason) {
    return failures_[static_cast<std::size_t>(reason)].load(std::memory_order_relaxed);
  };
  s.failures = {failures_for(FailureReason::Rejected), failures_for(FailureReason::Canceled),
                failures_for(FailureReason::Backend), failures_for(FailureReason::Other)};
  // queued() and started() may be seen in either order by a reader on another thread.
  s.pending = static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, pending_.load(std::memory_order_relaxed)));
  s.queue = queue.read();
  s.compute_input = compute_input.read();
  s.compute_infer = compute_infer.read();
  s.compute_output = compute_output.read();
  std::lock_guard<std::mutex> lock(batch_mutex_);
  for (const auto& [size, counters] : by_batch_size_) {
    s.batch_stats.push_back(
        {size, counters.compute_input, counters.compute_infer, counters.compute_output});
  }
  return s;
}

}  // namespace sonic::detail
