// Client-side batching (ClientOptions::batching): concurrent requests merge into one wire
// request, each caller gets its own rows and its own verdict, ragged requests merge with the
// boundaries the model needs, and queued requests end with the client. The models count the
// executions they see, which is what a server (and its GPU) pays for.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "eventually.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// What a model saw: its executions and the batch of each.
struct Executions {
  std::mutex mutex;
  std::vector<std::int64_t> batches;
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return batches.size();
  }
  std::int64_t largest() {
    std::lock_guard<std::mutex> lock(mutex);
    return batches.empty() ? 0 : *std::max_element(batches.begin(), batches.end());
  }
  void record(std::int64_t batch) {
    std::lock_guard<std::mutex> lock(mutex);
    batches.push_back(batch);
  }
};

// FP32 [-1, 4] → OUTPUT0 = 2 × INPUT0, refusing a negative element (INVALID_ARGUMENT) as a
// model may refuse one bad event in a batch.
Model doubler(const std::string& name, int max_batch_size, std::shared_ptr<Executions> seen) {
  Model m;
  m.name = name;
  m.max_batch_size = max_batch_size;
  m.inputs = {{"INPUT0", DataType::Fp32, {-1, 4}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, {-1, 4}}};
  m.compute = [seen](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& in = request.find_input("INPUT0")->tensor;
    seen->record(in.shape().front());
    auto values = in.as<float>();
    std::vector<float> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] < 0) return Error(StatusCode::InvalidArgument, "negative input");
      out[i] = 2 * values[i];
    }
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(out), in.shape()), {}}};
  };
  return m;
}

// A model written for ragged batching as Triton feeds one: INPUT0 holds the requests' elements
// one after the other (1-D), COUNT the accumulated element count after each request; OUTPUT0
// has one row per request: the sum of its elements.
Model ragged_sum(std::shared_ptr<Executions> seen) {
  Model m;
  m.name = "ragged_sum";
  m.inputs = {{"INPUT0", DataType::Fp32, {-1}}, {"COUNT", DataType::Int32, {-1}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, {-1, 1}}};
  m.compute = [seen](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto values = request.find_input("INPUT0")->tensor.as<float>();
    auto ends = request.find_input("COUNT")->tensor.as<std::int32_t>();
    seen->record(static_cast<std::int64_t>(ends.size()));
    std::vector<float> sums;
    std::size_t at = 0;
    for (std::int32_t end : ends) {
      if (end < static_cast<std::int32_t>(at) || static_cast<std::size_t>(end) > values.size()) {
        return Error(StatusCode::InvalidArgument, "COUNT out of order");
      }
      float sum = 0;
      for (; at < static_cast<std::size_t>(end); ++at) sum += values[at];
      sums.push_back(sum);
    }
    const auto rows = static_cast<std::int64_t>(sums.size());
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(sums), {rows, 1}), {}}};
  };
  return m;
}

// A server whose executor runs `models` (plus the built-in ones).
std::unique_ptr<LoopbackServer> server_with(std::vector<Model> models) {
  auto executor = test_executor();
  for (auto& model : models) executor->add_model(std::move(model));
  return std::make_unique<LoopbackServer>(executor, ServerOptions{});
}

ClientOptions batching(const std::string& model, std::int64_t max_batch,
                       std::chrono::microseconds delay) {
  ClientOptions options;
  BatchingOptions b;
  b.max_batch = max_batch;
  b.max_delay = delay;
  options.batching[model] = b;
  return options;
}

InferRequest rows_request(const std::string& model, float first, std::int64_t rows = 1) {
  std::vector<float> values(static_cast<std::size_t>(rows) * 4);
  std::iota(values.begin(), values.end(), first);
  return InferRequest(model).input("INPUT0", Tensor::from_vector(std::move(values), {rows, 4}));
}

// Sends `count` requests at once from `threads` threads; returns their results in order.
std::vector<Result<InferResult>> send_concurrently(Client& client, int count, int threads,
                                                   const std::function<InferRequest(int)>& make) {
  std::vector<std::promise<Result<InferResult>>> promises(static_cast<std::size_t>(count));
  std::vector<std::thread> senders;
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = t; i < count; i += threads) {
        client.infer_async(make(i), [&promises, i](Result<InferResult> r) {
          promises[static_cast<std::size_t>(i)].set_value(std::move(r));
        });
      }
    });
  }
  for (auto& sender : senders) sender.join();
  std::vector<Result<InferResult>> results;
  for (auto& promise : promises) results.push_back(promise.get_future().get());
  return results;
}

}  // namespace

TEST_CASE("concurrent requests merge into fewer executions; each gets its own rows") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 16, 20ms));
  auto results = send_concurrently(client, 64, 8, [](int i) {
    return rows_request("doubler", static_cast<float>(100 * i), 1 + i % 3).id(std::to_string(i));
  });
  for (int i = 0; i < 64; ++i) {
    CAPTURE(i);
    auto& r = results[static_cast<std::size_t>(i)];
    REQUIRE(r.ok());
    const Tensor& out = r->output("OUTPUT0");
    CHECK(out.shape() == Shape{1 + i % 3, 4});
    auto values = out.as<float>();
    for (std::size_t k = 0; k < values.size(); ++k) {
      CHECK(values[k] == 2 * (100.0f * static_cast<float>(i) + static_cast<float>(k)));
    }
    CHECK(r->request_id() == std::to_string(i));
  }
  // 128 rows at most 16 per execution: 8 or more executions, far fewer than 64 requests.
  CHECK(seen->count() < 40);
  CHECK(seen->largest() <= 16);
  ClientStats stats = client.stats();
  // Every wire request ran once; a batch that found no partner went as it was.
  CHECK(stats.requests == seen->count());
  CHECK(stats.batched_requests > 32);
  CHECK(stats.merged_requests + (64 - stats.batched_requests) == stats.requests);
}

TEST_CASE("one bad request inside a merged batch fails alone; the others succeed") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 64, 50ms));
  auto results = send_concurrently(client, 12, 4, [](int i) {
    return rows_request("doubler", i == 5 ? -10.0f : static_cast<float>(i));
  });
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    auto& r = results[static_cast<std::size_t>(i)];
    if (i == 5) {
      REQUIRE_FALSE(r.ok());
      CHECK(r.code() == StatusCode::InvalidArgument);
      CHECK(r.error().message().find("negative input") != std::string::npos);
    } else {
      REQUIRE(r.ok());
      CHECK(r->output("OUTPUT0").as<float>()[0] == 2.0f * static_cast<float>(i));
    }
  }
}

TEST_CASE("requests that cannot share a batch go in separate ones") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 64, 30ms));
  // A wrong shape past the batch dimension fails validation alone, without spoiling the batch
  // of the well-formed ones.
  auto results = send_concurrently(client, 9, 3, [](int i) {
    if (i == 4) {
      return InferRequest("doubler").input(
          "INPUT0", Tensor::from_vector(std::vector<float>(3, 1.0f), {1, 3}));
    }
    return rows_request("doubler", static_cast<float>(i));
  });
  for (int i = 0; i < 9; ++i) {
    CAPTURE(i);
    CHECK(results[static_cast<std::size_t>(i)].ok() == (i != 4));
  }
  CHECK(results[4].code() == StatusCode::InvalidArgument);
}

TEST_CASE("ragged requests merge with their accumulated element counts") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({ragged_sum(seen)});
  ClientOptions options;
  BatchingOptions ragged;
  ragged.max_batch = 8;
  ragged.max_delay = 30ms;
  ragged.ragged = RaggedBatching{"COUNT", "INPUT0"};
  options.batching["ragged_sum"] = ragged;
  Client client(server->url(), options);
  // Request i holds i + 1 elements, 1..i+1: its sum is (i + 1)(i + 2)/2.
  auto results = send_concurrently(client, 16, 4, [](int i) {
    std::vector<float> values(static_cast<std::size_t>(i) + 1);
    std::iota(values.begin(), values.end(), 1.0f);
    const auto n = static_cast<std::int64_t>(values.size());
    return InferRequest("ragged_sum").input("INPUT0", Tensor::from_vector(std::move(values), {n}));
  });
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    auto& r = results[static_cast<std::size_t>(i)];
    REQUIRE(r.ok());
    CHECK(r->output("OUTPUT0").shape() == Shape{1, 1});
    CHECK(r->output("OUTPUT0").as<float>()[0] == static_cast<float>((i + 1) * (i + 2) / 2));
  }
  CHECK(seen->count() < 16);
  CHECK(seen->largest() <= 8);
}

TEST_CASE("ragged batching without its count input or max_batch is refused at construction") {
  ClientOptions options;
  BatchingOptions ragged;
  ragged.ragged = RaggedBatching{"COUNT", {}};
  options.batching["m"] = ragged;
  CHECK_THROWS_AS(Client("grpc://127.0.0.1:1", options), Error);
  options.batching["m"].max_batch = 4;
  options.batching["m"].ragged->accumulated_count_input.clear();
  CHECK_THROWS_AS(Client("grpc://127.0.0.1:1", options), Error);
}

TEST_CASE("max_batch 0 takes the model's max_batch_size from its configuration") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 8, seen)});
  Client client(server->url(), batching("doubler", 0, 20ms));
  // Until the configuration's answer, requests go one by one; after it, merged, never past 8.
  for (int round = 0; round < 20 && client.stats().merged_requests == 0; ++round) {
    auto results = send_concurrently(
        client, 24, 4, [](int i) { return rows_request("doubler", static_cast<float>(i)); });
    for (auto& r : results) REQUIRE(r.ok());
  }
  CHECK(client.stats().merged_requests > 0);
  CHECK(seen->largest() <= 8);
}

TEST_CASE("a queued request can be cancelled; the client's end cancels the rest") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  std::promise<Result<InferResult>> cancelled, abandoned;
  {
    Client client(server->url(), batching("doubler", 64, 10s));
    std::atomic<int> calls{0};
    RequestHandle handle =
        client.infer_async(rows_request("doubler", 1), [&](Result<InferResult> r) {
          ++calls;
          cancelled.set_value(std::move(r));
        });
    const auto start = std::chrono::steady_clock::now();
    CHECK(handle.cancel());
    CHECK_FALSE(handle.cancel());
    auto r = cancelled.get_future().get();
    CHECK(r.code() == StatusCode::Cancelled);
    CHECK(ms_since(start) < 2000);
    client.infer_async(rows_request("doubler", 2),
                       [&](Result<InferResult> r2) { abandoned.set_value(std::move(r2)); });
  }
  CHECK(abandoned.get_future().get().code() == StatusCode::Cancelled);
  CHECK(seen->count() == 0);
}

TEST_CASE("a model that does not answer along the batch dimension fails the merged parts clearly") {
  Model fixed;
  fixed.name = "fixed";
  fixed.max_batch_size = 8;
  fixed.inputs = {{"INPUT0", DataType::Fp32, {-1, 4}}};
  fixed.outputs = {{"OUTPUT0", DataType::Fp32, {1}}};
  fixed.compute = [](const InferRequest&) -> Result<std::vector<NamedTensor>> {
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::vector<float>{1}, {1}), {}}};
  };
  auto server = server_with({fixed});
  Client client(server->url(), batching("fixed", 8, 30ms));
  auto results = send_concurrently(
      client, 4, 4, [](int i) { return rows_request("fixed", static_cast<float>(i)); });
  // Four requests sent at once wait together for 30 ms: at least two share a batch, whose
  // parts all fail; a request that ended up alone is sent as it is and succeeds.
  int merged_failures = 0;
  for (auto& r : results) {
    if (r.ok()) continue;
    CHECK(r.code() == StatusCode::Internal);
    CHECK(r.error().message().find("output 'OUTPUT0'") != std::string::npos);
    ++merged_failures;
  }
  CHECK(merged_failures >= 2);
}

TEST_CASE("a blocking call on a batched model from a callback on the only callback thread") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  ClientOptions options = batching("doubler", 8, 1ms);
  options.callbacks = CallbackThread::Pool;
  options.callback_threads = 1;
  Client client(server->url(), options);
  // The inner call's answer must not queue behind the callback that waits for it.
  std::promise<float> inner;
  client.infer_async(rows_request("doubler", 1), [&](Result<InferResult>) {
    try {
      inner.set_value(client.infer(rows_request("doubler", 5)).output("OUTPUT0").as<float>()[0]);
    } catch (const Error&) {
      inner.set_value(-1);
    }
  });
  auto answer = inner.get_future();
  REQUIRE(answer.wait_for(10s) == std::future_status::ready);
  CHECK(answer.get() == 10.0f);
}

TEST_CASE("cancelled requests are never read after their callback, whichever path they were on") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 4, std::chrono::microseconds(0)));
  // Each request's inputs are freed as soon as its callback ran (AddressSanitizer sees a read
  // after that); cancels race with merging, sending alone, and answers.
  for (int i = 0; i < 300; ++i) {
    auto values = std::make_unique<std::vector<float>>(4, static_cast<float>(i));
    std::promise<void> done;
    auto handle =
        client.infer_async(InferRequest("doubler").input("INPUT0", Tensor::view(*values, {1, 4})),
                           [&](Result<InferResult>) { done.set_value(); });
    if (i % 3 != 2) handle.cancel();
    done.get_future().get();
    values.reset();
  }
  CHECK(client.stats().requests <= 300);
}

TEST_CASE("one request's short deadline does not fail the requests merged with it") {
  auto seen = std::make_shared<Executions>();
  Model slow = doubler("slow_doubler", 64, seen);
  auto compute = slow.compute;
  slow.compute = [compute](const InferRequest& request) {
    std::this_thread::sleep_for(100ms);
    return compute(request);
  };
  auto server = server_with({slow});
  Client client(server->url(), batching("slow_doubler", 64, 30ms));
  auto results = send_concurrently(client, 6, 3, [](int i) {
    auto request = rows_request("slow_doubler", static_cast<float>(i));
    request.timeout(i == 0 ? 40ms : 5s);
    return request;
  });
  CHECK(results[0].code() == StatusCode::DeadlineExceeded);
  for (int i = 1; i < 6; ++i) {
    CAPTURE(i);
    CHECK(results[static_cast<std::size_t>(i)].ok());
  }
}

TEST_CASE("a failure no single request causes is not asked again part by part") {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Model full;
  full.name = "full";
  full.max_batch_size = 64;
  full.inputs = {{"INPUT0", DataType::Fp32, {-1, 4}}};
  full.outputs = {{"OUTPUT0", DataType::Fp32, {-1, 4}}};
  full.compute = [calls](const InferRequest&) -> Result<std::vector<NamedTensor>> {
    ++*calls;
    return Error(StatusCode::ResourceExhausted, "no memory left on the device");
  };
  auto server = server_with({full});
  Client client(server->url(), batching("full", 64, 30ms));
  auto results = send_concurrently(
      client, 8, 4, [](int i) { return rows_request("full", static_cast<float>(i)); });
  for (auto& r : results) CHECK(r.code() == StatusCode::ResourceExhausted);
  CHECK(*calls == static_cast<int>(client.stats().requests));  // no resends beside the merged
  CHECK(client.stats().batched_requests > 0);
}

TEST_CASE("requests with tensor or output parameters are never merged") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 64, 20ms));
  auto results = send_concurrently(client, 6, 3, [](int i) {
    return rows_request("doubler", static_cast<float>(i))
        .output("OUTPUT0", {{"binary_data", true}});
  });
  for (auto& r : results) CHECK(r.ok());
  CHECK(client.stats().batched_requests == 0);
}

TEST_CASE("moving another client into one ends the requests it had queued") {
  auto seen = std::make_shared<Executions>();
  auto server = server_with({doubler("doubler", 64, seen)});
  Client client(server->url(), batching("doubler", 64, 10s));
  std::promise<Result<InferResult>> queued;
  client.infer_async(rows_request("doubler", 1),
                     [&](Result<InferResult> r) { queued.set_value(std::move(r)); });
  client = Client(server->url());
  auto outcome = queued.get_future();
  REQUIRE(outcome.wait_for(5s) == std::future_status::ready);
  CHECK(outcome.get().code() == StatusCode::Cancelled);
  CHECK(client.infer(rows_request("doubler", 2)).output("OUTPUT0").as<float>()[0] == 4.0f);
}
