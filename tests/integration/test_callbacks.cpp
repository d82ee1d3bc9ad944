// ClientOptions::callbacks. Network (the default): callbacks run on the network thread after
// its I/O, and one that runs long or blocks moves the connection to a fresh thread instead of
// stalling it; that client's callbacks then run on the callback threads until they have been
// quick for a while. Inline: callbacks run on the thread that completes the request, blocking calls
// there fail instead of deadlocking. Whichever: never inside the user's own call, and a client
// destroyed inside a callback finishes on another thread.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client/callback_host.hpp"
#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions options_for(CallbackThread where) {
  ClientOptions options;
  options.callbacks = where;
  return options;
}

ClientOptions inline_options() { return options_for(CallbackThread::Inline); }

constexpr CallbackThread kEveryPlace[] = {CallbackThread::Network, CallbackThread::Pool,
                                          CallbackThread::Inline};

// Whether the calling thread is a network thread (one that hosts callbacks).
bool on_network_thread() { return detail::CallbackHost::current() != nullptr; }

InferRequest slow_request() {
  return InferRequest(kSlowModel)
      .input("INPUT0", Tensor::from_vector(std::vector<float>(4, 1.0f), {1, 4}));
}

// The ids of the threads that ran callbacks, how many ran, and how often the thread changed
// from one callback to the next.
struct Completions {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::thread::id last;
  int ok = 0, failed = 0, changes = 0;
  void record(bool success) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto me = std::this_thread::get_id();
    if (!threads.empty() && me != last) ++changes;
    last = me;
    threads.insert(me);
    (success ? ok : failed) += 1;
  }
};

}  // namespace

TEST_CASE("2000 requests from 4 threads complete once, right, on the network thread") {
  LoopbackServer server;
  for (CallbackThread where : {CallbackThread::Network, CallbackThread::Inline}) {
    CAPTURE(static_cast<int>(where));
    Client client(server.url(), options_for(where));
    Completions completions;
    std::atomic<int> wrong{0}, elsewhere{0};
    std::vector<std::thread> senders;
    for (int t = 0; t < 4; ++t) {
      senders.emplace_back([&, t] {
        for (int i = 0; i < 500; ++i) {
          int a = t * 1000 + i;
          client.infer_async(simple_request(a, 1), [&, a](Result<InferResult> r) {
            if (r && r->output("OUTPUT0").as<std::int32_t>()[0] != a + 1) ++wrong;
            if (!on_network_thread()) ++elsewhere;
            completions.record(r.ok());
          });
        }
      });
    }
    for (auto& sender : senders) sender.join();
    REQUIRE(eventually(
        [&] {
          std::lock_guard<std::mutex> lock(completions.mutex);
          return completions.ok + completions.failed == 2000;
        },
        20000ms));
    CHECK(completions.ok == 2000);
    CHECK(wrong == 0);
    // One endpoint, one connection, one network thread: every callback ran there. Unless the
    // watcher saw one held past its budget: a network thread descheduled for a millisecond
    // mid-callback (a loaded machine) counts as held, and the client then uses the callback
    // threads, which its statistics say. Inline callbacks never move.
    if (client.stats().slow_callbacks == 0) {
      CHECK(elsewhere == 0);
      // A thread descheduled after the callbacks it ran, before it was done with them, moves
      // the connection to a fresh network thread too, uncounted as no callback held it: the
      // callbacks then go on there, and never back. So one thread after another, never two
      // taking turns (which would be callbacks spread over several network threads).
      CHECK(completions.changes == static_cast<int>(completions.threads.size()) - 1);
    } else {
      CHECK(where == CallbackThread::Network);
    }
  }
}

TEST_CASE("callbacks never run inside infer_async or cancel(), wherever they run") {
  LoopbackServer server;
  for (CallbackThread where : kEveryPlace) {
    Client client(server.url(), options_for(where));
    thread_local bool inside_call = false;

    // An error found before sending completes at once, yet not inside the call.
    std::promise<bool> ran_inside;
    inside_call = true;
    client.infer_async(InferRequest(""),
                       [&](Result<InferResult> r) { ran_inside.set_value(inside_call && !r); });
    inside_call = false;
    CHECK_FALSE(ran_inside.get_future().get());

    // A cancelled request is answered, but not inside cancel().
    std::promise<bool> cancelled_inside;
    auto handle = client.infer_async(slow_request(), [&](Result<InferResult> r) {
      cancelled_inside.set_value(inside_call && r.code() == StatusCode::Cancelled);
    });
    inside_call = true;
    CHECK(handle.cancel());
    inside_call = false;
    CHECK_FALSE(cancelled_inside.get_future().get());
  }
}

TEST_CASE("an exception thrown by a callback is caught, counted and logged, wherever it runs") {
  LoopbackServer server;
  for (CallbackThread where : kEveryPlace) {
    CAPTURE(static_cast<int>(where));
    auto options = options_for(where);
    std::mutex mutex;
    std::vector<std::string> errors;
    options.log = [&](LogLevel level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      if (level == LogLevel::Error) errors.push_back(message);
    };
    Client client(server.url(), options);
    std::atomic<int> threw{0};
    for (int i = 0; i < 3; ++i) {
      client.infer_async(simple_request(i, 1), [&](Result<InferResult>) {
        ++threw;
        throw std::runtime_error("the module failed");
      });
    }
    REQUIRE(eventually([&] { return client.stats().callback_exceptions == 3; }));
    CHECK(threw == 3);
    // Each is counted, then logged: under load the third count came before its line.
    REQUIRE(eventually([&] {
      std::lock_guard<std::mutex> lock(mutex);
      return errors.size() == 3;
    }));
    {
      std::lock_guard<std::mutex> lock(mutex);
      CHECK(errors[0].find("the module failed") != std::string::npos);
    }
    // The threads that ran them go on serving.
    CHECK(client.infer(simple_request(3, 4)).output("OUTPUT0").as<std::int32_t>()[0] == 7);
    std::promise<int> next;
    client.infer_async(simple_request(5, 6), [&](Result<InferResult> r) {
      next.set_value(r->output("OUTPUT0").as<std::int32_t>()[0]);
    });
    CHECK(next.get_future().get() == 11);
  }
}

TEST_CASE("forward_exceptions hands a callback's exception to the framework") {
  LoopbackServer server;
  Client client(server.url());
  std::promise<std::exception_ptr> forwarded;
  client.infer_async(simple_request(1, 1),
                     forward_exceptions<InferResult>(
                         [](Result<InferResult> r) {
                           if (r) throw std::logic_error("bad event");
                         },
                         [&](std::exception_ptr e) { forwarded.set_value(e); }));
  auto thrown = forwarded.get_future().get();
  REQUIRE(thrown);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(thrown), "bad event", std::logic_error);
  CHECK(client.stats().callback_exceptions == 0);

  // A failed request as the exception a framework's waiting task is resumed with.
  std::promise<std::exception_ptr> failed;
  client.infer_async(InferRequest("no_such_model"),
                     [&](Result<InferResult> r) { failed.set_value(exception_of(r)); });
  auto error = failed.get_future().get();
  REQUIRE(error);
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
  }
  CHECK(exception_of(Result<int>(3)) == nullptr);
}

TEST_CASE("a blocking call inside an inline callback fails with FAILED_PRECONDITION") {
  LoopbackServer server;
  Client client(server.url(), inline_options());
  std::promise<StatusCode> infer_code, control_code;
  // Caught here rather than by a test helper: a failed assertion must not throw through the
  // network thread.
  client.infer_async(simple_request(1, 2), [&](Result<InferResult>) {
    try {
      client.infer(simple_request(3, 4));
      infer_code.set_value(StatusCode::Ok);
    } catch (const Error& e) {
      infer_code.set_value(e.code());
    }
    try {
      client.server_live();
      control_code.set_value(StatusCode::Ok);
    } catch (const Error& e) {
      control_code.set_value(e.code());
    }
  });
  CHECK(infer_code.get_future().get() == StatusCode::FailedPrecondition);
  CHECK(control_code.get_future().get() == StatusCode::FailedPrecondition);
  // Outside a callback the same calls block and succeed.
  CHECK(client.server_live());
  CHECK(client.infer(simple_request(3, 4)).output("OUTPUT0").as<std::int32_t>()[0] == 7);
}

TEST_CASE("a callback may send the next request and may destroy the client") {
  LoopbackServer server;
  for (CallbackThread where : {CallbackThread::Network, CallbackThread::Inline}) {
    auto client = std::make_unique<Client>(server.url(), options_for(where));
    std::atomic<int> chained{0};
    std::promise<void> chain_done;
    // A chain of 200 requests, each sent from its predecessor's callback.
    std::function<void(Result<InferResult>)> next = [&](Result<InferResult> r) {
      REQUIRE(r.ok());
      if (++chained == 200) return chain_done.set_value();
      client->infer_async(simple_request(chained, 1), next);
    };
    client->infer_async(simple_request(0, 1), next);
    REQUIRE(chain_done.get_future().wait_for(20s) == std::future_status::ready);

    // The last owner lets go inside a callback while other requests are still in flight: they
    // complete (CANCELLED or answered) and nothing deadlocks or crashes.
    Completions slow;
    for (int i = 0; i < 3; ++i) {  // fewer than the server's threads: the next one is not queued
      client->infer_async(slow_request(), [&](Result<InferResult> r) { slow.record(r.ok()); });
    }
    // The callback may run before infer_async returns on this thread: like any object, the client
    // may only be destroyed once no other thread is inside one of its calls.
    std::promise<void> returned, destroyed;
    auto sender_done = returned.get_future().share();
    client->infer_async(simple_request(1, 1), [&, sender_done](Result<InferResult>) {
      sender_done.wait();
      client.reset();
      destroyed.set_value();
    });
    returned.set_value();
    REQUIRE(destroyed.get_future().wait_for(10s) == std::future_status::ready);
    CHECK(eventually(
        [&] {
          std::lock_guard<std::mutex> lock(slow.mutex);
          return slow.ok + slow.failed == 3;
        },
        10000ms));
    CHECK(slow.failed == 3);  // CANCELLED by the destruction, before the slow model answered
  }
}

TEST_CASE("a long network callback moves its connection on instead of stalling it") {
  LoopbackServer server;
  Client client(server.url());
  constexpr auto kHold = 600ms;  // far beyond the hand-off budget (one to two milliseconds)
  std::promise<void> holding, released;
  std::promise<std::chrono::steady_clock::time_point> second_done;
  client.infer_async(simple_request(1, 1), [&](Result<InferResult>) {
    holding.set_value();
    std::this_thread::sleep_for(kHold);
    released.set_value();
  });
  holding.get_future().wait();
  // The first callback holds the thread that reads this connection. The next reply is read
  // by another thread, and its callback runs there, long before the first returns.
  const auto sent = std::chrono::steady_clock::now();
  client.infer_async(simple_request(2, 2), [&](Result<InferResult> r) {
    CHECK(r.ok());
    second_done.set_value(std::chrono::steady_clock::now());
  });
  const auto waited = second_done.get_future().get() - sent;
  CHECK(waited < kHold / 2);
  // Once the long callback returns, this client's callbacks run on the callback threads.
  released.get_future().wait();
  auto runs_on_network = [&] {
    std::promise<bool> on_network;
    client.infer_async(simple_request(3, 3),
                       [&](Result<InferResult>) { on_network.set_value(on_network_thread()); });
    return on_network.get_future().get();
  };
  REQUIRE(eventually([&] { return !runs_on_network(); }));
  CHECK(client.stats().slow_callbacks == 1);
  // Quick ever since, for a second: they come back to the network thread (a thread that was
  // only preempted must not cost a client the network thread for good).
  const auto moved = std::chrono::steady_clock::now();
  REQUIRE(eventually(runs_on_network, 10s));
  CHECK(std::chrono::steady_clock::now() - moved >= 900ms);
}

TEST_CASE("a network callback may wait for the client: blocking calls and futures") {
  LoopbackServer server;
  Client client(server.url());
  std::promise<int> blocking_sum, future_sum;
  std::promise<bool> live;
  client.infer_async(simple_request(1, 2), [&](Result<InferResult>) {
    // The blocking API hands the connection on before it waits...
    blocking_sum.set_value(
        client.infer(simple_request(3, 4)).output("OUTPUT0").as<std::int32_t>()[0]);
    live.set_value(client.server_live());
  });
  CHECK(blocking_sum.get_future().get() == 7);
  CHECK(live.get_future().get());
  // ... and a future waited on inside a callback, which sonic cannot see, is still answered:
  // the thread is seen held, and the connection moves on.
  Client other(server.url());
  other.infer_async(simple_request(1, 2), [&](Result<InferResult>) {
    auto reply = other.infer_future(simple_request(5, 6));
    if (reply.wait_for(5s) != std::future_status::ready) return future_sum.set_value(-1);
    future_sum.set_value(reply.get().output("OUTPUT0").as<std::int32_t>()[0]);
  });
  CHECK(future_sum.get_future().get() == 11);
}

TEST_CASE("a stream callback that throws is caught and counted; the stream goes on") {
  LoopbackServer server;
  Client client(server.url());
  std::atomic<int> calls{0};
  auto stream = client.open_stream([&](StreamResponse) {
    ++calls;
    throw std::runtime_error("the module failed");
  });
  for (int i = 0; i < 5; ++i) REQUIRE(stream.send(simple_request(i, 1)).ok());
  stream.close();
  CHECK(stream.wait().ok());
  CHECK(calls == 5);
  CHECK(client.stats().callback_exceptions == 5);
}
