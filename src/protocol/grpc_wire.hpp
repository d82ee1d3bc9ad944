// gRPC's wire over HTTP/2, both halves: messages (the 5-byte length prefix, outgoing bodies of
// owned and borrowed pieces, reassembly of received messages with each tensor in a buffer of
// its own) and the conventions of its headers and trailers (timeouts, status codes, message
// encoding, binary metadata, the mapping of HTTP and HTTP/2 errors, and the machine-readable
// reason of an error in grpc-status-details-bin).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compression.hpp"
#include "receive_account.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// A gRPC message's prefix: the Compressed-Flag byte and a 4-byte big-endian length.
inline constexpr std::size_t kPrefixBytes = 5;

/// Bytes of one gRPC message body (with its 5-byte prefix) ready to send: a small owned head
/// (prefix + protobuf envelope + field headers) interleaved with borrowed tensor bytes, so that
/// large tensors go from their memory to the socket without a copy. A stream's body is `open`:
/// finished messages are appended to it as they are made (append_message), and what was sent
/// is dropped as it goes (compact), so that a long stream holds only what is not yet written.
class SONIC_EXPORT OutgoingBody : public std::enable_shared_from_this<OutgoingBody> {
 public:
  /// A run of bytes: `offset` into the owned head when `data` is null, else borrowed memory.
  struct Piece {
    const std::uint8_t* data = nullptr;
    std::size_t offset = 0;
    std::size_t size = 0;
  };

  /// Makes room for `owned_bytes` of owned bytes in `pieces` runs (the gRPC prefix comes on
  /// top), so that the appends that follow allocate once.
  void reserve(std::size_t owned_bytes, std::size_t pieces);
  /// Appends owned bytes.
  void append_owned(const void* data, std::size_t size);
  void append_owned(const std::string& bytes) { append_owned(bytes.data(), bytes.size()); }
  /// Appends borrowed bytes; small runs are copied instead, since an iovec costs more.
  void append_borrowed(const void* data, std::size_t size);
  /// Prepends the gRPC 5-byte prefix, its Compressed-Flag set when `compressed`; call once,
  /// after everything else was appended. Fails with RESOURCE_EXHAUSTED when the message exceeds
  /// `max_bytes`.
  Result<void> finish(std::size_t max_bytes, bool compressed = false);
  /// Whether finish() flagged the message compressed.
  bool compressed() const noexcept { return !head_.empty() && head_[0] == 1; }

  /// Appends `message`, a finished body (its prefix included), after what this one holds: its
  /// owned bytes are copied (an envelope, field headers), its borrowed ones stay where they are,
  /// and its owners are kept with this body. Compacts first.
  void append_message(const OutgoingBody& message);
  /// Once everything appended has been handed to the socket layer, forgets it (the owners of
  /// borrowed bytes too, unless a write still references them), so that the next message
  /// starts afresh.
  void compact();

  std::size_t size() const noexcept { return total_; }
  /// Whether everything appended has been handed to the socket layer (compact() would forget
  /// it all).
  bool drained() const noexcept { return reserved == total_ && piece_index == pieces_.size(); }
  const std::vector<Piece>& pieces() const noexcept { return pieces_; }
  const std::uint8_t* piece_data(const Piece& piece) const {
    return piece.data ? piece.data
                      : reinterpret_cast<const std::uint8_t*>(head_.data()) + piece.offset;
  }

  /// Keeps tensors (and anything else the pieces borrow from) alive with the body.
  void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }

  // Send position, advanced by the HTTP/2 layer: bytes promised to DATA frames so far, and the
  // piece cursor of the bytes actually handed to the socket.
  std::size_t reserved = 0;
  std::size_t piece_index = 0;
  std::size_t piece_offset = 0;
  /// Write batches still referencing this body's borrowed bytes.
  int in_flight_writes = 0;
  /// A stream's body: more messages may be appended, and the HTTP/2 layer waits for them (its
  /// stream stays open) when it has sent everything, until `open` is false.
  bool open = false;
  /// The HTTP/2 layer found nothing to send in an open body and waits to be resumed.
  bool deferred = false;

 private:
  std::string head_;
  std::vector<Piece> pieces_;
  std::vector<std::shared_ptr<const void>> owners_;
  std::size_t total_ = 0;
};

/// A received message split for zero-copy use: every top-level field except the raw tensor
/// field stays in `envelope` (a valid protobuf message on its own); each raw tensor payload gets
/// its own aligned buffer, so typed views of it are aligned and can outlive the envelope.
/// Read with a RawFieldPath that has a `within` field, `envelope` holds that field's message
/// (less its tensors) and `outer` the fields around it.
struct ReceivedMessage {
  struct Raw {
    std::shared_ptr<const std::uint8_t> data;
    std::size_t size = 0;
  };
  std::string envelope;
  std::vector<Raw> raw;
  std::string outer;

  /// The bytes it holds: its fields and its tensors.
  std::size_t byte_size() const noexcept {
    std::size_t bytes = envelope.size() + outer.size();
    for (const auto& r : raw) bytes += r.size;
    return bytes;
  }
};

/// Where a message's tensor payloads are: top-level field `field` (0: none), or with `within`,
/// field `field` of the message in top-level field `within` (a ModelStreamInferResponse holds
/// its ModelInferResponse in field 2). Converts from a field number for the common case.
struct RawFieldPath {
  RawFieldPath(std::uint32_t raw_field = 0, std::uint32_t wrapper = 0)  // NOLINT: implicit
      : field(raw_field), within(wrapper) {}
  std::uint32_t field;
  std::uint32_t within;
};

/// Reassembles gRPC length-prefixed messages from DATA chunks as they arrive, copying each byte
/// once. `raw_field` is where the payloads that are tensors are (7 for ModelInferRequest, 6 for
/// ModelInferResponse, {6, 2} for ModelStreamInferResponse, 0 for none). Memory is taken as bytes
/// arrive, never for a declared length alone, and reported to `account` when there is one.
class SONIC_EXPORT MessageReader {
 public:
  /// Tensor fields one message may carry: a model with more inputs or outputs than this does
  /// not exist, and each field costs bookkeeping beyond its bytes.
  static constexpr std::size_t kMaxRawFields = 4096;

  MessageReader(RawFieldPath raw_field, std::size_t max_message_bytes,
                std::shared_ptr<ReceiveAccount> account = nullptr)
      : raw_field_(raw_field), max_bytes_(max_message_bytes), account_(std::move(account)) {}
  ~MessageReader();
  MessageReader(MessageReader&& other) noexcept;
  MessageReader& operator=(MessageReader&& other) noexcept;
  MessageReader(const MessageReader&) = delete;
  MessageReader& operator=(const MessageReader&) = delete;

  /// How messages flagged compressed are compressed: the call's grpc-encoding. None (the
  /// default) refuses them.
  void set_encoding(Compression encoding) noexcept { encoding_ = encoding; }
  /// How many times its size a compressed message may inflate to (inflate_bound(); a server's
  /// bound on bombs): deflate's own kMaxInflateRatio by default, that is no bound but the size
  /// limit. Past it the message is refused INVALID_ARGUMENT as soon as its inflated bytes pass
  /// the bound.
  void set_inflate_ratio(std::size_t ratio) noexcept { inflate_ratio_ = ratio; }
  /// Bytes inflated so far from compressed messages (what their inflating cost).
  std::uint64_t inflated_bytes() const noexcept { return inflated_; }

  /// Consumes a chunk. Errors: RESOURCE_EXHAUSTED past the size limit (a compressed message's
  /// inflated size counts; or when memory cannot be had), INTERNAL for a malformed envelope, a
  /// compressed message without an encoding or one that does not inflate. After an error the
  /// reader takes nothing more. When the account does not admit a message that begins, the
  /// rest of the chunk is kept (and accounted) until retry_admission() succeeds: the caller
  /// stops feeding meanwhile (flow control bounds what arrives).
  ///
  /// A compressed message is inflated as its bytes arrive and read as any other, so it costs
  /// no copy of its own; it is admitted for what it may inflate to (inflate_bound() of its
  /// length), since nothing else says how large it is.
  Result<void> feed(const std::uint8_t* data, std::size_t size);
  /// Whether a message waits for the account to admit it.
  bool waiting_admission() const noexcept { return state_ == State::Admission; }
  /// Bytes kept while a message waits for admission.
  std::size_t kept_bytes() const noexcept { return kept_.size(); }
  /// Asks the account again: true once the message is admitted and the kept bytes consumed
  /// (a next message may wait in turn: check waiting_admission()).
  Result<bool> retry_admission();

  /// Messages completed so far, in order; the caller takes them.
  std::vector<ReceivedMessage>& messages() noexcept { return done_; }
  /// True between messages (a stream that ends elsewhere was truncated).
  bool at_boundary() const noexcept { return state_ == State::Prefix && prefix_have_ == 0; }
  /// True while a message has begun and not ended.
  bool mid_message() const noexcept { return !at_boundary(); }
  /// Bytes of the message under way still to arrive: 0 between messages, SIZE_MAX while its
  /// prefix, which says its length, is still incomplete.
  std::size_t bytes_to_come() const noexcept {
    if (inflater_) return compressed_left_;
    if (state_ != State::Prefix) return message_left_;
    return prefix_have_ == 0 ? 0 : SIZE_MAX;
  }
  /// Drops the message under way (its bytes stop being held) and takes nothing more.
  void abandon() noexcept;

  /// Where the next bytes fed go when they are the rest of a tensor being received: `data` is
  /// the part of its buffer still to fill (`size` bytes), `hold` keeps that buffer alive. A
  /// socket may read those bytes straight there and then feed() them from there: the reader
  /// sees them in place and copies nothing. Bytes that land there and turn out to belong
  /// elsewhere are still read correctly (feed() moves what is not in place), and the buffer
  /// outlives the read through `hold` even when the message is abandoned meanwhile. Empty
  /// (`size` 0) between tensors, and for compressed messages or ones waiting for admission.
  struct Destination {
    std::uint8_t* data = nullptr;
    std::size_t size = 0;
    std::shared_ptr<void> hold;
  };
  Destination tensor_destination() const;

 private:
  enum class State {
    Prefix,
    Admission,
    FieldKey,
    FieldLength,
    FieldVarint,
    FieldFixed,
    FieldPayload,
    Broken
  };
  Result<void> consume(const std::uint8_t* data, std::size_t size);
  // Reads `size` bytes of the message body (never past its end).
  Result<void> consume_body(const std::uint8_t* data, std::size_t size);
  // Reads a whole message body at once, a field at a time, as consume_body() would.
  Result<void> read_whole_body(const std::uint8_t* data, std::size_t size);
  // Inflates `size` compressed bytes of the message under way and reads what they hold.
  Result<void> consume_compressed(const std::uint8_t* data, std::size_t size);
  Error inflated_past_limit() const;
  Result<void> begin_message();
  void begin_body();
  Result<void> on_key();
  Result<void> end_field();
  Result<void> begin_raw_field();
  void finish_message();
  void wire_append_varint(std::uint64_t value);
  void envelope_append(const std::uint8_t* data, std::size_t size);
  // Counts `n` bytes of the message body consumed (and of the wrapper's, inside it).
  void consumed(std::size_t n) noexcept;
  // Bytes a field may still take: to the message's end, or inside the wrapper to its end.
  std::size_t room() const noexcept { return inside_ ? wrapper_left_ : message_left_; }
  // Reports the bytes taken since the last report (once per feed, not per byte).
  void report_arriving() noexcept;

  RawFieldPath raw_field_;
  std::size_t max_bytes_ = 0;
  std::size_t inflate_ratio_ = kMaxInflateRatio;
  std::size_t compressed_length_ = 0;  // of the compressed message under way
  std::uint64_t inflated_ = 0;
  std::shared_ptr<ReceiveAccount> account_;
  State state_ = State::Prefix;
  std::uint8_t prefix_[5] = {};
  std::size_t prefix_have_ = 0;
  std::size_t message_left_ = 0;  // bytes of the current message not yet consumed
  std::uint64_t varint_ = 0;      // key or length being decoded
  int varint_shift_ = 0;
  std::uint32_t field_ = 0;
  std::size_t field_left_ = 0;  // payload bytes still to come
  std::shared_ptr<std::uint8_t> raw_buffer_;
  std::size_t raw_size_ = 0;
  bool pending_raw_key_ =
      false;  // the key just read is the raw field's: keep it out of the envelope
  bool pending_wrapper_key_ = false;  // the key just read is raw_field_.within's
  bool inside_ = false;               // reading the fields of raw_field_.within's message
  std::size_t wrapper_left_ = 0;      // its bytes not yet consumed
  std::size_t held_ = 0;        // bytes of the current message reported (or to report) arriving
  std::size_t unreported_ = 0;  // of those, not yet reported
  std::size_t admitted_ = 0;    // declared length of the current message, once admitted
  std::string kept_;            // bytes that came while a message waited for admission
  Compression encoding_ = Compression::None;
  std::unique_ptr<Inflater> inflater_;  // the compressed message under way
  std::size_t compressed_left_ = 0;     // its compressed bytes still to come
  ReceivedMessage current_;
  std::vector<ReceivedMessage> done_;
};

// ---- Buffers for received tensors ------------------------------------------------------
/// A buffer of `bytes` bytes for a received tensor, aligned for any element type, released when
/// the last owner lets go (and then reported released to `account`, when there is one). Pages
/// are committed as they are written, so a peer that announces a big tensor and stops costs
/// address space, not memory. Throws std::bad_alloc when even the address space cannot be had.
///
/// Tensors above 32 MiB get their own mapping with transparent huge pages: the C allocator maps
/// such blocks afresh for every message anyway, and faulting them in 4 KiB at a time cost about
/// a quarter of the CPU of a 64 MiB round trip. A peer that stops after a tensor's first bytes
/// pins one huge page (2 MiB) for it: receivers that must bound that admit the message's
/// declared length first (ReceiveAccount::admit), which then bounds it at 1/16 of what they
/// admit.
SONIC_EXPORT std::shared_ptr<std::uint8_t> allocate_tensor_buffer(
    std::size_t bytes, std::shared_ptr<ReceiveAccount> account = nullptr);

// ---- Headers and trailers ------------------------------------------------------------------
inline constexpr std::string_view kServicePrefix = "/inference.GRPCInferenceService/";

/// A grpc-timeout header value: at most 8 digits and a unit, rounded up so that the server
/// never sees a shorter limit than the client has.
SONIC_EXPORT std::string format_grpc_timeout(std::chrono::nanoseconds remaining);
/// Parses a grpc-timeout header value; nothing when malformed.
SONIC_EXPORT std::optional<std::chrono::nanoseconds> parse_grpc_timeout(std::string_view text);

/// The code of a grpc-status header: decimal digits; anything else (empty included) is UNKNOWN.
SONIC_EXPORT StatusCode parse_grpc_status(std::string_view text);

/// grpc-message is percent-encoded: bytes outside printable ASCII and '%' itself.
SONIC_EXPORT std::string percent_encode(std::string_view text);
/// Decodes grpc-message; malformed escapes pass through, as gRPC specifies.
SONIC_EXPORT std::string percent_decode(std::string_view text);

/// Binary ("-bin") metadata values travel base64-encoded (standard alphabet, padded).
SONIC_EXPORT std::string base64_encode(std::string_view bytes);
/// Decodes base64 with or without padding, as gRPC accepts it; nothing when malformed.
SONIC_EXPORT std::optional<std::string> base64_decode(std::string_view text);

/// The gRPC code for a non-200 HTTP status (gRPC's HTTP-to-status mapping).
SONIC_EXPORT StatusCode status_from_http(int http_status);

/// HTTP/2 error codes (RFC 9113 §7) that carry meaning for a gRPC call.
enum class H2Error : std::uint32_t {
  NoError = 0x0,
  ProtocolError = 0x1,
  InternalError = 0x2,
  RefusedStream = 0x7,
  Cancel = 0x8,
  EnhanceYourCalm = 0xb,
  InadequateSecurity = 0xc,
};

/// The outcome of a stream the peer reset with an HTTP/2 error code (gRPC's mapping:
/// REFUSED_STREAM is UNAVAILABLE and safe to retry, CANCEL is CANCELLED, ...).
SONIC_EXPORT Error error_from_reset(std::uint32_t h2_error);

/// The trailer that carries an error's details: a base64 google.rpc.Status.
inline constexpr std::string_view kStatusDetailsHeader = "grpc-status-details-bin";
/// grpc-accept-encoding's value from sonic: the message compressions it reads
/// (compression.hpp).
inline constexpr std::string_view kAcceptEncoding = "identity,deflate,gzip";
/// The domain of the reasons sonic's servers give (google.rpc.ErrorInfo.domain).
inline constexpr std::string_view kErrorDomain = "sonic";

/// A google.rpc.Status for `error` whose details hold a google.rpc.ErrorInfo with its reason
/// (empty when the error has none), serialized; the trailer value is its base64.
SONIC_EXPORT std::string encode_status_details(const Error& error);
/// The reason of the first google.rpc.ErrorInfo in a serialized google.rpc.Status; empty when
/// there is none or the bytes do not parse (a detail nobody needs is never an error).
SONIC_EXPORT std::string reason_from_status_details(std::string_view status);

}  // namespace sonic::protocol
