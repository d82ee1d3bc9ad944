// What an ONNX file declares about its graph: the names, element types and shapes of its inputs
// and outputs, read from the ModelProto's protobuf wire form (onnx.proto's field numbers) with
// sonic's own wire reader. OpenCV 4.6's DNN module does not report input names or types, and
// these complete a config.pbtxt that leaves them out, as Triton completes one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/tensor.hpp"

namespace sonic::onnx {

struct GraphTensor {
  std::string name;
  std::optional<DataType> data_type;  ///< none: a type sonic has no counterpart for
  int onnx_type = 0;                  ///< TensorProto.DataType, for messages
  std::vector<std::int64_t> shape;    ///< -1 for a symbolic or unknown dimension
};

struct GraphSignature {
  std::vector<GraphTensor> inputs;  ///< without the initializers some exporters list as inputs
  std::vector<GraphTensor> outputs;
  std::vector<std::string> operators;  ///< every op_type of the graph's nodes, once each
};

/// The signature of the ModelProto `bytes`. INVALID_ARGUMENT when they are not one.
Result<GraphSignature> read_graph_signature(std::string_view bytes);

}  // namespace sonic::onnx
