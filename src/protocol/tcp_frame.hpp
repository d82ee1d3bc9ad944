// The frames of sonic's TCP transport (proto/tcp_framing.md): encoding, with per-tensor zstd
// compression, and an incremental decoder that checks every length before allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
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
  Metadata = 8,
  Cancel = 9,
};

/// Flag of a request frame: the client wants the response's tensors compressed.
inline constexpr std::uint16_t kCompressResponse = 1;

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kRecordBytes = 24;
inline constexpr std::size_t kMaxEnvelopeBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxErrorBytes = std::size_t{64} << 10;
inline constexpr std::size_t kMaxReasonBytes = 128;  ///< of an error frame's reason
inline constexpr std::size_t kMaxTensors = 4096;

/// How tensors are stored.
struct ZstdPolicy {
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

/// What an account promised a frame's tensors still to be decompressed: settled when the frame
/// goes, decompressed or not. Move-only.
class FramePromise {
 public:
  FramePromise() = default;
  FramePromise(std::shared_ptr<ReceiveAccount> account, std::size_t bytes)
      : account_(std::move(account)), bytes_(bytes) {}
  ~FramePromise() { settle(); }
  FramePromise(FramePromise&& other) noexcept
      : account_(std::move(other.account_)), bytes_(std::exchange(other.bytes_, 0)) {}
  FramePromise& operator=(FramePromise&& other) noexcept {
    if (this != &other) {
      settle();
      account_ = std::move(other.account_);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  void settle() noexcept {
    if (account_ && bytes_ > 0) account_->settle(bytes_);
    bytes_ = 0;
  }

 private:
  std::shared_ptr<ReceiveAccount> account_;
  std::size_t bytes_ = 0;
};

/// A frame received whole, or one the receiver could not take (`refused`: its bytes were
/// skipped, the connection is fine, and the sender should hear why for that id).
struct Frame {
  /// A tensor still zstd-compressed (a reader made to leave decompression to its caller):
  /// tensors[index] holds the stored bytes, decompress() makes them `raw_bytes`.
  struct Compressed {
    std::size_t index = 0;
    std::size_t raw_bytes = 0;
  };

  FrameKind kind = FrameKind::Ping;
  std::uint16_t flags = 0;
  std::uint64_t id = 0;
  std::string envelope;
  std::vector<ReceivedMessage::Raw> tensors;
  std::optional<Error> refused;
  std::vector<Compressed> compressed;
  FramePromise promised;  ///< the decompressed bytes, admitted by the reader's account
};

/// Decompresses the tensors a reader left compressed, reporting the bytes to `account` (the
/// reader's) and settling what it promised them. INVALID_ARGUMENT for corrupt data,
/// RESOURCE_EXHAUSTED when memory cannot be had.
SONIC_EXPORT Result<void> decompress(Frame& frame, const std::shared_ptr<ReceiveAccount>& account);

/// A request or response frame: `envelope`, then `tensors` stored as `compression` says.
/// `keep` owns the tensors (they are referenced, not copied, when stored raw).
SONIC_EXPORT OutgoingFrame encode_frame(FrameKind kind, std::uint64_t id, std::string envelope,
                                        const std::vector<NamedTensor>& tensors,
                                        std::shared_ptr<const void> keep,
                                        const ZstdPolicy& compression, std::uint16_t flags = 0);
/// A call frame: a control method and its serialized request.
SONIC_EXPORT OutgoingFrame encode_call(std::uint64_t id, const std::string& method,
                                       const std::string& request);
/// The method and request of a call frame; INVALID_ARGUMENT when malformed.
SONIC_EXPORT Result<std::pair<std::string, std::string>> decode_call(const Frame& frame);
/// An error frame: a status and its message, and its reason (Error::reason()) after a NUL byte
/// when it has one (proto/tcp_framing.md).
SONIC_EXPORT OutgoingFrame encode_error(std::uint64_t id, const Error& error);
/// A ping or pong.
SONIC_EXPORT OutgoingFrame encode_control(FrameKind kind);
/// A client's cancel of its request `id` (proto/tcp_framing.md).
SONIC_EXPORT OutgoingFrame encode_cancel(std::uint64_t id);
/// A metadata frame: headers for the frames that follow it on the connection (the client's
/// credentials). Their encoding must fit kMaxErrorBytes; INVALID_ARGUMENT otherwise.
using Headers = std::vector<std::pair<std::string, std::string>>;
SONIC_EXPORT Result<OutgoingFrame> encode_metadata(const Headers& headers);
/// The headers of a metadata frame; INVALID_ARGUMENT when malformed.
SONIC_EXPORT Result<Headers> decode_metadata(const Frame& frame);
/// The Error an error frame carries.
SONIC_EXPORT Error decode_error(const Frame& frame);

/// Reassembles frames from a byte stream. Memory is taken as bytes arrive (a declared length
/// alone costs nothing) and reported to `account` when there is one. A frame that violates the
/// framing is an error after which the stream is unusable: the connection must close. A frame
/// that is well formed but too big to take (its tensors over the message limit, or memory for
/// them not to be had) is skipped and handed over `refused`.
class SONIC_EXPORT FrameReader {
 public:
  /// With `defer_decompression`, zstd tensors are handed over compressed (Frame::compressed):
  /// the caller decompresses them where the work belongs (a server, off its network threads).
  explicit FrameReader(std::size_t max_message_bytes,
                       std::shared_ptr<ReceiveAccount> account = nullptr,
                       bool defer_decompression = false)
      : max_message_bytes_(max_message_bytes),
        account_(std::move(account)),
        defer_decompression_(defer_decompression) {}
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  /// Consumes bytes; complete (or refused) frames are appended to frames(). When the account
  /// does not admit a request or response frame that begins, the rest of the bytes are kept
  /// (and accounted) until retry_admission() succeeds: the caller stops reading meanwhile.
  Result<void> feed(const std::uint8_t* data, std::size_t size);
  /// Whether a frame waits for the account to admit it.
  bool waiting_admission() const noexcept { return stage_ == Stage::Admission; }
  /// Asks the account again: true once the frame is admitted and the kept bytes consumed.
  Result<bool> retry_admission();
  std::vector<Frame>& frames() noexcept { return frames_; }
  /// True while a frame has begun and not ended.
  bool mid_frame() const noexcept { return stage_ != Stage::Header || have_ != 0; }
  /// Drops the frame under way (its bytes stop being held) and takes nothing more.
  void abandon() noexcept;

 private:
  enum class Stage { Header, Admission, Envelope, RecordHeader, Stored, Skip, Broken };

  Result<void> consume(const std::uint8_t* data, std::size_t size);
  Result<void> start_frame();
  Result<void> start_body();
  void settle() noexcept;
  Result<void> start_record();
  Result<void> finish_record();
  Result<void> finish_stored();
  // Drops what the frame holds and skips the rest of its bytes; it is handed over refused.
  void refuse(Error why);
  void finish_frame();
  void take(std::size_t bytes) noexcept;  // bytes now held for the frame under way
  void report_arriving() noexcept;

  std::size_t max_message_bytes_;
  std::shared_ptr<ReceiveAccount> account_;
  bool defer_decompression_;
  Stage stage_ = Stage::Header;
  std::uint8_t header_[kHeaderBytes] = {};
  std::size_t have_ = 0;  // bytes of the current piece so far
  Frame frame_;
  std::uint32_t envelope_bytes_ = 0;
  std::uint32_t tensors_left_ = 0;
  std::uint64_t section_left_ = 0;
  std::uint64_t raw_total_ = 0;
  std::uint64_t skip_left_ = 0;  // Skip: bytes of the refused frame still to come
  // The record being read.
  std::uint8_t record_[kRecordBytes] = {};
  std::uint8_t codec_ = 0;
  std::uint64_t stored_ = 0;
  std::uint64_t raw_ = 0;
  std::shared_ptr<std::uint8_t> buffer_;  // raw: the tensor itself; zstd: the stored bytes
  std::size_t held_ = 0;        // bytes of the frame under way reported (or to report) arriving
  std::size_t unreported_ = 0;  // of those, not yet reported
  std::size_t admitted_ = 0;    // bytes of the frame under way the account admitted
  std::size_t asking_ = 0;      // bytes of the frame waiting for admission
  std::size_t deferred_ = 0;    // admitted decoded bytes of tensors left compressed
  std::string kept_;            // bytes that came while a frame waited for admission
  std::vector<Frame> frames_;
};

}  // namespace sonic::protocol::tcp
