// The executor's sequence batcher (Triton's, for stateful models): a sequence's requests run in
// the order they came, one at a time, with the control inputs and implicit state the model
// asks for; the state is bounded in bytes and freed at the end; a synchronous caller never
// waits for a free executor thread.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sonic/executor.hpp"

namespace {

using namespace std::chrono_literals;
using sonic::DataType;
using sonic::SequenceControl;

// A model whose output depends on the order of a sequence's requests: STATE' = STATE * 10 +
// INPUT, reported as OUTPUT. `pause` is how long each request takes.
sonic::Model digits(std::chrono::milliseconds pause = 0ms, int max_batch_size = 0) {
  sonic::Model m;
  m.name = "digits";
  m.max_batch_size = max_batch_size;
  const sonic::Shape one = max_batch_size > 0 ? sonic::Shape{-1, 1} : sonic::Shape{1};
  m.inputs = {{"INPUT", DataType::Int64, one}};
  m.outputs = {{"OUTPUT", DataType::Int64, one}};
  sonic::SequenceBatching sequences;
  sequences.states = {{"STATE_IN", "STATE_OUT", DataType::Int64, {1}, {}, {}}};
  m.sequence_batching = sequences;
  m.compute =
      [pause](const sonic::InferRequest& r) -> sonic::Result<std::vector<sonic::NamedTensor>> {
    std::this_thread::sleep_for(pause);
    const auto& in = r.find_input("INPUT")->tensor;
    const std::int64_t next =
        r.find_input("STATE_IN")->tensor.as<std::int64_t>()[0] * 10 + in.as<std::int64_t>()[0];
    return std::vector<sonic::NamedTensor>{
        {"OUTPUT", sonic::Tensor::from_vector(std::vector<std::int64_t>{next}, in.shape()), {}},
        {"STATE_OUT", sonic::Tensor::from_vector(std::vector<std::int64_t>{next}, in.shape()), {}}};
  };
  return m;
}

sonic::InferRequest digit(std::int64_t value, std::uint64_t id, bool start = false,
                          bool end = false, sonic::Shape shape = {1}) {
  return std::move(sonic::InferRequest("digits")
                       .input("INPUT", sonic::Tensor::from_vector(std::vector<std::int64_t>{value},
                                                                  std::move(shape)))
                       .sequence(id, start, end));
}

std::int64_t output64_of(const sonic::Result<sonic::InferResult>& result) {
  return result.value().output("OUTPUT").as<std::int64_t>()[0];
}

}  // namespace

TEST_CASE("sequence batching: a sequence's requests run in the order they came, one at a time") {
  // Four threads, requests sent back to back without waiting: run side by side, the digits
  // would come out of order.
  auto executor = sonic::CpuExecutor::with_models({digits(2ms)}, 4);
  std::vector<std::future<sonic::Result<sonic::InferResult>>> results;
  auto send = [&](sonic::InferRequest request) {
    auto promise = std::make_shared<std::promise<sonic::Result<sonic::InferResult>>>();
    results.push_back(promise->get_future());
    executor->infer_async(std::move(request), [promise](sonic::Result<sonic::InferResult> r) {
      promise->set_value(std::move(r));
    });
  };
  for (std::uint64_t id : {11u, 12u}) send(digit(1, id, true));
  for (std::int64_t d = 2; d <= 6; ++d) {
    for (std::uint64_t id : {11u, 12u}) send(digit(d, id, false, d == 6));
  }
  std::vector<std::int64_t> got;
  for (auto& f : results) got.push_back(output64_of(f.get()));
  CHECK(got[got.size() - 2] == 123456);
  CHECK(got[got.size() - 1] == 123456);
  CHECK(got[4] == 123);
}

TEST_CASE("sequence batching: the control inputs carry start, end, ready and the id") {
  std::mutex mutex;
  std::vector<std::vector<double>> seen;  // START, END, READY, CORRID of each request
  std::vector<std::string> string_ids;
  auto make = [&](DataType flag_type, DataType id_type) {
    sonic::Model m;
    m.name = "controls";
    m.inputs = {{"X", DataType::Fp32, {1}}};
    m.outputs = {{"Y", DataType::Fp32, {1}}};
    sonic::SequenceBatching sequences;
    sequences.controls = {{SequenceControl::Kind::Start, "S", flag_type, 5, 7},
                          {SequenceControl::Kind::End, "E", flag_type, 0, 1},
                          {SequenceControl::Kind::Ready, "R", flag_type, 0, 1},
                          {SequenceControl::Kind::CorrelationId, "C", id_type}};
    m.sequence_batching = sequences;
    m.compute =
        [&, flag_type](
            const sonic::InferRequest& r) -> sonic::Result<std::vector<sonic::NamedTensor>> {
      auto value = [&](const char* name) -> double {
        const auto& t = r.find_input(name)->tensor;
        if (t.shape() != sonic::Shape{1}) return -1;
        switch (t.dtype()) {
          case DataType::Fp32: return t.as<float>()[0];
          case DataType::Int32: return t.as<std::int32_t>()[0];
          case DataType::Bool: return t.data()[0];
          case DataType::UInt64: return static_cast<double>(t.as<std::uint64_t>()[0]);
          case DataType::Int64: return static_cast<double>(t.as<std::int64_t>()[0]);
          case DataType::UInt32: return t.as<std::uint32_t>()[0];
          default: return -2;
        }
      };
      std::lock_guard<std::mutex> lock(mutex);
      CHECK(r.find_input("S")->tensor.dtype() == flag_type);
      if (r.find_input("C")->tensor.dtype() == DataType::Bytes) {
        string_ids.push_back(r.find_input("C")->tensor.to_strings().at(0));
        seen.push_back({value("S"), value("E"), value("R"), 0});
      } else {
        seen.push_back({value("S"), value("E"), value("R"), value("C")});
      }
      return std::vector<sonic::NamedTensor>{{"Y", r.find_input("X")->tensor.to_owned(), {}}};
    };
    return m;
  };
  auto x = [](sonic::InferRequest r) {
    return std::move(r.input("X", sonic::Tensor::from_vector(std::vector<float>{1}, {1})));
  };
  for (auto flag_type : {DataType::Int32, DataType::Fp32, DataType::Bool}) {
    CAPTURE(sonic::to_string(flag_type));
    seen.clear();
    auto executor = sonic::CpuExecutor::with_models({make(flag_type, DataType::UInt64)}, 1);
    REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence(42, true))).ok());
    REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence(42))).ok());
    REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence(42, false, true))).ok());
    const double on = flag_type == DataType::Bool ? 1 : 7,
                 off = flag_type == DataType::Bool ? 1 : 5;
    // A bool control is true or false: 5 and 7 are both true.
    CHECK(seen ==
          std::vector<std::vector<double>>{{on, 0, 1, 42}, {off, 0, 1, 42}, {off, 1, 1, 42}});
  }
  for (auto id_type : {DataType::Int64, DataType::UInt32, DataType::Int32}) {
    seen.clear();
    auto executor = sonic::CpuExecutor::with_models({make(DataType::Int32, id_type)}, 1);
    REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence(9, true, true))).ok());
    CHECK(seen.at(0).at(3) == 9);
    // A string id cannot be given to a numeric id input.
    auto refused = executor->infer(x(sonic::InferRequest("controls").sequence("abc", true)));
    CHECK(refused.code() == sonic::StatusCode::InvalidArgument);
  }
  // A BYTES id input takes string ids, and numbers written out.
  auto executor = sonic::CpuExecutor::with_models({make(DataType::Int32, DataType::Bytes)}, 1);
  REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence("run-7", true))).ok());
  REQUIRE(executor->infer(x(sonic::InferRequest("controls").sequence(77, true))).ok());
  CHECK(string_ids == std::vector<std::string>{"run-7", "77"});
}

TEST_CASE("sequence batching: state starts from its initial value, grows, and is bounded") {
  // STATE' = STATE with INPUT appended: a state with a -1 dimension grows by a row per request.
  sonic::Model m;
  m.name = "append";
  m.inputs = {{"INPUT", DataType::UInt8, {1}}};
  m.outputs = {{"LENGTH", DataType::Int64, {1}}};
  sonic::SequenceBatching sequences;
  sequences.states = {{"LOG_IN", "LOG_OUT", DataType::UInt8, {-1}, {9}, {}}};
  sequences.limits.max_state_bytes = 4;
  m.sequence_batching = sequences;
  m.compute = [](const sonic::InferRequest& r) -> sonic::Result<std::vector<sonic::NamedTensor>> {
    const auto& log = r.find_input("LOG_IN")->tensor;
    std::vector<std::uint8_t> next(log.data(), log.data() + log.byte_size());
    next.push_back(r.find_input("INPUT")->tensor.data()[0]);
    const auto n = static_cast<std::int64_t>(next.size());
    return std::vector<sonic::NamedTensor>{
        {"LENGTH", sonic::Tensor::from_vector(std::vector<std::int64_t>{n}, {1}), {}},
        {"LOG_OUT", sonic::Tensor::copy_bytes(DataType::UInt8, {n}, next.data(), next.size()), {}}};
  };
  auto executor = sonic::CpuExecutor::with_models({m}, 1);
  auto add = [&](std::uint8_t value, std::uint64_t id, bool start = false, bool end = false) {
    return executor->infer(
        std::move(sonic::InferRequest("append")
                      .input("INPUT", sonic::Tensor::copy_bytes(DataType::UInt8, {1}, &value, 1))
                      .sequence(id, start, end)));
  };
  auto length = [](const sonic::Result<sonic::InferResult>& r) {
    return r.value().output("LENGTH").as<std::int64_t>()[0];
  };
  CHECK(length(add(1, 5, true)) == 2);  // the initial state [9], then 1
  CHECK(length(add(2, 5)) == 3);
  // The state output is the model's own business: clients get the outputs they asked for.
  CHECK(add(3, 5).value().outputs().size() == 1);
  // 4 bytes are held; a fifth would pass the bound: refused, and the state stays as it was.
  CHECK(add(4, 5).code() == sonic::StatusCode::ResourceExhausted);
  // Another sequence cannot start either (its initial byte has no room)...
  CHECK(add(1, 6, true).code() == sonic::StatusCode::ResourceExhausted);
  // ...until the first ends: its state is freed at once.
  CHECK(add(4, 5, false, true).code() == sonic::StatusCode::ResourceExhausted);
  CHECK(length(add(1, 6, true)) == 2);
}

TEST_CASE("sequence batching: a model that batches takes one row per request") {
  auto executor = sonic::CpuExecutor::with_models({digits(0ms, 8)}, 1);
  CHECK(output64_of(executor->infer(digit(4, 3, true, false, {1, 1}))) == 4);
  auto two_rows =
      sonic::InferRequest("digits")
          .input("INPUT", sonic::Tensor::from_vector(std::vector<std::int64_t>{1, 2}, {2, 1}))
          .sequence(3);
  auto refused = executor->infer(two_rows);
  CHECK(refused.code() == sonic::StatusCode::InvalidArgument);
  CHECK(refused.error().message().find("must specify batch-size 1 due to requirements of "
                                       "sequence batcher") != std::string::npos);
  CHECK(output64_of(executor->infer(digit(5, 3, false, true, {1, 1}))) == 45);
}

TEST_CASE("sequence batching: infer() runs its sequence itself rather than wait for a thread") {
  // One executor thread, kept busy; a request of the sequence is queued for it. A synchronous
  // caller of the same sequence must not wait for that thread: it runs the queued request and
  // its own, in order, on its own thread.
  auto executor = sonic::CpuExecutor::with_models({digits()}, 1);
  std::promise<void> release;
  auto busy = release.get_future().share();
  executor->run_async([busy] { busy.wait(); });
  REQUIRE(executor->infer(digit(1, 8, true)).ok());  // the caller's own thread, while busy
  std::promise<sonic::Result<sonic::InferResult>> queued;
  executor->infer_async(
      digit(2, 8), [&](sonic::Result<sonic::InferResult> r) { queued.set_value(std::move(r)); });
  auto sync = std::async(std::launch::async, [&] { return executor->infer(digit(3, 8)); });
  const bool finished = sync.wait_for(5s) == std::future_status::ready;
  release.set_value();
  REQUIRE(finished);
  CHECK(output64_of(sync.get()) == 123);
  CHECK(output64_of(queued.get_future().get()) == 12);
}

TEST_CASE("sequence batching: a running sequence is not dropped as idle") {
  sonic::Model m = digits(150ms);
  m.sequence_batching->limits.idle = 100ms;
  auto executor = sonic::CpuExecutor::with_models({m}, 2);
  auto later = [&](sonic::InferRequest request) {
    auto promise = std::make_shared<std::promise<sonic::Result<sonic::InferResult>>>();
    executor->infer_async(std::move(request), [promise](sonic::Result<sonic::InferResult> r) {
      promise->set_value(std::move(r));
    });
    return promise->get_future();
  };
  REQUIRE(executor->infer(digit(1, 4, true)).ok());
  auto second = later(digit(2, 4));       // runs for 150 ms: longer than the idle limit
  std::this_thread::sleep_for(110ms);     // past the idle limit since it came, still running
  auto other = later(digit(7, 5, true));  // a START sweeps idle sequences: 4 is busy, not idle
  CHECK(output64_of(second.get()) == 12);
  CHECK(output64_of(executor->infer(digit(3, 4, false, true))) == 123);
  CHECK(other.get().ok());
  // Idle for longer than the limit with nothing queued or running: dropped.
  REQUIRE(executor->infer(digit(1, 6, true)).ok());
  std::this_thread::sleep_for(250ms);
  REQUIRE(executor->infer(digit(1, 9, true)).ok());
  CHECK(executor->infer(digit(1, 6)).code() == sonic::StatusCode::InvalidArgument);
}

TEST_CASE("sequence batching: a model cannot batch dynamically and by sequence at once") {
  sonic::Model m = digits(0ms, 8);
  m.dynamic_batching = sonic::DynamicBatching{};
  sonic::CpuExecutor executor(1);
  CHECK_THROWS_AS(executor.add_model(m), sonic::Error);
}

TEST_CASE("sequence batching: each request counts once in compute input, infer and output") {
  // Triton counts every execution in all three; perf_analyzer refuses statistics whose counts
  // differ ("Server side statistics compute counts must be the same").
  auto executor = sonic::CpuExecutor::with_models({digits()}, 2);
  REQUIRE(executor->infer(digit(1, 3, true)).ok());
  REQUIRE(executor->infer(digit(2, 3)).ok());
  std::promise<sonic::Result<sonic::InferResult>> last;
  executor->infer_async(digit(3, 3, false, true),
                        [&](sonic::Result<sonic::InferResult> r) { last.set_value(std::move(r)); });
  REQUIRE(last.get_future().get().ok());
  auto stats = executor->statistics("digits");
  REQUIRE(stats.ok());
  CHECK(stats->compute_infer.count == 3);
  CHECK(stats->compute_input.count == 3);
  CHECK(stats->compute_output.count == 3);
}
