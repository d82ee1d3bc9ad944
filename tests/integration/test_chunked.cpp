// Client::infer_chunked: one request with a large batch cut into chunks, a bounded number in
// flight, the outputs joined in order into one result, one error for the caller.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "fault_proxy.hpp"
#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// What the model saw: executions, the most at once, and each execution's first value.
struct Seen {
  std::atomic<int> running{0}, most{0}, executions{0};
};

// FP32 [-1, 8] → OUTPUT0 = INPUT0 + 1 and INDEX (INT64 [-1]) = each row's first value. Chunks
// that start at lower rows take longer, so they finish out of order; a row starting with a
// negative value fails its chunk.
Model plus_one(int max_batch_size, std::shared_ptr<Seen> seen) {
  Model m;
  m.name = "plus_one";
  m.max_batch_size = max_batch_size;
  m.inputs = {{"INPUT0", DataType::Fp32, {-1, 8}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, {-1, 8}}, {"INDEX", DataType::Int64, {-1}}};
  m.compute = [seen,
               max_batch_size](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    // As repository models (and Triton) refuse a batch past the configuration's.
    const std::int64_t batch = request.find_input("INPUT0")->tensor.shape().front();
    if (max_batch_size > 0 && batch > max_batch_size) {
      return Error(StatusCode::InvalidArgument, "batch past max_batch_size");
    }
    const int now = ++seen->running;
    int most = seen->most.load();
    while (now > most && !seen->most.compare_exchange_weak(most, now)) {
    }
    ++seen->executions;
    const Tensor& in = request.find_input("INPUT0")->tensor;
    auto values = in.as<float>();
    const std::int64_t rows = in.shape().front();
    // Earlier chunks sleep longer: up to 20 ms for the first.
    std::this_thread::sleep_for(std::chrono::microseconds(std::max<std::int64_t>(
        0, 20'000 - static_cast<std::int64_t>(values.size() ? values[0] : 0))));
    std::vector<float> out(values.size());
    std::vector<std::int64_t> index(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i] + 1;
    for (std::int64_t r = 0; r < rows; ++r)
      index[static_cast<std::size_t>(r)] =
          static_cast<std::int64_t>(values[static_cast<std::size_t>(r) * 8]);
    --seen->running;
    if (std::any_of(values.begin(), values.end(), [](float v) { return v < 0; })) {
      return Error(StatusCode::InvalidArgument, "negative input");
    }
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(out), in.shape()), {}},
        {"INDEX", Tensor::from_vector(std::move(index), {rows}), {}}};
  };
  return m;
}

std::unique_ptr<LoopbackServer> server_with(Model model) {
  auto executor = test_executor(8);
  executor->add_model(std::move(model));
  return std::make_unique<LoopbackServer>(executor, ServerOptions{});
}

// Rows of 8 values; row r holds r*8 .. r*8+7.
std::vector<float> rows_of_values(std::int64_t rows) {
  std::vector<float> values(static_cast<std::size_t>(rows) * 8);
  std::iota(values.begin(), values.end(), 0.0f);
  return values;
}

ChunkOptions chunks_of(std::int64_t rows, std::size_t in_flight) {
  ChunkOptions options;
  options.rows = rows;
  options.max_in_flight = in_flight;
  return options;
}

}  // namespace

TEST_CASE(
    "a large batch comes back whole and in order, with a bounded number of chunks in flight") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(0, seen));
  Client client(server->url());
  const std::int64_t rows = 2500;
  auto values = rows_of_values(rows);
  auto result = client.infer_chunked(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {rows, 8})), chunks_of(240, 3));
  CHECK(seen->executions == 11);  // ceil(2500 / 240)
  CHECK(seen->most <= 3);
  CHECK(seen->most >= 2);
  const Tensor& out = result.output("OUTPUT0");
  REQUIRE(out.shape() == Shape{rows, 8});
  auto got = out.as<float>();
  bool all_right = true;
  for (std::size_t i = 0; i < got.size(); ++i) all_right = all_right && got[i] == values[i] + 1;
  CHECK(all_right);
  auto index = result.output("INDEX").as<std::int64_t>();
  REQUIRE(index.size() == static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; r += 97) CHECK(index[static_cast<std::size_t>(r)] == r * 8);
  CHECK(client.stats().requests == 11);
}

TEST_CASE("automatic chunks follow the model's max_batch_size") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(64, seen));
  Client client(server->url());
  auto values = rows_of_values(1000);
  auto result = client.infer_chunked(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {1000, 8})));
  CHECK(seen->executions == 16);  // ceil(1000 / 64)
  CHECK(result.output("OUTPUT0").shape() == Shape{1000, 8});
  CHECK(result.output("OUTPUT0").as<float>()[7999] == 8000.0f);
}

TEST_CASE("automatic chunks follow the target size in bytes") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(0, seen));
  Client client(server->url());
  auto values = rows_of_values(1000);
  ChunkOptions options;
  options.target_chunk_bytes = 100 * 8 * sizeof(float);  // 100 rows
  auto result = client.infer_chunked(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {1000, 8})), options);
  // max_batch_size 0 means no batch dimension: the request went whole.
  CHECK(seen->executions == 1);
  CHECK(result.output("OUTPUT0").shape() == Shape{1000, 8});
}

TEST_CASE("one failing chunk gives one error naming it; later chunks are not sent") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(0, seen));
  Client client(server->url());
  auto values = rows_of_values(1000);
  values[450 * 8 + 3] = -1.0f;  // row 450: chunk 5 of 10
  std::promise<Result<InferResult>> done;
  std::atomic<int> calls{0};
  client.infer_chunked_async(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {1000, 8})), chunks_of(100, 2),
      [&](Result<InferResult> r) {
        ++calls;
        done.set_value(std::move(r));
      });
  auto r = done.get_future().get();
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == StatusCode::InvalidArgument);
  CHECK(r.error().message().find("chunk 5 of 10 (rows 400 to 499)") != std::string::npos);
  CHECK(r.error().message().find("negative input") != std::string::npos);
  CHECK(seen->executions < 10);
  std::this_thread::sleep_for(50ms);
  CHECK(calls == 1);
}

TEST_CASE("cancelling a chunked request stops its chunks") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(0, seen));
  Client client(server->url());
  auto values = rows_of_values(4000);
  std::promise<Result<InferResult>> done;
  auto handle = client.infer_chunked_async(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {4000, 8})), chunks_of(10, 2),
      [&](Result<InferResult> r) { done.set_value(std::move(r)); });
  std::this_thread::sleep_for(30ms);
  CHECK(handle.cancel());
  CHECK(done.get_future().get().code() == StatusCode::Cancelled);
  CHECK(seen->executions < 400);
}

TEST_CASE("inputs that disagree on their batch are refused before anything is sent") {
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(0, seen));
  Client client(server->url());
  auto request = InferRequest("plus_one")
                     .input("INPUT0", Tensor::from_vector(std::vector<float>(16), {2, 8}))
                     .input("OTHER", Tensor::from_vector(std::vector<float>(24), {3, 8}));
  try {
    client.infer_chunked(std::move(request), chunks_of(1, 1));
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    CHECK(std::string(e.message()).find("first (batch) dimension") != std::string::npos);
  }
  CHECK(seen->executions == 0);
}

TEST_CASE("automatic chunks fit the fallback's model when the server cannot be asked") {
  auto seen = std::make_shared<Seen>();
  ClientOptions options;
  options.fallback = CpuExecutor::with_models({plus_one(64, seen)}, 2);
  Client client("grpc://127.0.0.1:1", options);  // nothing listens: every chunk runs locally
  auto values = rows_of_values(1000);
  auto result = client.infer_chunked(
      InferRequest("plus_one").input("INPUT0", Tensor::view(values, {1000, 8})));
  CHECK(result.executed_on() == ExecutedOn::Local);
  CHECK(seen->executions == 16);  // ceil(1000 / 64)
  CHECK(result.output("OUTPUT0").as<float>()[7999] == 8000.0f);
}

TEST_CASE("a chunked request cancelled before its chunk size is known sends nothing") {
  // The proxy holds the question for the model's configuration, so every cancel() below comes
  // before the chunk size is known, however the threads are scheduled; pass() then delivers the
  // answers to calls already decided, which must not send a chunk.
  auto seen = std::make_shared<Seen>();
  auto server = server_with(plus_one(64, seen));
  FaultProxy proxy(server->port());
  proxy.stall();
  Client client(proxy.url());
  for (int i = 0; i < 20; ++i) {
    auto values = std::make_unique<std::vector<float>>(rows_of_values(500));
    std::promise<Result<InferResult>> done;
    auto handle = client.infer_chunked_async(
        InferRequest("plus_one").input("INPUT0", Tensor::view(*values, {500, 8})), ChunkOptions{},
        [&](Result<InferResult> r) { done.set_value(std::move(r)); });
    handle.cancel();
    CHECK(done.get_future().get().code() == StatusCode::Cancelled);
    values.reset();  // freed once the callback ran: nothing may read it now
  }
  proxy.pass();
  REQUIRE(client.server_live());
  std::this_thread::sleep_for(100ms);
  CHECK(seen->executions == 0);
}
