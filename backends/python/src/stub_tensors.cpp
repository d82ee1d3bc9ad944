#include "stub_tensors.hpp"

#include <cstdint>

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

}  // namespace

json describe_all(const std::vector<NamedTensor>& tensors, std::vector<ByteRange>& buffers) {
  json list = json::array();
  for (const auto& t : tensors) list.push_back(describe(t, buffers));
  return list;
}

Result<std::vector<NamedTensor>> tensors_of(const json& list, const Frame& frame,
                                            const std::string& who) {
  auto bad = [&](const std::string& what) {
    return Error(StatusCode::Internal, who + " sent a malformed tensor: " + what);
  };
  if (!list.is_array()) return bad("no tensor list");
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
    Tensor tensor =
        Tensor::from_shared(*type, std::move(shape), frame.storage, bytes.data, bytes.size);
    if (auto ok = tensor.check(); !ok) return bad(ok.error().message());
    tensors.push_back({item["name"].get<std::string>(), std::move(tensor), {}});
  }
  return tensors;
}

}  // namespace sonic::python_backend
