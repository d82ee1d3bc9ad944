// A lane thread's count of the callbacks it runs, and the hand-off of its lane to a new
// thread, in one atomic word.
#pragma once

#include <atomic>
#include <cstdint>

namespace sonic::net {

/// The watcher looks at the clock now and then; seen odd, the same, at two looks in a row, one
/// callback has held the lane's thread for a tick or more, and the lane moves to a new thread.
/// The thread running that callback must then leave as soon as the callback returns and run
/// nothing more of the lane, or two threads would run the lane's connections at once.
///
/// A hand-off is decided on a look taken a moment ago, and the callback may have returned
/// since. So a hand-off and a callback's end are one atomic step each on one word: the
/// hand-off takes effect only while the clock still reads what the watcher saw (that
/// callback still runs), and the thread learns at the callback's end whether it happened.
/// Either the thread leaves, or the lane stays with it; never both threads.
class CallbackClock {
 public:
  /// Set in the word once the lane has moved on.
  static constexpr std::uint64_t kHandedOff = std::uint64_t{1} << 63;

  /// The lane's thread starts a callback. Sequentially consistent, like the watcher's going
  /// idle, so that the thread either sees the watcher asleep (and wakes it) or is seen.
  void begin() { word_.fetch_add(1); }

  /// The callback returned. Returns whether the lane moved on meanwhile: the thread must
  /// leave at once.
  bool end() {
    const std::uint64_t now = word_.fetch_add(1, std::memory_order_acq_rel) + 1;
    return (now & kHandedOff) != 0;
  }

  /// The clock as the watcher sees it: odd while a callback runs. Any thread.
  std::uint64_t look() const { return word_.load(std::memory_order_acquire) & ~kHandedOff; }

  /// The watcher: moves the lane on if the clock still reads `seen`, the look at which it saw
  /// the same callback running; false when that callback has returned (or the lane already
  /// moved). The caller starts the new thread only on true.
  bool hand_off_if_still(std::uint64_t seen) {
    return word_.compare_exchange_strong(seen, seen | kHandedOff, std::memory_order_acq_rel);
  }

  /// The lane's own thread, inside a callback about to block: moves the lane on now. Returns
  /// false when it had already moved.
  bool hand_off() {
    return (word_.fetch_or(kHandedOff, std::memory_order_acq_rel) & kHandedOff) == 0;
  }

  /// Whether the lane has moved on. Any thread.
  bool handed_off() const { return (word_.load(std::memory_order_acquire) & kHandedOff) != 0; }

 private:
  std::atomic<std::uint64_t> word_{0};
};

}  // namespace sonic::net
