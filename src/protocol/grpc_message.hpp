// gRPC messages as they travel: an outgoing body made of owned and borrowed pieces, and the
// receiving side that reassembles length-prefixed messages from HTTP/2 DATA chunks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// Bytes of one gRPC message body (with its 5-byte prefix) ready to send: a small owned head
/// (prefix + protobuf envelope + field headers) interleaved with borrowed tensor bytes, so that
/// large tensors go from their memory to the socket without a copy.
class SONIC_EXPORT OutgoingBody : public std::enable_shared_from_this<OutgoingBody> {
 public:
  /// A run of bytes: `offset` into the owned head when `data` is null, else borrowed memory.
  struct Piece {
    const std::uint8_t* data = nullptr;
    std::size_t offset = 0;
    std::size_t size = 0;
  };

  /// Appends owned bytes.
  void append_owned(const void* data, std::size_t size);
  void append_owned(const std::string& bytes) { append_owned(bytes.data(), bytes.size()); }
  /// Appends borrowed bytes; small runs are copied instead, since an iovec costs more.
  void append_borrowed(const void* data, std::size_t size);
  /// Prepends the gRPC 5-byte prefix; call once, after everything else was appended. Fails with
  /// RESOURCE_EXHAUSTED when the message exceeds `max_bytes`.
  Result<void> finish(std::size_t max_bytes);

  std::size_t size() const noexcept { return total_; }
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

 private:
  std::string head_;
  std::vector<Piece> pieces_;
  std::vector<std::shared_ptr<const void>> owners_;
  std::size_t total_ = 0;
};

/// A received message split for zero-copy use: every top-level field except the raw tensor
/// field stays in `envelope` (a valid protobuf message on its own); each raw tensor payload gets
/// its own aligned buffer, so typed views of it are aligned and can outlive the envelope.
struct ReceivedMessage {
  struct Raw {
    std::shared_ptr<const std::uint8_t> data;
    std::size_t size = 0;
  };
  std::string envelope;
  std::vector<Raw> raw;
};

/// Reassembles gRPC length-prefixed messages from DATA chunks as they arrive, copying each byte
/// once. `raw_field` is the top-level field number whose payloads are tensors (7 for
/// ModelInferRequest, 6 for ModelInferResponse, 0 for none).
class SONIC_EXPORT MessageReader {
 public:
  MessageReader(std::uint32_t raw_field, std::size_t max_message_bytes)
      : raw_field_(raw_field), max_bytes_(max_message_bytes) {}

  /// Consumes a chunk. Errors: RESOURCE_EXHAUSTED past the size limit, UNIMPLEMENTED for a
  /// compressed message, INTERNAL for a malformed envelope.
  Result<void> feed(const std::uint8_t* data, std::size_t size);

  /// Messages completed so far, in order; the caller takes them.
  std::vector<ReceivedMessage>& messages() noexcept { return done_; }
  /// True between messages (a stream that ends elsewhere was truncated).
  bool at_boundary() const noexcept { return state_ == State::Prefix && prefix_have_ == 0; }

 private:
  enum class State { Prefix, FieldKey, FieldLength, FieldVarint, FieldFixed, FieldPayload };
  Result<void> begin_message();
  Result<void> on_key();
  Result<void> end_field();
  void finish_message();
  void wire_append_varint(std::uint64_t value);

  std::uint32_t raw_field_;
  std::size_t max_bytes_;
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
  ReceivedMessage current_;
  std::vector<ReceivedMessage> done_;
};

}  // namespace sonic::protocol
