#include "triton_defaults.hpp"

#include <filesystem>
#include <set>

#include "protocol/invalid.hpp"
#include "protocol/wire.hpp"
#include "sonic/repository/backend.hpp"

namespace sonic::repository {

namespace {

using protocol::invalid;

namespace fs = std::filesystem;

// Triton's platforms and backends, and each one's model file (core src/constants.h).
struct Framework {
  const char* platform;  // "" where Triton's backend has no platform name
  const char* backend;
  const char* model_file;
  bool directory;  // the model "file" is a directory (TensorFlow's SavedModel)
};

// In the order Triton looks for their files in a version directory (TensorFlow, TensorRT,
// ONNX, OpenVINO, PyTorch, Python): the first found decides.
constexpr Framework kFrameworks[] = {
    {"tensorflow_savedmodel", "tensorflow", "model.savedmodel", true},
    {"tensorflow_graphdef", "tensorflow", "model.graphdef", false},
    {"tensorrt_plan", "tensorrt", "model.plan", false},
    {"onnxruntime_onnx", "onnxruntime", "model.onnx", false},
    {"", "openvino", "model.xml", false},
    {"pytorch_libtorch", "pytorch", "model.pt", false},
    {"", "python", "model.py", false},
};

const Framework* by_platform(const std::string& platform) {
  for (const auto& f : kFrameworks) {
    if (*f.platform && platform == f.platform) return &f;
  }
  return nullptr;
}

// Backends whose platform Triton checks against the backend (tensorflow, tensorrt,
// onnxruntime, pytorch); others (python, openvino, custom ones) take any platform.
bool backend_has_platforms(const std::string& backend) {
  return backend == "tensorflow" || backend == "tensorrt" || backend == "onnxruntime" ||
         backend == "pytorch";
}

// The model's first version directory in name order: the one Triton looks in for the model
// file; empty when it has none.
std::string first_version_directory(const std::string& model_directory) {
  std::set<std::string> subdirectories;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(model_directory, error)) {
    if (entry.is_directory(error)) subdirectories.insert(entry.path().filename().string());
  }
  if (subdirectories.empty()) return {};
  return (fs::path(model_directory) / *subdirectories.begin()).string();
}

// The framework whose model file is in `version`, as Triton detects it.
const Framework* detect(const std::string& version) {
  if (version.empty()) return nullptr;
  std::error_code error;
  for (const auto& f : kFrameworks) {
    const fs::path file = fs::path(version) / f.model_file;
    const bool found = f.directory ? fs::is_directory(file, error)
                                   : fs::is_regular_file(file, error) ||
                                         (std::string(f.backend) == "onnxruntime" &&
                                          fs::is_directory(file, error));
    if (found) return &f;
  }
  return nullptr;
}

// AutoCompleteBackendFields: platform and backend, each from the other, and the model file.
Result<void> complete_backend_fields(ModelConfig& config, const std::string& model_directory) {
  if (config.platform == "ensemble") {
    if (!config.backend.empty()) {
      return invalid("Ensemble model '" + config.name +
                     "' must have platform type 'ensemble' and empty backend type");
    }
    return {};
  }
  if (config.platform.empty() && config.backend.empty()) {
    const std::string version = first_version_directory(model_directory);
    const Framework* found = config.default_model_filename.empty() ? detect(version) : nullptr;
    // Beyond Triton: a backend this program registered, whose model file is there.
    if (!found) {
      if (auto registered = find_backend(config, version)) {
        config.backend = registered->name;
        if (!registered->platforms.empty()) config.platform = registered->platforms.front();
        if (config.default_model_filename.empty()) {
          config.default_model_filename = registered->default_model_filename;
        }
        return {};
      }
    }
    if (!found) {
      if (!config.default_model_filename.empty()) {
        // Triton would take the backend from the file name's extension; sonic has no
        // backend that such a model could name.
        return invalid("the configuration of '" + config.name +
                       "' names neither a platform nor a backend, only the file '" +
                       config.default_model_filename + "': name the backend");
      }
      // Triton's words when it cannot tell the backend.
      return invalid("Invalid model name: Could not determine backend for model '" + config.name +
                     "' with no backend in model configuration. Expected model name of the form "
                     "'model.<backend_name>'.");
    }
    config.platform = found->platform;
    config.backend = found->backend;
  } else if (config.backend.empty()) {
    const Framework* known = by_platform(config.platform);
    if (known) {
      config.backend = known->backend;
    } else if (auto registered = find_backend(config)) {  // a platform of this program's own
      config.backend = registered->name;
    } else {
      return invalid("unexpected platform type '" + config.platform + "' for " + config.name);
    }
  } else if (config.platform.empty()) {
    for (const auto& f : kFrameworks) {
      // TensorFlow's two platforms are told apart by the model file; the others have one.
      if (config.backend == f.backend && *f.platform && config.backend != "tensorflow") {
        config.platform = f.platform;
        break;
      }
    }
  } else if (backend_has_platforms(config.backend)) {
    const Framework* known = by_platform(config.platform);
    if (!known || config.backend != known->backend) {
      return invalid("unexpected 'platform' and 'backend' pair, got:" + config.platform + ", " +
                     config.backend);
    }
  }
  if (config.default_model_filename.empty()) {
    for (const auto& f : kFrameworks) {
      const bool same = *f.platform ? config.platform == f.platform : config.backend == f.backend;
      if (same) {
        config.default_model_filename = f.model_file;
        break;
      }
    }
  }
  if (config.default_model_filename.empty()) {
    if (auto registered = find_backend(config)) {
      config.default_model_filename = registered->default_model_filename;
    }
  }
  return {};
}

// NormalizeInstanceGroup and SetDefaultInstanceCount, on a host without GPUs.
Result<void> normalize_instance_groups(ModelConfig& config) {
  if (config.platform == "ensemble") return {};
  if (config.instance_groups.empty()) {
    InstanceGroup group;
    group.name = config.name;  // the model's name, without a suffix
    group.count = 0;           // the default, below
    config.instance_groups.push_back(group);
  }
  for (std::size_t i = 0; i < config.instance_groups.size(); ++i) {
    InstanceGroup& group = config.instance_groups[i];
    if (group.name.empty()) group.name = config.name + "_" + std::to_string(i);
    if (group.kind == InstanceGroup::Kind::Auto) group.kind = InstanceGroup::Kind::Cpu;
    if (group.kind == InstanceGroup::Kind::Gpu) {
      // Triton's words in a build without GPU support, which sonic's backends are.
      return invalid("instance group " + group.name + " of model " + config.name +
                     " has kind KIND_GPU but server does not support GPUs");
    }
    if (group.count < 1) {
      // Two CPU instances for TensorFlow and ONNX Runtime, whose sessions are thread-safe;
      // one for the others.
      const bool two = group.kind == InstanceGroup::Kind::Cpu &&
                       (config.backend == "tensorflow" || config.backend == "onnxruntime");
      group.count = two ? 2 : 1;
    }
  }
  return {};
}

}  // namespace

Result<void> apply_triton_defaults(ModelConfig& config, const std::string& model_directory) {
  if (auto ok = complete_backend_fields(config, model_directory); !ok) return ok;
  if (auto ok = normalize_instance_groups(config); !ok) return ok;
  // NormalizeModelConfig: a dynamic batcher with no preferred size prefers the max batch.
  if (config.dynamic_batching && config.dynamic_batching->preferred_batch_sizes.empty() &&
      config.max_batch_size > 0) {
    config.dynamic_batching->preferred_batch_sizes.push_back(config.max_batch_size);
  }
  // ...and a sequence is dropped after a second without requests when the config says 0.
  if (config.sequence_batching && config.sequence_batching->max_sequence_idle_microseconds == 0) {
    constexpr std::uint64_t kIdleDefault = 1000 * 1000;
    config.sequence_batching->max_sequence_idle_microseconds = kIdleDefault;
    // The batching is reported as it came: the default is appended (the last value of a
    // field is its value).
    protocol::wire::put_varint_field(config.sequence_batching->encoded, 1, kIdleDefault);
  }
  return {};
}

}  // namespace sonic::repository
