// The TorchScript backend (libtorch) on the models the project generates with torch: answers
// equal to torch's own within 1e-5 (an MLP, a two-headed CNN, an EdgeConv network that builds
// its kNN graph inside the model), Triton's NAME__INDEX convention, and configs the module
// contradicts refused at load.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "reference_checks.hpp"
#include "sonic/repository/repository.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

void check_against_reference(CpuExecutor& executor, const std::string& model, int inputs,
                             int outputs) {
  std::vector<std::string> input_names, output_names;
  for (int i = 0; i < inputs; ++i) input_names.push_back("INPUT__" + std::to_string(i));
  for (int i = 0; i < outputs; ++i) output_names.push_back("OUTPUT__" + std::to_string(i));
  INFO(model);
  CHECK(compare_with_reference(model, output_names,
                               executor.infer(reference_request(model, input_names))) == "");
}

std::string scratch_model(const std::string& case_name, const std::string& model,
                          const std::string& config) {
  return test::scratch_model(SONIC_TEST_SCRATCH, case_name, model, "model.pt", config);
}

std::string load_error(const std::string& root, const std::string& model) {
  auto loaded = repository::Repository({root}).load(model);
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code() == StatusCode::InvalidArgument);
  return loaded.error().message();
}

}  // namespace

TEST_CASE("the TorchScript backend answers as torch does") {
  auto executor = repository::executor_from_repository({kModels + "/repository"}, 2);
  check_against_reference(*executor, "jet_mlp_torch", 1, 1);
  check_against_reference(*executor, "emtrk_cnn_torch", 1, 2);
  check_against_reference(*executor, "edgeconv_torch", 1, 1);
}

TEST_CASE("the EdgeConv network runs at any batch up to max_batch_size") {
  auto executor = repository::executor_from_repository({kModels + "/repository"}, 1);
  std::vector<float> points(64 * 32 * 7, 0.25f);
  for (std::size_t i = 0; i < points.size(); ++i) points[i] = static_cast<float>(i % 97) / 97.0f;
  auto result = executor->infer(
      InferRequest("edgeconv_torch").input("INPUT__0", Tensor::from_vector(points, {64, 32, 7})));
  REQUIRE_MESSAGE(result, result.error().message());
  CHECK(result->output("OUTPUT__0").shape() == Shape{64, 5});
}

TEST_CASE("a TorchScript model needs its tensors in the config") {
  CHECK(load_error(scratch_model("no_config", "jet_mlp_torch", ""), "jet_mlp_torch")
            .find("list the inputs and outputs in config.pbtxt") != std::string::npos);
}

TEST_CASE("configs the module contradicts are refused at load, saying how") {
  const std::string output = " output { name: \"OUTPUT__0\" data_type: TYPE_FP32 dims: [5] }";
  auto two_inputs =
      scratch_model("two_inputs", "jet_mlp_torch",
                    "max_batch_size: 8 input { name: \"INPUT__0\" data_type: TYPE_FP32 dims: [16] }"
                    "input { name: \"INPUT__1\" data_type: TYPE_FP32 dims: [16] }" +
                        output);
  CHECK(load_error(two_inputs, "jet_mlp_torch").find("forward() takes 1 tensors") !=
        std::string::npos);
  auto wrong_dims = scratch_model(
      "wrong_dims", "jet_mlp_torch",
      "max_batch_size: 8 input { name: \"INPUT__0\" data_type: TYPE_FP32 dims: [15] }" + output);
  CHECK(load_error(wrong_dims, "jet_mlp_torch").find("fails at batch 1") != std::string::npos);
  auto wrong_output =
      scratch_model("wrong_output", "jet_mlp_torch",
                    "max_batch_size: 8 input { name: \"INPUT__0\" data_type: TYPE_FP32 dims: [16] }"
                    "output { name: \"OUTPUT__0\" data_type: TYPE_FP32 dims: [4] }");
  CHECK(load_error(wrong_output, "jet_mlp_torch").find("where the config says [1, 4]") !=
        std::string::npos);
  auto wrong_type =
      scratch_model("wrong_type", "jet_mlp_torch",
                    "max_batch_size: 8 input { name: \"INPUT__0\" data_type: TYPE_FP32 dims: [16] }"
                    "output { name: \"OUTPUT__0\" data_type: TYPE_FP64 dims: [5] }");
  CHECK(load_error(wrong_type, "jet_mlp_torch").find("came out as Float, not FP64") !=
        std::string::npos);
}

TEST_CASE("an optional input is None to forward() when the request leaves it out") {
  auto executor = repository::executor_from_repository({kModels + "/repository"}, 1);
  auto energy = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4});
  auto offset = Tensor::from_vector(std::vector<float>{10, 20, 30, 40}, {1, 4});
  auto scaled = executor->infer(InferRequest("calibrated_energy_torch").input("INPUT__0", energy));
  REQUIRE_MESSAGE(scaled, scaled.error().message());
  CHECK(scaled->output("OUTPUT__0").as<float>()[3] == 8.0f);
  auto shifted = executor->infer(
      InferRequest("calibrated_energy_torch").input("INPUT__0", energy).input("INPUT__1", offset));
  REQUIRE_MESSAGE(shifted, shifted.error().message());
  CHECK(shifted->output("OUTPUT__0").as<float>()[3] == 48.0f);
  // A module whose argument cannot be None is refused at load rather than failing later.
  auto not_optional = scratch_model(
      "not_optional", "jet_mlp_torch",
      "max_batch_size: 8 input { name: \"INPUT__0\" data_type: TYPE_FP32 dims: [16] "
      "optional: true } output { name: \"OUTPUT__0\" data_type: TYPE_FP32 dims: [5] }");
  CHECK(load_error(not_optional, "jet_mlp_torch").find("cannot be None") != std::string::npos);
}
