// sonic — tensors: the checks, copies and BYTES decoding not worth inlining.
#include "sonic/tensor.hpp"

#include <string>
#include <utility>

namespace sonic {

std::string to_string(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace detail {

Result<std::vector<std::string_view>> decode_bytes_elements(const std::uint8_t* data,
                                                            std::size_t size) {
  std::vector<std::string_view> items;
  std::size_t pos = 0;
  while (pos < size) {
    if (size - pos < 4) {
      return Error(StatusCode::InvalidArgument, "BYTES tensor ends inside an element length");
    }
    std::uint32_t n = static_cast<std::uint32_t>(data[pos]) |
                      static_cast<std::uint32_t>(data[pos + 1]) << 8 |
                      static_cast<std::uint32_t>(data[pos + 2]) << 16 |
                      static_cast<std::uint32_t>(data[pos + 3]) << 24;
    pos += 4;
    if (n > size - pos) {
      return Error(StatusCode::InvalidArgument, "BYTES element of " + std::to_string(n) +
                                                    " bytes runs past the end of its tensor");
    }
    items.emplace_back(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
  }
  return items;
}

}  // namespace detail

Tensor Tensor::copy_bytes(DataType type, Shape shape, const void* data, std::size_t byte_size) {
  const auto* begin = static_cast<const std::uint8_t*>(data);
  auto owner = std::make_shared<std::vector<std::uint8_t>>(begin, begin + byte_size);
  return owning(type, std::move(shape), std::move(owner));
}

Tensor Tensor::to_owned() const {
  if (!borrowed()) return *this;
  return copy_bytes(dtype_, shape_, data_, size_);
}

Result<void> Tensor::check() const {
  auto count = element_count(shape_);
  if (!count) {
    return Error(StatusCode::InvalidArgument,
                 "shape " + to_string(shape_) + " has a negative dimension or is too large");
  }
  if (dtype_ == DataType::Bytes) {
    auto items = detail::decode_bytes_elements(data_, size_);
    if (!items) return items.error();
    if (items->size() != *count) {
      return Error(StatusCode::InvalidArgument, "BYTES tensor holds " +
                                                    std::to_string(items->size()) +
                                                    " elements but its shape " + to_string(shape_) +
                                                    " needs " + std::to_string(*count));
    }
    return {};
  }
  std::size_t expected = *count * element_size(dtype_);
  if (expected / element_size(dtype_) != *count || expected != size_) {
    return Error(StatusCode::InvalidArgument, std::string(to_string(dtype_)) + " tensor of shape " +
                                                  to_string(shape_) + " needs " +
                                                  std::to_string(expected) + " bytes but has " +
                                                  std::to_string(size_));
  }
  return {};
}

std::vector<std::string_view> Tensor::string_views() const {
  if (dtype_ != DataType::Bytes) {
    throw Error(StatusCode::InvalidArgument, type_mismatch("strings"));
  }
  check().value();
  return detail::decode_bytes_elements(data_, size_).value();
}

std::vector<std::string> Tensor::to_strings() const {
  auto views = string_views();
  return std::vector<std::string>(views.begin(), views.end());
}

std::string Tensor::type_mismatch(const char* asked) const {
  std::string name = to_string(dtype_);
  bool vowel = name[0] == 'I' || name[0] == 'U';  // INT*, UINT*: "an"
  return std::string("cannot read ") + (vowel ? "an " : "a ") + name + " tensor as " + asked +
         ": read it " +
         (dtype_ == DataType::Bytes ? std::string("with string_views() or to_strings()")
                                    : std::string("as ") + element_type_name(dtype_));
}

}  // namespace sonic
