#include "onnx_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "ort_tensors.hpp"
#include "protocol/invalid.hpp"
#include "protocol/wire.hpp"

namespace sonic::onnx {

namespace {

using repository::ModelConfig;
using repository::TensorConfig;

using protocol::invalid;

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

const char* kind_name(ort::ValueKind kind) {
  switch (kind) {
    case ort::ValueKind::Sequence: return "a sequence";
    case ort::ValueKind::Map: return "a map";
    case ort::ValueKind::Optional: return "an optional";
    case ort::ValueKind::SparseTensor: return "a sparse tensor";
    default: return "not a tensor";
  }
}

bool servable(const ort::ValueInfo& value) {
  return value.kind == ort::ValueKind::Tensor && ort::data_type(value.element);
}

// Why `value` cannot be fed or answered through KServe v2.
std::string unservable(const ort::ValueInfo& value, const char* kind) {
  if (value.kind != ort::ValueKind::Tensor) {
    return std::string(kind) + " '" + value.name + "' is " + kind_name(value.kind) +
           ", which KServe v2 tensors cannot carry";
  }
  return std::string(kind) + " '" + value.name + "' has ONNX element type " +
         std::to_string(static_cast<int>(value.element)) + ", which KServe v2 has no datatype for";
}

// Checks one configured tensor against the graph's, completing its datatype.
Result<void> check_tensor(TensorConfig& configured, const ort::ValueInfo& graph, bool batched,
                          const char* kind) {
  if (!servable(graph)) return invalid(unservable(graph, kind));
  const DataType graph_type = *ort::data_type(graph.element);
  if (!configured.data_type) configured.data_type = graph_type;
  if (*configured.data_type != graph_type) {
    return invalid(std::string(kind) + " '" + configured.name + "' is " +
                   to_string(*configured.data_type) + " in the config but " +
                   to_string(graph_type) + " in the ONNX graph");
  }
  // With a reshape (Triton's `reshape`), the graph sees that shape instead of the dims.
  std::vector<std::int64_t> expected = configured.reshape ? *configured.reshape : configured.dims;
  if (batched) expected.insert(expected.begin(), -1);
  bool fits = graph.shape.size() == expected.size();
  for (std::size_t d = 0; fits && d < expected.size(); ++d) {
    fits = graph.shape[d] < 0 || expected[d] < 0 || graph.shape[d] == expected[d];
  }
  if (!fits) {
    return invalid(std::string(kind) + " '" + configured.name + "' has shape " +
                   shape_text(expected) + " by the config (-1 first: the batch) but " +
                   shape_text(graph.shape) + " in the ONNX graph");
  }
  return {};
}

Result<void> merge(std::vector<TensorConfig>& configured, const std::vector<ort::ValueInfo>& graph,
                   bool batched, const char* kind) {
  if (configured.empty()) {
    for (const auto& value : graph) {
      if (!servable(value)) {
        if (std::string(kind) == "input") return invalid(unservable(value, kind));
        continue;  // an output nobody can ask for is left out, not fatal
      }
      TensorConfig c;
      c.name = value.name;
      c.data_type = ort::data_type(value.element);
      c.dims.assign(value.shape.begin() + (batched && !value.shape.empty() ? 1 : 0),
                    value.shape.end());
      // Triton's AutoCompleteIO: no dims beyond the batch (or a scalar) become dims [1], the
      // model's own shape kept as an empty reshape.
      if (c.dims.empty()) {
        c.dims = {1};
        c.reshape = std::vector<std::int64_t>{};
      }
      configured.push_back(std::move(c));
    }
  }
  for (auto& c : configured) {
    auto it = std::find_if(graph.begin(), graph.end(),
                           [&](const ort::ValueInfo& v) { return v.name == c.name; });
    if (it == graph.end()) {
      std::string names;
      for (const auto& v : graph) names += (names.empty() ? "" : ", ") + v.name;
      return invalid(std::string("the config's ") + kind + " '" + c.name +
                     "' is not in the ONNX graph, whose " + kind + "s are: " + names);
    }
    if (auto ok = check_tensor(c, *it, batched, kind); !ok) return ok;
  }
  return {};
}

Result<int> integer_parameter(const ModelConfig& config, const std::string& key, int fallback) {
  auto it = config.parameters.find(key);
  if (it == config.parameters.end()) return fallback;
  int value = 0;
  const auto& text = it->second;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return invalid("parameter '" + key + "' must be an integer, not '" + text + "'");
  }
  return value;
}

// A boolean parameter as Triton's backends read one (ParseBoolValue): true/false, on/off, 1/0,
// in any case; `fallback` when the config sets none.
Result<bool> boolean_parameter(const ModelConfig& config, const std::string& key, bool fallback) {
  auto it = config.parameters.find(key);
  if (it == config.parameters.end()) return fallback;
  std::string value = it->second;
  for (auto& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "true" || value == "on" || value == "1") return true;
  if (value == "false" || value == "off" || value == "0") return false;
  return invalid("parameter '" + key + "' must be true or false, not '" + it->second + "'");
}

// ModelConfig.optimization (12) .graph (1) .level (1), read from the fields the config keeps
// as they came; nothing when the config sets none.
std::optional<std::int32_t> graph_level(const std::string& kept) {
  namespace wire = protocol::wire;
  auto find = [](std::string_view bytes, std::uint32_t wanted, std::string_view& inner,
                 std::uint64_t& number) {
    wire::Reader r(bytes);
    std::uint32_t field;
    wire::WireType type;
    bool found = false;
    while (!r.done() && r.tag(field, type)) {
      if (type == wire::WireType::Len) {
        std::string_view value;
        if (!r.bytes(value)) return false;
        if (field == wanted) inner = value, found = true;
      } else if (type == wire::WireType::Varint) {
        std::uint64_t value;
        if (!r.varint(value)) return false;
        if (field == wanted) number = value, found = true;
      } else if (!r.skip(type)) {
        return false;
      }
    }
    return found;
  };
  std::string_view optimization, graph;
  std::uint64_t level = 0;
  if (!find(kept, 12, optimization, level) || !find(optimization, 1, graph, level) ||
      !find(graph, 1, graph, level)) {
    return std::nullopt;
  }
  return static_cast<std::int32_t>(level);  // an int32 field: negative values are 64-bit varints
}

}  // namespace

Result<ModelConfig> complete(ModelConfig config, const ort::Session& session) {
  if (config.inputs.empty() && config.outputs.empty() && config.max_batch_size == 0) {
    bool all_symbolic = !session.inputs().empty();
    for (const auto* list : {&session.inputs(), &session.outputs()}) {
      for (const auto& v : *list) {
        if (!servable(v)) continue;
        all_symbolic &= !v.shape.empty() && v.shape.front() < 0;
      }
    }
    if (all_symbolic) {
      config.max_batch_size = 4;
      // Triton's onnxruntime backend adds an empty dynamic_batching to the max_batch_size it
      // completes, when no batcher is configured; Triton's normalization then prefers the max.
      if (!config.dynamic_batching && !config.sequence_batching) {
        config.dynamic_batching = repository::DynamicBatching{};
        config.dynamic_batching->preferred_batch_sizes = {config.max_batch_size};
      }
    }
  }
  const bool batched = config.max_batch_size > 0;
  if (batched) {
    // Triton's onnxruntime backend: every input and output needs a variable first dimension
    // to batch.
    for (const auto* list : {&session.inputs(), &session.outputs()}) {
      for (const auto& v : *list) {
        if (servable(v) && (v.shape.empty() || v.shape.front() >= 0)) {
          return invalid(
              "model does not support batching while non-zero max_batch_size is "
              "specified: '" +
              v.name + "' has shape " + shape_text(v.shape) +
              " in the ONNX graph (set max_batch_size: 0)");
        }
      }
    }
  }
  if (auto ok = merge(config.inputs, session.inputs(), batched, "input"); !ok) return ok.error();
  if (auto ok = merge(config.outputs, session.outputs(), batched, "output"); !ok) {
    return ok.error();
  }
  return config;
}

Result<ort::SessionSettings> session_settings(const ModelConfig& config) {
  ort::SessionSettings settings;
  auto intra = integer_parameter(config, "intra_op_thread_count", settings.intra_op_threads);
  auto inter = integer_parameter(config, "inter_op_thread_count", settings.inter_op_threads);
  auto mode = integer_parameter(config, "execution_mode", 0);
  auto arena = boolean_parameter(config, "enable_mem_arena", settings.memory_arena);
  auto pattern = boolean_parameter(config, "enable_mem_pattern", settings.memory_pattern);
  auto shared = boolean_parameter(config, "share_session_between_instances", false);
  for (const auto* value : {&intra, &inter, &mode}) {
    if (!*value) return value->error();
  }
  for (const auto* value : {&arena, &pattern, &shared}) {
    if (!*value) return value->error();
  }
  if (*mode != 0 && *mode != 1) {
    return invalid("parameter 'execution_mode' must be 0 (sequential) or 1 (parallel)");
  }
  // Triton sets a thread count only when it is above 0: 0 or less leaves ONNX Runtime's
  // default, one thread per core.
  settings.intra_op_threads = std::max(*intra, 0);
  settings.inter_op_threads = std::max(*inter, 0);
  settings.execution_mode = *mode ? ort::ExecutionMode::Parallel : ort::ExecutionMode::Sequential;
  settings.memory_arena = *arena;
  settings.memory_pattern = *pattern;
  settings.share_session = *shared;
  // Triton's onnxruntime backend (its README): "-1 refers to BASIC optimizations, 1 refers to
  // basic plus extended optimizations like fusions and 2 refers to all optimizations being
  // disabled"; anything else, 0 and no level among them, enables all.
  if (auto level = graph_level(config.kept)) {
    if (*level == -1) settings.optimization = ort::GraphOptimization::Basic;
    if (*level == 1) settings.optimization = ort::GraphOptimization::Extended;
    if (*level == 2) settings.optimization = ort::GraphOptimization::Disabled;
  }
  for (const auto& [key, value] : config.parameters) {
    if (key.rfind("session.", 0) == 0) settings.entries.emplace_back(key, value);
  }
  return settings;
}

}  // namespace sonic::onnx
