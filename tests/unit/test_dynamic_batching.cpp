// Dynamic batching in the executor, as Triton's dynamic batcher behaves: concurrent requests
// merged into one execution up to max_batch_size (at once at a preferred size, else after the
// queue delay), each request given its own rows, one bad request failing alone, and statistics
// that count inferences and executions apart.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sonic/executor.hpp"

using namespace sonic;
using namespace std::chrono_literals;

namespace {

// "double": FP32 [-1, 2] -> OUTPUT0 = 2 * INPUT0, recording each execution's batch size. A NaN
// in the inputs fails the whole execution (as a model fails on bad data). `gate`, when set,
// holds each execution until opened.
struct Recorder {
  std::mutex mutex;
  std::vector<std::int64_t> batches;
  std::vector<float> firsts;  // each execution's first value: which requests it began with
  int started = 0;            // executions that reached the model
  std::condition_variable opened;
  bool gate_open = true;
};

Model doubling_model(std::shared_ptr<Recorder> recorder, DynamicBatching batching,
                     int max_batch_size = 8) {
  Model m;
  m.name = "double";
  m.max_batch_size = max_batch_size;
  m.inputs = {{"INPUT0", DataType::Fp32, {-1, 2}}};
  m.outputs = {{"OUTPUT0", DataType::Fp32, {-1, 2}}};
  m.dynamic_batching = std::move(batching);
  m.compute = [recorder](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& in = request.find_input("INPUT0")->tensor;
    {
      std::unique_lock<std::mutex> lock(recorder->mutex);
      ++recorder->started;
      recorder->opened.wait(lock, [&] { return recorder->gate_open; });
      recorder->batches.push_back(in.shape().front());
      recorder->firsts.push_back(in.as<float>()[0]);
    }
    std::vector<float> out;
    for (float v : in.as<float>()) {
      if (std::isnan(v)) return Error(StatusCode::InvalidArgument, "a NaN in the input");
      out.push_back(2 * v);
    }
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(out), in.shape()), {}}};
  };
  return m;
}

DynamicBatching batching(std::vector<std::int64_t> preferred = {},
                         std::chrono::microseconds delay = {}) {
  DynamicBatching b;
  b.preferred_batch_sizes = std::move(preferred);
  b.max_queue_delay = delay;
  return b;
}

InferRequest rows(float first, std::int64_t count) {
  std::vector<float> values;
  for (std::int64_t i = 0; i < 2 * count; ++i) values.push_back(first + static_cast<float>(i));
  return InferRequest("double").input("INPUT0", Tensor::from_vector(values, {count, 2}));
}

std::future<Result<InferResult>> send(CpuExecutor& executor, InferRequest request) {
  auto promise = std::make_shared<std::promise<Result<InferResult>>>();
  auto future = promise->get_future();
  executor.infer_async(std::move(request),
                       [promise](Result<InferResult> r) { promise->set_value(std::move(r)); });
  return future;
}

// Each answer holds 2 * its own request's values, in its own shape.
void check_own_rows(Result<InferResult> result, float first, std::int64_t count) {
  REQUIRE_MESSAGE(result, result.error().message());
  auto out = result->output("OUTPUT0");
  CHECK(out.shape() == Shape{count, 2});
  auto values = out.as<float>();
  for (std::int64_t i = 0; i < 2 * count; ++i) {
    CHECK(values[static_cast<std::size_t>(i)] == 2 * (first + static_cast<float>(i)));
  }
}

}  // namespace

TEST_CASE("requests waiting together run as one execution, each answered with its rows") {
  auto recorder = std::make_shared<Recorder>();
  auto executor = CpuExecutor::with_models(
      {doubling_model(recorder, batching({4}, std::chrono::microseconds(2s)))}, 2);
  std::vector<std::future<Result<InferResult>>> answers;
  answers.push_back(send(*executor, rows(0, 1)));
  answers.push_back(send(*executor, rows(10, 2)));
  answers.push_back(send(*executor, rows(20, 1)));  // 4 rows: the preferred size, at once
  check_own_rows(answers[0].get(), 0, 1);
  check_own_rows(answers[1].get(), 10, 2);
  check_own_rows(answers[2].get(), 20, 1);
  CHECK(recorder->batches == std::vector<std::int64_t>{4});
  auto stats = executor->statistics("double").value();
  CHECK(stats.inference_count == 4);
  CHECK(stats.execution_count == 1);
  REQUIRE(stats.batch_stats.size() == 1);
  CHECK(stats.batch_stats[0].batch_size == 4);
  CHECK(stats.batch_stats[0].compute_infer.count == 1);
  CHECK(stats.success.count == 3);
}

TEST_CASE("a merged execution's BYTES outputs are cut into each request's rows too") {
  // "name": FP32 [-1, 2] -> NAME, BYTES [-1, 1]: "row <first value of the row>". Strings of
  // different lengths, so that rows are found by walking the elements, not by dividing.
  auto recorder = std::make_shared<Recorder>();
  Model m;
  m.name = "name";
  m.max_batch_size = 8;
  m.inputs = {{"INPUT0", DataType::Fp32, {-1, 2}}};
  m.outputs = {{"NAME", DataType::Bytes, {-1, 1}}};
  m.dynamic_batching = batching({4}, std::chrono::microseconds(2s));
  m.compute = [recorder](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& in = request.find_input("INPUT0")->tensor;
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      recorder->batches.push_back(in.shape().front());
    }
    std::vector<std::string> names;
    auto values = in.as<float>();
    for (std::size_t r = 0; r < values.size(); r += 2) {
      names.push_back("row " + std::to_string(static_cast<int>(values[r])));
    }
    return std::vector<NamedTensor>{
        {"NAME", Tensor::from_strings(names, {in.shape().front(), 1}), {}}};
  };
  auto executor = CpuExecutor::with_models({m}, 2);
  auto ask = [&](float first, std::int64_t count) {
    auto request = rows(first, count);
    return send(*executor, InferRequest("name").input("INPUT0", request.inputs()[0].tensor));
  };
  auto a = ask(0, 1);
  auto b = ask(100, 2);
  auto c = ask(5, 1);
  auto strings = [](Result<InferResult> result) {
    REQUIRE_MESSAGE(result, result.error().message());
    return result->output("NAME").to_strings();
  };
  CHECK(strings(a.get()) == std::vector<std::string>{"row 0"});
  CHECK(strings(b.get()) == std::vector<std::string>{"row 100", "row 102"});
  CHECK(strings(c.get()) == std::vector<std::string>{"row 5"});
  CHECK(recorder->batches == std::vector<std::int64_t>{4});  // one execution, not run again
}

TEST_CASE("a batch that cannot fill runs once its oldest request waited the queue delay") {
  auto recorder = std::make_shared<Recorder>();
  auto executor = CpuExecutor::with_models(
      {doubling_model(recorder, batching({}, std::chrono::microseconds(30ms)))}, 2);
  const auto sent = Clock::now();
  check_own_rows(send(*executor, rows(1, 1)).get(), 1, 1);
  CHECK(Clock::now() - sent >= 30ms);
  CHECK(recorder->batches == std::vector<std::int64_t>{1});
}

TEST_CASE("without a delay, what arrives while the model is busy forms the next batch") {
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, batching())}, 2);
  std::vector<std::future<Result<InferResult>>> answers;
  answers.push_back(send(*executor, rows(0, 1)));  // runs at once, held at the gate
  for (int waited = 0; waited < 5000; ++waited) {  // until the first execution is under way
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      if (recorder->started == 1) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  for (int i = 1; i <= 5; ++i) answers.push_back(send(*executor, rows(10.0f * i, 1)));
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  for (int i = 0; i <= 5; ++i) check_own_rows(answers[i].get(), 10.0f * i, 1);
  std::lock_guard<std::mutex> lock(recorder->mutex);
  CHECK(recorder->batches == std::vector<std::int64_t>{1, 5});
}

TEST_CASE("batches stop at max_batch_size; requests of other shapes run apart") {
  auto recorder = std::make_shared<Recorder>();
  auto executor = CpuExecutor::with_models(
      {doubling_model(recorder, batching({}, std::chrono::microseconds(50ms)), 4)}, 2);
  std::vector<std::future<Result<InferResult>>> answers;
  for (int i = 0; i < 3; ++i) answers.push_back(send(*executor, rows(10.0f * i, 2)));
  for (int i = 0; i < 3; ++i) check_own_rows(answers[i].get(), 10.0f * i, 2);
  std::lock_guard<std::mutex> lock(recorder->mutex);
  std::vector<std::int64_t> sorted = recorder->batches;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::int64_t>{2, 4});  // 2 + 2 fill the batch; the third waits
}

TEST_CASE("one bad request in a merged batch fails alone") {
  auto recorder = std::make_shared<Recorder>();
  auto executor = CpuExecutor::with_models(
      {doubling_model(recorder, batching({3}, std::chrono::microseconds(2s)))}, 2);
  auto good = send(*executor, rows(0, 1));
  InferRequest nan_request = InferRequest("double").input(
      "INPUT0", Tensor::from_vector(std::vector<float>{1, std::nanf("")}, {1, 2}));
  auto bad = send(*executor, std::move(nan_request));
  auto also_good = send(*executor, rows(5, 1));
  check_own_rows(good.get(), 0, 1);
  check_own_rows(also_good.get(), 5, 1);
  auto failed = bad.get();
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message() == "a NaN in the input");
  // A request the model's metadata refuses never joins a batch.
  auto wrong_shape =
      send(*executor, InferRequest("double").input(
                          "INPUT0", Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})));
  CHECK(wrong_shape.get().error().code() == StatusCode::InvalidArgument);
  auto too_big = send(*executor, rows(0, 9));
  CHECK(too_big.get().error().message() ==
        "inference request batch-size must be <= 8 for 'double'");
  // Triton's failure reasons: the model's own error is BACKEND's, a refused request OTHER's.
  auto stats = executor->statistics("double").value();
  CHECK(stats.fail.count == 3);
  CHECK(stats.failures.backend == 1);
  CHECK(stats.failures.other == 2);
  CHECK(stats.failures.rejected == 0);
  CHECK(stats.pending == 0);
}

TEST_CASE("many concurrent senders all get their own answers") {
  auto recorder = std::make_shared<Recorder>();
  auto executor = CpuExecutor::with_models(
      {doubling_model(recorder, batching({8}, std::chrono::microseconds(500)))}, 2);
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const float first = static_cast<float>(t * 1000 + i * 3);
        auto result = send(*executor, rows(first, 1)).get();
        auto values = result->output("OUTPUT0").as<float>();
        if (values[0] == 2 * first && values[1] == 2 * (first + 1)) right.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(right.load() == 800);
  auto stats = executor->statistics("double").value();
  CHECK(stats.inference_count == 800);
  CHECK(stats.execution_count < 800);  // some were merged
}

TEST_CASE("priority levels: a batch takes the highest level's requests first") {
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  DynamicBatching policy = batching();
  policy.priority_levels = 2;
  policy.default_priority_level = 2;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 2)}, 2);
  auto first = send(*executor, rows(0, 1));  // runs at once, held at the gate
  for (int waited = 0; waited < 5000; ++waited) {
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      if (recorder->started == 1) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  // Queued while the model is busy: two of the default level, then two of level 1.
  auto low_a = send(*executor, rows(10, 1));
  auto low_b = send(*executor, rows(20, 1));
  auto high_a = send(*executor, rows(30, 1).priority(1));
  auto high_b = send(*executor, rows(40, 1).priority(1));
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  check_own_rows(first.get(), 0, 1);
  check_own_rows(high_a.get(), 30, 1);
  check_own_rows(high_b.get(), 40, 1);
  check_own_rows(low_a.get(), 10, 1);
  check_own_rows(low_b.get(), 20, 1);
  // After the first, the batch of two high-priority requests ran before the two queued earlier.
  std::lock_guard<std::mutex> lock(recorder->mutex);
  CHECK(recorder->firsts == std::vector<float>{0, 30, 10});
  CHECK(recorder->batches == std::vector<std::int64_t>{1, 2, 2});
}

TEST_CASE(
    "priority_queue_policy: each level keeps its own size and timeout, the others the default") {
  // Triton's ModelDynamicBatching.priority_queue_policy: a level named there has its policy, the
  // other levels default_queue_policy's.
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  DynamicBatching policy = batching();
  policy.priority_levels = 2;
  policy.default_priority_level = 2;
  policy.default_queue_policy.max_queue_size = 1;
  QueuePolicy urgent;
  urgent.max_queue_size = 3;
  urgent.default_timeout = std::chrono::microseconds(20ms);
  policy.priority_queue_policy[1] = urgent;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
  auto first = send(*executor, rows(0, 1));  // held at the gate
  for (int waited = 0; waited < 5000; ++waited) {
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      if (recorder->started == 1) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  auto low = send(*executor, rows(10, 1));
  auto low_refused = send(*executor, rows(11, 1)).get();  // level 2: the default's size of 1
  std::vector<std::future<Result<InferResult>>> high;
  for (int i = 0; i < 3; ++i) high.push_back(send(*executor, rows(20 + i, 1).priority(1)));
  auto high_refused = send(*executor, rows(30, 1).priority(1)).get();  // level 1: its own 3
  CHECK(low_refused.error().message() == "Exceeds maximum queue size");
  CHECK(high_refused.error().message() == "Exceeds maximum queue size");
  std::this_thread::sleep_for(50ms);  // past level 1's timeout; level 2 has none
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  check_own_rows(first.get(), 0, 1);
  check_own_rows(low.get(), 10, 1);
  for (auto& h : high) CHECK(h.get().error().message() == "Request timeout expired");
  CHECK(executor->statistics("double").value().failures.rejected == 5);
}

TEST_CASE("a request that waits past its timeout is rejected with Triton's words") {
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  DynamicBatching policy = batching();
  policy.default_queue_policy.default_timeout = std::chrono::microseconds(10s);
  policy.default_queue_policy.allow_timeout_override = true;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
  auto first = send(*executor, rows(0, 1));  // holds the model
  // Its own timeout, shorter than the queue's, replaces it (Triton: an override below the
  // default).
  auto impatient = send(*executor, rows(1, 1).server_timeout(std::chrono::milliseconds(20)));
  auto patient = send(*executor, rows(2, 1));
  std::this_thread::sleep_for(40ms);  // past the impatient one's timeout, still queued
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  check_own_rows(first.get(), 0, 1);
  auto rejected = impatient.get();  // never run: rejected when the queue is next looked at
  REQUIRE_FALSE(rejected);
  CHECK(rejected.error().code() == StatusCode::Unavailable);
  CHECK(rejected.error().message() == "Request timeout expired");
  check_own_rows(patient.get(), 2, 1);
  // Counted as Triton counts a request its queue gives up on: a failure, REJECTED.
  auto stats = executor->statistics("double").value();
  CHECK(stats.success.count == 2);
  CHECK(stats.fail.count == 1);
  CHECK(stats.failures.rejected == 1);
  CHECK(stats.pending == 0);
  std::lock_guard<std::mutex> lock(recorder->mutex);
  CHECK(recorder->batches == std::vector<std::int64_t>{1, 1});
}

TEST_CASE("without allow_timeout_override the queue's own timeout holds; DELAY keeps requests") {
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  DynamicBatching policy = batching();
  policy.default_queue_policy.default_timeout = std::chrono::microseconds(10ms);
  policy.default_queue_policy.delay_expired = true;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
  auto first = send(*executor, rows(0, 1));
  // Its own timeout is ignored (no override); the queue's expires, but DELAY keeps it.
  auto late = send(*executor, rows(1, 1).server_timeout(std::chrono::microseconds(1)));
  std::this_thread::sleep_for(30ms);
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  check_own_rows(first.get(), 0, 1);
  check_own_rows(late.get(), 1, 1);
}

TEST_CASE("a request's own timeout may shorten its queue's, never lengthen it or make one") {
  // Triton takes a request's timeout only when it is set and below the queue's default
  // (PriorityQueue::PolicyQueue::Enqueue): a queue without a default timeout has none, and one
  // with a default keeps it for a request that asks for more.
  for (const auto default_timeout :
       {std::chrono::microseconds(0), std::chrono::microseconds(20ms)}) {
    CAPTURE(default_timeout.count());
    auto recorder = std::make_shared<Recorder>();
    recorder->gate_open = false;
    DynamicBatching policy = batching();
    policy.default_queue_policy.default_timeout = default_timeout;
    policy.default_queue_policy.allow_timeout_override = true;
    auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
    auto first = send(*executor, rows(0, 1));  // holds the model
    auto asks_more = send(*executor, rows(1, 1).server_timeout(std::chrono::seconds(10)));
    auto asks_less = send(*executor, rows(2, 1).server_timeout(std::chrono::milliseconds(5)));
    std::this_thread::sleep_for(60ms);  // past 20 ms, and past 5 ms
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      recorder->gate_open = true;
    }
    recorder->opened.notify_all();
    check_own_rows(first.get(), 0, 1);
    auto more = asks_more.get();
    auto less = asks_less.get();
    if (default_timeout.count() == 0) {  // no queue timeout: neither request has one
      check_own_rows(std::move(more), 1, 1);
      check_own_rows(std::move(less), 2, 1);
    } else {  // the queue's 20 ms holds for both (5 ms, shorter, passed too)
      CHECK(more.error().message() == "Request timeout expired");
      CHECK(less.error().message() == "Request timeout expired");
    }
  }
}

TEST_CASE("a full queue refuses with Triton's words") {
  auto recorder = std::make_shared<Recorder>();
  recorder->gate_open = false;
  DynamicBatching policy = batching();
  policy.default_queue_policy.max_queue_size = 1;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
  auto first = send(*executor, rows(0, 1));
  for (int waited = 0; waited < 5000; ++waited) {  // taken out of the queue, running
    {
      std::lock_guard<std::mutex> lock(recorder->mutex);
      if (recorder->started == 1) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  auto queued = send(*executor, rows(1, 1));
  auto refused = send(*executor, rows(2, 1)).get();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == StatusCode::Unavailable);
  CHECK(refused.error().message() == "Exceeds maximum queue size");
  // One running, one waiting (Triton's pending request count), one refused (REJECTED).
  auto held = executor->statistics("double").value();
  CHECK(held.pending == 1);
  CHECK(held.failures.rejected == 1);
  {
    std::lock_guard<std::mutex> lock(recorder->mutex);
    recorder->gate_open = true;
  }
  recorder->opened.notify_all();
  check_own_rows(first.get(), 0, 1);
  check_own_rows(queued.get(), 1, 1);
  CHECK(executor->statistics("double").value().pending == 0);
}

TEST_CASE("a timeout too long for the clock is no timeout, not an overflow") {
  auto recorder = std::make_shared<Recorder>();
  DynamicBatching policy = batching();
  policy.default_queue_policy.allow_timeout_override = true;
  auto executor = CpuExecutor::with_models({doubling_model(recorder, policy, 1)}, 2);
  // A client may send any int64 of microseconds; added to the clock in nanoseconds, this one
  // would overflow and make the request look long expired.
  check_own_rows(send(*executor, rows(3, 1).server_timeout(std::chrono::microseconds::max())).get(),
                 3, 1);
  // Triton also takes the parameter as a uint64: past int64's range too.
  check_own_rows(send(*executor, rows(4, 1).parameter("timeout", ~std::uint64_t{0})).get(), 4, 1);
}
