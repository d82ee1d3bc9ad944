// Ensembles in the executor: a decoupled step's every response carried through the steps after
// it, a step's error naming the step, steps that run at once on a pool too small for all of
// them, and an ensemble loaded outside an executor. The step models are registered here; the
// ensembles come from a repository on disk, as a server's and a fallback's do.
// Over 500 lines: one case per rule of Triton's ensemble scheduler, all on the same step models.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "sonic/caller.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/repository.hpp"

using namespace sonic;
namespace fs = std::filesystem;

namespace ensemble_tests {

TensorMetadata fp32(const char* name) { return {name, DataType::Fp32, {-1}}; }

std::vector<float> values(const Tensor& tensor) {
  auto view = tensor.as<float>();
  return std::vector<float>(view.begin(), view.end());
}

// Y = X + k.
Model adds(const char* name, float k) {
  Model model;
  model.name = name;
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.compute = [k](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    std::vector<float> out;
    for (float v : request.find_input("X")->tensor.as<float>()) out.push_back(v + k);
    return std::vector<NamedTensor>{{"Y", Tensor::from_vector(std::move(out), {1}), {}}};
  };
  return model;
}

// Y = X + 100, merging concurrent requests (a request is a batch of its rows): a batch of 4
// runs at once, a smaller one once its first request has waited `delay`.
Model batched_adds(const char* name, std::chrono::microseconds delay) {
  Model model;
  model.name = name;
  model.max_batch_size = 8;
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto out = values(request.find_input("X")->tensor);
    for (float& v : out) v += 100;
    const auto rows = static_cast<std::int64_t>(out.size());
    return std::vector<NamedTensor>{{"Y", Tensor::from_vector(std::move(out), {rows}), {}}};
  };
  DynamicBatching batching;
  batching.preferred_batch_sizes = {4};
  batching.max_queue_delay = delay;
  model.dynamic_batching = batching;
  return model;
}

// Decoupled: three responses, Y = X * 1, X * 2, X * 3.
Model repeats() {
  Model model;
  model.name = "repeat";
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.decoupled = [](const InferRequest& request, const ResponseSink& respond) -> Result<void> {
    for (float factor : {1.0f, 2.0f, 3.0f}) {
      std::vector<float> out;
      for (float v : request.find_input("X")->tensor.as<float>()) out.push_back(v * factor);
      respond({{"Y", Tensor::from_vector(std::move(out), {1}), {}}});
    }
    return {};
  };
  return model;
}

// The one instance of a model that holds it while it runs (as a Python model's stub is held):
// a second run waits for it, up to a second, then fails. (A polled std::mutex: ThreadSanitizer
// does not follow std::timed_mutex's timed lock.)
std::mutex the_instance;

std::unique_lock<std::mutex> take_the_instance() {
  std::unique_lock<std::mutex> held(the_instance, std::defer_lock);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!held.try_lock() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return held;
}

// Decoupled, holding the_instance: two responses, Y = X and X + 1.
Model holds_while_streaming() {
  Model model;
  model.name = "streams";
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.decoupled = [](const InferRequest& request, const ResponseSink& respond) -> Result<void> {
    auto held = take_the_instance();
    if (!held) return Error(StatusCode::Unavailable, "the instance is busy");
    for (float k : {0.0f, 1.0f}) {
      std::vector<float> out;
      for (float v : request.find_input("X")->tensor.as<float>()) out.push_back(v + k);
      respond({{"Y", Tensor::from_vector(std::move(out), {1}), {}}});
    }
    return {};
  };
  return model;
}

// Set by a test's callback when the ensemble's first response reaches it.
std::atomic<bool> first_response_arrived{false};

// Decoupled: Y = X, then, once the ensemble's first response has reached the test (up to two
// seconds), Y = X + 1.
Model waits_for_its_first_response() {
  Model model;
  model.name = "waits";
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.decoupled = [](const InferRequest& request, const ResponseSink& respond) -> Result<void> {
    const float x = request.find_input("X")->tensor.as<float>()[0];
    respond({{"Y", Tensor::from_vector(std::vector<float>{x}, {1}), {}}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!first_response_arrived && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!first_response_arrived) {
      return Error(StatusCode::Internal, "the first response had not arrived after 2 s");
    }
    respond({{"Y", Tensor::from_vector(std::vector<float>{x + 1}, {1}), {}}});
    return {};
  };
  return model;
}

// Y = X + B, B optional (0 without it).
Model adds_optional() {
  Model model;
  model.name = "adds_optional";
  model.inputs = {fp32("X"), fp32("B")};
  model.optional_inputs = {"B"};
  model.outputs = {fp32("Y")};
  model.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto out = values(request.find_input("X")->tensor);
    if (const NamedTensor* b = request.find_input("B")) out[0] += values(b->tensor).at(0);
    return std::vector<NamedTensor>{{"Y", Tensor::from_vector(std::move(out), {1}), {}}};
  };
  return model;
}

Model fails() {
  Model model;
  model.name = "fails";
  model.inputs = {fp32("X")};
  model.outputs = {fp32("Y")};
  model.compute = [](const InferRequest&) -> Result<std::vector<NamedTensor>> {
    return Error(StatusCode::Internal, "the detector geometry is missing");
  };
  return model;
}

// Y = X; cancels its request's caller as it runs (the client went away meanwhile).
Model cancels_its_caller() {
  Model model = adds("cancels_its_caller", 0);
  auto compute = model.compute;
  model.compute = [compute](const InferRequest& request) {
    if (request.caller()) request.caller()->cancel();
    return compute(request);
  };
  return model;
}

// An ensemble's directory: config.pbtxt and its empty version directory.
void write_ensemble(const fs::path& root, const std::string& name, const std::string& steps,
                    const std::string& more_inputs = {}) {
  fs::create_directories(root / name / "1");
  std::ofstream(root / name / "config.pbtxt")
      << "name: \"" << name << "\"\nplatform: \"ensemble\"\n"
      << "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] }]\n"
      << more_inputs << "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }]\n"
      << "ensemble_scheduling {\n"
      << steps << "}\n";
}

std::string step(const std::string& model, const std::string& in, const std::string& out) {
  return "step [{ model_name: \"" + model +
         "\" model_version: -1 input_map { key: \"X\" value: \"" + in +
         "\" } output_map { key: \"Y\" value: \"" + out + "\" } }]\n";
}

// An executor of the registered step models, its source a repository of ensembles.
std::shared_ptr<CpuExecutor> executor_with_ensembles(const std::string& scratch,
                                                     std::size_t threads = 2) {
  const fs::path root = fs::path(SONIC_TEST_SCRATCH) / scratch;
  fs::remove_all(root);
  write_ensemble(root, "fan_out", step("repeat", "IN", "r") + step("plus_ten", "r", "OUT"));
  write_ensemble(root, "broken", step("plus_one", "IN", "a") + step("fails", "a", "OUT"));
  write_ensemble(root, "as_they_come", step("waits", "IN", "w") + step("plus_ten", "w", "OUT"));
  // "streams" twice: the second step needs the instance the first holds while it runs.
  write_ensemble(root, "streams_twice", step("streams", "IN", "s") + step("streams", "s", "OUT"));
  write_ensemble(
      root, "streams_twice_limited",
      "max_inflight_requests: 1\n" + step("streams", "IN", "s") + step("streams", "s", "OUT"));
  // The same, with the first "streams" inside an ensemble of its own.
  write_ensemble(root, "inner_streams", step("streams", "IN", "OUT"));
  write_ensemble(root, "streams_inside_and_after",
                 "step [{ model_name: \"inner_streams\" input_map { key: \"IN\" value: \"IN\" } "
                 "output_map { key: \"OUT\" value: \"s\" } }]\n" +
                     step("streams", "s", "OUT"));
  // EXTRA is optional: adds_optional goes without it, plus_one cannot.
  const std::string extra =
      "input [{ name: \"EXTRA\" data_type: TYPE_FP32 dims: [ -1 ] "
      "optional: true }]\n";
  write_ensemble(root, "optional_extra",
                 "step [{ model_name: \"adds_optional\" input_map { key: \"X\" value: \"IN\" } "
                 "input_map { key: \"B\" value: \"EXTRA\" } output_map { key: \"Y\" value: "
                 "\"OUT\" } }]\n",
                 extra);
  write_ensemble(root, "required_extra", step("plus_ten", "EXTRA", "OUT"), extra);
  write_ensemble(root, "versions",
                 step("plus_one", "IN", "a") +
                     "step [{ model_name: \"plus_one\" model_version: 1 input_map { key: \"X\" "
                     "value: \"a\" } output_map { key: \"Y\" value: \"OUT\" } }]\n");
  // Three independent steps, then two that join them: more steps at once than pool threads.
  write_ensemble(root, "wide",
                 step("plus_ten", "IN", "a") + step("plus_ten", "IN", "b") +
                     step("plus_ten", "IN", "c") +
                     "step [{ model_name: \"join\" input_map { key: \"A\" value: \"a\" } "
                     "input_map { key: \"B\" value: \"b\" } output_map { key: \"Z\" value: "
                     "\"ab\" } }]\n"
                     "step [{ model_name: \"join\" input_map { key: \"A\" value: \"ab\" } "
                     "input_map { key: \"B\" value: \"c\" } output_map { key: \"Z\" value: "
                     "\"OUT\" } }]\n");
  fs::create_directories(root / "counts_down" / "1");
  std::ofstream(root / "counts_down" / "1" / "model.self");
  std::ofstream(root / "counts_down" / "config.pbtxt")
      << "backend: \"self_calls\"\nmax_batch_size: 8\ndynamic_batching { }\n"
      << "input [{ name: \"X\" data_type: TYPE_FP32 dims: [ 1 ] }]\n"
      << "output [{ name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] }]\n";
  write_ensemble(root, "through_batched", step("batched", "IN", "OUT"));
  write_ensemble(root, "caller_leaves",
                 step("cancels_its_caller", "IN", "a") + step("plus_ten", "a", "OUT"));
  fs::create_directories(root / "bls_for_nobody" / "1");
  std::ofstream(root / "bls_for_nobody" / "1" / "model.gives_up");
  std::ofstream(root / "bls_for_nobody" / "config.pbtxt")
      << "backend: \"gives_up\"\n"
      << "input [{ name: \"X\" data_type: TYPE_FP32 dims: [ -1 ] }]\n"
      << "output [{ name: \"Y\" data_type: TYPE_FP32 dims: [ -1 ] }]\n";
  write_ensemble(root, "through_quick", step("quick", "IN", "OUT"));
  auto executor = std::make_shared<CpuExecutor>(threads);
  executor->add_model(batched_adds("batched", std::chrono::seconds(5)));
  executor->add_model(batched_adds("quick", std::chrono::microseconds(0)));
  executor->add_model(adds("plus_one", 1));
  Model plus_hundred = adds("plus_one", 100);  // version 2 of plus_one, the default one
  plus_hundred.version = "2";
  executor->add_model(std::move(plus_hundred));
  executor->add_model(adds("plus_ten", 10));
  executor->add_model(repeats());
  executor->add_model(fails());
  executor->add_model(holds_while_streaming());
  executor->add_model(waits_for_its_first_response());
  executor->add_model(adds_optional());
  executor->add_model(cancels_its_caller());
  Model join;
  join.name = "join";
  join.inputs = {fp32("A"), fp32("B")};
  join.outputs = {fp32("Z")};
  join.compute = [](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    auto a = values(request.find_input("A")->tensor), b = values(request.find_input("B")->tensor);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return std::vector<NamedTensor>{{"Z", Tensor::from_vector(std::move(a), {1}), {}}};
  };
  executor->add_model(std::move(join));
  executor->set_source(
      std::make_shared<repository::Repository>(std::vector<std::string>{root.string()}), true);
  return executor;
}

InferRequest request_of(const char* model, float x) {
  return InferRequest(model).input("IN", Tensor::from_vector(std::vector<float>{x}, {1}));
}

// A backend whose models take a second to end (as a Python model's finalize() may): the
// "slow_end" backend of model files "model.slow", Y = X.
struct EndsSlowly {
  ~EndsSlowly() { std::this_thread::sleep_for(std::chrono::seconds(1)); }
};

Result<repository::LoadedModel> load_slow_end(const repository::ModelConfig& given,
                                              const std::string&, const repository::LoadContext&) {
  repository::LoadedModel loaded;
  loaded.config = given;
  auto ends = std::make_shared<EndsSlowly>();
  loaded.compute = [ends](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    return std::vector<NamedTensor>{{"Y", request.find_input("X")->tensor, {}}};
  };
  return loaded;
}

const bool slow_end_registered = [] {
  repository::register_backend({"slow_end", {}, "model.slow", load_slow_end});
  return true;
}();

// A backend whose models call themselves through their host (as a Python model's BLS call may):
// the "self_calls" backend of model files "model.self", Y = X, computed as (X - 1) + 1 by a call
// to the same model while X > 0.
Result<repository::LoadedModel> load_self_calls(const repository::ModelConfig& given,
                                                const std::string&,
                                                const repository::LoadContext& context) {
  repository::LoadedModel loaded;
  loaded.config = given;
  std::weak_ptr<ModelHost> weak_host = context.host;
  const std::string name = context.model_name;
  loaded.compute = [weak_host,
                    name](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const float x = values(request.find_input("X")->tensor).at(0);
    float y = 0;
    if (x > 0) {
      auto host = weak_host.lock();
      if (!host) return Error(StatusCode::Unavailable, "no host");
      auto below = host->infer(
          InferRequest(name).input("X", Tensor::from_vector(std::vector<float>{x - 1}, {1, 1})));
      if (!below) return below.error();
      y = values(below->output("Y")).at(0) + 1;
    }
    return std::vector<NamedTensor>{{"Y", Tensor::from_vector(std::vector<float>{y}, {1, 1}), {}}};
  };
  return loaded;
}

const bool self_calls_registered = [] {
  repository::register_backend({"self_calls", {}, "model.self", load_self_calls});
  return true;
}();

// A backend whose models see their request's caller go away as they run (its client gave up),
// then call "plus_ten" through their host, as a Python model's BLS call would: the "gives_up"
// backend of model files "model.gives_up".
Result<repository::LoadedModel> load_gives_up(const repository::ModelConfig& given,
                                              const std::string&,
                                              const repository::LoadContext& context) {
  repository::LoadedModel loaded;
  loaded.config = given;
  std::weak_ptr<ModelHost> weak_host = context.host;
  loaded.compute = [weak_host](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    if (request.caller()) request.caller()->cancel();
    auto host = weak_host.lock();
    if (!host) return Error(StatusCode::Unavailable, "no host");
    auto called = host->infer(InferRequest("plus_ten").input("X", request.find_input("X")->tensor));
    if (!called) return called.error();
    return std::vector<NamedTensor>{{"Y", called->output("Y"), {}}};
  };
  return loaded;
}

const bool gives_up_registered = [] {
  repository::register_backend({"gives_up", {}, "model.gives_up", load_gives_up});
  return true;
}();

}  // namespace ensemble_tests

using namespace ensemble_tests;

TEST_CASE("a decoupled step's every response goes on through the steps after it") {
  auto executor = executor_with_ensembles("decoupled");
  std::vector<float> outs;
  auto done = executor->infer_responses(request_of("fan_out", 2), [&](InferResult result) {
    outs.push_back(values(result.output("OUT")).at(0));
  });
  REQUIRE_MESSAGE(done, done.error().message());
  // Triton makes the ensemble decoupled: one response per response of "repeat".
  CHECK(outs == std::vector<float>{12, 14, 16});
  auto unary = executor->infer(request_of("fan_out", 2));
  REQUIRE_FALSE(unary);
  CHECK(unary.error().code() == StatusCode::Unimplemented);
}

TEST_CASE("a decoupled step's responses go on through the later steps as they come") {
  // As Triton's ensemble carries them: the first reaches the caller while the model still runs.
  first_response_arrived = false;
  auto executor = executor_with_ensembles("as_they_come");
  std::vector<float> outs;
  auto done = executor->infer_responses(request_of("as_they_come", 1), [&](InferResult r) {
    outs.push_back(values(r.output("OUT")).at(0));
    first_response_arrived = true;
  });
  REQUIRE_MESSAGE(done, done.error().message());
  CHECK(outs == std::vector<float>{11, 12});
}

TEST_CASE("a decoupled step whose model another step runs gives its responses on once it ends") {
  // The second "streams" needs the instance the first holds while it runs (as a Python model's
  // only instance): run inside the first one's responses, it would wait on its own request.
  for (const std::string name : {"streams_twice", "streams_inside_and_after"}) {
    CAPTURE(name);
    auto executor = executor_with_ensembles(name);
    std::vector<float> outs;
    auto done = executor->infer_responses(request_of(name.c_str(), 1), [&](InferResult r) {
      outs.push_back(values(r.output("OUT")).at(0));
    });
    REQUIRE_MESSAGE(done, done.error().message());
    CHECK(outs == std::vector<float>{1, 2, 2, 3});
  }
}

TEST_CASE("responses held for a step's return stop at max_inflight_requests, failing the request") {
  auto executor = executor_with_ensembles("limited");
  std::vector<float> outs;
  auto done = executor->infer_responses(request_of("streams_twice_limited", 1), [&](InferResult r) {
    outs.push_back(values(r.output("OUT")).at(0));
  });
  REQUIRE_FALSE(done);
  CHECK(done.error().code() == StatusCode::ResourceExhausted);
  CHECK(done.error().message() ==
        "in ensemble 'streams_twice_limited', step 0 (model 'streams'): it gave more than "
        "max_inflight_requests (1) responses, which wait for it to return: another step runs "
        "its model");
  CHECK(outs.empty());
}

TEST_CASE("an optional input the request leaves out is left out of the steps, as in Triton") {
  auto executor = executor_with_ensembles("optional");
  auto without = executor->infer(request_of("optional_extra", 1));
  REQUIRE_MESSAGE(without, without.error().message());
  CHECK(values(without->output("OUT")) == std::vector<float>{1});
  auto with = executor->infer(request_of("optional_extra", 1)
                                  .input("EXTRA", Tensor::from_vector(std::vector<float>{5}, {1})));
  REQUIRE_MESSAGE(with, with.error().message());
  CHECK(values(with->output("OUT")) == std::vector<float>{6});
  // A step whose model needs the tensor fails, named.
  auto needed = executor->infer(request_of("required_extra", 1));
  REQUIRE_FALSE(needed);
  CHECK(needed.error().code() == StatusCode::InvalidArgument);
  CHECK(needed.error().message() ==
        "in ensemble 'required_extra', step 0 (model 'plus_ten'): its input 'X' takes tensor "
        "'EXTRA', an optional input of the ensemble the request lacks");
}

TEST_CASE("a step's error is the request's, naming the step and keeping its code") {
  auto executor = executor_with_ensembles("broken");
  auto result = executor->infer(request_of("broken", 1));
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == StatusCode::Internal);
  CHECK(result.error().message() ==
        "in ensemble 'broken', step 1 (model 'fails'): the detector geometry is missing");
  // The step before it ran and counted; the ensemble counted a failure.
  CHECK(executor->statistics("plus_one", "2")->success.count == 1);
  CHECK(executor->statistics("broken")->fail.count == 1);
}

TEST_CASE("steps that may run at once finish on a pool too small for them, many at once") {
  // One pool thread and 64 requests queued on it: each request's three first steps are posted
  // beside it, and the thread that runs the request runs those no other thread has started. A
  // run that waited for the pool instead would wait for itself.
  for (std::size_t threads : {1u, 2u}) {
    auto executor = executor_with_ensembles("wide", threads);
    std::mutex mutex;
    std::condition_variable finished;
    int answered = 0;
    std::vector<float> outs(64);
    for (int i = 0; i < 64; ++i) {
      executor->infer_async(
          request_of("wide", static_cast<float>(i)), [&, i](Result<InferResult> result) {
            std::lock_guard<std::mutex> lock(mutex);
            outs[static_cast<std::size_t>(i)] = result ? values(result->output("OUT")).at(0) : -1;
            ++answered;
            finished.notify_all();
          });
    }
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(finished.wait_for(lock, std::chrono::seconds(30), [&] { return answered == 64; }));
    for (int i = 0; i < 64; ++i) {
      // (x + 10) + (x + 10) + (x + 10)
      CHECK(outs[static_cast<std::size_t>(i)] == static_cast<float>(3 * i + 30));
    }
  }
}

// Runs `count` requests at once through infer_async, request i of model_of(i) (an ensemble's,
// or a step model's directly), waiting up to 30 s: each one's OUT (or Y), -1 for an error.
std::vector<float> run_at_once(CpuExecutor& executor, int count,
                               const std::function<std::string(int)>& model_of) {
  std::mutex mutex;
  std::condition_variable finished;
  int answered = 0;
  std::vector<float> outs(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::string model = model_of(i);
    InferRequest request(model);
    const bool direct = model.rfind("through_", 0) != 0;
    request.input(direct ? "X" : "IN",
                  Tensor::from_vector(std::vector<float>{static_cast<float>(i)}, {1}));
    executor.infer_async(std::move(request), [&, i, direct](Result<InferResult> result) {
      std::lock_guard<std::mutex> lock(mutex);
      outs[static_cast<std::size_t>(i)] =
          result ? values(result->output(direct ? "Y" : "OUT")).at(0) : -1;
      ++answered;
      finished.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  REQUIRE(finished.wait_for(lock, std::chrono::seconds(30), [&] { return answered == count; }));
  return outs;
}

TEST_CASE("a step of a model with dynamic_batching joins its batches, as in Triton") {
  // Four pool threads run four ensemble requests; each step's request waits in the model's
  // queue until a batch of 4 (its preferred size) forms: one execution of 4.
  auto executor = executor_with_ensembles("through_batched", 4);
  auto outs = run_at_once(*executor, 4, [](int) { return "through_batched"; });
  CHECK(outs == std::vector<float>{100, 101, 102, 103});
  auto stats = executor->statistics("batched");
  REQUIRE(stats);
  CHECK(stats->execution_count == 1);
  CHECK(stats->inference_count == 4);
}

TEST_CASE("a batching step's wait needs no free pool thread, whoever else queues there") {
  // Direct requests post the model's runner to a pool whose threads all wait in ensemble steps
  // of the same model: a waiting thread takes the posted runner's place, or it would wait on
  // a runner queued behind itself. 64 requests, half through the ensemble.
  for (std::size_t threads : {1u, 2u}) {
    CAPTURE(threads);
    auto executor = executor_with_ensembles("batched_pool", threads);
    auto outs = run_at_once(*executor, 64, [](int i) {
      return i % 2 == 0 ? std::string("through_quick") : std::string("quick");
    });
    for (int i = 0; i < 64; ++i) CHECK(outs[static_cast<std::size_t>(i)] == 100.0f + i);
  }
}

TEST_CASE("a batching model that calls itself through its host is answered, not queued") {
  // Its one runner runs the batch that makes the call: queued behind that batch, the call would
  // wait for itself, and the model's every later request with it.
  auto executor = executor_with_ensembles("counts_down");
  std::promise<Result<InferResult>> answer;
  executor->infer_async(
      InferRequest("counts_down").input("X", Tensor::from_vector(std::vector<float>{3}, {1, 1})),
      [&](Result<InferResult> result) { answer.set_value(std::move(result)); });
  auto future = answer.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto result = future.get();
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(values(result->output("Y")) == std::vector<float>{3});
}

TEST_CASE("an ensemble whose caller went away runs no further step, as Triton checks between") {
  auto executor = executor_with_ensembles("caller_leaves");
  auto caller = std::make_shared<Caller>();
  auto result = executor->infer(request_of("caller_leaves", 1).caller(caller));
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == StatusCode::Cancelled);
  CHECK(result.error().message().find("step 1 (model 'plus_ten')") != std::string::npos);
  CHECK(executor->statistics("plus_ten").value().execution_count == 0);
  CHECK(executor->statistics("plus_ten").value().failures.canceled == 1);
  CHECK(executor->statistics("caller_leaves").value().failures.canceled == 1);
}

TEST_CASE("a model's own call (BLS) is made for its request's caller, and stops with it") {
  auto executor = executor_with_ensembles("bls_for_nobody");
  auto caller = std::make_shared<Caller>();
  auto result = executor->infer(InferRequest("bls_for_nobody")
                                    .input("X", Tensor::from_vector(std::vector<float>{1}, {1}))
                                    .caller(caller));
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == StatusCode::Cancelled);
  CHECK(executor->statistics("plus_ten").value().execution_count == 0);
  // Without a caller, the same call runs.
  auto alone = executor->infer(
      InferRequest("bls_for_nobody").input("X", Tensor::from_vector(std::vector<float>{1}, {1})));
  REQUIRE_MESSAGE(alone, alone.error().message());
  CHECK(values(alone->output("Y")) == std::vector<float>{11});
}

TEST_CASE("a step runs the version it names, and the default one without") {
  auto executor = executor_with_ensembles("versions");
  auto result = executor->infer(request_of("versions", 0));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(values(result->output("OUT")) == std::vector<float>{101});  // + 100 (v2), then + 1 (v1)
  CHECK(executor->statistics("plus_one", "1")->success.count == 1);
  CHECK(executor->statistics("plus_one", "2")->success.count == 1);
}

TEST_CASE("an ensemble loaded outside an executor says it needs one") {
  executor_with_ensembles("alone");
  repository::Repository alone({(fs::path(SONIC_TEST_SCRATCH) / "alone").string()});
  auto loaded = alone.load("broken");
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code() == StatusCode::InvalidArgument);
  CHECK(loaded.error().message().find("load it in an executor") != std::string::npos);
}

TEST_CASE("a model that takes long to end holds up no other model's requests") {
  executor_with_ensembles("slow_end");
  const fs::path root = fs::path(SONIC_TEST_SCRATCH) / "slow_end";
  fs::create_directories(root / "ends_slowly" / "1");
  std::ofstream(root / "ends_slowly" / "1" / "model.slow") << "";
  std::ofstream(root / "ends_slowly" / "config.pbtxt")
      << "backend: \"slow_end\"\ninput [{ name: \"X\" data_type: TYPE_FP32 dims: [ -1 ] }]\n"
      << "output [{ name: \"Y\" data_type: TYPE_FP32 dims: [ -1 ] }]\n";
  auto executor = std::make_shared<CpuExecutor>(2);
  executor->add_model(adds("plus_one", 1));
  executor->set_source(
      std::make_shared<repository::Repository>(std::vector<std::string>{root.string()}), false);
  for (const char* change : {"unload", "reload"}) {
    REQUIRE(executor->load_model("ends_slowly"));
    std::thread ending([&] {
      // The model's last reference goes with the registry's: it ends in this call.
      if (std::string(change) == "unload") {
        CHECK(executor->unload_model("ends_slowly"));
      } else {
        CHECK(executor->load_model("ends_slowly"));
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the end is under way
    const auto asked = std::chrono::steady_clock::now();
    auto other = executor->infer(
        InferRequest("plus_one").input("X", Tensor::from_vector(std::vector<float>{1}, {1})));
    const auto waited = std::chrono::steady_clock::now() - asked;
    ending.join();
    REQUIRE(other);
    CHECK_MESSAGE(waited < std::chrono::milliseconds(500), change);
  }
}
