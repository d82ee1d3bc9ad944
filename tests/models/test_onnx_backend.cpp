// The ONNX backend (ONNX Runtime) on the models the project generates with torch: answers equal
// to torch's within 1e-5, configs completed from the graph or checked against it, ONNX Runtime's
// own refusals passed on, and instances used by concurrent requests.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "reference_checks.hpp"
#include "sonic/repository/repository.hpp"

using namespace sonic;
using namespace sonic::test;
using tools::read_npy;

namespace {

// Runs the reference inputs of `model` and compares every output with torch's.
void check_against_reference(CpuExecutor& executor, const std::string& model,
                             const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs) {
  INFO(model);
  CHECK(compare_with_reference(model, outputs, executor.infer(reference_request(model, inputs))) ==
        "");
}

// A copy of a generated model under another repository, with its config replaced.
std::string scratch_model(const std::string& case_name, const std::string& model,
                          const std::string& config, const std::string& from = "repository") {
  return test::scratch_model(SONIC_TEST_SCRATCH, case_name, model, "model.onnx", config, from);
}

}  // namespace

TEST_CASE("the ONNX backend answers as torch does") {
  auto executor = repository::executor_from_repository({kModels + "/repository"}, 2);
  check_against_reference(*executor, "jet_mlp_onnx", {"features"}, {"probabilities"});
  check_against_reference(*executor, "emtrk_cnn_onnx", {"patch"}, {"em_trk_none", "michel"});
}

TEST_CASE("its config reports the completed model") {
  auto model = repository::Repository({kModels + "/repository"}).load("emtrk_cnn_onnx");
  REQUIRE_MESSAGE(model, model.error().message());
  CHECK(model->platform == "onnxruntime_onnx");
  CHECK(model->max_batch_size == 64);
  REQUIRE(model->inputs.size() == 1);
  CHECK(model->inputs[0].shape == Shape{-1, 1, 48, 48});
  REQUIRE(model->outputs.size() == 2);
  CHECK(model->outputs[1].shape == Shape{-1, 1});
}

TEST_CASE("a model file alone is served, its config completed from the graph as Triton does") {
  auto root = scratch_model("no_config", "jet_mlp_onnx", "");
  auto model = repository::Repository({root}).load("jet_mlp_onnx");
  REQUIRE_MESSAGE(model, model.error().message());
  CHECK(model->max_batch_size == 4);  // Triton's default-max-batch-size for a dynamic batch
  // Triton's onnxruntime backend adds dynamic_batching {} to the max_batch_size it completes
  // (above 1, with no batcher configured); Triton's normalization then prefers that size.
  REQUIRE(model->dynamic_batching);
  CHECK(model->dynamic_batching->preferred_batch_sizes == std::vector<std::int64_t>{4});
  REQUIRE(model->inputs.size() == 1);
  CHECK(model->inputs[0].name == "features");
  CHECK(model->inputs[0].dtype == DataType::Fp32);
  CHECK(model->inputs[0].shape == Shape{-1, 16});
  CHECK(model->outputs[0].name == "probabilities");
}

TEST_CASE(
    "an input the graph needs, marked optional and left out, fails with ONNX Runtime's words") {
  auto root = scratch_model("optional", "jet_mlp_onnx",
                            "max_batch_size: 8 input { name: \"features\" data_type: TYPE_FP32 "
                            "dims: [16] optional: true } output { name: \"probabilities\" "
                            "data_type: TYPE_FP32 dims: [5] }");
  auto executor = repository::executor_from_repository({root}, 1);
  auto sent = executor->infer(
      InferRequest("jet_mlp_onnx")
          .input("features", Tensor::from_vector(std::vector<float>(16, 1), {1, 16})));
  REQUIRE_MESSAGE(sent, sent.error().message());
  // Left out, it is not bound (as Triton's onnxruntime backend leaves it): ONNX Runtime, which
  // has no default for it, says so, and never runs on an earlier request's input. Its status is
  // ORT_FAIL, which Triton's backend reports as INTERNAL, as sonic does.
  auto left_out = executor->infer(InferRequest("jet_mlp_onnx"));
  REQUIRE_FALSE(left_out);
  CHECK(left_out.error().code() == StatusCode::Internal);
  CHECK(left_out.error().message().find("Missing Input: features") != std::string::npos);
}

TEST_CASE("a config that contradicts the graph is refused, naming both") {
  auto wrong_name =
      scratch_model("wrong_name", "jet_mlp_onnx",
                    "max_batch_size: 8 input { name: \"x\" data_type: TYPE_FP32 dims: [16] }");
  auto named = repository::Repository({wrong_name}).load("jet_mlp_onnx");
  REQUIRE_FALSE(named);
  CHECK(named.error().message().find("input 'x' is not in the ONNX graph, whose inputs are: "
                                     "features") != std::string::npos);
  auto wrong_dims = scratch_model(
      "wrong_dims", "jet_mlp_onnx",
      "max_batch_size: 8 input { name: \"features\" data_type: TYPE_FP32 dims: [15] }");
  auto dims = repository::Repository({wrong_dims}).load("jet_mlp_onnx");
  REQUIRE_FALSE(dims);
  CHECK(dims.error().message().find("[-1, 15] by the config") != std::string::npos);
  auto wrong_type = scratch_model(
      "wrong_type", "jet_mlp_onnx",
      "max_batch_size: 8 input { name: \"features\" data_type: TYPE_INT64 dims: [16] }");
  auto type = repository::Repository({wrong_type}).load("jet_mlp_onnx");
  REQUIRE_FALSE(type);
  CHECK(type.error().message().find("INT64 in the config but FP32 in the ONNX graph") !=
        std::string::npos);
}

TEST_CASE("TopK runs; a graph fixed to one batch size fails at others with ONNX Runtime's words") {
  auto executor = repository::executor_from_repository(
      {scratch_model("topk", "topk_onnx", "", "edge_cases")}, 1);
  std::vector<float> x(16, 0.5f);
  x[3] = 5;
  x[11] = 7;
  auto top = executor->infer(
      InferRequest("topk_onnx").input("x", Tensor::from_vector(std::move(x), {1, 16})));
  REQUIRE_MESSAGE(top, top.error().message());
  CHECK(top->output("y").as<float>().to_vector() == std::vector<float>{7, 5});

  auto fixed =
      repository::Repository({scratch_model("fixed", "fixed_batch_onnx", "", "edge_cases")})
          .load("fixed_batch_onnx");
  REQUIRE_MESSAGE(fixed, fixed.error().message());
  auto fixed_executor = repository::executor_from_repository(
      {scratch_model("fixed_run", "fixed_batch_onnx", "", "edge_cases")}, 1);
  auto at_four = fixed_executor->infer(
      InferRequest("fixed_batch_onnx")
          .input("x", Tensor::from_vector(std::vector<float>(64, 1), {4, 16})));
  REQUIRE_MESSAGE(at_four, at_four.error().message());
  auto at_two = fixed_executor->infer(
      InferRequest("fixed_batch_onnx")
          .input("x", Tensor::from_vector(std::vector<float>(32, 1), {2, 16})));
  REQUIRE_FALSE(at_two);
  CHECK(at_two.error().message().find("Reshape") != std::string::npos);
}

TEST_CASE("a graph with a fixed first dimension does not batch, as Triton refuses it") {
  auto refused = repository::Repository({scratch_model("fixed_first", "fixed_first_dim_onnx",
                                                       "max_batch_size: 8", "edge_cases")})
                     .load("fixed_first_dim_onnx");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find(
            "model does not support batching while non-zero max_batch_size is specified") !=
        std::string::npos);
  auto unbatched = repository::Repository({scratch_model("fixed_first_alone",
                                                         "fixed_first_dim_onnx", "", "edge_cases")})
                       .load("fixed_first_dim_onnx");
  REQUIRE_MESSAGE(unbatched, unbatched.error().message());
  CHECK(unbatched->max_batch_size == 0);
  CHECK(unbatched->inputs[0].shape == Shape{3, 4});
}

TEST_CASE("a completed tensor of no dims beyond the batch is dims [1] with an empty reshape") {
  // Triton's onnxruntime backend (AutoCompleteIO): a tensor whose only dimension is the batch
  // gets dims [1] and reshape { shape: [] }; clients send and receive [N, 1].
  const auto root = scratch_model("row_sum", "row_sum_onnx", "", "edge_cases");
  auto model = repository::Repository({root}).load("row_sum_onnx");
  REQUIRE_MESSAGE(model, model.error().message());
  REQUIRE(model->outputs.size() == 1);
  CHECK(model->outputs[0].shape == Shape{-1, 1});
  auto executor = repository::executor_from_repository({root}, 1);
  auto result = executor->infer(
      InferRequest("row_sum_onnx")
          .input("x", Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(result->output("y").shape() == Shape{2, 1});
  CHECK(result->output("y").as<float>().to_vector() == std::vector<float>{10, 26});
}

TEST_CASE("an output that is one of the graph's inputs owns its bytes, never the request's") {
  // ONNX Runtime answers such an output in the input's own buffer: the request's bytes, or the
  // backend's aligned copy of them, neither of which outlives the call.
  auto executor = repository::executor_from_repository(
      {scratch_model("passthrough", "passthrough_onnx", "", "edge_cases")}, 1);
  for (std::size_t offset : {0, 1}) {  // aligned, and misaligned (copied before the run)
    std::vector<std::uint8_t> bytes(offset + 8 * sizeof(float));
    const float values[8] = {-1, 2, -3, 4, -5, 6, -7, 8};
    std::memcpy(bytes.data() + offset, values, sizeof values);
    const Tensor x =
        Tensor::view_bytes(DataType::Fp32, {2, 4}, bytes.data() + offset, sizeof values);
    auto result = executor->infer(InferRequest("passthrough_onnx").input("x", x));
    REQUIRE_MESSAGE(result, result.error().message());
    const Tensor& echoed = result->output("x");
    const auto* begin = bytes.data();
    CHECK_FALSE((echoed.data() >= begin && echoed.data() < begin + bytes.size()));
    std::fill(bytes.begin(), bytes.end(), 0);  // the caller reuses its buffer
    CHECK(echoed.as<float>().to_vector() == std::vector<float>(values, values + 8));
    CHECK(result->output("y").as<float>()[1] == 2);
  }
}

TEST_CASE("Triton's onnxruntime parameters are read as Triton reads them") {
  auto with_parameters = [](const std::string& name, const std::string& parameters) {
    return repository::Repository(
               {scratch_model(name, "jet_mlp_onnx", "max_batch_size: 8 " + parameters)})
        .load("jet_mlp_onnx");
  };
  auto parameter = [](const std::string& key, const std::string& value) {
    return "parameters { key: \"" + key + "\" value: { string_value: \"" + value + "\" } } ";
  };
  // Booleans as Triton's ParseBoolValue takes them; thread counts of 0 or less leave ONNX
  // Runtime's default; one session for all instances.
  auto loaded =
      with_parameters("parameters_taken", parameter("enable_mem_arena", "OFF") +
                                              parameter("enable_mem_pattern", "true") +
                                              parameter("intra_op_thread_count", "-1") +
                                              parameter("share_session_between_instances", "on") +
                                              "instance_group { count: 3 kind: KIND_CPU }");
  REQUIRE_MESSAGE(loaded, loaded.error().message());
  auto refused = with_parameters("parameters_refused", parameter("enable_mem_arena", "maybe"));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("'enable_mem_arena' must be true or false, not 'maybe'") !=
        std::string::npos);
  auto mode = with_parameters("mode_refused", parameter("execution_mode", "2"));
  REQUIRE_FALSE(mode);
  CHECK(mode.error().message().find("execution_mode") != std::string::npos);
}

TEST_CASE("instances serve concurrent requests, each answer right") {
  auto root = scratch_model("instances", "jet_mlp_onnx",
                            "max_batch_size: 64 instance_group { count: 3 kind: KIND_CPU }");
  auto executor = repository::executor_from_repository({root}, 4);
  const std::string reference = kModels + "/reference/jet_mlp_onnx/";
  const Tensor features = read_npy(reference + "features.npy");
  const Tensor expected = read_npy(reference + "probabilities.npy");
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto result = executor->infer(InferRequest("jet_mlp_onnx").input("features", features));
        if (result && max_abs_difference(result->output("probabilities"), expected) <= 1e-5f) {
          right.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(right.load() == 200);
}

TEST_CASE("a reshaped input: clients send [N, 4, 4], the ONNX graph takes [N, 16]") {
  auto root =
      scratch_model("reshape", "jet_mlp_onnx",
                    "max_batch_size: 8 input { name: \"features\" data_type: TYPE_FP32 dims: [4, 4]"
                    " reshape { shape: [16] } }");
  auto executor = repository::executor_from_repository({root}, 1);
  const std::string reference = kModels + "/reference/jet_mlp_onnx/";
  const Tensor features = read_npy(reference + "features.npy");  // [4, 16]
  const Tensor as_squares =
      Tensor::view_bytes(DataType::Fp32, {4, 4, 4}, features.data(), features.byte_size());
  auto result = executor->infer(InferRequest("jet_mlp_onnx").input("features", as_squares));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(max_abs_difference(result->output("probabilities"),
                           read_npy(reference + "probabilities.npy")) <= 1e-5f);
}

namespace {

// One hit of a track: its request to track_energy_onnx, answered with the mean energy so far.
InferRequest hit(float energy, std::uint64_t track, bool first = false, bool last = false) {
  return std::move(InferRequest("track_energy_onnx")
                       .input("energy", Tensor::from_vector(std::vector<float>{energy}, {1, 1}))
                       .sequence(track, first, last));
}

// track_energy_onnx's config up to its sequence_batching.
const std::string kTrackEnergyTensors = R"(name: "track_energy_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "energy" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "mean_energy" data_type: TYPE_FP32 dims: [ 1 ] } ]
)";

float mean_of(const Result<InferResult>& result) {
  REQUIRE_MESSAGE(result, result.error().message());
  return result->output("mean_energy").as<float>()[0];
}

}  // namespace

TEST_CASE("a stateful ONNX model: control and state tensors through the sequence batcher") {
  auto model = repository::Repository({kModels + "/repository"}).load("track_energy_onnx");
  REQUIRE_MESSAGE(model, model.error().message());
  // Clients see the model's own input and output; the batcher gives and takes the rest.
  REQUIRE(model->inputs.size() == 1);
  CHECK(model->inputs[0].name == "energy");
  REQUIRE(model->outputs.size() == 1);
  CHECK(model->outputs[0].name == "mean_energy");
  REQUIRE(model->sequence_batching);
  CHECK(model->sequence_batching->limits.idle == std::chrono::seconds(5));
  CHECK(model->sequence_batching->controls.at(0).true_value == 0.0);  // fp32_false_true [1, 0]

  auto executor = repository::executor_from_repository({kModels + "/repository"}, 2);
  // A client that names the output it wants: the model still gives its state outputs.
  auto named = InferRequest("track_energy_onnx")
                   .input("energy", Tensor::from_vector(std::vector<float>{5}, {1, 1}))
                   .output("mean_energy")
                   .sequence(99, true);
  CHECK(mean_of(executor->infer(named)) == doctest::Approx(5));
  // Two tracks, interleaved: each keeps its own sums.
  CHECK(mean_of(executor->infer(hit(2, 1, true))) == doctest::Approx(2));
  CHECK(mean_of(executor->infer(hit(10, 2, true))) == doctest::Approx(10));
  CHECK(mean_of(executor->infer(hit(4, 1))) == doctest::Approx(3));
  CHECK(mean_of(executor->infer(hit(20, 2))) == doctest::Approx(15));
  CHECK(mean_of(executor->infer(hit(6, 1, false, true))) == doctest::Approx(4));
  // Ended: its id needs a new START, which starts from nothing.
  CHECK(executor->infer(hit(1, 1)).code() == StatusCode::InvalidArgument);
  CHECK(mean_of(executor->infer(hit(1, 1, true))) == doctest::Approx(1));
  // A START in the middle restarts the sums, as Triton does.
  CHECK(mean_of(executor->infer(hit(30, 2, true))) == doctest::Approx(30));
  // The ModelConfig call reports sequence_batching as the repository has it.
  auto config = executor->model("track_energy_onnx");
  REQUIRE(config);
  CHECK((*config)->config.find("continuing") != std::string::npos);
}

TEST_CASE("a stateful model's config mistakes name the tensor and what to change") {
  const std::string states = R"(
  state [
    { input_name: "sum_in" output_name: "sum_out" data_type: TYPE_FP32 dims: [ 1 ] },
    { input_name: "count_in" output_name: "count_out" data_type: TYPE_FP32 dims: [ 1 ] }
  ])";
  auto load = [&](const std::string& name, const std::string& sequence) {
    auto root = scratch_model(name, "track_energy_onnx", kTrackEnergyTensors + sequence);
    return repository::Repository({root}).load("track_energy_onnx");
  };
  struct Mistake {
    std::string sequence;
    std::string said;
  };
  const std::vector<Mistake> mistakes = {
      {"sequence_batching { control_input [ { name: \"continuing\" control [ { kind: "
       "CONTROL_SEQUENCE_START } ] } ]" +
           states + " }",
       "needs exactly one of int32_false_true"},
      {"sequence_batching { control_input [ { name: \"continuing\" control [ { kind: "
       "CONTROL_SEQUENCE_START fp32_false_true: [ 1, 0 ] } ] }, { name: \"again\" control [ { "
       "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]" +
           states + " }",
       "gives CONTROL_SEQUENCE_START twice"},
      {"sequence_batching { control_input [ { name: \"energy\" control [ { kind: "
       "CONTROL_SEQUENCE_START fp32_false_true: [ 1, 0 ] } ] } ]" +
           states + " }",
       "'energy' is a control or state tensor"},
      {"sequence_batching { control_input [ { name: \"continuing\" control [ { kind: "
       "CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] } ]" +
           states + " }",
       "CONTROL_SEQUENCE_CORRID needs a data_type"},
      {"sequence_batching { control_input [ { name: \"continuing\" control [ { kind: "
       "CONTROL_SEQUENCE_START fp32_false_true: [ 1, 0 ] } ] } ] state [ { input_name: \"sum_in\" "
       "output_name: \"sum_out\" data_type: TYPE_FP32 dims: [ 1 ] initial_state [ { dims: [ 1 ] "
       "data_file: \"absent\" } ] }, { input_name: \"count_in\" output_name: \"count_out\" "
       "data_type: TYPE_FP32 dims: [ 1 ] } ] }",
       "initial_state"},
  };
  for (std::size_t i = 0; i < mistakes.size(); ++i) {
    CAPTURE(mistakes[i].sequence);
    auto loaded = load("sequence_mistake_" + std::to_string(i), mistakes[i].sequence);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code() == StatusCode::InvalidArgument);
    CHECK(loaded.error().message().find(mistakes[i].said) != std::string::npos);
  }
}

TEST_CASE("a stateful model's initial state can come from a file, as in Triton") {
  const std::string config = kTrackEnergyTensors + R"(sequence_batching {
  control_input [ { name: "continuing" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 1, 1 ] } ] } ]
  state [
    { input_name: "sum_in" output_name: "sum_out" data_type: TYPE_FP32 dims: [ 1 ]
      initial_state [ { data_type: TYPE_FP32 dims: [ 1 ] data_file: "sum" } ] },
    { input_name: "count_in" output_name: "count_out" data_type: TYPE_FP32 dims: [ 1 ]
      initial_state [ { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } ] }
  ]
})";
  // A START that keeps the state (true is 1 too): the first answer shows the initial sum.
  auto root = scratch_model("initial_state_file", "track_energy_onnx", config);
  const auto directory = std::filesystem::path(root) / "track_energy_onnx" / "initial_state";
  std::filesystem::create_directories(directory);
  const float initial_sum = 100;
  std::ofstream(directory / "sum", std::ios::binary)
      .write(reinterpret_cast<const char*>(&initial_sum), sizeof initial_sum);
  auto executor = repository::executor_from_repository({root}, 1);
  CHECK(mean_of(executor->infer(hit(2, 7, true))) == doctest::Approx(102));
}
