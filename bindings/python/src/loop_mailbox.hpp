// sonic Python bindings — what an asyncio event loop exchanges with sonic's network threads.
// Each loop has a mailbox. Outgoing: the requests its coroutines send in one turn of the loop
// are handed to the network threads together, at the end of the turn. Incoming: network
// threads leave answers without the GIL, and the loop's own thread completes them, woken
// through a file descriptor it watches. No other thread takes the GIL for an ainfer() call.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "convert.hpp"
#include "net/post_batch.hpp"

namespace sonic::python {

namespace py = pybind11;

/// One asyncio event loop's mailbox.
///
/// Incoming, a network thread posts a job without the GIL; the loop runs the jobs in its own
/// thread, where the GIL is already held, once its selector reports the mailbox's eventfd
/// readable: one wake-up, one system call on each side and no GIL handoff for however many
/// answers arrived meanwhile. (A completion thread that took the GIL and called
/// loop.call_soon_threadsafe per batch made the GIL change hands twice per batch, and woke two
/// threads instead of one.)
///
/// Outgoing, sends are held (net::PostBatch) until kSendsPerWakeup are, or the loop's turn
/// ends: the coroutines woken by one batch of answers each send their next request in that
/// turn, and a network thread asleep in epoll is woken once per few of them, not once each (a
/// wake-up is an eventfd write and, under a hypervisor, an inter-processor interrupt: more
/// than the hand-over itself).
class LoopMailbox : public std::enable_shared_from_this<LoopMailbox> {
 public:
  /// Held sends are posted once this many are. Holding a whole turn's sends costs the least
  /// CPU, but the server then idles until the loop's turn ends and the loop idles while the
  /// server answers them all: at 16 in flight that was the slowest choice. Posting every 4
  /// keeps both busy (bench/python_vs_cpp.sh, asyncio at 16 in flight, medians of 5: 43k/s
  /// holding all, 46k/s holding none, 57k/s posting every 4; 6 and 8 in between).
  static constexpr std::size_t kSendsPerWakeup = 4;

  /// The mailbox of `loop`, the running event loop of the calling thread: made on first use
  /// and watched by the loop (loop.add_reader) from then on; kept while the loop lives (a
  /// weak-keyed registry). Needs the GIL. Raises what add_reader raises for a loop without
  /// one (Windows' proactor loop).
  static std::shared_ptr<LoopMailbox> of(py::handle loop);

  /// Runs `send`, which hands requests to sonic, with their hand-over to the network threads
  /// held until the end of this turn of `loop` (a loop.call_soon). `send` must keep the GIL:
  /// Client.close() posts what is held, from any thread, so that it never waits for a request
  /// that was not handed over. Needs the GIL; in the loop's thread.
  template <typename Send>
  auto send_this_turn(py::handle loop, Send&& send) {
    struct EndOfTurn {
      LoopMailbox& self;
      py::handle loop;
      ~EndOfTurn() { self.flush_at_end_of_turn(loop); }
    } end_of_turn{*this, loop};
    net::PostBatch::Open open(sends_);
    return send();
  }

  /// Posts the sends every loop holds, now. Needs the GIL.
  static void flush_all_sends();

  /// Runs `job` in the loop's thread, with the GIL held, soon and never inside this call;
  /// jobs run in the order posted and must not throw. A job posted once the loop closed never
  /// runs: it is destroyed with the mailbox, so what it holds must free itself without the
  /// GIL being held (sonic::python::Held). Thread-safe; does not need the GIL.
  void post(std::function<void()> job);

  LoopMailbox(const LoopMailbox&) = delete;
  LoopMailbox& operator=(const LoopMailbox&) = delete;
  ~LoopMailbox();

 private:
  LoopMailbox();
  static std::shared_ptr<LoopMailbox> find_or_make(py::handle loop);

  /// The loop's reader: runs what was posted. In the loop's thread, with the GIL.
  void drain();
  /// After a send: asks the loop to post the held sends once its turn ends, unless it was
  /// asked already; posts them now if the loop cannot be asked. With the GIL; never throws.
  void flush_at_end_of_turn(py::handle loop) noexcept;
  /// Posts the held sends. With the GIL.
  void flush_sends();

  const int wake_fd_;  // an eventfd: readable while a wake-up is pending
  std::mutex mutex_;
  std::vector<std::function<void()>> jobs_;  // guarded by mutex_
  bool wake_pending_ = false;                // guarded by mutex_: wake_fd_ was written

  // Guarded by the GIL. While sends_ holds anything, the mailbox is in holding_sends().
  net::PostBatch sends_;
  bool flush_scheduled_ = false;
  std::unique_ptr<Held> flush_callback_;  // made once: the loop.call_soon callable
};

}  // namespace sonic::python
