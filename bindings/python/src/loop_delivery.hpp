// sonic Python bindings — answers for asyncio: the outcome of each Client.ainfer() call is
// staged, with the GIL held, and handed to its event loop once per batch of completions.
#pragma once

#include <pybind11/pybind11.h>

namespace sonic::python {

namespace py = pybind11;

/// Stages `result` or `error` (one is None) for `future`, an asyncio future of `loop`. Sent
/// by the next flush_loop_deliveries(). Needs the GIL.
void stage_for_loop(py::object loop, py::object future, py::object result, py::object error);

/// Hands what was staged to each loop: one call_soon_threadsafe per loop (one wake-up of its
/// thread), however many answers it carries; a closed loop's are dropped. Needs the GIL.
void flush_loop_deliveries();

}  // namespace sonic::python
