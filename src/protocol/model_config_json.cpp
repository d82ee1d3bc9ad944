#include "model_config_json.hpp"

#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "proto_json.hpp"

namespace sonic::protocol {

namespace {

using nlohmann::ordered_json;

// Protobuf's JSON mapping writes 64-bit integers as strings. Triton's ModelConfigToJson turns
// these ones back into numbers (its FixInt, FixUInt and FixIntArray), and only these: a map's
// members are "*", arrays are walked through. The 64-bit fields it leaves out stay strings there
// and here: instance_group's secondary_devices' device_id, the CUDA graph specs' dims, the
// sequence batcher's initial_state dims, and priority_queue_policy's keys (JSON keys are strings).
constexpr std::string_view kNumericFields[] = {
    "input/dims",
    "input/reshape/shape",
    "output/dims",
    "output/reshape/shape",
    "version_policy/specific/versions",
    "dynamic_batching/max_queue_delay_microseconds",
    "dynamic_batching/priority_levels",
    "dynamic_batching/default_priority_level",
    "dynamic_batching/default_queue_policy/default_timeout_microseconds",
    "dynamic_batching/priority_queue_policy/*/default_timeout_microseconds",
    "sequence_batching/max_sequence_idle_microseconds",
    "sequence_batching/oldest/max_queue_delay_microseconds",
    "sequence_batching/direct/max_queue_delay_microseconds",
    "sequence_batching/state/dims",
    "ensemble_scheduling/step/model_version",
    "model_warmup/inputs/*/dims",
};

// A decimal string of the printer's as a JSON number; signed only when it has a sign.
ordered_json number_of(const std::string& text) {
  if (!text.empty() && text.front() == '-') {
    return static_cast<std::int64_t>(std::strtoll(text.c_str(), nullptr, 10));
  }
  return static_cast<std::uint64_t>(std::strtoull(text.c_str(), nullptr, 10));
}

// Turns the strings found at `path` below `node` into numbers.
void fix_numbers(ordered_json& node, std::string_view path) {
  if (node.is_array()) {
    for (auto& element : node) fix_numbers(element, path);
    return;
  }
  if (path.empty()) {
    if (node.is_string()) node = number_of(node.get<std::string>());
    return;
  }
  if (!node.is_object()) return;
  const std::size_t slash = path.find('/');
  const std::string_view name = path.substr(0, slash);
  const std::string_view rest =
      slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  if (name == "*") {
    for (auto& member : node.items()) fix_numbers(member.value(), rest);
    return;
  }
  if (auto it = node.find(std::string(name)); it != node.end()) fix_numbers(*it, rest);
}

}  // namespace

Result<std::string> model_config_to_json(std::string_view serialized_config) {
  auto printed =
      message_to_json("inference.ModelConfig", serialized_config, JsonPrint::kWithDefaults);
  if (!printed) return printed.error();
  ordered_json document = ordered_json::parse(*printed, nullptr, false);
  if (document.is_discarded()) {
    return Error(StatusCode::Internal, "the model configuration did not print as JSON");
  }
  for (auto path : kNumericFields) fix_numbers(document, path);
  return document.dump();
}

}  // namespace sonic::protocol
