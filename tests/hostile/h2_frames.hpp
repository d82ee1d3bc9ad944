// Test support for hostile peers: HTTP/2 frames (RFC 9113) and HPACK header blocks (RFC 7541)
// built byte by byte, so that a test can send what no HTTP/2 library would: floods, bombs,
// declared lengths that never arrive.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sonic::test::h2 {

enum FrameType : std::uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPing = 0x6,
  kGoaway = 0x7,
  kWindowUpdate = 0x8,
  kContinuation = 0x9,
};
enum Flags : std::uint8_t { kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4 };

/// The client connection preface ("PRI * HTTP/2.0...").
std::string preface();
/// One frame: 9-byte header and payload.
std::string frame(FrameType type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload);
/// A SETTINGS frame with these (identifier, value) pairs; empty and `ack` for an acknowledgement.
std::string settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries = {},
                     bool ack = false);
/// A PING (or its acknowledgement) with 8 bytes of opaque data.
std::string ping(std::uint64_t opaque, bool ack = false);
std::string window_update(std::uint32_t stream, std::uint32_t increment);
std::string data(std::uint32_t stream, std::string_view payload, bool end_stream);
/// `bytes` in DATA frames of at most the default maximum frame size (16 KiB), the last one
/// ending the stream when `end_stream`.
std::string data_frames(std::uint32_t stream, std::string_view bytes, bool end_stream);

/// HPACK: a literal header field without indexing, new name, no Huffman coding.
std::string literal(std::string_view name, std::string_view value);
/// HPACK: a literal header field with incremental indexing (enters the dynamic table).
std::string literal_indexed(std::string_view name, std::string_view value);
/// HPACK: an indexed header field (index 62 is the newest dynamic table entry).
std::string indexed(std::uint32_t index);

/// The header block of a gRPC call to /inference.GRPCInferenceService/`method`.
std::string grpc_request_headers(std::string_view method);
/// A HEADERS frame carrying `block` (END_HEADERS set).
std::string headers(std::uint32_t stream, std::string_view block, bool end_stream = false);

/// A gRPC message: the 5-byte prefix (uncompressed) and `body`.
std::string grpc_message(std::string_view body);
/// A gRPC prefix declaring `length` bytes, without the bytes.
std::string grpc_prefix(std::uint32_t length);

/// A frame as received.
struct Frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
};
/// Takes the whole frames at the front of `bytes`; a frame not yet complete stays there.
std::vector<Frame> take_frames(std::string& bytes);
/// The value of SETTINGS entry `id` in a SETTINGS frame's payload, or `otherwise`.
std::uint32_t setting(const Frame& settings, std::uint16_t id, std::uint32_t otherwise);

}  // namespace sonic::test::h2
