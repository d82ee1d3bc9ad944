// ONNX models through ONNX Runtime, as Triton's onnxruntime backend runs them: Triton's platform
// "onnxruntime_onnx" and backend "onnxruntime" map here.
//   - ONNX Runtime is loaded at run time (ort_runtime.hpp); without it, an ONNX model is
//     refused with the way to install it, and every other backend works as before.
//   - One session per instance, as Triton makes them (or one for all instances, with Triton's
//     share_session_between_instances), each running one request at a time; one intra-op thread
//     per session unless intra_op_thread_count says otherwise (docs/models.md says why).
//   - Inputs are lent to ONNX Runtime, not copied; outputs are handed on in the buffers ONNX
//     Runtime allocated; only BYTES elements are converted, to and from its string tensors.
//   - The config is completed from the session's inputs and outputs, as Triton completes it.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "onnx_config.hpp"
#include "ort_tensors.hpp"
#include "sonic/caller.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/repository/backend.hpp"

namespace sonic::onnx {

namespace {

using repository::LoadedModel;
using repository::ModelConfig;

// Sessions lent to one request at a time: `slots` requests run at once, on the sessions in turn.
class SessionPool {
 public:
  SessionPool(std::vector<ort::Session> sessions, int slots) : sessions_(std::move(sessions)) {
    slots = std::max(slots, 1);
    for (int i = 0; i < slots; ++i) free_.push_back(static_cast<std::size_t>(i) % sessions_.size());
  }

  /// Calls use(session) once a slot is free, blocking until then.
  template <typename Use>
  auto with_session(Use&& use) {
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [&] { return !free_.empty(); });
    const std::size_t index = free_.back();
    free_.pop_back();
    lock.unlock();
    struct GiveBack {
      SessionPool* pool;
      std::size_t index;
      ~GiveBack() {
        std::lock_guard<std::mutex> relock(pool->mutex_);
        pool->free_.push_back(index);
        pool->available_.notify_one();
      }
    } give_back{this, index};
    return use(sessions_[index]);
  }

 private:
  std::vector<ort::Session> sessions_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::size_t> free_;
};

class OnnxModel {
 public:
  OnnxModel(const ort::Runtime& runtime, ModelConfig config, std::vector<ort::Session> sessions)
      : runtime_(runtime),
        config_(std::move(config)),
        pool_(std::move(sessions), config_.instance_count()) {}

  const ModelConfig& config() const { return config_; }

  // Runs the request's inputs, leaving out the optional ones it does not send (ONNX Runtime
  // then uses the graph's initializer, or says the input is missing, as under Triton), and
  // answers the outputs it asks for, or all of them.
  Result<std::vector<NamedTensor>> compute(const InferRequest& request) {
    std::vector<const char*> input_names;
    std::vector<ort::ValueHandle> values;
    std::vector<std::vector<std::uint64_t>> scratch(config_.inputs.size());
    for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
      const auto* input = request.find_input(config_.inputs[i].name);
      if (!input) continue;
      auto value = ort::to_value(runtime_, input->tensor, scratch[i]);
      if (!value) return value.error();
      input_names.push_back(config_.inputs[i].name.c_str());
      values.push_back(std::move(*value));
    }
    std::vector<const ort::OrtValue*> inputs;
    for (const auto& v : values) inputs.push_back(v.get());
    std::vector<const char*> output_names;
    for (const auto& wanted : request.outputs()) output_names.push_back(wanted.name.c_str());
    if (output_names.empty()) {
      for (const auto& t : config_.outputs) output_names.push_back(t.name.c_str());
    }
    auto outputs = pool_.with_session([&](const ort::Session& session) {
      // The wait for a session may outlast the caller: nobody waits for it any more.
      if (const auto& caller = request.caller()) {
        if (auto why = caller->gone(std::chrono::steady_clock::now(),
                                    "a session of model '" + config_.name + "'")) {
          return decltype(session.run(input_names, inputs, output_names))(std::move(*why));
        }
      }
      return session.run(input_names, inputs, output_names);
    });
    if (!outputs) return outputs.error();
    std::vector<NamedTensor> named;
    named.reserve(outputs->size());
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      auto tensor = ort::to_tensor(runtime_, std::move((*outputs)[i]));
      if (!tensor) return tensor.error();
      // An output that is one of the graph's inputs (ONNX allows it) comes back in the buffer
      // the input was lent in: the request's bytes or their aligned copy, which do not outlive
      // the call. Such an output is copied.
      if (lies_in_inputs(*tensor, request, scratch))
        tensor = Tensor::copy_bytes(tensor->dtype(), tensor->shape(), tensor->data(),
                                    tensor->byte_size());
      named.push_back({output_names[i], std::move(*tensor), {}});
    }
    return named;
  }

 private:
  static bool lies_in_inputs(const Tensor& output, const InferRequest& request,
                             const std::vector<std::vector<std::uint64_t>>& scratch) {
    auto within = [&](const void* begin, std::size_t size) {
      const auto* first = static_cast<const std::uint8_t*>(begin);
      return size > 0 && output.data() >= first && output.data() < first + size;
    };
    for (const auto& input : request.inputs()) {
      if (within(input.tensor.data(), input.tensor.byte_size())) return true;
    }
    for (const auto& copy : scratch) {
      if (within(copy.data(), copy.size() * sizeof(std::uint64_t))) return true;
    }
    return false;
  }

  const ort::Runtime& runtime_;
  ModelConfig config_;
  SessionPool pool_;
};

Result<LoadedModel> load(const ModelConfig& given, const std::string& model_file,
                         const repository::LoadContext& /*context*/) {
  auto runtime = ort::Runtime::get();
  if (!runtime) return runtime.error();
  auto settings = session_settings(given);
  if (!settings) return settings.error();
  std::vector<ort::Session> sessions;
  auto first = ort::Session::open(**runtime, model_file, *settings);
  if (!first) return first.error();
  auto config = complete(given, *first);
  if (!config) return config.error();
  sessions.push_back(std::move(*first));
  const int count = settings->share_session ? 1 : std::max(1, config->instance_count());
  while (static_cast<int>(sessions.size()) < count) {
    auto next = ort::Session::open(**runtime, model_file, *settings);
    if (!next) return next.error();
    sessions.push_back(std::move(*next));
  }
  auto model = std::make_shared<OnnxModel>(**runtime, std::move(*config), std::move(sessions));
  LoadedModel loaded;
  loaded.config = model->config();
  loaded.compute = [model](const InferRequest& request) { return model->compute(request); };
  return loaded;
}

// Registers the backend when the library is loaded.
const bool registered = [] {
  repository::register_backend(
      {"onnxruntime", {"onnxruntime_onnx"}, "model.onnx", repository::LoadFunction(load)});
  return true;
}();

}  // namespace

}  // namespace sonic::onnx

// Referenced by the anchor object linked into every program that uses sonic::onnx, so that the
// linker keeps the library (and its registration) even under --as-needed.
extern "C" {
SONIC_EXPORT int sonic_onnx_registration_anchor = 1;
}
