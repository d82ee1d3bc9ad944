// Tensors described on a command line, in the one syntax of sonic-infer and sonic-perf:
// NAME=@FILE.npy, or NAME=DTYPE:SHAPE:... where SHAPE is dimensions joined by 'x' or ','
// (1x16 and 1,16 are the same shape) and DTYPE a KServe datatype in any case; and the bytes
// of the tensors they make.
#pragma once

#include <sonic/tensor.hpp>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "command_line.hpp"

namespace sonic::tools {

/// The datatypes, for messages.
inline constexpr const char* kDatatypeNames =
    "BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, "
    "BYTES";

/// "fp32" or "FP32" → DataType::Fp32; throws UsageError naming `what` ("input 'INPUT0'").
inline DataType parse_datatype(const std::string& what, std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (auto type = sonic::parse_datatype(upper)) return *type;
  throw UsageError(what + ": unknown datatype '" + std::string(text) + "' (" + kDatatypeNames +
                   ")");
}

/// "1x16" or "1,16" → {1, 16}; "-1" is refused (a request's shape is concrete).
inline Shape parse_shape(const std::string& what, std::string_view text) {
  const std::string hint = " (write dimensions joined by 'x' or ',', e.g. 1x16)";
  if (text.empty()) throw UsageError(what + ": empty shape" + hint);
  Shape shape;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = text.find_first_of("x,", start);
    std::string_view dim = text.substr(start, end == std::string_view::npos ? end : end - start);
    std::int64_t value = 0;
    auto [ptr, error] = std::from_chars(dim.data(), dim.data() + dim.size(), value);
    if (dim.empty() || dim.front() == '-' || error != std::errc() ||
        ptr != dim.data() + dim.size()) {
      throw UsageError(what + ": bad dimension '" + std::string(dim) + "' in shape '" +
                       std::string(text) + "'" + hint);
    }
    shape.push_back(value);
    if (end == std::string_view::npos) return shape;
    start = end + 1;
  }
}

/// Appends the little-endian bytes of one element (sonic's targets are little-endian, like
/// the wire).
template <typename T>
void append_element(std::vector<std::uint8_t>& out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

/// A tensor that owns `bytes` (moved in, not copied).
inline Tensor owned_tensor(DataType type, Shape shape, std::vector<std::uint8_t> bytes) {
  auto owner = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  const std::uint8_t* data = owner->data();
  std::size_t size = owner->size();
  return Tensor::from_shared(type, std::move(shape), std::move(owner), data, size);
}

/// NAME=SPEC → {NAME, SPEC}; throws UsageError when there is no name.
inline std::pair<std::string, std::string> split_named_spec(const std::string& text,
                                                            const std::string& form) {
  std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError("expected " + form + ", got '" + text + "'");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace sonic::tools
