#include "stub_tensors.hpp"

#include <cstdint>
#include <string_view>

namespace sonic::python_backend {

using json = nlohmann::json;

namespace {

json describe(const NamedTensor& named, std::vector<ByteRange>& buffers) {
  const Tensor& t = named.tensor;
  buffers.push_back({t.data(), t.byte_size()});
  return {{"name", named.name},
          {"datatype", to_string(t.dtype())},
          {"shape", t.shape()},
          {"buffer", buffers.size() - 1}};
}

// The number of elements in a BYTES tensor's bytes, counted without an index, up to `most`:
// most + 1 once there are more. Bytes that end inside an element count as far as they go
// (Tensor::check says what is wrong with them).
std::uint64_t bytes_elements_up_to(const ByteRange& bytes, std::uint64_t most) {
  const auto* data = static_cast<const std::uint8_t*>(bytes.data);
  std::uint64_t count = 0;
  std::size_t pos = 0;
  while (bytes.size - pos >= 4 && count <= most) {
    const std::uint32_t n = static_cast<std::uint32_t>(data[pos]) |
                            static_cast<std::uint32_t>(data[pos + 1]) << 8 |
                            static_cast<std::uint32_t>(data[pos + 2]) << 16 |
                            static_cast<std::uint32_t>(data[pos + 3]) << 24;
    pos += 4;
    if (n > bytes.size - pos) break;
    pos += n;
    ++count;
  }
  return count;
}

}  // namespace

json describe_all(const std::vector<NamedTensor>& tensors, std::vector<ByteRange>& buffers) {
  json list = json::array();
  for (const auto& t : tensors) list.push_back(describe(t, buffers));
  return list;
}

Result<std::vector<NamedTensor>> tensors_of(const json& list, const Frame& frame,
                                            const FrameLimits& limits, const std::string& who) {
  auto bad = [&](const std::string& what) {
    return Error(StatusCode::Internal, who + " sent a malformed tensor: " + what);
  };
  if (!list.is_array()) return bad("no tensor list");
  // What is left of the BYTES elements the list may hold (see the header).
  std::uint64_t elements_left = limits.max_buffer_bytes / sizeof(std::string_view);
  std::vector<NamedTensor> tensors;
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
        !item.contains("datatype") || !item["datatype"].is_string() || !item.contains("shape") ||
        !item["shape"].is_array() || !item.contains("buffer") ||
        !item["buffer"].is_number_unsigned()) {
      return bad(item.dump());
    }
    auto type = parse_datatype(item["datatype"].get<std::string>());
    if (!type) return bad("datatype " + item["datatype"].get<std::string>());
    Shape shape;
    for (const auto& dim : item["shape"]) {
      if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) return bad("shape");
      shape.push_back(dim.get<std::int64_t>());
    }
    const auto index = item["buffer"].get<std::size_t>();
    if (index >= frame.buffers.size()) return bad("buffer index " + std::to_string(index));
    const ByteRange& bytes = frame.buffers[index];
    if (*type == DataType::Bytes) {
      const std::uint64_t elements = bytes_elements_up_to(bytes, elements_left);
      if (elements > elements_left) {
        return Error(StatusCode::Internal,
                     who + " sent BYTES tensors of more than " +
                         std::to_string(limits.max_buffer_bytes / sizeof(std::string_view)) +
                         " elements in one message, whose index would cost more than the "
                         "model's max_message_bytes (" +
                         std::to_string(limits.max_buffer_bytes) + ")");
      }
      elements_left -= elements;
    }
    Tensor tensor =
        Tensor::from_shared(*type, std::move(shape), frame.storage, bytes.data, bytes.size);
    if (auto ok = tensor.check(); !ok) return bad(ok.error().message());
    tensors.push_back({item["name"].get<std::string>(), std::move(tensor), {}});
  }
  return tensors;
}

}  // namespace sonic::python_backend
