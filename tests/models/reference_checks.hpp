// What the model tests share: the generated models (SONIC_TEST_MODELS, from
// examples/models/generate_models.py), their reference answers computed by torch, and scratch
// copies of a model under a config a test writes.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "npy.hpp"
#include "sonic/executor.hpp"

namespace sonic::test {

inline const std::string kModels = SONIC_TEST_MODELS;

/// The largest difference between two FP32 tensors; infinity when their shapes differ.
inline float max_abs_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  auto x = a.as<float>();
  auto y = b.as<float>();
  float worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

/// A request for `model` with its reference inputs.
inline InferRequest reference_request(const std::string& model,
                                      const std::vector<std::string>& inputs) {
  InferRequest request(model);
  for (const auto& name : inputs) {
    request.input(name, tools::read_npy(kModels + "/reference/" + model + "/" + name + ".npy"));
  }
  return request;
}

/// Empty when every named output of `result` is within `tolerance` of torch's; else what
/// differs.
inline std::string compare_with_reference(const std::string& model,
                                          const std::vector<std::string>& outputs,
                                          const Result<InferResult>& result,
                                          float tolerance = 1e-5f) {
  if (!result) return model + ": " + result.error().message();
  for (const auto& name : outputs) {
    const Tensor expected = tools::read_npy(kModels + "/reference/" + model + "/" + name + ".npy");
    const float difference = max_abs_difference(result->output(name), expected);
    if (difference > tolerance) {
      return model + "/" + name + ": not torch's answer (off by " + std::to_string(difference) +
             ")";
    }
  }
  return {};
}

/// A repository under `scratch`/`case_name` holding a copy of the generated `model`'s
/// `file` (from `kModels`/`from`), with `config` as its config.pbtxt (none when empty).
inline std::string scratch_model(const std::string& scratch, const std::string& case_name,
                                 const std::string& model, const std::string& file,
                                 const std::string& config,
                                 const std::string& from = "repository") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(scratch) / case_name;
  fs::remove_all(root);
  fs::create_directories(root / model / "1");
  fs::copy_file(fs::path(kModels) / from / model / "1" / file, root / model / "1" / file);
  if (!config.empty()) std::ofstream(root / model / "config.pbtxt") << config;
  return root.string();
}

}  // namespace sonic::test
