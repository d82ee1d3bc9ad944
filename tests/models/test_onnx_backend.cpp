// The ONNX backend (OpenCV DNN) on the models the project generates with torch: answers equal to
// torch's within 1e-5, configs completed from the graph or checked against it, models OpenCV
// would answer wrongly refused at load, and instances used by concurrent requests.
#include <doctest/doctest.h>

#include <cmath>
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
  REQUIRE(model->inputs.size() == 1);
  CHECK(model->inputs[0].name == "features");
  CHECK(model->inputs[0].dtype == DataType::Fp32);
  CHECK(model->inputs[0].shape == Shape{-1, 16});
  CHECK(model->outputs[0].name == "probabilities");
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

TEST_CASE("models OpenCV cannot run right are refused at load, saying why") {
  auto topk = repository::Repository({scratch_model("topk", "topk_onnx", "", "unsupported")})
                  .load("topk_onnx");
  REQUIRE_FALSE(topk);
  CHECK(topk.error().code() == StatusCode::InvalidArgument);
  CHECK(topk.error().message().find("TopK") != std::string::npos);

  auto fixed =
      repository::Repository({scratch_model("fixed", "fixed_batch_onnx", "", "unsupported")})
          .load("fixed_batch_onnx");
  REQUIRE_FALSE(fixed);
  CHECK(fixed.error().message().find("fails at batch") != std::string::npos);
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
