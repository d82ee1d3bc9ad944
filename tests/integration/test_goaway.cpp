// A server that answers GOAWAY with a lower last-stream-id while calls are open: the calls it
// did not process start again on a new connection, transparently, and none fails.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "loopback_server.hpp"
#include "scripted_h2_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

TEST_CASE("GOAWAY naming the first stream: the refused calls restart on a new connection") {
  constexpr int kCalls = 8;
  ScriptedH2Server server(H2Script{/*goaway_after_calls=*/kCalls, /*answer=*/true});
  ClientOptions options;
  options.validate_inputs = false;  // the scripted server knows no metadata
  options.retry.max_attempts = 1;   // success must not depend on the client's retries
  Client client(server.url(), options);

  std::vector<std::future<InferResult>> futures;
  for (int i = 0; i < kCalls; ++i) futures.push_back(client.infer_future(simple_request(i, i)));
  int ok = 0;
  for (auto& f : futures) {
    try {
      f.get();
      ++ok;
    } catch (const Error& e) {
      FAIL_CHECK(std::string(e.what()));
    }
  }
  CHECK(ok == kCalls);
  CHECK(server.connections() == 2);
  CHECK(server.calls_answered() == kCalls);
  CHECK(server.calls_received() == kCalls + (kCalls - 1));  // the refused ones arrived twice
  auto stats = client.stats();
  CHECK(stats.retries == 0);
  CHECK(stats.succeeded == kCalls);
}

TEST_CASE("GOAWAY on every connection under load: 2000 requests from 4 threads, none lost") {
  ScriptedH2Server server(H2Script{0, true, /*goaway_every=*/50});
  ClientOptions options;
  options.validate_inputs = false;
  options.retry.max_attempts = 1;  // the restarts must be the transport's own
  Client client(server.url(), options);
  constexpr int kThreads = 4, kPerThread = 500;
  std::atomic<int> ok{0}, failed{0}, calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      // Batches of 25 in flight per thread: up to 100 calls open when a GOAWAY comes.
      for (int batch = 0; batch < kPerThread / 25; ++batch) {
        std::vector<std::future<InferResult>> futures;
        for (int i = 0; i < 25; ++i) futures.push_back(client.infer_future(simple_request(i, 1)));
        for (auto& f : futures) {
          try {
            f.get();
            ++ok;
          } catch (const Error& e) {
            ++failed;
            MESSAGE(std::string(e.what()));
          }
          ++calls;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(calls == kThreads * kPerThread);
  CHECK(ok == kThreads * kPerThread);
  CHECK(failed == 0);
  CHECK(server.calls_answered() == kThreads * kPerThread);  // each exactly once
  CHECK(server.connections() >= kThreads * kPerThread / 50);
  CHECK(client.stats().retries == 0);
  MESSAGE("2000 requests over " << server.connections() << " connections, each ended by GOAWAY; "
                                << server.calls_received() - server.calls_answered()
                                << " calls refused and restarted");
}
