#include "onnx_graph.hpp"

#include <algorithm>
#include <set>

#include "protocol/wire.hpp"

namespace sonic::onnx {

namespace {

namespace wire = protocol::wire;
using wire::WireType;

// onnx.proto: ModelProto.graph = 7; GraphProto.node = 1, initializer = 5, input = 11,
// output = 12; NodeProto.op_type = 4; TensorProto.name = 8; ValueInfoProto.name = 1,
// type = 2; TypeProto.tensor_type = 1; TypeProto.Tensor.elem_type = 1, shape = 2;
// TensorShapeProto.dim = 1; Dimension.dim_value = 1, dim_param = 2.
template <typename Visit>
bool each_field(std::string_view bytes, Visit&& visit) {
  wire::Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return false;
    if (type == WireType::Len) {
      std::string_view value;
      if (!r.bytes(value) || !visit(field, value, std::uint64_t{0})) return false;
    } else if (type == WireType::Varint) {
      std::uint64_t value;
      if (!r.varint(value) || !visit(field, std::string_view(), value)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

std::optional<DataType> sonic_type(int onnx_type) {
  switch (onnx_type) {
    case 1: return DataType::Fp32;
    case 2: return DataType::UInt8;
    case 3: return DataType::Int8;
    case 4: return DataType::UInt16;
    case 5: return DataType::Int16;
    case 6: return DataType::Int32;
    case 7: return DataType::Int64;
    case 9: return DataType::Bool;
    case 10: return DataType::Fp16;
    case 11: return DataType::Fp64;
    case 12: return DataType::UInt32;
    case 13: return DataType::UInt64;
    case 16: return DataType::Bf16;
    default: return std::nullopt;
  }
}

bool read_value_info(std::string_view bytes, GraphTensor& t) {
  return each_field(bytes, [&](std::uint32_t field, std::string_view value, std::uint64_t) {
    if (field == 1) t.name = std::string(value);
    if (field != 2) return true;
    return each_field(value, [&](std::uint32_t type_field, std::string_view tensor, std::uint64_t) {
      if (type_field != 1) return true;
      return each_field(tensor, [&](std::uint32_t f, std::string_view shape, std::uint64_t v) {
        if (f == 1) {
          t.onnx_type = static_cast<int>(v);
          t.data_type = sonic_type(t.onnx_type);
        }
        if (f != 2) return true;
        return each_field(shape, [&](std::uint32_t d, std::string_view dim, std::uint64_t) {
          if (d != 1) return true;
          std::int64_t size = -1;
          bool ok = each_field(dim, [&](std::uint32_t k, std::string_view, std::uint64_t n) {
            if (k == 1) size = static_cast<std::int64_t>(n);
            return true;
          });
          // 0 is how some exporters write an unknown size.
          t.shape.push_back(size > 0 ? size : -1);
          return ok;
        });
      });
    });
  });
}

}  // namespace

Result<GraphSignature> read_graph_signature(std::string_view bytes) {
  std::string_view graph;
  bool ok = each_field(bytes, [&](std::uint32_t field, std::string_view value, std::uint64_t) {
    if (field == 7) graph = value;
    return true;
  });
  if (!ok || graph.empty()) {
    return Error(StatusCode::InvalidArgument, "not an ONNX model (no graph in the file)");
  }
  GraphSignature signature;
  std::set<std::string> initializers, operators;
  std::vector<GraphTensor> inputs;
  ok = each_field(graph, [&](std::uint32_t field, std::string_view value, std::uint64_t) {
    if (field == 1) {
      return each_field(value, [&](std::uint32_t f, std::string_view op, std::uint64_t) {
        if (f == 4) operators.insert(std::string(op));
        return true;
      });
    }
    if (field == 5) {
      return each_field(value, [&](std::uint32_t f, std::string_view name, std::uint64_t) {
        if (f == 8) initializers.insert(std::string(name));
        return true;
      });
    }
    if (field == 11 || field == 12) {
      GraphTensor t;
      if (!read_value_info(value, t)) return false;
      (field == 11 ? inputs : signature.outputs).push_back(std::move(t));
    }
    return true;
  });
  if (!ok) return Error(StatusCode::InvalidArgument, "the ONNX graph does not decode");
  for (auto& t : inputs) {
    if (!initializers.count(t.name)) signature.inputs.push_back(std::move(t));
  }
  signature.operators.assign(operators.begin(), operators.end());
  return signature;
}

}  // namespace sonic::onnx
