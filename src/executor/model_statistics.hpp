// sonic — one model's statistics: lock-free counters updated by every request, the merged
// executions by batch size, and their snapshot into sonic::ModelStatistics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/metadata.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"  // Clock

namespace sonic::detail {

/// Events of one kind and their total time. Updated from any thread without a lock; a reader
/// may see the count and the time of different moments.
struct Counter {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> ns{0};

  /// Counts one event that took `elapsed`. Inline: every request calls it several times.
  void add(Clock::duration elapsed) {
    count.fetch_add(1, std::memory_order_relaxed);
    ns.fetch_add(static_cast<std::uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
                 std::memory_order_relaxed);
  }

  /// The count and the total time, as a statistic reports them.
  Duration read() const {
    return {count.load(std::memory_order_relaxed), ns.load(std::memory_order_relaxed)};
  }
};

/// The inferences a request makes: with a batch dimension (max_batch_size > 0), each element
/// of its first input's first dimension; otherwise one.
inline std::uint64_t inferences_in(const Model& model, const InferRequest& request) {
  if (model.max_batch_size > 0 && !request.inputs().empty() &&
      !request.inputs().front().tensor.shape().empty()) {
    auto n = request.inputs().front().tensor.shape().front();
    return n > 0 ? static_cast<std::uint64_t>(n) : 1;
  }
  return 1;
}

/// Why a request failed: Triton's failure reasons (metric_model_reporter.cc). Its dynamic
/// batcher finishes a request whose queue timeout passed, or that finds the queue full, as
/// REJECTED, and one whose call was cancelled (a gRPC call cancelled or past its deadline) as
/// CANCELED; an error from the backend's execution is BACKEND; the rest OTHER.
enum class FailureReason { Rejected, Canceled, Backend, Other };

/// The reason a queue's refusal counts under: CANCELED for a request whose caller went away
/// (Caller::gone(): CANCELLED, DEADLINE_EXCEEDED), REJECTED for the rest (full, its queue
/// timeout passed, or shed because it would miss its deadline).
inline FailureReason refusal_reason(const Error& error) {
  const bool gone =
      error.code() == StatusCode::Cancelled || error.code() == StatusCode::DeadlineExceeded;
  return gone ? FailureReason::Canceled : FailureReason::Rejected;
}

/// The statistics of one model version as its requests run (Triton's ModelStatistics). The
/// per-request updates are lock-free and inline; only a merged execution (count_batch()) and a
/// snapshot take the lock of the by-batch-size table. Thread-safe.
class ModelCounters {
 public:
  /// Time spent by the requests, as ModelStatistics names them.
  Counter success, fail, queue, compute_input, compute_infer, compute_output;

  /// A request that succeeded after `elapsed` (since it arrived): one execution, and the
  /// request's inferences.
  void count_success(std::uint64_t inferences, Clock::duration elapsed) {
    success.add(elapsed);
    inference_count_.fetch_add(inferences, std::memory_order_relaxed);
    execution_count_.fetch_add(1, std::memory_order_relaxed);
    last_inference_ms_.store(now_ms());
  }

  /// A request that failed after `elapsed`, for `reason`.
  void count_failure(FailureReason reason, Clock::duration elapsed) {
    fail.add(elapsed);
    failures_[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }

  /// Requests a server admitted and has not answered yet (CpuExecutor::admit()), wherever they
  /// wait: the count the expected wait of a new one grows with.
  void admitted() { under_way_.fetch_add(1, std::memory_order_relaxed); }
  void answered() { under_way_.fetch_sub(1, std::memory_order_relaxed); }
  std::int64_t under_way() const { return under_way_.load(std::memory_order_relaxed); }

  /// Requests queued for an execution (Triton's pending request count): `queued()` when one
  /// is put in a queue, `started(n)` when n leave it, to run or to be refused.
  void queued() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void started(std::int64_t n = 1) { pending_.fetch_sub(n, std::memory_order_relaxed); }

  /// One execution of several requests merged, `inferences` in all, timed at its phases:
  /// inputs merged (t0 to t1), the model run (t1 to t2), outputs split (t2 to t3). Counts the
  /// phases, the execution by its batch size, and the inferences; each request's own success
  /// is counted by the caller.
  SONIC_EXPORT void count_batch(std::uint64_t inferences, Clock::time_point t0,
                                Clock::time_point t1, Clock::time_point t2, Clock::time_point t3);

  /// Folds one execution's time into the model's moving mean (weight 1/8: a slow execution
  /// shows at once, a run of quick ones brings the mean back down within a few dozen). Updates
  /// from threads at once may lose one another's: the mean is a hint.
  void remember_compute_time(Clock::duration took) {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    const std::int64_t mean = recent_compute_ns_.load(std::memory_order_relaxed);
    recent_compute_ns_.store(mean < 0 ? ns : mean + (ns - mean) / 8, std::memory_order_relaxed);
  }

  /// The moving mean of recent execution times in ns; -1 before the first.
  std::int64_t recent_compute_ns() const {
    return recent_compute_ns_.load(std::memory_order_relaxed);
  }

  /// An execution ended at `now`. While the model is busy (other requests under way at this
  /// end and the one before), the time between ends is how long the model takes per execution
  /// at its real concurrency: its instances together, less whatever its executions waited for
  /// one another (for a free session, say), which an execution's own time counts. Folded into
  /// a moving mean (weight 1/8), a hint as remember_compute_time()'s is.
  void execution_ended(Clock::time_point now) {
    const std::int64_t at = now.time_since_epoch().count();
    const bool busy = under_way() > 1;
    const std::int64_t before = last_end_.exchange(busy ? at : -1, std::memory_order_relaxed);
    if (!busy || before < 0 || at <= before) return;
    const std::int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::duration(at - before)).count();
    const std::int64_t mean = recent_interval_ns_.load(std::memory_order_relaxed);
    recent_interval_ns_.store(mean < 0 ? ns : mean + (ns - mean) / 8, std::memory_order_relaxed);
  }

  /// The moving mean of the time between executions' ends while busy, in ns; -1 before any.
  std::int64_t recent_interval_ns() const {
    return recent_interval_ns_.load(std::memory_order_relaxed);
  }

  /// Everything counted so far, under the model's name and version.
  SONIC_EXPORT ModelStatistics snapshot(const std::string& name, const std::string& version) const;

 private:
  struct BatchCounters {
    Duration compute_input, compute_infer, compute_output;
  };

  static std::uint64_t now_ms() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  }

  std::atomic<std::uint64_t> inference_count_{0}, execution_count_{0}, last_inference_ms_{0};
  std::atomic<std::int64_t> recent_compute_ns_{-1};
  std::atomic<std::int64_t> recent_interval_ns_{-1};
  std::atomic<Clock::rep> last_end_{-1};  // a busy execution's end (clock ticks), or -1
  std::array<std::atomic<std::uint64_t>, 4> failures_{};  // by FailureReason
  std::atomic<std::int64_t> pending_{0};
  std::atomic<std::int64_t> under_way_{0};
  mutable std::mutex batch_mutex_;
  std::map<std::uint64_t, BatchCounters> by_batch_size_;  // merged executions
};

}  // namespace sonic::detail
