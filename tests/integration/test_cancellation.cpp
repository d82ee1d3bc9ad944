// Cancelling requests: RequestHandle::cancel() completes the request with CANCELLED at once and
// resets its stream on the wire; racing completions still complete each request exactly once.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"
#include "loopback_socket.hpp"
#include "scripted_h2_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions unvalidated() {
  ClientOptions options;
  options.validate_inputs = false;  // the scripted server knows no metadata
  return options;
}

}  // namespace

TEST_CASE("a cancelled request completes with CANCELLED at once and its stream is reset") {
  ScriptedH2Server server(H2Script{0, /*answer=*/false});
  Client client(server.url(), unvalidated());
  std::promise<Result<InferResult>> outcome;
  auto handle = client.infer_async(simple_request(1, 2),
                                   [&](Result<InferResult> r) { outcome.set_value(std::move(r)); });
  REQUIRE(eventually([&] { return server.calls_received() == 1; }, 3000ms));

  auto start = std::chrono::steady_clock::now();
  CHECK(handle.cancel());
  auto result = outcome.get_future().get();
  CHECK(ms_since(start) < 200);
  CHECK(result.code() == StatusCode::Cancelled);
  CHECK(result.error().message().find("cancelled by the caller") != std::string::npos);
  CHECK(eventually([&] { return server.cancels_received() == 1; }, 3000ms));  // RST_STREAM CANCEL

  CHECK_FALSE(handle.cancel());  // only once
  CHECK(client.stats().failures_by_code[static_cast<std::size_t>(StatusCode::Cancelled)] == 1);
}

TEST_CASE("cancel() after completion, on an empty handle, or after the client is gone: false") {
  LoopbackServer server;
  RequestHandle handle;
  CHECK_FALSE(handle.cancel());
  {
    Client client(server.url());
    std::promise<bool> ok;
    handle = client.infer_async(simple_request(3, 4),
                                [&](Result<InferResult> r) { ok.set_value(r.ok()); });
    CHECK(ok.get_future().get());
    CHECK_FALSE(handle.cancel());
    handle =
        client.infer_async(InferRequest(kSlowModel)
                               .input("INPUT0", Tensor::from_vector(std::vector<float>(4), {2, 2})),
                           [](Result<InferResult>) {});
  }  // the destructor cancels the slow request itself
  CHECK_FALSE(handle.cancel());
}

TEST_CASE("a request waiting for its retry backoff is cancelled at once") {
  ClientOptions options;
  options.retry.initial_backoff = 2000ms;
  options.retry.jitter = 0;
  Client client(unused_url(), options);
  std::promise<Result<InferResult>> outcome;
  auto handle = client.infer_async(simple_request(1, 2),
                                   [&](Result<InferResult> r) { outcome.set_value(std::move(r)); });
  REQUIRE(eventually([&] { return client.stats().endpoints[0].failures == 1; }, 3000ms));
  auto start = std::chrono::steady_clock::now();
  CHECK(handle.cancel());
  CHECK(outcome.get_future().get().code() == StatusCode::Cancelled);
  CHECK(ms_since(start) < 200);
  std::this_thread::sleep_for(50ms);
  CHECK(client.stats().retries == 0);  // the pending retry never ran
}

TEST_CASE("cancelling racing with completion: each request completes exactly once, correctly") {
  LoopbackServer server;
  Client client(server.url());
  constexpr int kThreads = 4, kPerThread = 250;
  std::atomic<int> wrong{0}, twice{0};
  std::vector<std::unique_ptr<std::atomic<int>>> calls(kThreads * kPerThread);
  for (auto& c : calls) c = std::make_unique<std::atomic<int>>(0);
  std::vector<std::atomic<int>> cancelled_now(kThreads * kPerThread);
  std::vector<std::atomic<int>> outcome_code(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int index = t * kPerThread + i;
        auto handle =
            client.infer_async(simple_request(index, 1), [&, index](Result<InferResult> r) {
              if (calls[index]->fetch_add(1) != 0) ++twice;
              if (r) {
                auto sum = r->output("OUTPUT0").as<std::int32_t>();
                if (sum[0] != index + 1) ++wrong;
              }
              outcome_code[index] = static_cast<int>(r.code());
            });
        // Cancel two requests in three: some at once, some after a moment, racing the answer.
        if (i % 3 == 1) cancelled_now[index] = handle.cancel() ? 1 : 0;
        if (i % 3 == 2) {
          std::this_thread::sleep_for(std::chrono::microseconds(50 * (i % 7)));
          cancelled_now[index] = handle.cancel() ? 1 : 0;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(eventually(
      [&] {
        for (auto& c : calls) {
          if (*c == 0) return false;
        }
        return true;
      },
      10'000ms));
  int cancelled = 0;
  for (int index = 0; index < kThreads * kPerThread; ++index) {
    bool was_cancelled = outcome_code[index] == static_cast<int>(StatusCode::Cancelled);
    CHECK(was_cancelled == (cancelled_now[index] == 1));  // cancel() true <=> CANCELLED
    if (!was_cancelled) CHECK(outcome_code[index] == 0);
    cancelled += was_cancelled;
  }
  CHECK(twice == 0);
  CHECK(wrong == 0);
  CHECK(cancelled > kThreads * kPerThread / 4);
  MESSAGE("cancelled " << cancelled << " of " << kThreads * kPerThread);
  // The connection stays healthy for the requests that follow.
  CHECK(client.infer(simple_request(20, 22)).output("OUTPUT0").as<std::int32_t>()[0] == 42);
}
