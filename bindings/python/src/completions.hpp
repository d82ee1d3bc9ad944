// sonic Python bindings — where async completions meet Python: one thread takes the GIL once
// for every completion that arrived meanwhile.
#pragma once

#include <functional>

namespace sonic::python {

/// Runs `job` with the GIL held, on the process's completion thread (started on first use),
/// soon and never inside this call. Jobs run one at a time in the order posted. Cheap for the
/// poster: a network thread hands its completions on without waiting for the GIL, and under
/// load one wake-up and one GIL acquisition serve many completions. (asyncio's answers go to
/// their event loops instead: loop_inbox.hpp.) Thread-safe.
void run_with_gil(std::function<void()> job);

}  // namespace sonic::python
