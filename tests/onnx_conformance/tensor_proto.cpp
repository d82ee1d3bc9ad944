#include "tensor_proto.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "protocol/wire.hpp"

namespace sonic::conformance {

namespace {

namespace wire = protocol::wire;

Error invalid(const std::string& what) { return Error(StatusCode::InvalidArgument, what); }

// onnx.proto's TensorProto.DataType.
std::optional<DataType> sonic_type(std::uint64_t onnx_type) {
  switch (onnx_type) {
    case 1: return DataType::Fp32;
    case 2: return DataType::UInt8;
    case 3: return DataType::Int8;
    case 4: return DataType::UInt16;
    case 5: return DataType::Int16;
    case 6: return DataType::Int32;
    case 7: return DataType::Int64;
    case 8: return DataType::Bytes;
    case 9: return DataType::Bool;
    case 10: return DataType::Fp16;
    case 11: return DataType::Fp64;
    case 12: return DataType::UInt32;
    case 13: return DataType::UInt64;
    case 16: return DataType::Bf16;
    default: return std::nullopt;
  }
}

// Appends the low `size` bytes of `value` (little-endian, as every machine sonic runs on).
void append(std::vector<std::uint8_t>& out, std::uint64_t value, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// The values of a repeated scalar field, packed (one Len record) or not (one record each).
struct Repeated {
  std::vector<std::uint64_t> varints;
  std::string fixed;  // fixed32 or fixed64 words, back to back
};

bool read_packed_varints(std::string_view bytes, std::vector<std::uint64_t>& out) {
  wire::Reader r(bytes);
  while (!r.done()) {
    std::uint64_t v;
    if (!r.varint(v)) return false;
    out.push_back(v);
  }
  return true;
}

}  // namespace

Result<NamedTensor> read_tensor_proto(std::string_view bytes) {
  // TensorProto: dims = 1, data_type = 2, float_data = 4, int32_data = 5, string_data = 6,
  // int64_data = 7, name = 8, raw_data = 9, double_data = 10, uint64_data = 11,
  // external_data = 13, data_location = 14.
  NamedTensor named;
  std::vector<std::int64_t> dims;
  std::uint64_t onnx_type = 0;
  std::string_view raw;
  bool has_raw = false;
  Repeated floats, int32s, int64s, doubles, uint64s;
  std::vector<std::string> strings;
  wire::Reader r(bytes);
  std::uint32_t field;
  wire::WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return invalid("not a TensorProto");
    if (type == wire::WireType::Len) {
      std::string_view value;
      if (!r.bytes(value)) return invalid("not a TensorProto");
      std::vector<std::uint64_t> unpacked;
      switch (field) {
        case 1:
          if (!read_packed_varints(value, unpacked)) return invalid("bad dims");
          for (auto d : unpacked) dims.push_back(static_cast<std::int64_t>(d));
          break;
        case 4: floats.fixed.append(value); break;
        case 5:
          if (!read_packed_varints(value, int32s.varints)) return invalid("bad int32_data");
          break;
        case 6: strings.emplace_back(value); break;
        case 7:
          if (!read_packed_varints(value, int64s.varints)) return invalid("bad int64_data");
          break;
        case 8: named.name = std::string(value); break;
        case 9: raw = value, has_raw = true; break;
        case 10: doubles.fixed.append(value); break;
        case 11:
          if (!read_packed_varints(value, uint64s.varints)) return invalid("bad uint64_data");
          break;
        case 13: return invalid("data in an external file");
        default: break;
      }
    } else if (type == wire::WireType::Varint) {
      std::uint64_t value;
      if (!r.varint(value)) return invalid("not a TensorProto");
      if (field == 1) dims.push_back(static_cast<std::int64_t>(value));
      if (field == 2) onnx_type = value;
      if (field == 5) int32s.varints.push_back(value);
      if (field == 7) int64s.varints.push_back(value);
      if (field == 11) uint64s.varints.push_back(value);
      if (field == 14 && value == 1) return invalid("data in an external file");
    } else if (type == wire::WireType::Fixed32 && field == 4) {
      std::uint32_t word;
      if (!r.fixed32(word)) return invalid("not a TensorProto");
      floats.fixed.append(reinterpret_cast<const char*>(&word), sizeof word);
    } else if (type == wire::WireType::Fixed64 && field == 10) {
      std::uint64_t word;
      if (!r.fixed64(word)) return invalid("not a TensorProto");
      doubles.fixed.append(reinterpret_cast<const char*>(&word), sizeof word);
    } else if (!r.skip(type)) {
      return invalid("not a TensorProto");
    }
  }
  const auto data_type = sonic_type(onnx_type);
  if (!data_type) {
    return invalid("TensorProto element type " + std::to_string(onnx_type) +
                   " has no KServe v2 datatype");
  }
  Shape shape(dims.begin(), dims.end());
  if (*data_type == DataType::Bytes) {
    named.tensor = Tensor::from_strings(strings, std::move(shape));
    if (auto ok = named.tensor.check(); !ok) return ok.error();
    return named;
  }
  const std::size_t size = element_size(*data_type);
  std::vector<std::uint8_t> data;
  if (has_raw) {
    data.assign(raw.begin(), raw.end());
  } else if (onnx_type == 1) {
    data.assign(floats.fixed.begin(), floats.fixed.end());
  } else if (onnx_type == 11) {
    data.assign(doubles.fixed.begin(), doubles.fixed.end());
  } else if (onnx_type == 7) {
    for (auto v : int64s.varints) append(data, v, 8);
  } else if (onnx_type == 12 || onnx_type == 13) {
    for (auto v : uint64s.varints) append(data, v, size);
  } else {
    // int32_data carries every type of 32 bits or fewer, float16 and bfloat16 as their bits.
    for (auto v : int32s.varints) append(data, v, size);
  }
  named.tensor = Tensor::copy_bytes(*data_type, std::move(shape), data.data(), data.size());
  if (auto ok = named.tensor.check(); !ok) return ok.error();
  return named;
}

Result<NamedTensor> read_tensor_proto_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(StatusCode::NotFound, "cannot open " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_tensor_proto(bytes);
}

}  // namespace sonic::conformance
