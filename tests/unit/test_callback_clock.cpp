// CallbackClock: the network threads' watcher moves a lane to a new thread only while the
// callback it saw running still runs, and the old thread always learns of it when that
// callback returns; so a lane is never run by two threads at once.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "net/callback_clock.hpp"

using sonic::net::CallbackClock;

TEST_CASE("a hand-off decided while a callback runs takes effect, and its thread leaves") {
  CallbackClock clock;
  clock.begin();
  const std::uint64_t seen = clock.look();
  CHECK(seen % 2 == 1);
  CHECK(clock.look() == seen);  // the same callback at the second look
  CHECK(clock.hand_off_if_still(seen));
  CHECK(clock.handed_off());
  CHECK(clock.end());  // the thread leaves
}

TEST_CASE("a hand-off decided on a look taken before the callback returned does not happen") {
  // The watcher saw the callback running at two looks and decided to move the lane; the
  // callback returned before the move. The thread goes on running the lane, so the lane must
  // not get a second thread.
  CallbackClock clock;
  clock.begin();
  const std::uint64_t seen = clock.look();
  CHECK_FALSE(clock.end());
  CHECK_FALSE(clock.hand_off_if_still(seen));
  CHECK_FALSE(clock.handed_off());

  // Nor while a later callback runs: it has not run for a tick yet.
  clock.begin();
  CHECK_FALSE(clock.hand_off_if_still(seen));
  CHECK_FALSE(clock.end());
}

TEST_CASE("a callback about to block moves its lane on once, whoever asks first") {
  CallbackClock clock;
  clock.begin();
  const std::uint64_t seen = clock.look();
  CHECK(clock.hand_off());                     // the callback itself
  CHECK_FALSE(clock.hand_off());               // asked again: already moved
  CHECK_FALSE(clock.hand_off_if_still(seen));  // the watcher: already moved, no second thread
  CHECK(clock.end());
}

TEST_CASE("racing callbacks' ends against hand-offs: the thread leaves exactly when one happened") {
  // One thread runs callbacks of every length while another looks and hands off as the
  // watcher does. A hand-off that happened and a thread that did not leave (or the reverse)
  // would be two threads on one lane (or a lane with none).
  for (int round = 0; round < 200; ++round) {
    CallbackClock clock;
    std::atomic<bool> left{false};
    std::thread lane([&] {
      for (std::uint64_t i = 0;; ++i) {
        clock.begin();
        for (std::uint64_t spin = 0; spin < i % 64; ++spin)
          std::atomic_signal_fence(std::memory_order_seq_cst);
        if (clock.end()) {
          left = true;
          return;
        }
      }
    });
    bool handed_off = false;
    std::uint64_t last = clock.look();
    while (!handed_off) {
      const std::uint64_t now = clock.look();
      if (now == last && now % 2 == 1) handed_off = clock.hand_off_if_still(now);
      last = now;
    }
    lane.join();
    CHECK(left);
  }
}
