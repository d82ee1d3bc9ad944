// Where a client's callbacks run, and the count of outcomes a closing client waits for.
#include "client/callback_placement.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

using sonic::Callback;
using sonic::CallbackThread;
using sonic::ClientOptions;
using sonic::InferResult;
using sonic::Result;
using sonic::detail::CallbackContext;
using sonic::detail::CallbackPlacement;

namespace {

struct Placement {
  explicit Placement(CallbackThread where) { options.callbacks = where; }
  ClientOptions options;
  CallbackPlacement placement{options};

  // Places one callback; the thread it ran on.
  std::thread::id place(bool inside_callers_call) {
    std::promise<std::thread::id> ran;
    placement.expect();
    placement.place(
        [&](bool timed) {
          Callback<InferResult> done([&](Result<InferResult>) {
            CHECK(CallbackContext::in_callback());
            ran.set_value(std::this_thread::get_id());
          });
          placement.run_callback(done, InferResult(), timed);
          return std::size_t{1};
        },
        inside_callers_call);
    auto thread = ran.get_future();
    REQUIRE(thread.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    placement.wait_all_delivered();
    return thread.get();
  }
};

}  // namespace

TEST_CASE("CallbackThread::Pool: callbacks run on the callback threads") {
  Placement pool(CallbackThread::Pool);
  CHECK(pool.place(false) != std::this_thread::get_id());
}

TEST_CASE("CallbackThread::Inline: where the outcome is decided, unless inside the caller's call") {
  Placement inline_callbacks(CallbackThread::Inline);
  CHECK(inline_callbacks.place(false) == std::this_thread::get_id());
  CHECK(inline_callbacks.place(true) != std::this_thread::get_id());
}

TEST_CASE("CallbackThread::Network off a network thread: the callback threads") {
  Placement network(CallbackThread::Network);
  CHECK(network.place(false) != std::this_thread::get_id());
}

TEST_CASE("a callback that throws is counted, and the outcome still delivered") {
  Placement inline_callbacks(CallbackThread::Inline);
  inline_callbacks.placement.expect();
  inline_callbacks.placement.place(
      [&](bool timed) {
        Callback<InferResult> done(
            [](Result<InferResult>) { throw std::runtime_error("a bug in the caller"); });
        inline_callbacks.placement.run_callback(done, InferResult(), timed);
        return std::size_t{1};
      },
      false);
  inline_callbacks.placement.wait_all_delivered();  // returns: the outcome counts delivered
  CHECK(inline_callbacks.placement.callback_exceptions() == 1);
}

TEST_CASE("wait_all_delivered waits for every expected outcome") {
  Placement pool(CallbackThread::Pool);
  pool.placement.expect();
  pool.placement.expect();
  std::atomic<bool> waited{false};
  std::thread waiter([&] {
    pool.placement.wait_all_delivered();
    waited = true;
  });
  pool.placement.delivered();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(waited.load());  // one outcome is still out
  pool.placement.delivered();
  waiter.join();
  CHECK(waited.load());
}
