// A request's caller (sonic::Caller) in the executor: a request nobody waits for any more is
// answered unrun wherever it waits (the pool, a batching model's queue, a sequence), counted as
// Triton counts a cancelled request (failure reason CANCELED), and the model's execution count
// does not move; and a server's admission (CpuExecutor::admit) refuses at once a request that
// the requests ahead of it would make miss its deadline.
#include "sonic/caller.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sonic/executor.hpp"

using namespace sonic;
using namespace std::chrono_literals;

namespace {

// Holds every execution of the model until opened; counts those that reached it.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int entered = 0;

  void let_through() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
  bool wait_entered(int count) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return entered >= count; });
  }
};

// "held": FP32 [-1] (batching: [-1, -1]) -> OUTPUT0 = INPUT0, each execution held by `gate`.
Model held_model(std::shared_ptr<Gate> gate, std::optional<DynamicBatching> batching = {}) {
  Model m;
  m.name = "held";
  m.max_batch_size = batching ? 4 : 0;
  const Shape shape = batching ? Shape{-1, -1} : Shape{-1};
  m.inputs = {{"INPUT0", DataType::Fp32, shape}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, shape}};
  m.dynamic_batching = std::move(batching);
  m.compute = [gate](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    std::unique_lock<std::mutex> lock(gate->mutex);
    ++gate->entered;
    gate->changed.notify_all();
    gate->changed.wait(lock, [&] { return gate->open; });
    return std::vector<NamedTensor>{{"OUTPUT0", request.find_input("INPUT0")->tensor, {}}};
  };
  return m;
}

InferRequest held_request(bool batched = false) {
  return InferRequest("held").input(
      "INPUT0", Tensor::from_vector(std::vector<float>{1, 2}, batched ? Shape{1, 2} : Shape{2}));
}

std::future<Result<InferResult>> send(CpuExecutor& executor, InferRequest request) {
  auto promise = std::make_shared<std::promise<Result<InferResult>>>();
  auto future = promise->get_future();
  executor.infer_async(std::move(request),
                       [promise](Result<InferResult> r) { promise->set_value(std::move(r)); });
  return future;
}

std::shared_ptr<Caller> caller_for(std::chrono::nanoseconds wait) {
  return std::make_shared<Caller>(std::chrono::steady_clock::now() + wait);
}

}  // namespace

TEST_CASE("Caller: its deadline, a cancel that runs each queue's action once, a later deadline") {
  auto caller = caller_for(50ms);
  const auto now = std::chrono::steady_clock::now();
  CHECK(caller->has_deadline());
  CHECK_FALSE(caller->gone(now));
  CHECK_FALSE(caller->gone(now, "model 'm'"));
  auto late = caller->gone(now + 60ms, "model 'm'");
  REQUIRE(late);
  CHECK(late->code() == StatusCode::DeadlineExceeded);
  CHECK(late->message().find("model 'm'") != std::string::npos);

  // One action per key: a queue that sees many requests of one caller keeps one.
  int first = 0, second = 0, other = 0;
  int key_a = 0, key_b = 0;
  caller->on_cancel(&key_a, [&] { ++first; });
  caller->on_cancel(&key_a, [&] { ++second; });
  caller->on_cancel(&key_b, [&] { ++other; });
  caller->cancel();
  caller->cancel();
  CHECK(first == 0);
  CHECK(second == 1);
  CHECK(other == 1);
  CHECK(caller->gone(now, "x")->code() == StatusCode::Cancelled);
  int after = 0;
  caller->on_cancel(&key_a, [&] { ++after; });  // already cancelled: at once
  CHECK(after == 1);

  // A deadline learnt later only ever moves earlier.
  Caller patient;
  CHECK_FALSE(patient.has_deadline());
  patient.shorten_deadline(now + 10s);
  patient.shorten_deadline(now + 20s);
  CHECK(patient.deadline() == now + 10s);
}

TEST_CASE("a request whose deadline passes while it waits for a thread never reaches its model") {
  auto gate = std::make_shared<Gate>();
  auto executor = CpuExecutor::with_models({held_model(gate)}, 1);
  auto running = send(*executor, held_request());  // holds the only thread
  REQUIRE(gate->wait_entered(1));
  auto late = send(*executor, held_request().caller(caller_for(30ms)));
  std::this_thread::sleep_for(60ms);
  gate->let_through();
  CHECK(running.get().ok());
  auto answer = late.get();
  REQUIRE_FALSE(answer);
  CHECK(answer.error().code() == StatusCode::DeadlineExceeded);
  auto stats = executor->statistics("held").value();
  CHECK(stats.execution_count == 1);
  CHECK(gate->entered == 1);
  CHECK(stats.failures.canceled == 1);  // Triton's reason for a call that went away
  CHECK(stats.fail.count == 1);
}

TEST_CASE("a cancelled caller's request leaves a batching model's queue at once, unrun") {
  auto gate = std::make_shared<Gate>();
  DynamicBatching batching;
  auto executor = CpuExecutor::with_models({held_model(gate, batching)}, 2);
  auto running = send(*executor, held_request(true));  // one runner: the model's one instance
  REQUIRE(gate->wait_entered(1));
  auto caller = std::make_shared<Caller>();
  auto queued = send(*executor, held_request(true).caller(caller));
  caller->cancel();
  // Answered while the execution ahead of it still holds the model: it left the queue.
  REQUIRE(queued.wait_for(5s) == std::future_status::ready);
  auto answer = queued.get();
  REQUIRE_FALSE(answer);
  CHECK(answer.error().code() == StatusCode::Cancelled);
  gate->let_through();
  CHECK(running.get().ok());
  auto stats = executor->statistics("held").value();
  CHECK(stats.execution_count == 1);
  CHECK(stats.failures.canceled == 1);
  CHECK(stats.pending == 0);
}

TEST_CASE("a batching model's queue answers a request past its caller's deadline unrun") {
  auto gate = std::make_shared<Gate>();
  DynamicBatching batching;
  auto executor = CpuExecutor::with_models({held_model(gate, batching)}, 2);
  auto running = send(*executor, held_request(true));
  REQUIRE(gate->wait_entered(1));
  auto late = send(*executor, held_request(true).caller(caller_for(20ms)));
  auto patient = send(*executor, held_request(true));
  std::this_thread::sleep_for(50ms);
  gate->let_through();
  CHECK(running.get().ok());
  CHECK(patient.get().ok());
  CHECK(late.get().error().code() == StatusCode::DeadlineExceeded);
  auto stats = executor->statistics("held").value();
  CHECK(stats.failures.canceled == 1);
  CHECK(gate->entered == 2);  // the first, then the patient one alone: the late one never ran
}

TEST_CASE("a sequence whose next request's caller went away ends, as Triton cancels it") {
  auto gate = std::make_shared<Gate>();
  Model m = held_model(gate);
  m.sequence_batching = SequenceBatching{};
  auto executor = CpuExecutor::with_models({m}, 2);
  auto first = send(*executor, held_request().sequence(7, true));
  REQUIRE(gate->wait_entered(1));
  auto gone = std::make_shared<Caller>();
  auto second = send(*executor, held_request().sequence(7).caller(gone));
  auto third = send(*executor, held_request().sequence(7));
  gone->cancel();
  gate->let_through();
  CHECK(first.get().ok());
  CHECK(second.get().error().code() == StatusCode::Cancelled);
  auto after = third.get();  // queued behind it: the sequence is over
  REQUIRE_FALSE(after);
  CHECK(after.error().code() == StatusCode::Cancelled);
  CHECK(after.error().message().find("sequence") != std::string::npos);
  // The id is free: the next request must start a sequence again.
  auto unstarted = send(*executor, held_request().sequence(7)).get();
  CHECK(unstarted.error().code() == StatusCode::InvalidArgument);
  CHECK(send(*executor, held_request().sequence(7, true)).get().ok());
  auto stats = executor->statistics("held").value();
  CHECK(stats.failures.canceled == 2);
  CHECK(gate->entered == 2);
}

TEST_CASE("admission: refused at once when the requests ahead would make it miss its deadline") {
  auto gate = std::make_shared<Gate>();
  gate->open = true;
  auto executor = CpuExecutor::with_models({held_model(gate)}, 1);
  // A model that has not run yet has no execution time to go by: nothing is refused.
  std::vector<Admission> under_way;
  for (int i = 0; i < 3; ++i) {
    auto admitted = executor->admit(held_request().caller(caller_for(1ms)));
    REQUIRE(admitted);
    under_way.push_back(std::move(*admitted));
  }
  under_way.clear();
  // It runs once, taking about 30 ms.
  gate->open = false;
  auto timed = send(*executor, held_request());
  REQUIRE(gate->wait_entered(1));
  std::this_thread::sleep_for(30ms);
  gate->let_through();
  REQUIRE(timed.get().ok());
  // Four requests under way on its one instance: a fifth would finish in about 150 ms.
  for (int i = 0; i < 4; ++i) {
    auto admitted = executor->admit(held_request());
    REQUIRE(admitted);
    under_way.push_back(std::move(*admitted));
  }
  auto hurried = executor->admit(held_request().caller(caller_for(60ms)));
  REQUIRE_FALSE(hurried);
  CHECK(hurried.error().code() == StatusCode::Unavailable);  // retryable, elsewhere
  CHECK(hurried.error().reason() == "WOULD_MISS_DEADLINE");
  CHECK(executor->statistics("held").value().failures.rejected == 1);
  CHECK(executor->admit(held_request().caller(caller_for(10s))).ok());  // time enough
  CHECK(executor->admit(held_request()).ok());                          // no deadline
  CHECK(executor->admit(held_request().caller(caller_for(60ms)), /*shed=*/false).ok());
  // As they are answered the wait shrinks: with none ahead, it fits again.
  under_way.clear();
  CHECK(executor->admit(held_request().caller(caller_for(60ms))).ok());
}

TEST_CASE("admission goes by the model's pace, not by executions that waited for one another") {
  // Eight instances that share one engine (as ONNX Runtime sessions share a machine's cores):
  // each execution's own time counts its wait for the others, eight times the model's pace.
  // The arithmetic is checked exactly in test_answer_estimate.cpp; here, that the executor
  // measures the pace and admits by it. Deadlines are set from the pace this run measured, so
  // that a loaded machine (sanitizers, a busy CI) slows both sides alike.
  // The engine serves its callers in turn (a ticket lock), as a fair engine would: with an
  // unfair mutex a loaded machine lets some executions wait for many more than seven others.
  struct Engine {
    std::mutex mutex;
    std::condition_variable turn_changed;
    std::uint64_t next_ticket = 0, serving = 0;
    std::vector<sonic::Clock::time_point> ends;
  };
  auto engine = std::make_shared<Engine>();
  Model m;
  m.name = "shared";
  m.instances = 8;
  m.inputs = {{"INPUT0", DataType::Fp32, Shape{-1}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, Shape{-1}}};
  m.compute = [engine](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    std::unique_lock<std::mutex> lock(engine->mutex);
    const std::uint64_t ticket = engine->next_ticket++;
    engine->turn_changed.wait(lock, [&] { return engine->serving == ticket; });
    lock.unlock();  // its turn: the others take tickets meanwhile
    std::this_thread::sleep_for(40ms);
    lock.lock();
    engine->ends.push_back(sonic::Clock::now());
    ++engine->serving;
    engine->turn_changed.notify_all();
    return std::vector<NamedTensor>{{"OUTPUT0", request.find_input("INPUT0")->tensor, {}}};
  };
  auto executor = CpuExecutor::with_models({m}, 8);
  auto request = [] {
    return InferRequest("shared").input("INPUT0",
                                        Tensor::from_vector(std::vector<float>{1}, Shape{1}));
  };
  // Busy for a while: one execution ends every 40 ms or so, each having taken eight times that.
  std::vector<Admission> under_way;
  std::vector<std::future<Result<InferResult>>> answers;
  for (int i = 0; i < 32; ++i) {
    auto admitted = executor->admit(request());
    REQUIRE(admitted);
    under_way.push_back(std::move(*admitted));
    answers.push_back(send(*executor, request()));
  }
  for (auto& answer : answers) REQUIRE(answer.get().ok());
  under_way.resize(8);
  // The pace the executor measured (a moving mean of the gaps between ends) lies between the
  // quickest and the slowest gap this run saw.
  sonic::Clock::duration quickest = sonic::Clock::duration::max(), slowest{0};
  {
    std::lock_guard<std::mutex> lock(engine->mutex);
    REQUIRE(engine->ends.size() == 32);
    for (std::size_t i = 1; i < engine->ends.size(); ++i) {
      quickest = std::min(quickest, engine->ends[i] - engine->ends[i - 1]);
      slowest = std::max(slowest, engine->ends[i] - engine->ends[i - 1]);
    }
  }
  // Eight ahead: the ninth ends in about 9 paces, within a deadline of 11 with its tenth kept
  // in hand; counted in rounds of eight executions of eight paces each it would be 16 (with 40
  // ms paces: 360 ms by the pace, 640 ms by rounds). Under 7 paces it cannot make it.
  CHECK(executor->admit(request().caller(caller_for(11 * slowest))).ok());
  CHECK_FALSE(executor->admit(request().caller(caller_for(7 * quickest))).ok());
}

TEST_CASE("an admission abandoned in a server's own queue counts as cancelled") {
  auto gate = std::make_shared<Gate>();
  gate->open = true;
  auto executor = CpuExecutor::with_models({held_model(gate)}, 1);
  auto admitted = executor->admit(held_request());
  REQUIRE(admitted);
  admitted->abandon(Error(StatusCode::Cancelled, "reset"), 5ms);
  auto stats = executor->statistics("held").value();
  CHECK(stats.failures.canceled == 1);
  CHECK(stats.execution_count == 0);
}
