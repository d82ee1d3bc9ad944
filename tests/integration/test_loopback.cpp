// End to end over loopback: values, sizes, concurrency, control calls.
// Over 500 lines: the loopback cases share one server and its helpers.
#include <doctest/doctest.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "compression_checks.hpp"
#include "eventually.hpp"
#include "example_model_checks.hpp"
#include "expect_error.hpp"
#include "loopback_server.hpp"
#include "model_control_checks.hpp"
#include "request_option_checks.hpp"
#include "sanitizers.hpp"
#include "stream_checks.hpp"
#include "thread_probe.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

TEST_CASE("simple returns sum and difference through infer, infer_async and infer_future") {
  LoopbackServer server;
  Client client(server.url());
  std::vector<std::int32_t> a(16), b(16);
  for (int i = 0; i < 16; ++i) {
    a[i] = i * 3;
    b[i] = 7 - i;
  }
  auto request = [&] {
    return InferRequest("simple")
        .id("req-42")
        .input("INPUT0", Tensor::view(a, {1, 16}))
        .input("INPUT1", Tensor::view(b, {1, 16}));
  };
  auto verify = [&](const InferResult& r) {
    CHECK(r.model_name() == "simple");
    CHECK(r.request_id() == "req-42");
    auto sum = r.output("OUTPUT0").as<std::int32_t>();
    auto difference = r.output("OUTPUT1").as<std::int32_t>();
    REQUIRE(sum.size() == 16);
    for (int i = 0; i < 16; ++i) {
      CHECK(sum[i] == a[i] + b[i]);
      CHECK(difference[i] == a[i] - b[i]);
    }
  };
  verify(client.infer(request()));
  verify(client.infer_future(request()).get());
  std::promise<Result<InferResult>> promise;
  client.infer_async(request(), [&](Result<InferResult> r) { promise.set_value(std::move(r)); });
  verify(promise.get_future().get().value());
}

TEST_CASE("identity_fp32 returns the same bytes from 4 bytes to 64 MiB") {
  LoopbackServer server;
  Client client(server.url());
  std::mt19937 random(1234);
  for (std::size_t elements : {std::size_t{1}, std::size_t{255}, std::size_t{16384},
                               std::size_t{262147}, std::size_t{1} << 20, std::size_t{16} << 20}) {
    CAPTURE(elements * 4);
    std::vector<float> input(elements);
    for (auto& v : input) v = static_cast<float>(random()) / 7.f;
    auto result = client.infer(
        InferRequest("identity_fp32")
            .input("INPUT0", Tensor::view(input, {1, static_cast<std::int64_t>(elements)})));
    const Tensor& out = result.output("OUTPUT0");
    CHECK(out.shape() == Shape{1, static_cast<std::int64_t>(elements)});
    REQUIRE(out.byte_size() == elements * 4);
    CHECK(std::memcmp(out.data(), input.data(), out.byte_size()) == 0);
    CHECK(out.as<float>()[elements - 1] == input.back());  // typed view of the received buffer
  }
}

TEST_CASE("BYTES tensors travel intact") {
  LoopbackServer server;
  Client client(server.url());
  std::vector<std::string> strings = {"jet", "", std::string("\0\1\2", 3), std::string(5000, 'z')};
  auto result = client.infer(
      InferRequest("identity_bytes").input("INPUT0", Tensor::from_strings(strings, {2, 2})));
  CHECK(result.output("OUTPUT0").to_strings() == strings);
}

TEST_CASE("1000 concurrent async requests from 8 threads all complete once with right answers") {
  LoopbackServer server;
  Client client(server.url());
  constexpr int kThreads = 8, kPerThread = 125;
  std::atomic<int> completed{0}, wrong{0}, failed{0};
  std::vector<std::atomic<int>> calls(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int n = t * kPerThread + i;
        client.infer_async(simple_request(n, 1), [&, n](Result<InferResult> r) {
          calls[n].fetch_add(1);
          if (!r) {
            ++failed;
          } else if (r->output("OUTPUT0").as<std::int32_t>()[0] != n + 1 ||
                     r->output("OUTPUT1").as<std::int32_t>()[15] != n - 1) {
            ++wrong;
          }
          ++completed;
        });
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto start = std::chrono::steady_clock::now();
  while (completed < kThreads * kPerThread && ms_since(start) < 30000)
    std::this_thread::sleep_for(1ms);
  CHECK(completed == kThreads * kPerThread);
  CHECK(failed == 0);
  CHECK(wrong == 0);
  for (auto& count : calls) CHECK(count.load() == 1);
}

TEST_CASE("a server running models on its network thread: right answers, counted, errors") {
  ServerOptions options;
  options.inline_models = true;  // one network thread (the default): every model runs there
  LoopbackServer server(options);
  ThreadProbe probe;
  server.executor().add_model(probe.model("thread_probe", DataType::Int32));

  Client client(server.url());
  std::vector<std::future<InferResult>> answers;
  for (int i = 0; i < 500; ++i) {
    answers.push_back(client.infer_future(
        InferRequest("thread_probe")
            .input("INPUT0", Tensor::from_vector(std::vector<std::int32_t>{i}, {1, 1}))));
  }
  for (int i = 0; i < 500; ++i) {
    auto result = answers[i].get();
    CHECK(result.output("OUTPUT0").as<std::int32_t>()[0] == i);
    CHECK(result.timing().server_compute.count() > 0);
  }
  CHECK(probe.threads() == 1);  // the executor's 4 threads took no part
  auto stats = client.model_statistics("thread_probe");
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].success.count == 500);
  auto unknown = expect_error([&] {
    client.infer(InferRequest("no_such_model")
                     .input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1})));
  });
  CHECK(unknown.code() == StatusCode::NotFound);
}

namespace {

// An identity model that records the thread of each of its calls, after `pause`.
struct ThreadLog {
  std::mutex mutex;
  std::vector<std::thread::id> calls;

  Model model(std::string name, std::chrono::microseconds pause) {
    Model m = models::identity(std::move(name), DataType::Int32);
    m.compute = [this, pause, identity = m.compute](const InferRequest& request) {
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
      {
        std::lock_guard<std::mutex> lock(mutex);
        calls.push_back(std::this_thread::get_id());
      }
      return identity(request);
    };
    return m;
  }

  // Distinct threads among calls [from, to).
  std::size_t threads(std::size_t from, std::size_t to) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::set<std::thread::id>(calls.begin() + static_cast<std::ptrdiff_t>(from),
                                     calls.begin() + static_cast<std::ptrdiff_t>(to))
        .size();
  }
};

// `n` requests of `model` at once, all answered right.
void burst(Client& client, const std::string& model, int n) {
  std::vector<std::future<InferResult>> answers;
  for (int i = 0; i < n; ++i) {
    answers.push_back(client.infer_future(InferRequest(model).input(
        "INPUT0", Tensor::from_vector(std::vector<std::int32_t>{i}, {1, 1}))));
  }
  for (int i = 0; i < n; ++i) CHECK(answers[i].get().output("OUTPUT0").as<std::int32_t>()[0] == i);
}

}  // namespace

TEST_CASE("quick models run on the network thread and slow ones on the model threads") {
  // 4 model threads, one network thread. A budget of 1 ms rather than the default 20 µs: under
  // the sanitizers an identity call takes longer than 20 µs, and the slow model takes 3 ms.
  ServerOptions options;
  options.quick_model_budget = 1ms;
  LoopbackServer server(options);
  ThreadLog quick, slow;
  server.executor().add_model(quick.model("quick", 0us));
  server.executor().add_model(slow.model("slow", 3000us));
  Client client(server.url());
  burst(client, "quick", 8);  // its first executions, on the model threads, time it
  burst(client, "quick", 200);
  // Once timed quick, every call runs on one thread: the network thread (requests at once on
  // 4 model threads would spread over several).
  CHECK(quick.threads(8, 208) == 1);
  // A request larger than a quick one's bound goes to the model threads all the same.
  const auto big = static_cast<std::int64_t>(CpuExecutor::kQuickInputBytes / 4 + 1);
  CHECK(client
            .infer(InferRequest("quick").input(
                "INPUT0", Tensor::from_vector(std::vector<std::int32_t>(big, 7), {1, big})))
            .output("OUTPUT0")
            .shape() == Shape{1, big});
  CHECK(quick.threads(8, 209) == 2);
  // The slow model's requests run side by side on the model threads.
  for (int round = 0; round < 3; ++round) burst(client, "slow", 8);
  CHECK(slow.threads(0, 24) > 1);
  // Without the budget, the quick model's requests go to the model threads too.
  ServerOptions handed_off;
  handed_off.quick_model_budget = 0us;
  LoopbackServer other(handed_off);
  ThreadLog log;
  other.executor().add_model(log.model("quick", 0us));
  Client other_client(other.url());
  for (int round = 0; round < 5; ++round) burst(other_client, "quick", 64);
  CHECK(log.threads(0, 320) > 1);
}

TEST_CASE("control calls: health, metadata, config, statistics") {
  LoopbackServer server;
  Client client(server.url());
  CHECK(client.server_live());
  CHECK(client.server_ready());
  CHECK(client.model_ready("simple"));
  CHECK_FALSE(client.model_ready("no_such_model"));

  auto server_metadata = client.server_metadata();
  CHECK(server_metadata.name == "sonic-server");
  CHECK(server_metadata.version == kVersion);

  auto metadata = client.model_metadata("simple");
  CHECK(metadata.name == "simple");
  REQUIRE(metadata.inputs.size() == 2);
  CHECK(metadata.inputs[0].name == "INPUT0");
  CHECK(metadata.inputs[0].dtype == DataType::Int32);
  CHECK(metadata.inputs[0].shape == Shape{-1, 16});  // Triton's simple: max_batch_size 8
  CHECK(metadata.outputs[1].name == "OUTPUT1");

  std::string config = client.model_config("simple");
  CHECK(config.find("\"name\":\"simple\"") != std::string::npos);
  CHECK(config.find("TYPE_INT32") != std::string::npos);

  for (int i = 0; i < 3; ++i) (void)client.infer(simple_request(i, i));
  auto stats = client.model_statistics("simple");
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].inference_count == 3);
  CHECK(stats[0].success.count == 3);
  CHECK(stats[0].success.ns > 0);
  CHECK(stats[0].compute_infer.count == 3);
  CHECK(client.model_statistics().size() >= 4);

  try {
    (void)client.model_metadata("no_such_model");
    FAIL("unknown model metadata must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
    CHECK(e.message().find("no_such_model") != std::string::npos);
  }
}

TEST_CASE("model control, by default refused as Triton refuses it: no client unloads a model") {
  LoopbackServer server;
  Client client(server.url());
  try {
    client.unload_model("simple");
    FAIL("unload must be refused without --model-control-mode explicit");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
    CHECK(e.message().rfind("explicit model load / unload is not allowed", 0) == 0);
  }
  CHECK(client.model_ready("simple"));
  CHECK(test::find_in_index(client.repository_index(), "simple")->state == ModelState::Ready);
}

TEST_CASE("model control: the index, unload and load; a new configuration is refused") {
  ServerOptions server_options;
  server_options.model_control = true;  // --model-control-mode explicit
  LoopbackServer server(server_options);
  ClientOptions options;
  options.validate_inputs = false;  // the request must reach the server, not the metadata cache
  options.retry.max_attempts = 1;   // UNAVAILABLE would be retried
  Client client(server.url(), options);
  test::check_unload_and_load(client, "simple", simple_request(1, 2));
  auto extensions = client.server_metadata().extensions;
  CHECK(std::find(extensions.begin(), extensions.end(), "model_repository") != extensions.end());
  // Its models are fixed when it starts: a configuration with the load cannot be honoured.
  try {
    client.load_model("simple", R"({"max_batch_size": 8})");
    FAIL("a load with a configuration must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
  }
  // Triton unloads a model it does not have without a word.
  client.unload_model("no_such_model");
  CHECK(client.model_ready("simple"));
}

TEST_CASE("Triton's request options: typed setters taken, wrong types refused as Triton does") {
  LoopbackServer server;
  Client client(server.url());
  test::check_request_options(client, [] { return simple_request(1, 2); });
}

TEST_CASE("streams over gRPC: in order, decoupled, errors in-band, cancel") {
  LoopbackServer server;
  Client client(server.url());
  test::check_streams(client);
}

TEST_CASE("a client destroyed before its streams returns at once and ends the open ones") {
  LoopbackServer server;
  auto client = std::make_unique<Client>(server.url());
  auto ended = client->open_stream([](StreamResponse) {});
  REQUIRE(ended.send(test::simple_on_stream(1, "done")).ok());
  ended.close();
  REQUIRE(ended.wait().ok());
  std::atomic<int> answered{0};
  auto open = client->open_stream([&](StreamResponse) { ++answered; });
  REQUIRE(open.send(test::simple_on_stream(2, "answered")).ok());
  REQUIRE(test::eventually([&] { return answered.load() == 1; }));

  // Destroyed on another thread, so that a client that waits for its streams' objects fails
  // this test instead of hanging it.
  auto destroyed = std::make_shared<std::promise<void>>();
  std::thread([client = std::move(client), destroyed]() mutable {
    client.reset();
    destroyed->set_value();
  }).detach();
  REQUIRE(destroyed->get_future().wait_for(10s) == std::future_status::ready);
  CHECK(!open.wait().ok());  // the open stream ended with its client
  CHECK(open.send(test::simple_on_stream(3, "late")).code() == StatusCode::FailedPrecondition);
}

TEST_CASE("gRPC compression: requests gzip and deflate, answers as the server chooses") {
  SUBCASE("answers as they are (the default)") {
    LoopbackServer server;
    test::check_compression(server.port(), false);
  }
  SUBCASE("answers compressed (Triton's --grpc-infer-response-compression-level)") {
    ServerOptions options;
    options.infer_response_compression = ServerOptions::ResponseCompression::Low;
    LoopbackServer server(options);
    test::check_compression(server.port(), true);
  }
}

TEST_CASE("a stream's slow callback holds sonic-server back, and the client's memory with it") {
  LoopbackServer server;
  test::check_stream_backpressure(server.port());
}

TEST_CASE("Triton's example models over gRPC: simple_string, and a sequence by its options") {
  LoopbackServer server;  // hosts models::builtin(), Triton's examples among them
  Client client(server.url());
  test::check_example_models(client);
}

TEST_CASE("requested outputs: only those come back") {
  LoopbackServer server;
  Client client(server.url());
  auto result = client.infer(simple_request(5, 2).output("OUTPUT1"));
  REQUIRE(result.outputs().size() == 1);
  CHECK(result.output("OUTPUT1").as<std::int32_t>()[0] == 3);
}

TEST_CASE("the client respects the server's limit on concurrent streams") {
  ServerOptions options;
  options.max_concurrent_streams = 4;
  LoopbackServer server(options);
  Client client(server.url());
  std::vector<std::future<InferResult>> futures;
  std::vector<float> data(64, 1.f);
  for (int i = 0; i < 100; ++i) {
    futures.push_back(client.infer_future(
        InferRequest("paced_fp32").input("INPUT0", Tensor::view(data, {8, 8}))));
  }
  int ok = 0;
  for (auto& f : futures) ok += f.get().output("OUTPUT0").as<float>()[63] == 1.f;
  CHECK(ok == 100);
}

TEST_CASE(
    "calls over the server's stream limit wait in the client: deadlines and cancel still hold") {
  ServerOptions options;
  options.max_concurrent_streams = 2;
  LoopbackServer server(options);
  Client client(server.url());
  std::vector<float> data(4, 2.f);
  auto slow = [&] { return InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})); };
  // Two calls hold both streams for a second; what comes next waits for one.
  auto first = client.infer_future(slow());
  auto second = client.infer_future(slow());
  std::this_thread::sleep_for(100ms);  // the server's SETTINGS, with its limit, have come
  const auto sent = std::chrono::steady_clock::now();
  auto hurried = client.infer_future(slow().timeout(100ms));
  std::promise<StatusCode> cancelled;
  auto handle =
      client.infer_async(slow(), [&](Result<InferResult> r) { cancelled.set_value(r.code()); });
  CHECK(handle.cancel());
  auto patient = client.infer_future(slow());
  // The waiting call ends at its own deadline, not when a stream frees a second later.
  CHECK_THROWS_AS(hurried.get(), Error);
  CHECK(std::chrono::steady_clock::now() - sent < 800ms);
  CHECK(cancelled.get_future().get() == StatusCode::Cancelled);
  // The ones that wait their turn are answered, in their turn.
  CHECK(first.get().output("OUTPUT0").as<float>()[3] == 2.f);
  CHECK(second.get().output("OUTPUT0").as<float>()[3] == 2.f);
  CHECK(patient.get().output("OUTPUT0").as<float>()[3] == 2.f);
  // The server saw at most its limit at once: nothing it refused was retried.
  auto stats = client.model_statistics(kSlowModel);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].inference_count == 3);
}

TEST_CASE("calls that end while waiting for a stream are let go at once, their inputs too") {
  // A server that keeps its only stream busy must not make the client hold every call that
  // timed out waiting behind it: neither the caller's tensors nor the call and its encoded
  // request (heap measured with glibc's counters, which a sanitizer's allocator bypasses).
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Model held = models::identity("held_fp32", DataType::Fp32);
  held.compute = [released, identity = held.compute](const InferRequest& request) {
    released.wait();  // holds the server's only stream until the test lets go
    return identity(request);
  };
  auto executor = test_executor();
  executor->add_model(held);
  ServerOptions options;
  options.max_concurrent_streams = 1;
  LoopbackServer server(executor, options);
  Client client(server.url());
  std::vector<float> data(4, 2.f);
  auto busy =
      client.infer_future(InferRequest("held_fp32").input("INPUT0", Tensor::view(data, {2, 2})));
  std::this_thread::sleep_for(100ms);  // the server's SETTINGS, with its limit, have come
  [[maybe_unused]] const std::size_t heap_before = mallinfo2().uordblks;
#ifdef SONIC_TEST_SANITIZED
  constexpr int kWaiting = 2000;
#else
  constexpr int kWaiting = 20000;
#endif
  std::vector<std::weak_ptr<const void>> inputs;
  std::atomic<int> timed_out{0};
  for (int i = 0; i < kWaiting; ++i) {
    // 2000 bytes: copied into each call's encoded request.
    auto bytes = std::make_shared<std::vector<float>>(500, 1.f);
    inputs.push_back(bytes);
    const void* at = bytes->data();
    client.infer_async(InferRequest("held_fp32")
                           .input("INPUT0", Tensor::from_shared(DataType::Fp32, {1, 500},
                                                                std::move(bytes), at, 2000))
                           .timeout(50ms),
                       [&](Result<InferResult> r) {
                         if (r.code() == StatusCode::DeadlineExceeded) ++timed_out;
                       });
  }
  REQUIRE(eventually([&] { return timed_out.load() == kWaiting; }, 30s));
  // The stream is still busy, and the calls behind it hold nothing. The client's deadline watch
  // may decide a call a moment before the connection's own timer takes it out of the queue (a
  // loaded machine showed it), so the last few are given that moment.
  CHECK(eventually(
      [&] {
        return std::all_of(inputs.begin(), inputs.end(), [](const auto& w) { return w.expired(); });
      },
      5s));
#ifndef SONIC_TEST_SANITIZED
  const std::size_t heap_after = mallinfo2().uordblks;
  const std::size_t grown = heap_after > heap_before ? heap_after - heap_before : 0;
  CHECK_MESSAGE(grown < 8u << 20, grown, " bytes still held for ", kWaiting, " ended calls");
#endif
  release.set_value();
  CHECK(busy.get().output("OUTPUT0").as<float>()[3] == 2.f);
}

TEST_CASE("keepalive pings on a busy connection do not disturb requests") {
  LoopbackServer server;
  ClientOptions options;
  options.keepalive_interval = 20ms;
  options.keepalive_timeout = 500ms;
  Client client(server.url(), options);
  std::vector<float> data(4, 2.f);
  auto result = client.infer(InferRequest(kSlowModel).input("INPUT0", Tensor::view(data, {2, 2})));
  CHECK(result.output("OUTPUT0").as<float>()[3] == 2.f);
}

TEST_CASE("callbacks never run inside the initiating call, even for immediate errors") {
  LoopbackServer server;
  Client client(server.url());
  std::promise<std::thread::id> ran_on;
  client.infer_async(InferRequest(""), [&](Result<InferResult> r) {
    CHECK(r.code() == StatusCode::InvalidArgument);
    ran_on.set_value(std::this_thread::get_id());
  });
  auto future = ran_on.get_future();
  REQUIRE(future.wait_for(5s) == std::future_status::ready);
  CHECK((future.get() != std::this_thread::get_id()));
}

TEST_CASE("many clients at once, each with many concurrent streams") {
  LoopbackServer server;
  constexpr int kClients = 12, kPerClient = 40;
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Client client(server.url());
      std::vector<std::future<InferResult>> futures;
      for (int i = 0; i < kPerClient; ++i)
        futures.push_back(client.infer_future(simple_request(c, i)));
      for (int i = 0; i < kPerClient; ++i) {
        right +=
            futures[static_cast<std::size_t>(i)].get().output("OUTPUT1").as<std::int32_t>()[0] ==
            c - i;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(right == kClients * kPerClient);
}

TEST_CASE("a result says where its time went: client steps and the server's queue and compute") {
  LoopbackServer server;
  Client client(server.url());
  std::vector<float> data(1 << 16, 1.0f);
  auto request = [&] {
    return InferRequest("paced_fp32").input("INPUT0", Tensor::view(data, {1, 1 << 16}));
  };
  (void)client.infer(request());  // connect, fetch metadata
  auto result = client.infer(request());
  const InferTiming& t = result.timing();
  MESSAGE("serialize " << t.serialize.count() << " ns, queue " << t.queue.count() << ", send "
                       << t.send.count() << ", wait " << t.wait.count() << ", receive "
                       << t.receive.count() << ", deserialize " << t.deserialize.count()
                       << ", server queue " << t.server_queue.count() << ", server compute "
                       << t.server_compute.count() << ", total " << t.total.count());
  CHECK(t.serialize.count() > 0);
  CHECK(t.send.count() > 0);
  CHECK(t.receive.count() > 0);
  CHECK(t.deserialize.count() > 0);
  CHECK(t.server_compute >= std::chrono::milliseconds(5));  // paced_fp32 sleeps 5 ms
  CHECK(t.wait >= t.server_compute);                        // the server ran inside the wait
  CHECK(t.serialize + t.queue + t.send + t.wait + t.receive + t.deserialize <= t.total);
  CHECK(result.parameters().count("sonic_server_compute_ns") == 0);  // moved into the timing
  // The CPU executor times local runs the same way.
  auto executor = test_executor(1);
  auto local = executor->infer(request());
  REQUIRE(local);
  CHECK(local->timing().server_compute >= std::chrono::milliseconds(5));
}
