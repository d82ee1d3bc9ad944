// ONNX's serialized TensorProto (the input_N.pb and output_N.pb files of ONNX's test data) as a
// sonic tensor, read with sonic's own protobuf wire reader.
#pragma once

#include <string>
#include <string_view>

#include "sonic/request.hpp"

namespace sonic::conformance {

/// The tensor in `bytes`, named as the file names it. INVALID_ARGUMENT for bytes that are not a
/// TensorProto sonic can represent (an element type KServe v2 has no datatype for, data held in
/// an external file, a SequenceProto or OptionalProto of the sequence and optional tests).
Result<NamedTensor> read_tensor_proto(std::string_view bytes);

/// The TensorProto in the file at `path`.
Result<NamedTensor> read_tensor_proto_file(const std::string& path);

}  // namespace sonic::conformance
