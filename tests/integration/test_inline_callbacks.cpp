// ClientOptions::inline_callbacks: completions run on the thread that completes the request,
// yet never inside the user's own call, blocking calls there fail instead of deadlocking, and a
// client destroyed there finishes on another thread.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions inline_options() {
  ClientOptions options;
  options.inline_callbacks = true;
  return options;
}

// The ids of the threads that ran callbacks, and how many ran.
struct Completions {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  int ok = 0, failed = 0;
  void record(bool success) {
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
    (success ? ok : failed) += 1;
  }
};

}  // namespace

TEST_CASE("inline callbacks: 2000 requests from 4 threads complete once, right, on one thread") {
  LoopbackServer server;
  Client client(server.url(), inline_options());
  Completions completions;
  std::atomic<int> wrong{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        int a = t * 1000 + i;
        client.infer_async(simple_request(a, 1), [&, a](Result<InferResult> r) {
          if (r && r->output("OUTPUT0").as<std::int32_t>()[0] != a + 1) ++wrong;
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
  // One endpoint, one network thread: every callback ran there, none on a sender.
  CHECK(completions.threads.size() == 1);
  for (const auto& sender : senders) CHECK(completions.threads.count(sender.get_id()) == 0);
}

TEST_CASE("inline callbacks never run inside infer_async or cancel()") {
  LoopbackServer server;
  Client client(server.url(), inline_options());
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
  auto handle = client.infer_async(
      InferRequest(kSlowModel)
          .input("INPUT0", Tensor::from_vector(std::vector<float>(4, 1.0f), {1, 4})),
      [&](Result<InferResult> r) {
        cancelled_inside.set_value(inside_call && r.code() == StatusCode::Cancelled);
      });
  inside_call = true;
  CHECK(handle.cancel());
  inside_call = false;
  CHECK_FALSE(cancelled_inside.get_future().get());
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

TEST_CASE("an inline callback may send the next request and may destroy the client") {
  LoopbackServer server;
  auto client = std::make_unique<Client>(server.url(), inline_options());
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
    client->infer_async(
        InferRequest(kSlowModel)
            .input("INPUT0", Tensor::from_vector(std::vector<float>(4, 1.0f), {1, 4})),
        [&](Result<InferResult> r) { slow.record(r.ok()); });
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
