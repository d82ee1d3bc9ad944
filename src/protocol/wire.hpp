// Protobuf wire-format primitives for the hand-written inference codec. The hot messages
// (ModelInferRequest/Response) are encoded and decoded here so that tensor bytes are never
// copied into or out of protobuf objects.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sonic::protocol::wire {

enum class WireType : std::uint8_t { Varint = 0, Fixed64 = 1, Len = 2, Fixed32 = 5 };

/// Protobuf's largest field number.
inline constexpr std::uint64_t kMaxFieldNumber = (std::uint64_t{1} << 29) - 1;

inline std::size_t varint_size(std::uint64_t value) {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

inline void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

inline void put_tag(std::string& out, std::uint32_t field, WireType type) {
  put_varint(out, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint8_t>(type));
}

inline void put_len_field(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_tag(out, field, WireType::Len);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

/// A nested message field written straight into `out` by `write(out)`, with no buffer of its
/// own: one byte is kept for the length, and widened once the message is known to need more
/// (128 bytes or longer), so the encoding stays the shortest one, as protobuf writes it.
template <typename Write>
void put_message_field(std::string& out, std::uint32_t field, Write&& write) {
  put_tag(out, field, WireType::Len);
  const std::size_t at = out.size();
  out.push_back('\0');
  write(out);
  std::size_t length = out.size() - at - 1;
  const std::size_t width = varint_size(length);
  if (width > 1) out.insert(at + 1, width - 1, '\0');
  for (std::size_t i = 0; i < width; ++i, length >>= 7) {
    out[at + i] = static_cast<char>((length & 0x7f) | (i + 1 < width ? 0x80 : 0));
  }
}

/// A string field; proto3 omits empty ones.
inline void put_string_field(std::string& out, std::uint32_t field, std::string_view text) {
  if (!text.empty()) put_len_field(out, field, text);
}

inline void put_varint_field(std::string& out, std::uint32_t field, std::uint64_t value) {
  put_tag(out, field, WireType::Varint);
  put_varint(out, value);
}

inline void put_fixed64_field(std::string& out, std::uint32_t field, std::uint64_t bits) {
  put_tag(out, field, WireType::Fixed64);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
}

/// Bounds-checked reader over one message. Every read returns false on malformed or truncated
/// input instead of reading past the end.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  explicit Reader(std::string_view bytes)
      : Reader(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) {}

  bool done() const { return p_ == end_; }
  /// Where the next read starts.
  const std::uint8_t* position() const { return p_; }

  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      std::uint8_t byte = *p_++;
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) return true;
    }
    return false;  // more than 10 bytes
  }

  bool tag(std::uint32_t& field, WireType& type) {
    std::uint64_t key;
    if (!varint(key)) return false;
    field = static_cast<std::uint32_t>(key >> 3);
    auto t = static_cast<std::uint8_t>(key & 7);
    if (field == 0 || (key >> 3) > kMaxFieldNumber) return false;
    if (t != 0 && t != 1 && t != 2 && t != 5) return false;  // groups are not used by KServe
    type = static_cast<WireType>(t);
    return true;
  }

  bool bytes(std::string_view& out) {
    std::uint64_t n;
    if (!varint(n) || n > static_cast<std::uint64_t>(end_ - p_)) return false;
    out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
    p_ += n;
    return true;
  }

  bool fixed64(std::uint64_t& bits) {
    if (end_ - p_ < 8) return false;
    bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(p_[i]) << (8 * i);
    p_ += 8;
    return true;
  }

  bool fixed32(std::uint32_t& bits) {
    if (end_ - p_ < 4) return false;
    bits = 0;
    for (int i = 0; i < 4; ++i) bits |= static_cast<std::uint32_t>(p_[i]) << (8 * i);
    p_ += 4;
    return true;
  }

  /// Skips a field of the given type (unknown fields are ignored, as protobuf requires).
  bool skip(WireType type) {
    std::uint64_t u64;
    std::uint32_t u32;
    std::string_view sv;
    switch (type) {
      case WireType::Varint: return varint(u64);
      case WireType::Fixed64: return fixed64(u64);
      case WireType::Len: return bytes(sv);
      case WireType::Fixed32: return fixed32(u32);
    }
    return false;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

}  // namespace sonic::protocol::wire
