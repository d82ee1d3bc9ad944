// sonic — how long a model will take to answer a request admitted now, from what it measured.
//
// Pure arithmetic on the model's recent numbers, kept apart from the executor so that the
// estimate admission refuses by can be checked exactly, without timing real executions.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace sonic::detail {

/// What a model measured recently, and the work ahead of a new request.
struct ModelPace {
  std::int64_t ahead = 0;            ///< requests admitted and not yet answered
  std::int64_t per_execution = 1;    ///< requests one execution takes (max_batch_size if batched)
  std::int64_t at_once = 1;          ///< executions that run at once (instances, threads)
  std::chrono::nanoseconds took{0};  ///< one execution's own time (moving mean)
  std::chrono::nanoseconds interval{0};  ///< time between executions' ends while busy; 0: none
};

/// When, from now, a request admitted now should be answered.
///
/// While the model has been busy, the time between its executions' ends is its real pace,
/// whatever runs at once and whatever its executions wait for (instances that share one engine
/// each count the others' work in their own time): the new request ends after the executions
/// ahead and its own, at that pace, but never sooner than one execution's own time. Without a
/// measured pace, executions ahead run in rounds of those that run at once.
inline std::chrono::nanoseconds expected_answer(const ModelPace& pace) {
  const std::int64_t executions =
      std::max<std::int64_t>(0, pace.ahead) / std::max<std::int64_t>(1, pace.per_execution);
  if (pace.interval.count() > 0) return std::max((executions + 1) * pace.interval, pace.took);
  return (executions / std::max<std::int64_t>(1, pace.at_once) + 1) * pace.took;
}

/// Whether an answer expected after `expected` misses a deadline `left` from now. The estimate
/// is a mean, and past capacity the queue fills until the last admitted request's estimate just
/// meets its deadline: any execution slower than the mean would make it late, its execution
/// wasted. A tenth of the time left is kept in hand for that (and for the answer's way back),
/// at no cost in goodput: the model stays as busy.
inline bool would_miss_deadline(std::chrono::nanoseconds expected, std::chrono::nanoseconds left) {
  return expected + left / 10 > left;
}

}  // namespace sonic::detail
