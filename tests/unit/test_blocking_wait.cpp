// A blocking call's wait: it drives the connections a transport gave it, and whoever completes
// it on another thread wakes it there; without a drive it sleeps. Nested waits restore the outer.
#include "client/blocking_wait.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

using sonic::Error;
using sonic::Result;
using sonic::StatusCode;
using sonic::detail::BlockingWait;
using sonic::detail::CallerDrive;
using sonic::detail::WaitingThread;

namespace {

// A lane in miniature: a queue of handlers that run_one() runs one at a time, waiting for one
// when there is none; wake() queues an empty one, as a post to an io_context does.
class QueueDrive final : public CallerDrive {
 public:
  void post(std::function<void()> handler) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      handlers_.push_back(std::move(handler));
    }
    ready_.notify_one();
  }
  void run_one() override {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !handlers_.empty(); });
    auto handler = std::move(handlers_.front());
    handlers_.pop_front();
    lock.unlock();
    runner = std::this_thread::get_id();
    ++runs;
    handler();
  }
  void wake() override {
    wakes.fetch_add(1);
    post([] {});
  }

  std::atomic<int> wakes{0};
  int runs = 0;  // the waiting thread's
  std::thread::id runner;

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> handlers_;
};

}  // namespace

TEST_CASE("a wait drives its thread's connections and is completed inside them, unwoken") {
  auto drive = std::make_shared<QueueDrive>();
  BlockingWait<int> wait;
  REQUIRE(WaitingThread::current() == &wait);
  wait.drive_with(drive);
  auto done = wait.completion();
  drive->post([] {});  // some other handler first (a write, say)
  drive->post([&done] { done(42); });
  CHECK(wait.take().value() == 42);
  CHECK(drive->runs == 2);
  CHECK(drive->runner == std::this_thread::get_id());
  CHECK(drive->wakes == 0);
}

TEST_CASE("an outcome decided on another thread wakes the thread driving its connections") {
  auto drive = std::make_shared<QueueDrive>();
  BlockingWait<int> wait;
  wait.drive_with(drive);
  std::thread elsewhere([done = wait.completion()]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done(Error(StatusCode::Cancelled, "cancelled elsewhere"));
  });
  auto outcome = wait.take();
  elsewhere.join();
  CHECK(outcome.code() == StatusCode::Cancelled);
  CHECK(drive->wakes == 1);
}

TEST_CASE("a wait without connections of its own sleeps until another thread completes it") {
  BlockingWait<int> wait;
  std::thread elsewhere([done = wait.completion()]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done(7);
  });
  CHECK(wait.take().value() == 7);
  elsewhere.join();
}

TEST_CASE("a completion may outlive the wait's frame, and waits nest") {
  Result<int> outer_result = Error(StatusCode::Unknown, "unset");
  {
    BlockingWait<int> outer;
    {
      BlockingWait<int> inner;
      CHECK(WaitingThread::current() == &inner);
      auto done = inner.completion();
      done(1);
      CHECK(inner.take().value() == 1);
    }
    CHECK(WaitingThread::current() == &outer);
    auto late = outer.completion();
    late(2);
    outer_result = outer.take();
    late = nullptr;  // dropped after its wait was taken: it holds only the shared state
  }
  CHECK(outer_result.value() == 2);
  CHECK(WaitingThread::current() == nullptr);
}
