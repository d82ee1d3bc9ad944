// A model's configuration as Triton's JSON: what Triton's ModelConfig HTTP route answers, and
// what a Python model reads in args["model_config"] (Triton's ModelConfigToJson makes both).
#pragma once

#include <string>
#include <string_view>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// A serialized inference.ModelConfig as Triton prints it: protobuf's JSON mapping with
/// preserve_proto_field_names and always_print_primitive_fields (a field at its default, such
/// as max_batch_size 0, is there to read), and the 64-bit fields Triton turns back into numbers
/// (dims, versions, queue delays) as numbers. INTERNAL for bytes that are not a ModelConfig.
SONIC_EXPORT Result<std::string> model_config_to_json(std::string_view serialized_config);

}  // namespace sonic::protocol
