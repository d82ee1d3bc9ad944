#include "caller_lane.hpp"

#include <cstdio>
#include <exception>

namespace sonic::net {

namespace {
// Runs `run` on the lane's context as a network thread runs its own: a handler that throws
// (std::bad_alloc, say) costs what it was doing, never the caller's wait.
template <typename Run>
void run_guarded(Run run) {
  try {
    run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sonic: a network handler failed and was dropped: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "sonic: a network handler failed and was dropped\n");
  }
}
}  // namespace

std::shared_ptr<CallerLane> CallerLane::of_this_thread() {
  thread_local std::shared_ptr<CallerLane> lane = std::make_shared<CallerLane>();
  return lane;
}

// One thread runs the context: the concurrency hint lets Asio skip what several would need.
CallerLane::CallerLane()
    : io_(std::make_shared<asio::io_context>(1)), guard_(asio::make_work_guard(*io_)) {}

// Connections still open on the lane (their channel outlives the thread) close when the context
// goes, with the last of them.
CallerLane::~CallerLane() { guard_.reset(); }

void CallerLane::catch_up() {
  if (running()) return;
  ++depth_;
  run_guarded([this] { io_->poll(); });
  --depth_;
}

void CallerLane::run_one() {
  ++depth_;
  run_guarded([this] { io_->run_one(); });
  --depth_;
}

void CallerLane::wake() {
  asio::post(*io_, [] {});
}

}  // namespace sonic::net
