#include "h2_frames.hpp"

#include <algorithm>

namespace sonic::test::h2 {

namespace {

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// An HPACK integer with an N-bit prefix (RFC 7541 §5.1); `first` holds the bits above it.
void put_integer(std::string& out, std::uint8_t first, int prefix_bits, std::uint64_t value) {
  const std::uint64_t max = (1u << prefix_bits) - 1;
  if (value < max) {
    out.push_back(static_cast<char>(first | value));
    return;
  }
  out.push_back(static_cast<char>(first | max));
  value -= max;
  while (value >= 128) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

std::uint32_t get_be(std::string_view in, std::size_t at, int bytes) {
  std::uint32_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<std::uint8_t>(in[at + i]);
  return value;
}

constexpr std::size_t kFrameHeaderBytes = 9;
constexpr std::size_t kDefaultMaxFrameBytes = 16384;  // SETTINGS_MAX_FRAME_SIZE until changed

void put_string(std::string& out, std::string_view text) {
  put_integer(out, 0x00, 7, text.size());  // H = 0: no Huffman coding
  out.append(text);
}

}  // namespace

std::string preface() { return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; }

std::string frame(FrameType type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
  std::string out;
  put_be(out, payload.size(), 3);
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  put_be(out, stream & 0x7fffffffu, 4);
  out.append(payload);
  return out;
}

std::string settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries,
                     bool ack) {
  std::string payload;
  for (const auto& [id, value] : entries) {
    put_be(payload, id, 2);
    put_be(payload, value, 4);
  }
  return frame(kSettings, ack ? kAck : 0, 0, payload);
}

std::string ping(std::uint64_t opaque, bool ack) {
  std::string payload;
  put_be(payload, opaque, 8);
  return frame(kPing, ack ? kAck : 0, 0, payload);
}

std::string window_update(std::uint32_t stream, std::uint32_t increment) {
  std::string payload;
  put_be(payload, increment & 0x7fffffffu, 4);
  return frame(kWindowUpdate, 0, stream, payload);
}

std::string data(std::uint32_t stream, std::string_view payload, bool end_stream) {
  return frame(kData, end_stream ? kEndStream : 0, stream, payload);
}

std::string data_frames(std::uint32_t stream, std::string_view bytes, bool end_stream) {
  std::string out;
  for (std::size_t at = 0; at < bytes.size(); at += kDefaultMaxFrameBytes) {
    const std::size_t n = std::min(kDefaultMaxFrameBytes, bytes.size() - at);
    out += data(stream, bytes.substr(at, n), end_stream && at + n == bytes.size());
  }
  return out;
}

std::string literal(std::string_view name, std::string_view value) {
  std::string out(1, '\0');  // 0000 0000: without indexing, new name
  put_string(out, name);
  put_string(out, value);
  return out;
}

std::string literal_indexed(std::string_view name, std::string_view value) {
  std::string out(1, '\x40');  // 01 00 0000: incremental indexing, new name
  put_string(out, name);
  put_string(out, value);
  return out;
}

std::string indexed(std::uint32_t index) {
  std::string out;
  put_integer(out, 0x80, 7, index);
  return out;
}

std::string grpc_request_headers(std::string_view method) {
  return literal(":method", "POST") + literal(":scheme", "http") +
         literal(":path", "/inference.GRPCInferenceService/" + std::string(method)) +
         literal(":authority", "127.0.0.1") + literal("te", "trailers") +
         literal("content-type", "application/grpc");
}

std::string headers(std::uint32_t stream, std::string_view block, bool end_stream) {
  return frame(kHeaders, static_cast<std::uint8_t>(kEndHeaders | (end_stream ? kEndStream : 0)),
               stream, block);
}

std::string grpc_prefix(std::uint32_t length) {
  std::string out(1, '\0');
  put_be(out, length, 4);
  return out;
}

std::string grpc_message(std::string_view body) {
  return grpc_prefix(static_cast<std::uint32_t>(body.size())) + std::string(body);
}

std::vector<Frame> take_frames(std::string& bytes) {
  std::vector<Frame> frames;
  std::size_t at = 0;
  while (bytes.size() - at >= kFrameHeaderBytes) {
    const std::size_t length = get_be(bytes, at, 3);
    if (bytes.size() - at - kFrameHeaderBytes < length) break;
    Frame frame;
    frame.type = static_cast<std::uint8_t>(bytes[at + 3]);
    frame.flags = static_cast<std::uint8_t>(bytes[at + 4]);
    frame.stream = get_be(bytes, at + 5, 4) & 0x7fffffffu;
    frame.payload = bytes.substr(at + kFrameHeaderBytes, length);
    frames.push_back(std::move(frame));
    at += kFrameHeaderBytes + length;
  }
  bytes.erase(0, at);
  return frames;
}

std::uint32_t setting(const Frame& settings, std::uint16_t id, std::uint32_t otherwise) {
  for (std::size_t at = 0; at + 6 <= settings.payload.size(); at += 6) {
    if (get_be(settings.payload, at, 2) == id) return get_be(settings.payload, at + 2, 4);
  }
  return otherwise;
}

}  // namespace sonic::test::h2
