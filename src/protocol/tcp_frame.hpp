// The frames of sonic's TCP transport (proto/tcp_framing.md): encoding, with per-tensor zstd
// compression, and an incremental decoder that checks every length before allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grpc_wire.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"

namespace sonic::protocol::tcp {

enum class FrameKind : std::uint8_t {
  Request = 1,
  Response = 2,
  Error = 3,
  Ping = 4,
  Pong = 5,
  Call = 6,
  Reply = 7,
};

/// Flag of a request frame: the client wants the response's tensors compressed.
inline constexpr std::uint16_t kCompressResponse = 1;

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kRecordBytes = 24;
inline constexpr std::size_t kMaxEnvelopeBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxErrorBytes = std::size_t{64} << 10;
inline constexpr std::size_t kMaxTensors = 4096;

/// How tensors are stored.
struct Compression {
  bool zstd = false;     ///< compress tensors with zstd
  int level = 1;         ///< zstd level (1: fast, what a busy link needs)
  bool adaptive = true;  ///< with zstd: tensors whose sample does not compress go raw
};

/// A frame ready to write: pieces in order, pointing into `owned` storage or into tensors the
/// frame keeps alive.
struct OutgoingFrame {
  OutgoingFrame() = default;
  // Move-only: `pieces` point into `owned`, whose strings a move keeps in place (a deque moves
  // its blocks) but a copy would not. (Copyable, a vector would copy it when it grows.)
  OutgoingFrame(OutgoingFrame&&) = default;
  OutgoingFrame& operator=(OutgoingFrame&&) = default;
  OutgoingFrame(const OutgoingFrame&) = delete;
  OutgoingFrame& operator=(const OutgoingFrame&) = delete;

  std::deque<std::string> owned;  // stable addresses
  std::vector<std::pair<const void*, std::size_t>> pieces;
  std::shared_ptr<const void> keep;  // tensors referenced by pieces
  std::size_t bytes = 0;
  std::size_t raw_tensor_bytes = 0;     ///< tensor bytes before compression
  std::size_t stored_tensor_bytes = 0;  ///< tensor bytes on the wire
};

/// A frame received whole.
struct Frame {
  FrameKind kind = FrameKind::Ping;
  std::uint16_t flags = 0;
  std::uint64_t id = 0;
  std::string envelope;
  std::vector<ReceivedMessage::Raw> tensors;
};

/// A request or response frame: `envelope`, then `tensors` stored as `compression` says.
/// `keep` owns the tensors (they are referenced, not copied, when stored raw).
SONIC_EXPORT OutgoingFrame encode_frame(FrameKind kind, std::uint64_t id, std::string envelope,
                                        const std::vector<NamedTensor>& tensors,
                                        std::shared_ptr<const void> keep,
                                        const Compression& compression, std::uint16_t flags = 0);
/// A call frame: a control method and its serialized request.
SONIC_EXPORT OutgoingFrame encode_call(std::uint64_t id, const std::string& method,
                                       const std::string& request);
/// The method and request of a call frame; INVALID_ARGUMENT when malformed.
SONIC_EXPORT Result<std::pair<std::string, std::string>> decode_call(const Frame& frame);
/// An error frame: a status and its message.
SONIC_EXPORT OutgoingFrame encode_error(std::uint64_t id, const Error& error);
/// A ping or pong.
SONIC_EXPORT OutgoingFrame encode_control(FrameKind kind);
/// The Error an error frame carries.
SONIC_EXPORT Error decode_error(const Frame& frame);

/// Reassembles frames from a byte stream. Any violation of the framing is an error after which
/// the stream is unusable: the connection must close.
class SONIC_EXPORT FrameReader {
 public:
  explicit FrameReader(std::size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  /// Consumes bytes; complete frames are appended to frames().
  Result<void> feed(const std::uint8_t* data, std::size_t size);
  std::vector<Frame>& frames() noexcept { return frames_; }

 private:
  enum class Stage { Header, Envelope, RecordHeader, Stored };

  Result<void> start_frame();
  Result<void> start_record();
  Result<void> finish_record();
  void finish_frame();

  std::size_t max_message_bytes_;
  Stage stage_ = Stage::Header;
  std::uint8_t header_[kHeaderBytes] = {};
  std::size_t have_ = 0;  // bytes of the current piece so far
  Frame frame_;
  std::uint32_t envelope_bytes_ = 0;
  std::uint32_t tensors_left_ = 0;
  std::uint64_t section_left_ = 0;
  std::uint64_t raw_total_ = 0;
  // The record being read.
  std::uint8_t record_[kRecordBytes] = {};
  std::uint8_t codec_ = 0;
  std::uint64_t stored_ = 0;
  std::uint64_t raw_ = 0;
  std::shared_ptr<std::uint8_t> buffer_;  // raw: the tensor itself; zstd: the stored bytes
  std::vector<Frame> frames_;
};

}  // namespace sonic::protocol::tcp
