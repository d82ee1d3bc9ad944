// Protobuf messages of proto/ printed as JSON without libprotobuf: the schema comes from the
// descriptors protoc compiles from proto/*.proto at build time (embedded in the library), and
// a walk over the wire format prints any message of it in protobuf's JSON mapping, and JSON is
// read back into wire bytes.
#pragma once

#include <string>
#include <string_view>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// Whether fields without presence that hold their default value are printed.
enum class JsonPrint {
  kSetFields,     ///< left out (libprotobuf's default)
  kWithDefaults,  ///< printed: 0, false, "", the enum's first value, [] and {} (libprotobuf's
                  ///< always_print_primitive_fields, with which Triton prints a ModelConfig)
};

/// The serialized message `bytes` of type `message_type` (a full name: "inference.ModelConfig")
/// as JSON, as libprotobuf's JsonPrintOptions with preserve_proto_field_names prints it:
/// 64-bit integers as strings, enums by name, bytes in base64, and fields at their default
/// values as `print` says. INTERNAL when the bytes do not parse as that type; NOT_FOUND for an
/// unknown type.
SONIC_EXPORT Result<std::string> message_to_json(std::string_view message_type,
                                                 std::string_view bytes,
                                                 JsonPrint print = JsonPrint::kSetFields);

/// The message of type `message_type` that `json` writes in protobuf's JSON mapping (field
/// names as declared or in lowerCamelCase, enums by name or number, 64-bit integers as numbers
/// or strings, bytes in base64), serialized. INVALID_ARGUMENT naming the field for JSON that is
/// not such a message (unknown fields included); NOT_FOUND for an unknown type.
SONIC_EXPORT Result<std::string> message_from_json(std::string_view message_type,
                                                   std::string_view json);

}  // namespace sonic::protocol
