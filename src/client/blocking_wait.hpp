// sonic — a thread waiting in a blocking call, and the connections it drives meanwhile.
//
// A blocking call that hands its request to a network thread and sleeps until that thread hands
// the answer back pays two thread wake-ups per call: on the 2-core development VM a blocking call
// of 64 B cost 62 µs of client CPU that way and costs 32 µs this way (SYNC=1 bench/vs_grpcio.sh,
// docs/performance.md). Instead, while a thread waits
// in Client::infer(), a transport may put the call on a connection of that thread's own (a
// CallerDrive, implemented by the network code in src/net), which the thread runs itself until
// the answer is there: it writes the request, waits in epoll, reads and decodes the answer, and
// no other thread takes part. This is how gRPC's synchronous stub works too (the caller polls its
// completion queue). Whatever decides the outcome elsewhere (a cancel, a retry on another thread,
// the CPU fallback) wakes the waiter through its drive.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "sonic/detail/export.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// The connections of one thread that only that thread runs, while it waits in a blocking call.
class CallerDrive {
 public:
  /// Runs one handler of the thread's connections, waiting for one if none is ready. Called
  /// only on the owning thread.
  virtual void run_one() = 0;
  /// Makes a run_one() under way (or the next) return. Thread-safe.
  virtual void wake() = 0;

 protected:
  ~CallerDrive() = default;
};

/// A blocking call's wait for its outcome. Constructed on the calling thread, which it marks as
/// waiting (WaitingThread::current()) until it is destroyed; the transports the call reaches on
/// that thread may then route it to a CallerDrive (drive_with()). Waits nest: the inner one is
/// current while it lives.
template <typename T>
class BlockingWait;

/// What the transports see of a waiting thread.
class WaitingThread {
 public:
  /// The wait of this thread's blocking call; null when the thread is not in one. Default
  /// visibility: one pointer per thread across every library of the process.
  SONIC_EXPORT static WaitingThread*& current() {
    thread_local WaitingThread* waiting = nullptr;
    return waiting;
  }

  /// A transport routed a call of this wait to `drive`, which this thread will run until the
  /// outcome is there. Called on the waiting thread only.
  void drive_with(std::shared_ptr<CallerDrive> drive) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->drive = std::move(drive);
    shared_->driving.store(true, std::memory_order_release);
  }

  /// Becomes true once a transport routed a call of this wait to the waiting thread's own
  /// connections; readable on any thread, as long as the pointer is held.
  std::shared_ptr<const std::atomic<bool>> driving() const {
    return std::shared_ptr<const std::atomic<bool>>(shared_, &shared_->driving);
  }

 protected:
  // What the waiter and whoever completes the wait share: the completion may run on any thread
  // and may outlive the waiter's frame.
  struct Shared {
    std::mutex mutex;
    std::condition_variable ready;
    std::shared_ptr<CallerDrive> drive;  // set once a transport routed a call to the waiter
    std::atomic<bool> driving{false};    // the same, for other threads
    bool done = false;
  };

  explicit WaitingThread(std::shared_ptr<Shared> shared)
      : shared_(std::move(shared)), previous_(current()) {
    current() = this;
  }
  ~WaitingThread() { current() = previous_; }
  WaitingThread(const WaitingThread&) = delete;
  WaitingThread& operator=(const WaitingThread&) = delete;

  // Marks the wait done (the value stored first), then wakes the waiter: through its drive if it
  // drives one (it is in run_one(), or about to be), else on the condition variable. On the
  // waiting thread itself, inside run_one(), there is no one to wake.
  static void finish(Shared& shared, std::thread::id waiter) {
    std::shared_ptr<CallerDrive> drive;
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.done = true;
      drive = shared.drive;
    }
    if (std::this_thread::get_id() == waiter) return;
    if (drive) return drive->wake();
    shared.ready.notify_one();
  }

  // Runs the drive, or sleeps, until finish() was called.
  void wait_until_done() {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    while (!shared_->done) {
      if (auto drive = shared_->drive) {
        lock.unlock();
        drive->run_one();
        lock.lock();
      } else {
        shared_->ready.wait(lock);
      }
    }
  }

  std::shared_ptr<Shared> shared_;
  const std::thread::id waiter_ = std::this_thread::get_id();

 private:
  WaitingThread* previous_;
};

template <typename T>
class BlockingWait final : public WaitingThread {
 public:
  BlockingWait() : BlockingWait(std::make_shared<WithOutcome>()) {}

  /// The callback that completes the wait: call it exactly once, on any thread, also after the
  /// waiter gave up its frame (it holds only the shared state).
  Callback<T> completion() {
    return [state = state_, waiter = waiter_](Result<T> outcome) mutable {
      state->outcome.emplace(std::move(outcome));
      finish(*state, waiter);
    };
  }

  /// Waits for the completion, driving the thread's connections meanwhile, and returns its
  /// outcome.
  Result<T> take() {
    wait_until_done();
    return std::move(*state_->outcome);
  }

 private:
  // The outcome is written by the completion before it marks the wait done, read by the waiter
  // after.
  struct WithOutcome : Shared {
    std::optional<Result<T>> outcome;
  };

  explicit BlockingWait(std::shared_ptr<WithOutcome> state)
      : WaitingThread(state), state_(std::move(state)) {}

  std::shared_ptr<WithOutcome> state_;
};

}  // namespace sonic::detail
