// ONNX models through OpenCV's DNN module (Debian 12's ONNX engine): Triton's platform
// "onnxruntime_onnx" and backend "onnxruntime" map here. OpenCV's limits shape the design:
//   - a cv::dnn::Net is not safe to share between threads: one per instance, each run by one
//     request at a time;
//   - a Net cannot be cloned: each instance is read from the file's bytes, read once;
//   - DNN computes in float: integer inputs are converted to float and integer outputs back
//     (exact below 2^24);
//   - a graph may freeze its batch size (a Reshape to a constant shape) or use operators
//     OpenCV lacks (TopK, LayerNormalization in 4.6, ...): the model is run at load, at batch 1
//     and at its max_batch_size, and refused with OpenCV's message (which names the layer) or
//     the shape it gave, instead of giving wrong answers later.
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include <condition_variable>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <type_traits>

#include "onnx_graph.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/repository/backend.hpp"

namespace sonic::onnx {

namespace {

using repository::LoadedModel;
using repository::ModelConfig;
using repository::TensorConfig;

Error invalid(const std::string& what) { return Error(StatusCode::InvalidArgument, what); }

// Triton's onnxruntime backend leaves an omitted optional input unbound, for ONNX Runtime to
// use the graph's default; OpenCV's DNN module has no such notion and runs every graph input.
Error missing_optional(const std::string& input) {
  return invalid("input '" + input +
                 "' is optional in the config, but the onnx backend (OpenCV's DNN module) "
                 "runs every input of the graph: send it");
}

// OpenCV's description of a failure on one line (it spans several, with "> " prefixes, when
// an importer error wraps a layer's): messages travel in one log line or gRPC status.
std::string describe(const cv::Exception& e) {
  std::string text;
  bool space = false;
  for (char c : e.err) {
    if (c == '\n' || c == '\r' || c == '>') {
      space = !text.empty();
      continue;
    }
    if (c == ' ' && (text.empty() || space)) continue;
    if (space) text += ' ';
    space = false;
    text += c;
  }
  return text;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

// Calls use(T{}) with the C++ type of a numeric DataType; false for the others (BYTES, and the
// half-precision types C++17 has no arithmetic for).
template <typename Use>
bool with_numeric_type(DataType type, Use&& use) {
  switch (type) {
    case DataType::Bool: use(bool{}); return true;
    case DataType::UInt8: use(std::uint8_t{}); return true;
    case DataType::UInt16: use(std::uint16_t{}); return true;
    case DataType::UInt32: use(std::uint32_t{}); return true;
    case DataType::UInt64: use(std::uint64_t{}); return true;
    case DataType::Int8: use(std::int8_t{}); return true;
    case DataType::Int16: use(std::int16_t{}); return true;
    case DataType::Int32: use(std::int32_t{}); return true;
    case DataType::Int64: use(std::int64_t{}); return true;
    case DataType::Fp32: use(float{}); return true;
    case DataType::Fp64: use(double{}); return true;
    default: return false;
  }
}

bool is_numeric(DataType type) {
  return with_numeric_type(type, [](auto) {});
}

// The config completed from the graph, or the first way the two disagree. As Triton does for
// ONNX: tensors the config leaves out come from the graph; with no config at all, a graph
// whose every tensor has a symbolic first dimension batches, up to 4 (Triton's
// default-max-batch-size).
Result<ModelConfig> complete(ModelConfig config, const GraphSignature& graph) {
  const bool batch_from_graph =
      config.inputs.empty() && config.outputs.empty() && config.max_batch_size == 0;
  if (batch_from_graph) {
    bool all_symbolic = true;
    for (const auto* list : {&graph.inputs, &graph.outputs}) {
      for (const auto& t : *list) all_symbolic &= !t.shape.empty() && t.shape.front() < 0;
    }
    if (all_symbolic) config.max_batch_size = 4;
  }
  const bool batched = config.max_batch_size > 0;
  auto merge = [&](std::vector<TensorConfig>& configured, const std::vector<GraphTensor>& in_graph,
                   const char* kind) -> Result<void> {
    if (configured.empty()) {
      for (const auto& t : in_graph) {
        TensorConfig c;
        c.name = t.name;
        c.data_type = t.data_type;
        c.dims.assign(t.shape.begin() + (batched && !t.shape.empty() ? 1 : 0), t.shape.end());
        configured.push_back(std::move(c));
      }
    }
    for (auto& c : configured) {
      auto it = std::find_if(in_graph.begin(), in_graph.end(),
                             [&](const GraphTensor& t) { return t.name == c.name; });
      if (it == in_graph.end()) {
        std::string names;
        for (const auto& t : in_graph) names += (names.empty() ? "" : ", ") + t.name;
        return invalid(std::string("the config's ") + kind + " '" + c.name +
                       "' is not in the ONNX graph, whose " + kind + "s are: " + names);
      }
      if (!it->data_type || !is_numeric(*it->data_type)) {
        return invalid(std::string(kind) + " '" + c.name + "' has ONNX element type " +
                       std::to_string(it->onnx_type) + ", which the OpenCV backend cannot feed");
      }
      if (!c.data_type) c.data_type = it->data_type;
      if (*c.data_type != *it->data_type) {
        return invalid(std::string(kind) + " '" + c.name + "' is " + to_string(*c.data_type) +
                       " in the config but " + to_string(*it->data_type) + " in the ONNX graph");
      }
      std::vector<std::int64_t> expected = c.dims;
      if (batched) expected.insert(expected.begin(), -1);
      bool fits = it->shape.empty() || it->shape.size() == expected.size();
      for (std::size_t d = 0; fits && !it->shape.empty() && d < expected.size(); ++d) {
        fits = it->shape[d] < 0 || expected[d] < 0 || it->shape[d] == expected[d];
      }
      if (!fits) {
        return invalid(std::string(kind) + " '" + c.name + "' has shape " + shape_text(expected) +
                       " by the config (-1 first: the batch) but " + shape_text(it->shape) +
                       " in the ONNX graph");
      }
    }
    return {};
  };
  if (auto ok = merge(config.inputs, graph.inputs, "input"); !ok) return ok.error();
  if (auto ok = merge(config.outputs, graph.outputs, "output"); !ok) return ok.error();
  return config;
}

// A tensor's values as the float Mat DNN reads: FP32 bytes wrapped, others converted.
cv::Mat input_mat(const Tensor& tensor, std::vector<float>& converted) {
  std::vector<int> sizes(tensor.shape().begin(), tensor.shape().end());
  if (sizes.empty()) sizes.push_back(1);
  const bool aligned = reinterpret_cast<std::uintptr_t>(tensor.data()) % alignof(float) == 0;
  if (tensor.dtype() == DataType::Fp32 && !aligned) {
    converted.resize(tensor.byte_size() / sizeof(float));
    std::memcpy(converted.data(), tensor.data(), converted.size() * sizeof(float));
    return cv::Mat(static_cast<int>(sizes.size()), sizes.data(), CV_32F, converted.data());
  }
  if (tensor.dtype() == DataType::Fp32) {
    return cv::Mat(static_cast<int>(sizes.size()), sizes.data(), CV_32F,
                   const_cast<std::uint8_t*>(tensor.data()));
  }
  with_numeric_type(tensor.dtype(), [&](auto zero) {
    auto values = tensor.as<decltype(zero)>();
    converted.assign(values.begin(), values.end());
  });
  return cv::Mat(static_cast<int>(sizes.size()), sizes.data(), CV_32F, converted.data());
}

// DNN's float output as a tensor of the config's type, checked against the config's shape.
Result<Tensor> output_tensor(const cv::Mat& mat, const TensorConfig& config, std::int64_t batch) {
  Shape shape;
  for (int d = 0; d < mat.dims; ++d) shape.push_back(mat.size[d]);
  std::vector<std::int64_t> expected = config.dims;
  if (batch >= 0) expected.insert(expected.begin(), batch);
  bool fits = shape.size() == expected.size();
  for (std::size_t d = 0; fits && d < shape.size(); ++d) {
    fits = expected[d] < 0 || expected[d] == shape[d];
  }
  if (!fits) {
    return Error(StatusCode::Internal, "output '" + config.name + "' came out with shape " +
                                           shape_text(shape) + ", not " + shape_text(expected));
  }
  cv::Mat dense = mat.isContinuous() ? mat : mat.clone();
  const float* values = dense.ptr<float>();
  const std::size_t count = dense.total();
  if (*config.data_type == DataType::Fp32) {
    return Tensor::from_vector(std::vector<float>(values, values + count), std::move(shape));
  }
  if (*config.data_type == DataType::Bool) {  // one byte each, 0 or 1
    std::vector<std::uint8_t> flags(count);
    for (std::size_t i = 0; i < count; ++i) flags[i] = values[i] != 0.0f;
    return Tensor::copy_bytes(DataType::Bool, std::move(shape), flags.data(), flags.size());
  }
  Tensor out;
  with_numeric_type(*config.data_type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<T> converted(count);
      for (std::size_t i = 0; i < count; ++i) converted[i] = static_cast<T>(values[i]);
      out = Tensor::from_vector(std::move(converted), shape);
    }
  });
  return out;
}

// Networks read from the same bytes, each lent to one request at a time.
class NetPool {
 public:
  void add(cv::dnn::Net net) { free_.push_back(std::move(net)); }

  template <typename Use>
  auto with_net(Use&& use) {
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [&] { return !free_.empty(); });
    cv::dnn::Net net = std::move(free_.back());
    free_.pop_back();
    lock.unlock();
    struct GiveBack {
      NetPool* pool;
      cv::dnn::Net* net;
      ~GiveBack() {
        std::lock_guard<std::mutex> relock(pool->mutex_);
        pool->free_.push_back(std::move(*net));
        pool->available_.notify_one();
      }
    } give_back{this, &net};
    return use(net);
  }

 private:
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<cv::dnn::Net> free_;
};

class OnnxModel {
 public:
  OnnxModel(ModelConfig config) : config_(std::move(config)) {
    for (const auto& t : config_.outputs) output_names_.push_back(t.name);
  }

  Result<void> add_instances(const std::string& bytes, int count) {
    for (int i = 0; i < count; ++i) {
      try {
        cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes.data(), bytes.size());
        net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
        net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        pool_.add(std::move(net));
      } catch (const cv::Exception& e) {
        return invalid("OpenCV cannot read the ONNX graph: " + describe(e));
      }
    }
    return {};
  }

  Result<std::vector<NamedTensor>> compute(const InferRequest& request) {
    std::int64_t batch = -1;
    if (config_.max_batch_size > 0 && !request.inputs().empty()) {
      batch = request.inputs().front().tensor.shape().front();
    }
    return pool_.with_net([&](cv::dnn::Net& net) -> Result<std::vector<NamedTensor>> {
      std::vector<std::vector<float>> converted(config_.inputs.size());
      std::vector<cv::Mat> outputs;
      try {
        for (std::size_t i = 0; i < config_.inputs.size(); ++i) {
          const auto* input = request.find_input(config_.inputs[i].name);
          // Only an optional input can be missing here; a net keeps the blob it was last
          // given, so it must not run without it.
          if (!input) return missing_optional(config_.inputs[i].name);
          net.setInput(input_mat(input->tensor, converted[i]), config_.inputs[i].name);
        }
        net.forward(outputs, output_names_);
      } catch (const cv::Exception& e) {
        return Error(StatusCode::Internal, "OpenCV failed to run the model: " + describe(e));
      }
      std::vector<NamedTensor> named;
      for (std::size_t i = 0; i < outputs.size() && i < config_.outputs.size(); ++i) {
        auto tensor = output_tensor(outputs[i], config_.outputs[i], batch);
        if (!tensor) return tensor.error();
        named.push_back({config_.outputs[i].name, std::move(*tensor), {}});
      }
      return named;
    });
  }

  const ModelConfig& config() const { return config_; }

 private:
  ModelConfig config_;
  std::vector<cv::String> output_names_;
  NetPool pool_;
};

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid("cannot open the model file");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Result<LoadedModel> load(const ModelConfig& given, const std::string& model_file) {
  auto bytes = read_file(model_file);
  if (!bytes) return bytes.error();
  auto graph = read_graph_signature(*bytes);
  if (!graph) return graph.error();
  auto config = complete(given, *graph);
  if (!config) return config.error();
  for (const auto& t : config->inputs) {
    if (!t.data_type || !is_numeric(*t.data_type)) {
      return invalid("input '" + t.name + "': the OpenCV backend feeds numeric tensors only");
    }
  }
  auto model = std::make_shared<OnnxModel>(std::move(*config));
  if (auto ok = model->add_instances(*bytes, model->config().instance_count()); !ok) {
    return ok.error();
  }
  return repository::checked_at_load(
      model->config(), [model](const InferRequest& request) { return model->compute(request); },
      "(a graph that fixes its batch size, by a Reshape to a constant shape, works only at that "
      "size: export it with a dynamic batch dimension, or set max_batch_size: 0)");
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
