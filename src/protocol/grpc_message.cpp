#include "grpc_message.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "tensor_buffer.hpp"

namespace sonic::protocol {

namespace {
// Borrowed runs shorter than this are copied: an extra iovec costs more than the copy.
constexpr std::size_t kMinBorrowedBytes = 2048;
constexpr std::size_t kPrefixBytes = 5;

Error malformed(const char* what) {
  return Error(StatusCode::Internal, std::string("malformed gRPC message: ") + what);
}
}  // namespace

void OutgoingBody::append_owned(const void* data, std::size_t size) {
  if (size == 0) return;
  if (head_.empty()) {  // reserve the prefix, written by finish()
    head_.assign(kPrefixBytes, '\0');
    pieces_.push_back({nullptr, 0, kPrefixBytes});
    total_ = kPrefixBytes;
  }
  std::size_t offset = head_.size();
  head_.append(static_cast<const char*>(data), size);
  Piece& last = pieces_.back();
  if (!last.data && last.offset + last.size == offset) {
    last.size += size;
  } else {
    pieces_.push_back({nullptr, offset, size});
  }
  total_ += size;
}

void OutgoingBody::append_borrowed(const void* data, std::size_t size) {
  if (size < kMinBorrowedBytes) return append_owned(data, size);
  if (head_.empty()) append_owned("", 0);
  pieces_.push_back({static_cast<const std::uint8_t*>(data), 0, size});
  total_ += size;
}

Result<void> OutgoingBody::finish(std::size_t max_bytes) {
  if (head_.empty()) {
    head_.assign(kPrefixBytes, '\0');
    pieces_.push_back({nullptr, 0, kPrefixBytes});
    total_ = kPrefixBytes;
  }
  std::size_t length = total_ - kPrefixBytes;
  if (length > max_bytes || length > 0xffffffffu) {
    return Error(StatusCode::ResourceExhausted,
                 "message of " + std::to_string(length) + " bytes exceeds the limit of " +
                     std::to_string(std::min<std::size_t>(max_bytes, 0xffffffffu)) +
                     " bytes (ClientOptions::max_message_bytes)");
  }
  head_[0] = 0;  // not compressed
  for (int i = 0; i < 4; ++i) head_[1 + i] = static_cast<char>(length >> (8 * (3 - i)));
  return {};
}

Result<void> MessageReader::begin_message() {
  if (prefix_[0] != 0) {
    if (prefix_[0] == 1) {
      return Error(StatusCode::Unimplemented,
                   "peer sent a compressed message, but sonic offered no compression");
    }
    return malformed("invalid compressed-flag byte");
  }
  std::size_t length = (std::size_t{prefix_[1]} << 24) | (std::size_t{prefix_[2]} << 16) |
                       (std::size_t{prefix_[3]} << 8) | std::size_t{prefix_[4]};
  if (length > max_bytes_) {
    return Error(StatusCode::ResourceExhausted, "received message of " + std::to_string(length) +
                                                    " bytes exceeds the limit of " +
                                                    std::to_string(max_bytes_) + " bytes");
  }
  message_left_ = length;
  current_ = ReceivedMessage{};
  current_.envelope.reserve(std::min<std::size_t>(length, 4096));
  state_ = State::FieldKey;
  varint_ = 0;
  varint_shift_ = 0;
  if (message_left_ == 0) finish_message();
  return {};
}

void MessageReader::finish_message() {
  done_.push_back(std::move(current_));
  state_ = State::Prefix;
  prefix_have_ = 0;
}

Result<void> MessageReader::on_key() {
  field_ = static_cast<std::uint32_t>(varint_ >> 3);
  auto type = static_cast<std::uint8_t>(varint_ & 7);
  if (field_ == 0) return malformed("field number 0");
  varint_ = 0;
  varint_shift_ = 0;
  switch (type) {
    case 0: state_ = State::FieldVarint; return {};
    case 1: field_left_ = 8; break;
    case 5: field_left_ = 4; break;
    case 2: state_ = State::FieldLength; return {};
    default: return malformed("unsupported wire type");
  }
  if (field_left_ > message_left_) return malformed("fixed-size field runs past the message end");
  state_ = State::FieldFixed;
  return {};
}

Result<void> MessageReader::end_field() {
  if (raw_buffer_) {
    current_.raw.push_back({std::move(raw_buffer_), raw_size_});
    raw_buffer_.reset();
  }
  state_ = State::FieldKey;
  varint_ = 0;
  varint_shift_ = 0;
  if (message_left_ == 0) finish_message();
  return {};
}

Result<void> MessageReader::feed(const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    if (state_ == State::Prefix) {
      std::size_t n = std::min(kPrefixBytes - prefix_have_, size);
      std::memcpy(prefix_ + prefix_have_, data, n);
      prefix_have_ += n;
      data += n;
      size -= n;
      if (prefix_have_ == kPrefixBytes) {
        if (auto ok = begin_message(); !ok) return ok;
      }
      continue;
    }
    if (message_left_ == 0) return malformed("field runs past the message end");
    if (state_ == State::FieldPayload || state_ == State::FieldFixed) {
      std::size_t n = std::min(field_left_, size);
      if (raw_buffer_) {
        std::memcpy(raw_buffer_.get() + (raw_size_ - field_left_), data, n);
      } else {
        current_.envelope.append(reinterpret_cast<const char*>(data), n);
      }
      data += n;
      size -= n;
      field_left_ -= n;
      message_left_ -= n;
      if (field_left_ == 0) {
        if (auto ok = end_field(); !ok) return ok;
      }
      continue;
    }
    // One byte of a varint: a key, a length, or a varint field's value.
    std::uint8_t byte = *data++;
    --size;
    --message_left_;
    if (varint_shift_ >= 64) return malformed("varint longer than 10 bytes");
    varint_ |= static_cast<std::uint64_t>(byte & 0x7f) << varint_shift_;
    varint_shift_ += 7;
    bool last = byte < 0x80;
    switch (state_) {
      case State::FieldKey:
        if (last) {
          std::uint64_t key = varint_;
          if (auto ok = on_key(); !ok) return ok;
          if (static_cast<std::uint32_t>(key >> 3) != raw_field_ || state_ != State::FieldLength) {
            wire_append_varint(key);
          } else {
            pending_raw_key_ = true;
          }
        }
        break;
      case State::FieldLength:
        if (last) {
          std::uint64_t length = varint_;
          if (length > message_left_)
            return malformed("length-delimited field runs past the message end");
          field_left_ = static_cast<std::size_t>(length);
          if (pending_raw_key_) {
            pending_raw_key_ = false;
            raw_size_ = field_left_;
            // Committed lazily (see allocate_tensor_buffer); failure is an error, not a crash.
            try {
              raw_buffer_ = allocate_tensor_buffer(raw_size_);
            } catch (const std::bad_alloc&) {
              return Error(
                  StatusCode::ResourceExhausted,
                  "cannot allocate " + std::to_string(raw_size_) + " bytes for a received tensor");
            }
          } else {
            wire_append_varint(length);
          }
          varint_ = 0;
          varint_shift_ = 0;
          state_ = State::FieldPayload;
          if (field_left_ == 0) {
            if (auto ok = end_field(); !ok) return ok;
          }
        }
        break;
      case State::FieldVarint:
        current_.envelope.push_back(static_cast<char>(byte));
        if (last) {
          if (auto ok = end_field(); !ok) return ok;
        }
        break;
      default: return malformed("reader state");
    }
  }
  return {};
}

void MessageReader::wire_append_varint(std::uint64_t value) {
  while (value >= 0x80) {
    current_.envelope.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  current_.envelope.push_back(static_cast<char>(value));
}

}  // namespace sonic::protocol
