// sonic Python bindings — answers for asyncio: each event loop has an inbox that network
// threads fill without the GIL, and that the loop's own thread empties, woken through a file
// descriptor it watches. No other thread takes the GIL for an ainfer() answer.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace sonic::python {

namespace py = pybind11;

/// The jobs waiting for one asyncio event loop. A network thread posts without the GIL; the
/// loop runs them in its own thread, where the GIL is already held, once its selector reports
/// the inbox's eventfd readable: one wake-up, one system call on each side and no GIL handoff
/// for however many answers arrived meanwhile. (A completion thread that took the GIL and
/// called loop.call_soon_threadsafe per batch made the GIL change hands twice per batch, and
/// woke two threads instead of one.)
class LoopInbox {
 public:
  /// The inbox of `loop`, the running event loop of the calling thread: made on first use and
  /// watched by the loop (loop.add_reader) from then on; kept while the loop lives (a
  /// weak-keyed registry). Needs the GIL. Raises what add_reader raises for a loop without
  /// one (Windows' proactor loop).
  static std::shared_ptr<LoopInbox> of(py::handle loop);

  /// Runs `job` in the loop's thread, with the GIL held, soon and never inside this call;
  /// jobs run in the order posted and must not throw. A job posted once the loop closed never
  /// runs: it is destroyed with the inbox, on whichever thread lets go of it last, so what it
  /// holds must be safe to destroy there, with or without the GIL (sonic::python::Held).
  /// Thread-safe; does not need the GIL.
  void post(std::function<void()> job);

  LoopInbox(const LoopInbox&) = delete;
  LoopInbox& operator=(const LoopInbox&) = delete;
  ~LoopInbox();

 private:
  LoopInbox();
  static std::shared_ptr<LoopInbox> find_or_make(py::handle loop);

  /// The loop's reader: runs what was posted. In the loop's thread, with the GIL.
  void drain();

  const int wake_fd_;  // an eventfd: readable while a wake-up is pending
  std::mutex mutex_;
  std::vector<std::function<void()>> jobs_;  // guarded by mutex_
  bool wake_pending_ = false;                // guarded by mutex_: wake_fd_ was written
};

}  // namespace sonic::python
