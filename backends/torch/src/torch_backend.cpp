// TorchScript models through libtorch: Triton's platform "pytorch_libtorch" and backend
// "pytorch" map here, with Triton's conventions:
//   - tensors named NAME__i are the forward() argument, and the element of its returned tuple,
//     at index i; other input names are forward()'s argument names;
//   - a TorchScript file records no shapes or types: the config must list inputs and outputs
//     (Triton's PyTorch backend cannot complete them either);
//   - one module, shared: its forward() runs for several requests at once, at most
//     instance_group's count at a time;
//   - libtorch's intra-op threads are a process-wide setting: the config parameter
//     INTRA_OP_THREAD_COUNT sets them (Triton's name), 1 by default, as CMSSW runs PyTorch,
//     so that the executor's threads, not libtorch's, make the parallelism.
// Inputs reach forward() without a copy (a module must not write into its inputs, which may
// be the caller's); outputs leave without one (the answer keeps the torch tensor alive).
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <condition_variable>
#include <mutex>

#include "sonic/caller.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/repository/backend.hpp"

namespace sonic::torch_backend {

namespace {

using repository::LoadedModel;
using repository::ModelConfig;
using repository::TensorConfig;

Error invalid(const std::string& what) { return Error(StatusCode::InvalidArgument, what); }

// libtorch's first line of an error: the rest is a C++ or TorchScript backtrace.
std::string first_line(const std::exception& e) {
  std::string text = e.what();
  return text.substr(0, text.find('\n'));
}

std::optional<c10::ScalarType> torch_type(DataType type) {
  switch (type) {
    case DataType::Bool: return c10::kBool;
    case DataType::UInt8: return c10::kByte;
    case DataType::Int8: return c10::kChar;
    case DataType::Int16: return c10::kShort;
    case DataType::Int32: return c10::kInt;
    case DataType::Int64: return c10::kLong;
    case DataType::Fp16: return c10::kHalf;
    case DataType::Bf16: return c10::kBFloat16;
    case DataType::Fp32: return c10::kFloat;
    case DataType::Fp64: return c10::kDouble;
    default: return std::nullopt;  // unsigned wider than 8 bits, BYTES: no torch type
  }
}

// The index in NAME__INDEX, Triton's naming of positional tensors.
std::optional<std::size_t> positional_index(const std::string& name) {
  auto mark = name.rfind("__");
  if (mark == std::string::npos || mark + 2 >= name.size()) return std::nullopt;
  std::size_t index = 0;
  for (std::size_t i = mark + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    index = index * 10 + static_cast<std::size_t>(name[i] - '0');
  }
  return index;
}

std::string shape_text(c10::IntArrayRef shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// At most `count` callers inside at once.
class Slots {
 public:
  explicit Slots(int count) : free_(count) {}
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    available_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable available_;
  int free_;
};

class TorchModel {
 public:
  TorchModel(ModelConfig config, torch::jit::Module module)
      : config_(std::move(config)), module_(std::move(module)), slots_(config_.instance_count()) {}

  // Maps each config input to its forward() position, and each output to its place in the
  // result.
  Result<void> bind() {
    auto schema = module_.get_method("forward").function().getSchema();
    std::vector<std::string> arguments;
    std::vector<bool> takes_none;  // Optional[...]: an input the request may leave out
    for (const auto& argument : schema.arguments()) {
      if (argument.name() == "self") continue;
      arguments.push_back(argument.name());
      takes_none.push_back(argument.type()->kind() == c10::TypeKind::OptionalType);
    }
    if (config_.inputs.size() != arguments.size()) {
      return invalid("forward() takes " + std::to_string(arguments.size()) +
                     " tensors but the config lists " + std::to_string(config_.inputs.size()) +
                     " inputs");
    }
    input_position_.assign(config_.inputs.size(), 0);
    for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
      const std::string& name = config_.inputs[i].name;
      auto by_name = std::find(arguments.begin(), arguments.end(), name);
      if (by_name != arguments.end()) {
        input_position_[i] = static_cast<std::size_t>(by_name - arguments.begin());
      } else if (auto index = positional_index(name); index && *index < arguments.size()) {
        input_position_[i] = *index;
      } else {
        std::string names;
        for (const auto& a : arguments) names += (names.empty() ? "" : ", ") + a;
        return invalid("input '" + name + "' is neither an argument of forward() (" + names +
                       ") nor named NAME__INDEX with an index below " +
                       std::to_string(arguments.size()));
      }
    }
    for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
      const std::size_t position = input_position_[i];
      if (config_.inputs[i].optional && !takes_none[position]) {
        return invalid("input '" + config_.inputs[i].name +
                       "' is optional in the config, but forward()'s argument '" +
                       arguments[position] +
                       "' cannot be None (declare it Optional[Tensor] = None)");
      }
    }
    for (const auto& t : config_.inputs) {
      if (!t.data_type || !torch_type(*t.data_type)) {
        return invalid("input '" + t.name + "' has a type libtorch has no tensor of");
      }
    }
    output_position_.clear();
    for (std::size_t i = 0; i < config_.outputs.size(); ++i) {
      auto index = positional_index(config_.outputs[i].name);
      output_position_.push_back(index ? *index : i);
    }
    return {};
  }

  Result<std::vector<NamedTensor>> compute(const InferRequest& request) {
    std::vector<c10::IValue> arguments(config_.inputs.size());
    for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
      const TensorConfig& spec = config_.inputs[i];
      const auto* input = request.find_input(spec.name);
      if (!input && spec.optional) {
        // TorchScript's optional argument (`Optional[Tensor] = None`) is given None.
        arguments[input_position_[i]] = c10::IValue();
        continue;
      }
      if (!input) return invalid("input '" + spec.name + "' is missing");
      const Tensor& tensor = input->tensor;
      std::vector<std::int64_t> shape(tensor.shape().begin(), tensor.shape().end());
      auto options = torch::TensorOptions().dtype(*torch_type(tensor.dtype()));
      at::Tensor value = torch::from_blob(const_cast<std::uint8_t*>(tensor.data()), shape, options);
      if (reinterpret_cast<std::uintptr_t>(tensor.data()) % value.element_size() != 0) {
        value = value.clone();  // libtorch's kernels expect aligned elements
      }
      arguments[input_position_[i]] = std::move(value);
    }
    c10::IValue result;
    slots_.acquire();
    // The wait for a slot may outlast the caller: nobody waits for it any more.
    if (const auto& caller = request.caller()) {
      if (auto why = caller->gone(std::chrono::steady_clock::now(),
                                  "an instance of model '" + config_.name + "'")) {
        slots_.release();
        return *why;
      }
    }
    try {
      c10::InferenceMode inference;
      result = module_.forward(arguments);
    } catch (const std::exception& e) {
      slots_.release();
      return Error(StatusCode::Internal, "libtorch failed to run the model: " + first_line(e));
    }
    slots_.release();
    std::vector<c10::IValue> outputs;
    if (result.isTensor()) {
      outputs.push_back(result);
    } else if (result.isTuple()) {
      for (const auto& element : result.toTupleRef().elements()) outputs.push_back(element);
    } else if (result.isList()) {
      for (const auto& element : result.toListRef()) outputs.push_back(element);
    } else {
      return Error(StatusCode::Internal,
                   "forward() returned " + result.tagKind() + ", not tensors");
    }
    std::int64_t batch = -1;
    if (config_.max_batch_size > 0 && !request.inputs().empty()) {
      batch = request.inputs().front().tensor.shape().front();
    }
    std::vector<NamedTensor> named;
    for (std::size_t i = 0; i < config_.outputs.size(); ++i) {
      if (output_position_[i] >= outputs.size() || !outputs[output_position_[i]].isTensor()) {
        return Error(StatusCode::Internal, "forward() returned no tensor at position " +
                                               std::to_string(output_position_[i]) +
                                               " for output '" + config_.outputs[i].name + "'");
      }
      auto tensor =
          output_tensor(outputs[output_position_[i]].toTensor(), config_.outputs[i], batch);
      if (!tensor) return tensor.error();
      named.push_back({config_.outputs[i].name, std::move(*tensor), {}});
    }
    return named;
  }

  const ModelConfig& config() const { return config_; }

 private:
  static Result<Tensor> output_tensor(const at::Tensor& value, const TensorConfig& spec,
                                      std::int64_t batch) {
    if (value.scalar_type() != *torch_type(*spec.data_type)) {
      return Error(StatusCode::Internal, "output '" + spec.name + "' came out as " +
                                             std::string(c10::toString(value.scalar_type())) +
                                             ", not " + to_string(*spec.data_type));
    }
    std::vector<std::int64_t> expected = spec.dims;
    if (batch >= 0) expected.insert(expected.begin(), batch);
    bool fits = static_cast<std::size_t>(value.dim()) == expected.size();
    for (std::size_t d = 0; fits && d < expected.size(); ++d) {
      fits = expected[d] < 0 || expected[d] == value.size(static_cast<std::int64_t>(d));
    }
    if (!fits) {
      return Error(StatusCode::Internal, "output '" + spec.name + "' came out with shape " +
                                             shape_text(value.sizes()) + " where the config " +
                                             "says " + shape_text(expected));
    }
    auto owner = std::make_shared<at::Tensor>(value.contiguous());
    Shape shape(owner->sizes().begin(), owner->sizes().end());
    const void* data = owner->data_ptr();
    const std::size_t bytes = owner->nbytes();
    return Tensor::from_shared(*spec.data_type, std::move(shape), std::move(owner), data, bytes);
  }

  ModelConfig config_;
  torch::jit::Module module_;
  Slots slots_;
  std::vector<std::size_t> input_position_;
  std::vector<std::size_t> output_position_;
};

Result<LoadedModel> load(const ModelConfig& config, const std::string& model_file,
                         const repository::LoadContext& /*context*/) {
  if (config.inputs.empty() || config.outputs.empty()) {
    return invalid(
        "a TorchScript file records no tensor shapes or types: list the inputs and "
        "outputs in config.pbtxt (INPUT__0, OUTPUT__0, ... by position)");
  }
  int threads = 1;
  if (auto it = config.parameters.find("INTRA_OP_THREAD_COUNT"); it != config.parameters.end()) {
    threads = std::max(1, std::atoi(it->second.c_str()));
  }
  at::set_num_threads(threads);
  torch::jit::Module module;
  try {
    module = torch::jit::load(model_file, torch::kCPU);
  } catch (const std::exception& e) {
    return invalid("libtorch cannot read the TorchScript file: " + first_line(e));
  }
  module.eval();
  auto model = std::make_shared<TorchModel>(config, std::move(module));
  if (auto bound = model->bind(); !bound) return bound.error();
  return repository::checked_at_load(
      model->config(), [model](const InferRequest& request) { return model->compute(request); });
}

const bool registered = [] {
  repository::register_backend(
      {"pytorch", {"pytorch_libtorch"}, "model.pt", repository::LoadFunction(load)});
  return true;
}();

}  // namespace

}  // namespace sonic::torch_backend

// Referenced by the anchor object linked into every program that uses sonic::torch, so that
// the linker keeps the library (and its registration) even under --as-needed.
extern "C" {
SONIC_EXPORT int sonic_torch_registration_anchor = 1;
}
