// The server under more work than it can do: a request nobody waits for any more never runs.
// Its caller's deadline travels with it on every protocol (gRPC's grpc-timeout, the request
// parameter sonic's HTTP and TCP clients send), a reset stream or a closed connection takes its
// queued requests back, and a request that would miss its deadline is refused at once, with a
// reason its client can act on. Each case holds the model's only thread with a gated execution
// and checks, through the model's own statistics, what reached it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// Holds every execution of "held" until opened; counts those that reached it.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int entered = 0;

  void set(bool to) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = to;
    }
    changed.notify_all();
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex);
    return entered;
  }
};

// "held": FP32 [-1] -> OUTPUT0 = INPUT0, one instance, each execution held by the gate.
Model held_model(const std::shared_ptr<Gate>& gate) {
  Model m;
  m.name = "held";
  m.inputs = {{"INPUT0", DataType::Fp32, {-1}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, {-1}}};
  m.compute = [gate](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    std::unique_lock<std::mutex> lock(gate->mutex);
    ++gate->entered;
    gate->changed.notify_all();
    gate->changed.wait(lock, [&] { return gate->open; });
    return std::vector<NamedTensor>{{"OUTPUT0", request.find_input("INPUT0")->tensor, {}}};
  };
  return m;
}

InferRequest held_request() {
  return InferRequest("held").input("INPUT0",
                                    Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}));
}

// A server whose executor has one thread and the held model; gRPC, TCP and HTTP ports.
struct HeldServer {
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::shared_ptr<CpuExecutor> executor = [this] {
    auto e = std::make_shared<CpuExecutor>(1);
    e->add_model(held_model(gate));
    return e;
  }();
  LoopbackServer server{executor, [] {
                          ServerOptions options;
                          options.tcp_port = 0;
                          options.http_port = 0;
                          options.quick_model_budget = std::chrono::microseconds(0);
                          return options;
                        }()};

  std::string url(const std::string& scheme) const {
    if (scheme == "grpc") return server.url();
    if (scheme == "tcp") return server.tcp_url();
    return "http://127.0.0.1:" + std::to_string(server.http_port());
  }
  ModelStatistics stats() const { return executor->statistics("held").value(); }

  // One request holds the model's only thread, from a client of its own.
  std::future<Result<InferResult>> hold() {
    holder.emplace(server.url());
    auto promise = std::make_shared<std::promise<Result<InferResult>>>();
    auto future = promise->get_future();
    holder->infer_async(held_request(),
                        [promise](Result<InferResult> r) { promise->set_value(std::move(r)); });
    REQUIRE(eventually([&] { return gate->count() == 1; }));
    return future;
  }
  std::optional<Client> holder;
};

ClientOptions single_attempt() {
  ClientOptions options;
  options.retry.max_attempts = 1;
  return options;
}

// Six requests held by the server, on its model's queue or in their connection's share of it,
// then cancelled by their client: each is answered CANCELLED, none reaches the model.
void cancelled_requests_leave_the_queues(const std::string& scheme) {
  HeldServer held;
  auto running = held.hold();
  Client client(held.url(scheme));
  std::vector<RequestHandle> handles;
  std::atomic<int> answered{0};
  // More than the connection's share of the executor (2 per thread): some wait in the
  // connection, the rest in the executor's queue.
  for (int i = 0; i < 6; ++i) {
    handles.push_back(client.infer_async(held_request(), [&](Result<InferResult> r) {
      CHECK(r.code() == StatusCode::Cancelled);
      ++answered;
    }));
  }
  // Sent (a request cancelled before it leaves the client never reaches the server).
  REQUIRE(eventually([&] { return held.stats().pending >= 1; }));
  std::this_thread::sleep_for(100ms);
  for (auto& handle : handles) CHECK(handle.cancel());
  CHECK(eventually([&] { return answered == 6; }));
  if (scheme != "http") {
    // Those waiting in their connection's share were let go as their cancels arrived, before
    // the model frees its thread (the HTTP client sends each on a connection of its own).
    CHECK(eventually([&] { return held.stats().failures.canceled >= 4; }));
  }
  held.gate->set(true);
  CHECK(running.get().ok());
  CHECK(eventually([&] { return held.stats().failures.canceled == 6; }));
  const auto final_stats = held.stats();
  CHECK(final_stats.failures.canceled == 6);
  CHECK(final_stats.failures.rejected == 0);
  CHECK(final_stats.failures.other == 0);
  CHECK(final_stats.failures.backend == 0);
  CHECK(final_stats.fail.count == 6);
  CHECK(final_stats.success.count == 1);
  CHECK(final_stats.execution_count == 1);
}

}  // namespace

TEST_CASE("a request whose deadline passes while it waits never reaches its model") {
  for (const std::string scheme : {"grpc", "http", "tcp"}) {
    CAPTURE(scheme);
    HeldServer held;
    auto running = held.hold();
    Client client(held.url(scheme), single_attempt());
    auto late = client.infer_future(held_request().timeout(100ms));
    CHECK_THROWS_AS(late.get(), Error);  // DEADLINE_EXCEEDED at the client, at 100 ms
    held.gate->set(true);
    CHECK(running.get().ok());
    // Whether the client's reset (gRPC), its closed connection (HTTP) or the deadline it sent
    // reached the server first, the request was answered unrun.
    CHECK(eventually([&] { return held.stats().failures.canceled == 1; }));
    CHECK(held.stats().execution_count == 1);
    CHECK(held.gate->count() == 1);
  }
}

TEST_CASE("requests cancelled by their client leave the server's queues without running") {
  // gRPC resets the stream (RST_STREAM CANCEL), HTTP closes the request's connection, tcp://
  // sends a cancel frame.
  for (const std::string scheme : {"grpc", "http", "tcp"}) {
    CAPTURE(scheme);
    cancelled_requests_leave_the_queues(scheme);
  }
}

TEST_CASE("a closed connection takes its queued requests back (TCP and HTTP)") {
  for (const std::string scheme : {"tcp", "http"}) {
    CAPTURE(scheme);
    HeldServer held;
    auto running = held.hold();
    {
      ClientOptions own_connections;  // closed with the client, not kept for others
      own_connections.share_connections = false;
      Client client(held.url(scheme), own_connections);
      for (int i = 0; i < 3; ++i) client.infer_async(held_request(), [](Result<InferResult>) {});
      // Sent, and held by the server: two in the executor's queue (over TCP, the connection's
      // share: the third waits in the connection; the HTTP client sends each on a connection
      // of its own).
      REQUIRE(eventually([&] { return held.stats().pending >= 2; }));
      std::this_thread::sleep_for(100ms);  // the third is on its way too
    }                                      // the client goes, and its connections close
    // The server notices the close on its network thread, while the model still holds its
    // executor thread: give it that moment, or the thread could take the next request first.
    std::this_thread::sleep_for(200ms);
    held.gate->set(true);
    CHECK(running.get().ok());
    CHECK(eventually([&] { return held.stats().failures.canceled == 3; }));
    CHECK(held.stats().failures.canceled == 3);
    CHECK(held.stats().pending == 0);
    CHECK(held.stats().execution_count == 1);
    CHECK(held.gate->count() == 1);
  }
}

TEST_CASE("a request that would miss its deadline is refused at once, and can go elsewhere") {
  for (const std::string scheme : {"grpc", "http", "tcp"}) {
    CAPTURE(scheme);
    HeldServer held;
    // The model runs once, for about 40 ms: the time the server expects of it.
    held.gate->set(false);
    auto first = held.hold();
    std::this_thread::sleep_for(40ms);
    held.gate->set(true);
    REQUIRE(first.get().ok());
    held.gate->set(false);
    // Four requests under way on its one instance.
    Client patient(held.url("grpc"));
    std::vector<std::future<InferResult>> queued;
    for (int i = 0; i < 4; ++i) queued.push_back(patient.infer_future(held_request()));
    REQUIRE(eventually([&] { return held.gate->count() == 2; }));
    // A fifth would be answered in about 200 ms: with 100 ms left it is refused at once.
    Client hurried(held.url(scheme), single_attempt());
    // Connected first: on a loaded machine making the connection alone can take the 100 ms.
    REQUIRE(hurried.server_live());
    const auto sent = std::chrono::steady_clock::now();
    auto refused = hurried.infer_future(held_request().timeout(100ms));
    try {
      refused.get();
      FAIL("it was answered");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::Unavailable);
      CHECK(e.reason() == "WOULD_MISS_DEADLINE");  // on every transport
      CHECK(e.message().find("refused at once") != std::string::npos);
    }
    CHECK(ms_since(sent) < 80);
    CHECK(held.stats().failures.rejected == 1);
    held.gate->set(true);
    for (auto& f : queued) CHECK_NOTHROW(f.get());
    CHECK(held.stats().execution_count == 5);
  }
}
