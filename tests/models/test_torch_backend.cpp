// The TorchScript backend (libtorch) on the models the project generates with torch: answers
// equal to torch's own within 1e-5 (an MLP, a two-headed CNN, an EdgeConv network that builds
// its kNN graph inside the model), Triton's NAME__INDEX convention, and configs the module
// contradicts refused at load.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "npy.hpp"
#include "sonic/repository/repository.hpp"

using namespace sonic;
using tools::read_npy;
namespace fs = std::filesystem;

namespace {

const std::string kModels = SONIC_TEST_MODELS;

float max_abs_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  auto x = a.as<float>();
  auto y = b.as<float>();
  float worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

void check_against_reference(CpuExecutor& executor, const std::string& model, int inputs,
                             int outputs) {
  const std::string reference = kModels + "/reference/" + model + "/";
  InferRequest request(model);
  for (int i = 0; i < inputs; ++i) {
    const std::string name = "INPUT__" + std::to_string(i);
    request.input(name, read_npy(reference + name + ".npy"));
  }
  auto result = executor.infer(request);
  REQUIRE_MESSAGE(result, result.error().message());
  for (int i = 0; i < outputs; ++i) {
    const std::string name = "OUTPUT__" + std::to_string(i);
    INFO(model << " output " << name);
    CHECK(max_abs_difference(result->output(name), read_npy(reference + name + ".npy")) <= 1e-5f);
  }
}

std::string scratch_model(const std::string& case_name, const std::string& model,
                          const std::string& config) {
  fs::path root = fs::path(SONIC_TEST_SCRATCH) / case_name;
  fs::remove_all(root);
  fs::create_directories(root / model / "1");
  fs::copy_file(fs::path(kModels) / "repository" / model / "1" / "model.pt",
                root / model / "1" / "model.pt");
  if (!config.empty()) std::ofstream(root / model / "config.pbtxt") << config;
  return root.string();
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
