// sonic — the process's completion thread: where a transport without a thread of its own runs
// its completions (the Transport base class's UNIMPLEMENTED answers, a call refused while its
// transport is destroyed, the tests' fake transport), so that none runs inside the call that
// started it. Transports with network threads complete there instead.
#pragma once

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::detail {

/// Runs `task` on the process's completion thread, after every task posted before it: one
/// thread, in order. Never inside this call. The thread starts with the first task and stays;
/// it is joined when the process exits (once it has run every task posted by then). A task
/// posted later still runs, on a thread that the exit no longer waits for.
/// `owner` (a transport) says whose task it is, for drain_completions(). Thread-safe. A task
/// that throws loses what it was doing, never the thread (the exception is reported on stderr).
SONIC_EXPORT void post_completion(const void* owner, UniqueFunction<void()> task);

/// Returns once every task posted for `owner` has run. On the completion thread itself (a
/// completion that destroys its transport), which cannot wait for itself, it runs the owner's
/// queued tasks at once, in order, instead. ~Transport() calls it; cheap when there are none.
SONIC_EXPORT void drain_completions(const void* owner);

}  // namespace sonic::detail
