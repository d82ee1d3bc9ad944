// sonic — time and completions: the clock every deadline is on, and the completion handler.
#pragma once

#include <chrono>

#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"

namespace sonic {

using Clock = std::chrono::steady_clock;
/// The moment an operation must be complete by; Deadline::max() means none.
using Deadline = Clock::time_point;

/// The deadline `timeout` from now; none for a zero timeout.
inline Deadline deadline_after(std::chrono::microseconds timeout) {
  return timeout.count() > 0 ? Clock::now() + timeout : Deadline::max();
}

/// A completion handler: called exactly once with the outcome. Move-only callables are fine.
template <typename T>
using Callback = detail::UniqueFunction<void(Result<T>)>;

}  // namespace sonic
