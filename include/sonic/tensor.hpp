// sonic — tensors: datatypes, shapes, owning or borrowed bytes, typed read views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic {

/// Every KServe v2 / Triton tensor element type. The wire spelling comes from to_string().
enum class DataType : std::uint8_t {
  Bool,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Int8,
  Int16,
  Int32,
  Int64,
  Fp16,
  Bf16,
  Fp32,
  Fp64,
  Bytes,  ///< variable-length strings: each element is a 4-byte little-endian length + bytes
};

/// The KServe v2 name of a datatype ("FP32", "BYTES", ...).
inline const char* to_string(DataType type) noexcept {
  switch (type) {
    case DataType::Bool: return "BOOL";
    case DataType::UInt8: return "UINT8";
    case DataType::UInt16: return "UINT16";
    case DataType::UInt32: return "UINT32";
    case DataType::UInt64: return "UINT64";
    case DataType::Int8: return "INT8";
    case DataType::Int16: return "INT16";
    case DataType::Int32: return "INT32";
    case DataType::Int64: return "INT64";
    case DataType::Fp16: return "FP16";
    case DataType::Bf16: return "BF16";
    case DataType::Fp32: return "FP32";
    case DataType::Fp64: return "FP64";
    case DataType::Bytes: return "BYTES";
  }
  return "INVALID";
}

/// All datatypes, for iteration in tests and tools.
inline constexpr DataType kAllDataTypes[] = {
    DataType::Bool, DataType::UInt8, DataType::UInt16, DataType::UInt32, DataType::UInt64,
    DataType::Int8, DataType::Int16, DataType::Int32,  DataType::Int64,  DataType::Fp16,
    DataType::Bf16, DataType::Fp32,  DataType::Fp64,   DataType::Bytes};

/// The datatype named by a KServe v2 string, or nothing for an unknown name.
inline std::optional<DataType> parse_datatype(std::string_view name) noexcept {
  for (DataType type : kAllDataTypes) {
    if (name == to_string(type)) return type;
  }
  return std::nullopt;
}

/// Bytes per element; 0 for BYTES, whose elements vary in size.
inline constexpr std::size_t element_size(DataType type) noexcept {
  switch (type) {
    case DataType::Bool:
    case DataType::UInt8:
    case DataType::Int8: return 1;
    case DataType::UInt16:
    case DataType::Int16:
    case DataType::Fp16:
    case DataType::Bf16: return 2;
    case DataType::UInt32:
    case DataType::Int32:
    case DataType::Fp32: return 4;
    case DataType::UInt64:
    case DataType::Int64:
    case DataType::Fp64: return 8;
    case DataType::Bytes: return 0;
  }
  return 0;
}

/// IEEE half precision, kept as its bit pattern (C++17 has no such type).
struct Float16 {
  std::uint16_t bits;
};
/// bfloat16, kept as its bit pattern: the upper half of an IEEE float.
struct BFloat16 {
  std::uint16_t bits;
  static BFloat16 from_float(float value) noexcept {
    std::uint32_t word;
    std::memcpy(&word, &value, sizeof word);
    return BFloat16{static_cast<std::uint16_t>(word >> 16)};
  }
  float to_float() const noexcept {
    std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &word, sizeof value);
    return value;
  }
};

namespace detail {
/// False, but only once T is known: for static_asserts in templates that must not be used.
template <typename T>
inline constexpr bool always_false = false;

template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<bool> {
  static constexpr DataType value = DataType::Bool;
};
template <>
struct DataTypeOf<std::uint8_t> {
  static constexpr DataType value = DataType::UInt8;
};
template <>
struct DataTypeOf<std::uint16_t> {
  static constexpr DataType value = DataType::UInt16;
};
template <>
struct DataTypeOf<std::uint32_t> {
  static constexpr DataType value = DataType::UInt32;
};
template <>
struct DataTypeOf<std::uint64_t> {
  static constexpr DataType value = DataType::UInt64;
};
template <>
struct DataTypeOf<std::int8_t> {
  static constexpr DataType value = DataType::Int8;
};
template <>
struct DataTypeOf<std::int16_t> {
  static constexpr DataType value = DataType::Int16;
};
template <>
struct DataTypeOf<std::int32_t> {
  static constexpr DataType value = DataType::Int32;
};
template <>
struct DataTypeOf<std::int64_t> {
  static constexpr DataType value = DataType::Int64;
};
template <>
struct DataTypeOf<Float16> {
  static constexpr DataType value = DataType::Fp16;
};
template <>
struct DataTypeOf<BFloat16> {
  static constexpr DataType value = DataType::Bf16;
};
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::Fp32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::Fp64;
};
}  // namespace detail

/// The datatype of a C++ element type: datatype_of<float> == DataType::Fp32.
template <typename T>
inline constexpr DataType datatype_of = detail::DataTypeOf<std::remove_cv_t<T>>::value;

/// The C++ element type that reads a datatype, as written in as<T>() ("std::int32_t"), for
/// messages that tell the user what to write; BYTES is read with string_views().
inline constexpr const char* element_type_name(DataType type) noexcept {
  switch (type) {
    case DataType::Bool: return "bool";
    case DataType::UInt8: return "std::uint8_t";
    case DataType::UInt16: return "std::uint16_t";
    case DataType::UInt32: return "std::uint32_t";
    case DataType::UInt64: return "std::uint64_t";
    case DataType::Int8: return "std::int8_t";
    case DataType::Int16: return "std::int16_t";
    case DataType::Int32: return "std::int32_t";
    case DataType::Int64: return "std::int64_t";
    case DataType::Fp16: return "sonic::Float16";
    case DataType::Bf16: return "sonic::BFloat16";
    case DataType::Fp32: return "float";
    case DataType::Fp64: return "double";
    case DataType::Bytes: break;
  }
  return "std::string_view";
}

static_assert(sizeof(bool) == 1, "sonic needs a one-byte bool to map BOOL tensors");
static_assert(sizeof(float) == 4 && sizeof(double) == 8, "sonic needs IEEE float and double");

/// Dimensions of a tensor; -1 marks a variable dimension in model metadata.
using Shape = std::vector<std::int64_t>;

/// Number of elements of a fully known shape; nothing when a dimension is negative or the count
/// overflows.
inline std::optional<std::size_t> element_count(const Shape& shape) noexcept {
  std::size_t count = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    auto d = static_cast<std::size_t>(dim);
    if (d != 0 && count > SIZE_MAX / d) return std::nullopt;
    count *= d;
  }
  return count;
}

/// "[1,16]": how shapes appear in error messages.
SONIC_EXPORT std::string to_string(const Shape& shape);

/// A read-only, bounds-aware view of contiguous elements (a C++17 stand-in for std::span).
template <typename T>
class TensorView {
 public:
  TensorView() = default;
  TensorView(const T* data, std::size_t size) noexcept : data_(data), size_(size) {}

  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  /// Element i; throws sonic::Error(OutOfRange) past the end.
  const T& at(std::size_t i) const {
    if (i >= size_) {
      throw Error(StatusCode::OutOfRange, "element " + std::to_string(i) + " of a tensor of " +
                                              std::to_string(size_) + " elements");
    }
    return data_[i];
  }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace detail {

/// Serialises strings as KServe BYTES elements: 4-byte little-endian length, then the bytes.
template <typename Strings>
std::vector<std::uint8_t> encode_bytes_elements(const Strings& strings) {
  std::size_t total = 0;
  for (const auto& s : strings) total += 4 + std::string_view(s).size();
  std::vector<std::uint8_t> out;
  out.reserve(total);
  for (const auto& item : strings) {
    std::string_view s(item);
    if (s.size() > UINT32_MAX) throw Error(StatusCode::InvalidArgument, "BYTES element over 4 GiB");
    auto n = static_cast<std::uint32_t>(s.size());
    for (int shift = 0; shift < 32; shift += 8)
      out.push_back(static_cast<std::uint8_t>(n >> shift));
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

/// Splits serialised BYTES elements into views; fails on a length that runs past the end or on
/// trailing bytes, which is how a lying or truncated tensor shows.
SONIC_EXPORT Result<std::vector<std::string_view>> decode_bytes_elements(const std::uint8_t* data,
                                                                         std::size_t size);

}  // namespace detail

/// A typed, shaped block of bytes. The bytes are either owned (kept alive by the tensor, shared
/// cheaply between copies) or borrowed from the caller, who then keeps them valid and unchanged
/// until the request that carries them has completed. Copying a Tensor never copies its bytes.
class SONIC_EXPORT Tensor {
 public:
  /// An empty FP32 tensor of shape [0].
  Tensor() : shape_{0} {}

  // ---- Borrowing constructors: no copy, the caller keeps the memory alive. ----

  /// Borrows a vector's elements: keep the vector alive and unchanged until the request that
  /// carries the tensor has completed (its callback ran, its future is ready).
  template <typename T>
  static Tensor view(const std::vector<T>& values, Shape shape) {
    static_assert(!std::is_same_v<T, bool>,
                  "std::vector<bool> is packed; use std::vector<uint8_t>"
                  " with view_bytes(DataType::Bool, ...)");
    return view(values.data(), values.size(), std::move(shape));
  }
  /// A temporary vector dies at the end of the statement: a view of it would dangle at once.
  template <typename T>
  static Tensor view(std::vector<T>&& values, Shape shape) {
    static_assert(detail::always_false<T>,
                  "Tensor::view of a temporary vector would dangle at once: keep the vector "
                  "alive until the request completes, or give it to the tensor with "
                  "Tensor::from_vector");
    return from_vector(std::move(values), std::move(shape));
  }
  template <typename T>
  static Tensor view(const std::vector<T>&& values, Shape shape) {
    static_assert(detail::always_false<T>,
                  "Tensor::view of a temporary vector would dangle at once: keep the vector "
                  "alive until the request completes, or give it to the tensor with "
                  "Tensor::from_vector");
    return from_vector(std::vector<T>(values), std::move(shape));
  }
  /// Borrows `count` elements at `data`.
  template <typename T>
  static Tensor view(const T* data, std::size_t count, Shape shape) {
    return Tensor(datatype_of<T>, std::move(shape), reinterpret_cast<const std::uint8_t*>(data),
                  count * sizeof(T), nullptr);
  }
  /// Borrows raw bytes already in the wire layout (row-major, little-endian).
  static Tensor view_bytes(DataType type, Shape shape, const void* data, std::size_t byte_size) {
    return Tensor(type, std::move(shape), static_cast<const std::uint8_t*>(data), byte_size,
                  nullptr);
  }

  /// A datatype and shape without bytes, for an input whose bytes live where the request's
  /// parameters say (a shared memory region, device memory). Only a transport that knows those
  /// parameters can send it; nothing reads its data.
  static Tensor descriptor(DataType type, Shape shape) {
    return Tensor(type, std::move(shape), nullptr, 0, nullptr);
  }

  // ---- Owning constructors. ----

  /// Takes a vector's elements by move: no copy when the caller passes an rvalue.
  template <typename T>
  static Tensor from_vector(std::vector<T> values, Shape shape) {
    static_assert(!std::is_same_v<T, bool>,
                  "std::vector<bool> is packed; use std::vector<uint8_t>"
                  " with copy_bytes(DataType::Bool, ...)");
    auto owner = std::make_shared<std::vector<T>>(std::move(values));
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(owner->data());
    std::size_t size = owner->size() * sizeof(T);
    return Tensor(datatype_of<T>, std::move(shape), bytes, size, std::move(owner));
  }
  /// Copies raw bytes in the wire layout.
  static Tensor copy_bytes(DataType type, Shape shape, const void* data, std::size_t byte_size);
  /// A BYTES tensor holding the given strings (serialised once, owned).
  template <typename Strings>
  static Tensor from_strings(const Strings& strings, Shape shape) {
    return owning(
        DataType::Bytes, std::move(shape),
        std::make_shared<std::vector<std::uint8_t>>(detail::encode_bytes_elements(strings)));
  }
  /// Bytes kept alive by `owner` (a received message, a memory pool block, ...).
  static Tensor from_shared(DataType type, Shape shape, std::shared_ptr<const void> owner,
                            const void* data, std::size_t byte_size) {
    return Tensor(type, std::move(shape), static_cast<const std::uint8_t*>(data), byte_size,
                  std::move(owner));
  }

  DataType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  const std::uint8_t* data() const noexcept { return data_; }
  std::size_t byte_size() const noexcept { return size_; }
  /// True when the bytes belong to the caller rather than to this tensor.
  bool borrowed() const noexcept { return owner_ == nullptr && size_ != 0; }

  /// A copy that owns its bytes (returns *this when it already does).
  Tensor to_owned() const;

  /// Checks that the bytes fit the shape and datatype; the error says what differs.
  Result<void> check() const;

  /// The elements as T. Throws sonic::Error(InvalidArgument) when T is not this tensor's
  /// datatype or the byte size does not fit the shape.
  template <typename T>
  TensorView<T> as() const {
    if (datatype_of<T> != dtype_) {
      throw Error(StatusCode::InvalidArgument, type_mismatch(to_string(datatype_of<T>)));
    }
    check().value();
    if (reinterpret_cast<std::uintptr_t>(data_) % alignof(T) != 0) {
      throw Error(StatusCode::Internal, "tensor bytes are not aligned for " +
                                            std::string(to_string(dtype_)) +
                                            " access; use to_owned() or copy the bytes");
    }
    return TensorView<T>(reinterpret_cast<const T*>(data_), size_ / sizeof(T));
  }

  /// The elements of a BYTES tensor as views into its bytes (valid while the tensor lives).
  std::vector<std::string_view> string_views() const;
  /// The elements of a BYTES tensor, copied into strings.
  std::vector<std::string> to_strings() const;

 private:
  // "cannot read an INT32 tensor as FP32: read it as std::int32_t".
  std::string type_mismatch(const char* asked) const;

  // Reads the vector's address before the pointer moves into the tensor (argument evaluation
  // order is unspecified, so this cannot be one call).
  static Tensor owning(DataType type, Shape shape,
                       std::shared_ptr<std::vector<std::uint8_t>> bytes) {
    const std::uint8_t* data = bytes->data();
    std::size_t size = bytes->size();
    return Tensor(type, std::move(shape), data, size, std::move(bytes));
  }

  Tensor(DataType type, Shape shape, const std::uint8_t* data, std::size_t size,
         std::shared_ptr<const void> owner)
      : dtype_(type),
        shape_(std::move(shape)),
        data_(data),
        size_(size),
        owner_(std::move(owner)) {}

  DataType dtype_ = DataType::Fp32;
  Shape shape_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace sonic
