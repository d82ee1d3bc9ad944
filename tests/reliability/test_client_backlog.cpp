// The client's own overload: a request's outcome reaches its callback by its deadline (within the
// watch's grace and a loaded machine's scheduling) whatever backlog of other requests' outcomes
// waits for the callback threads, each callback still running once; and
// ClientOptions::max_in_flight refuses a request past it at once, outside the call.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "fake_transport.hpp"
#include "sanitizers.hpp"
#include "simple_request.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Past the deadline: the watch's grace and tick (7 ms) and a loaded machine's scheduling, as in
// test_deadline_watch.cpp. The backlog below is worth many times that.
constexpr double kBacklogLateBoundMs = 50;
// A backlog of other requests' outcomes for the one callback thread: each of their callbacks
// holds it this long, about a second in all.
constexpr int kBacklog = 8'000;
constexpr auto kEachCallback = 120us;

ClientOptions backlog_options(const FakeServer& server) {
  ClientOptions options;
  options.endpoints = {server.url()};
  options.validate_inputs = false;
  options.callbacks = CallbackThread::Pool;
  options.callback_threads = 1;
  return options;
}

void spin_for(std::chrono::microseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Sends kBacklog requests answered at once, whose callbacks then queue for the callback thread;
// `ran` counts them.
void flood_callbacks(Client& client, std::atomic<int>& ran) {
  for (int i = 0; i < kBacklog; ++i) {
    client.infer_async(simple_request(1, 2), [&ran](Result<InferResult>) {
      spin_for(kEachCallback);
      ++ran;
    });
  }
}

struct BacklogProbe {
  std::atomic<int> calls{0};
  std::promise<StatusCode> code;
  std::promise<double> late_ms;
};

void send_backlog_probe(Client& client, BacklogProbe& probe, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  client.infer_async(simple_request(3, 4).timeout(timeout),
                     [&probe, deadline](Result<InferResult> result) {
                       if (++probe.calls > 1) return;
                       probe.late_ms.set_value(ms_since(deadline));
                       probe.code.set_value(result.code());
                     });
}

}  // namespace

TEST_CASE("a deadline's outcome goes ahead of a backlog of other outcomes") {
  FakeServer server("backlog-deadline");
  std::atomic<int> ran{0};
  BacklogProbe probe;
  double late = 0;
  {
    Client client(backlog_options(server));
    flood_callbacks(client, ran);
    server.hold();  // the probe is never answered: its deadline decides it
    send_backlog_probe(client, probe, 50ms);
    auto late_ms = probe.late_ms.get_future();
    REQUIRE(late_ms.wait_for(10s) == std::future_status::ready);
    late = late_ms.get();
    CHECK(probe.code.get_future().get() == StatusCode::DeadlineExceeded);
    CHECK(ran < kBacklog);  // it did overtake them
  }                         // every callback has run
  CHECK(ran == kBacklog);
  CHECK(probe.calls == 1);
  CAPTURE(late);
#if !defined(SONIC_TEST_SANITIZED)
  CHECK(late < kBacklogLateBoundMs);  // without its lane: behind the whole backlog, about a second
#endif
}

TEST_CASE("an answer in time that waits behind other outcomes is handed over by its deadline") {
  FakeServer server("backlog-answer");
  std::atomic<int> ran{0};
  BacklogProbe probe;
  double late = 0;
  {
    Client client(backlog_options(server));
    flood_callbacks(client, ran);
    send_backlog_probe(client, probe, 50ms);  // answered at once, queued behind the flood_callbacks
    auto late_ms = probe.late_ms.get_future();
    REQUIRE(late_ms.wait_for(10s) == std::future_status::ready);
    late = late_ms.get();
    CHECK(probe.code.get_future().get() == StatusCode::Ok);  // the answer, not an expiry
    CHECK(ran < kBacklog);
  }
  CHECK(ran == kBacklog);
  CHECK(probe.calls == 1);  // its queued hand-over ran nothing
  CAPTURE(late);
#if !defined(SONIC_TEST_SANITIZED)
  CHECK(late < kBacklogLateBoundMs);
#endif
}

TEST_CASE("ClientOptions::max_in_flight refuses a request past it at once, outside the call") {
  FakeServer server("bounded");
  ClientOptions options = backlog_options(server);
  options.max_in_flight = 3;
  Client client(options);
  server.hold();
  std::vector<std::future<InferResult>> held;
  for (int i = 0; i < 3; ++i) held.push_back(client.infer_future(simple_request(1, 2)));

  // The fourth: RESOURCE_EXHAUSTED naming the option, its callback outside the call: after it
  // returned, or on another thread (which may run it before this one sees the return).
  std::atomic<bool> returned{false};
  bool after_the_call = false;
  std::promise<Error> refused;
  const auto caller = std::this_thread::get_id();
  client.infer_async(simple_request(1, 2), [&](Result<InferResult> result) {
    after_the_call = returned.load() || std::this_thread::get_id() != caller;
    refused.set_value(result ? Error(StatusCode::Ok, "answered") : result.error());
  });
  returned = true;
  auto refusal = refused.get_future();
  REQUIRE(refusal.wait_for(5s) == std::future_status::ready);
  const Error error = refusal.get();
  CHECK(after_the_call);
  CHECK(error.code() == StatusCode::ResourceExhausted);
  CHECK(std::string(error.message()).find("max_in_flight (3)") != std::string::npos);
  // A blocking call and a future count too.
  CHECK_THROWS_AS(client.infer(simple_request(1, 2)), Error);
  CHECK(server.calls() == 3);  // the refused ones never reached the server

  server.release();
  for (auto& answer : held) CHECK_FALSE(answer.get().outputs().empty());
  // Room again once their outcomes were handed over.
  server.hold(false);
  CHECK_FALSE(client.infer(simple_request(1, 2)).outputs().empty());
}
