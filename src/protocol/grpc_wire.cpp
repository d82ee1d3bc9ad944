// Over 500 lines: its message reader, most of the file, is one state machine, clearer whole.
#include "grpc_wire.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "compression.hpp"
#include "wire.hpp"

namespace sonic::protocol {

namespace {
// Borrowed runs shorter than this are copied: an extra iovec costs more than the copy.
constexpr std::size_t kMinBorrowedBytes = 2048;

Error malformed(const char* what) {
  return Error(StatusCode::Internal, std::string("malformed gRPC message: ") + what);
}
}  // namespace

void OutgoingBody::reserve(std::size_t owned_bytes, std::size_t pieces) {
  head_.reserve(kPrefixBytes + owned_bytes);
  pieces_.reserve(1 + pieces);
}

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

void OutgoingBody::append_message(const OutgoingBody& message) {
  compact();
  const std::size_t base = head_.size();
  head_.append(message.head_);
  pieces_.reserve(pieces_.size() + message.pieces_.size());
  for (Piece piece : message.pieces_) {
    if (!piece.data) piece.offset += base;
    pieces_.push_back(piece);
  }
  owners_.insert(owners_.end(), message.owners_.begin(), message.owners_.end());
  total_ += message.total_;
}

void OutgoingBody::compact() {
  if (!drained()) return;
  head_.clear();
  pieces_.clear();
  if (in_flight_writes == 0) owners_.clear();
  total_ = reserved = piece_index = piece_offset = 0;
}

Result<void> OutgoingBody::finish(std::size_t max_bytes, bool compressed) {
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
  head_[0] = compressed ? 1 : 0;
  for (int i = 0; i < 4; ++i) head_[1 + i] = static_cast<char>(length >> (8 * (3 - i)));
  return {};
}

MessageReader::~MessageReader() { abandon(); }

MessageReader::MessageReader(MessageReader&& other) noexcept { *this = std::move(other); }

MessageReader& MessageReader::operator=(MessageReader&& other) noexcept {
  if (this == &other) return *this;
  abandon();
  raw_field_ = other.raw_field_;
  max_bytes_ = other.max_bytes_;
  account_ = std::move(other.account_);
  state_ = std::exchange(other.state_, State::Broken);
  std::memcpy(prefix_, other.prefix_, sizeof prefix_);
  prefix_have_ = other.prefix_have_;
  message_left_ = other.message_left_;
  varint_ = other.varint_;
  varint_shift_ = other.varint_shift_;
  field_ = other.field_;
  field_left_ = other.field_left_;
  raw_buffer_ = std::move(other.raw_buffer_);
  raw_size_ = other.raw_size_;
  pending_raw_key_ = other.pending_raw_key_;
  pending_wrapper_key_ = other.pending_wrapper_key_;
  inside_ = other.inside_;
  wrapper_left_ = other.wrapper_left_;
  held_ = std::exchange(other.held_, 0);
  unreported_ = std::exchange(other.unreported_, 0);
  admitted_ = std::exchange(other.admitted_, 0);
  kept_ = std::move(other.kept_);
  encoding_ = other.encoding_;
  inflate_ratio_ = other.inflate_ratio_;
  compressed_length_ = other.compressed_length_;
  inflated_ = other.inflated_;
  inflater_ = std::move(other.inflater_);
  compressed_left_ = std::exchange(other.compressed_left_, 0);
  current_ = std::move(other.current_);
  done_ = std::move(other.done_);
  return *this;
}

void MessageReader::report_arriving() noexcept {
  if (account_ && unreported_ > 0) account_->arriving(unreported_);
  unreported_ = 0;
}

void MessageReader::abandon() noexcept {
  if (account_ && !kept_.empty()) {
    account_->arrived(kept_.size());
    account_->released(kept_.size());
  }
  kept_.clear();
  if (account_ && admitted_ > 0) account_->settle(admitted_);
  admitted_ = 0;
  if (state_ != State::Prefix && state_ != State::Broken && state_ != State::Admission &&
      account_) {
    // The tensor being received will report its whole length released when it is freed:
    // count the part that never came as arriving first, so that the account balances.
    if (raw_buffer_) {
      unreported_ += field_left_;
      held_ += field_left_;
    }
    report_arriving();
    account_->arrived(held_);
    account_->released(current_.envelope.size() + current_.outer.size());
  }
  held_ = 0;
  unreported_ = 0;
  raw_buffer_.reset();
  inflater_.reset();
  current_ = ReceivedMessage{};
  state_ = State::Broken;
}

void MessageReader::envelope_append(const std::uint8_t* data, std::size_t size) {
  std::string& into = raw_field_.within != 0 && !inside_ ? current_.outer : current_.envelope;
  into.append(reinterpret_cast<const char*>(data), size);
  held_ += size;
  unreported_ += size;
}

void MessageReader::consumed(std::size_t n) noexcept {
  message_left_ -= n;
  if (inside_) wrapper_left_ -= n;
}

Result<void> MessageReader::begin_message() {
  if (prefix_[0] > 1) return malformed("invalid compressed-flag byte");
  const bool compressed = prefix_[0] == 1;
  if (compressed && encoding_ == Compression::None) {
    return Error(
        StatusCode::Internal,
        "a message flagged compressed, on a call whose grpc-encoding names no compression");
  }
  std::size_t length = (std::size_t{prefix_[1]} << 24) | (std::size_t{prefix_[2]} << 16) |
                       (std::size_t{prefix_[3]} << 8) | std::size_t{prefix_[4]};
  if (length > max_bytes_) {
    return Error(StatusCode::ResourceExhausted, "received message of " + std::to_string(length) +
                                                    " bytes exceeds the limit of " +
                                                    std::to_string(max_bytes_) + " bytes");
  }
  message_left_ = length;
  if (compressed) {
    if (length == 0) return Error(StatusCode::Internal, "invalid compressed message: empty");
    // Its inflated length is known only at its end: what it may inflate to is admitted, and
    // bounds what is read of it.
    compressed_left_ = length;
    compressed_length_ = length;
    message_left_ = inflate_bound(length, inflate_ratio_, max_bytes_);
    inflater_ = std::make_unique<Inflater>(encoding_);
  }
  if (account_ && message_left_ > 0) {
    if (!account_->admit(message_left_)) {
      state_ = State::Admission;
      return {};
    }
    admitted_ = message_left_;
  }
  begin_body();
  return {};
}

void MessageReader::begin_body() {
  current_ = ReceivedMessage{};
  current_.envelope.reserve(std::min<std::size_t>(message_left_, 4096));
  state_ = State::FieldKey;
  varint_ = 0;
  varint_shift_ = 0;
  if (message_left_ == 0 && !inflater_) finish_message();
}

Result<bool> MessageReader::retry_admission() {
  if (state_ != State::Admission) return true;
  if (!account_->admit(message_left_)) return false;
  admitted_ = message_left_;
  begin_body();
  // The kept bytes leave the waiting room for the message itself.
  std::string kept = std::move(kept_);
  kept_.clear();
  account_->arrived(kept.size());
  account_->released(kept.size());
  auto fed = feed(reinterpret_cast<const std::uint8_t*>(kept.data()), kept.size());
  if (!fed) return fed.error();
  return true;
}

void MessageReader::finish_message() {
  if (account_) {
    // The envelope is decoded and dropped as soon as it is taken: counted released now.
    report_arriving();
    account_->arrived(held_);
    account_->released(current_.envelope.size() + current_.outer.size());
    if (admitted_ > 0) account_->settle(admitted_);
  }
  admitted_ = 0;
  held_ = 0;
  inside_ = false;
  done_.push_back(std::move(current_));
  current_ = ReceivedMessage{};
  state_ = State::Prefix;
  prefix_have_ = 0;
}

Result<void> MessageReader::on_key() {
  field_ = static_cast<std::uint32_t>(varint_ >> 3);
  auto type = static_cast<std::uint8_t>(varint_ & 7);
  if (field_ == 0) return malformed("field number 0");
  if ((varint_ >> 3) > wire::kMaxFieldNumber) return malformed("field number above 2^29 - 1");
  varint_ = 0;
  varint_shift_ = 0;
  switch (type) {
    case 0: state_ = State::FieldVarint; return {};
    case 1: field_left_ = 8; break;
    case 5: field_left_ = 4; break;
    case 2: state_ = State::FieldLength; return {};
    default: return malformed("unsupported wire type");
  }
  if (field_left_ > room()) return malformed("fixed-size field runs past the message end");
  state_ = State::FieldFixed;
  return {};
}

Result<void> MessageReader::begin_raw_field() {
  if (current_.raw.size() >= kMaxRawFields) {
    return Error(StatusCode::ResourceExhausted,
                 "message with more than " + std::to_string(kMaxRawFields) + " tensor fields");
  }
  raw_size_ = field_left_;
  if (raw_size_ == 0) return {};  // an empty tensor needs no buffer
  // Committed as it is written (see allocate_tensor_buffer); failure is an error, not a crash.
  try {
    raw_buffer_ = allocate_tensor_buffer(raw_size_, account_);
  } catch (const std::bad_alloc&) {
    return Error(StatusCode::ResourceExhausted,
                 "cannot allocate " + std::to_string(raw_size_) + " bytes for a received tensor");
  }
  return {};
}

MessageReader::Destination MessageReader::tensor_destination() const {
  if (state_ != State::FieldPayload || !raw_buffer_ || inflater_) return {};
  return {raw_buffer_.get() + (raw_size_ - field_left_), field_left_, raw_buffer_};
}

Result<void> MessageReader::end_field() {
  if (pending_raw_key_) {
    pending_raw_key_ = false;
    current_.raw.push_back({std::move(raw_buffer_), raw_size_});
    raw_buffer_.reset();
  }
  if (inside_ && wrapper_left_ == 0) inside_ = false;  // the wrapped message ended
  state_ = State::FieldKey;
  varint_ = 0;
  varint_shift_ = 0;
  if (message_left_ == 0) finish_message();
  return {};
}

Result<void> MessageReader::feed(const std::uint8_t* data, std::size_t size) {
  if (state_ == State::Broken) return Error(StatusCode::Internal, "the reader failed before");
  auto result = consume(data, size);
  report_arriving();
  if (!result) abandon();
  return result;
}

Result<void> MessageReader::consume(const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    if (state_ == State::Admission) {
      // Kept until the message is admitted; the caller sends no more meanwhile.
      kept_.append(reinterpret_cast<const char*>(data), size);
      if (account_) account_->arriving(size);
      return {};
    }
    if (state_ == State::Prefix) {
      std::size_t n = std::min(kPrefixBytes - prefix_have_, size);
      std::memcpy(prefix_ + prefix_have_, data, n);
      prefix_have_ += n;
      data += n;
      size -= n;
      if (prefix_have_ == kPrefixBytes) {
        if (auto ok = begin_message(); !ok) return ok;
        // The common case, a message whole in this chunk, is read a field at a time rather
        // than a byte at a time: a small reply costs a tenth of the instructions.
        const std::size_t body = message_left_;
        if (state_ == State::FieldKey && !inflater_ && raw_field_.within == 0 && body <= size) {
          if (auto ok = read_whole_body(data, body); !ok) return ok;
          data += body;
          size -= body;
        }
      }
      continue;
    }
    if (inflater_) {
      const std::size_t n = std::min(size, compressed_left_);
      if (auto ok = consume_compressed(data, n); !ok) return ok;
      data += n;
      size -= n;
      continue;
    }
    if (message_left_ == 0) return malformed("field runs past the message end");
    const std::size_t n = std::min(size, message_left_);
    if (auto ok = consume_body(data, n); !ok) return ok;
    data += n;
    size -= n;
  }
  return {};
}

Result<void> MessageReader::read_whole_body(const std::uint8_t* data, std::size_t size) {
  wire::Reader reader(data, size);
  const std::uint8_t* envelope_run = data;  // fields that go to the envelope, not yet appended
  auto append_run = [&](const std::uint8_t* end) {
    if (end > envelope_run) {
      envelope_append(envelope_run, static_cast<std::size_t>(end - envelope_run));
    }
  };
  while (!reader.done()) {
    const std::uint8_t* field_start = reader.position();
    std::uint32_t field = 0;
    wire::WireType type{};
    if (!reader.tag(field, type)) return malformed("invalid field key");
    if (field != raw_field_.field || type != wire::WireType::Len) {
      if (!reader.skip(type)) return malformed("field runs past the message end");
      continue;
    }
    append_run(field_start);
    std::string_view payload;
    if (!reader.bytes(payload)) return malformed("tensor field runs past the message end");
    envelope_run = reader.position();
    field_left_ = payload.size();
    if (auto ok = begin_raw_field(); !ok) return ok;
    if (raw_buffer_) {
      std::memcpy(raw_buffer_.get(), payload.data(), payload.size());
      held_ += payload.size();
      unreported_ += payload.size();
    }
    current_.raw.push_back({std::move(raw_buffer_), raw_size_});
    raw_buffer_.reset();
  }
  append_run(data + size);
  field_left_ = 0;
  message_left_ = 0;
  finish_message();
  return {};
}

Result<void> MessageReader::consume_compressed(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kInflateChunk = 16 * 1024;
  std::uint8_t inflated[kInflateChunk];
  compressed_left_ -= size;
  for (;;) {
    auto n = inflater_->inflate(data, size, inflated, sizeof inflated);
    if (!n) return n.error();
    if (*n == 0) break;  // it needs the bytes still to come
    inflated_ += *n;
    if (*n > message_left_) return inflated_past_limit();
    if (auto ok = consume_body(inflated, *n); !ok) return ok;
  }
  if (compressed_left_ > 0) return {};
  // Its compressed bytes ended: so must its stream, and its fields.
  if (!inflater_->finished())
    return Error(StatusCode::Internal, "invalid compressed message: truncated");
  if (state_ != State::FieldKey || varint_shift_ != 0) {
    return malformed("field runs past the message end");
  }
  inflater_.reset();
  message_left_ = 0;
  finish_message();
  return {};
}

Error MessageReader::inflated_past_limit() const {
  return inflated_past_bound(compressed_length_, inflate_ratio_, max_bytes_);
}

Result<void> MessageReader::consume_body(const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    if (state_ == State::FieldPayload || state_ == State::FieldFixed) {
      std::size_t n = std::min(field_left_, size);
      if (raw_buffer_) {
        // Bytes read in place (tensor_destination) need no copy; bytes read there that belong
        // elsewhere in it may overlap their place.
        std::uint8_t* place = raw_buffer_.get() + (raw_size_ - field_left_);
        if (place != data) std::memmove(place, data, n);
        held_ += n;
        unreported_ += n;
      } else if (!pending_raw_key_) {
        envelope_append(data, n);
      }
      data += n;
      size -= n;
      field_left_ -= n;
      consumed(n);
      if (field_left_ == 0) {
        if (auto ok = end_field(); !ok) return ok;
      }
      continue;
    }
    // One byte of a varint: a key, a length, or a varint field's value.
    if (inside_ && wrapper_left_ == 0) return malformed("field runs past its enclosing message");
    std::uint8_t byte = *data++;
    --size;
    consumed(1);
    if (varint_shift_ >= 64) return malformed("varint longer than 10 bytes");
    varint_ |= static_cast<std::uint64_t>(byte & 0x7f) << varint_shift_;
    varint_shift_ += 7;
    bool last = byte < 0x80;
    switch (state_) {
      case State::FieldKey:
        if (last) {
          std::uint64_t key = varint_;
          if (auto ok = on_key(); !ok) return ok;
          const auto number = static_cast<std::uint32_t>(key >> 3);
          const bool wrapped = raw_field_.within != 0;
          if (state_ == State::FieldLength && wrapped && !inside_ && number == raw_field_.within) {
            pending_wrapper_key_ = true;  // its fields are read in place, not kept whole
          } else if (state_ == State::FieldLength && number == raw_field_.field &&
                     (!wrapped || inside_)) {
            pending_raw_key_ = true;
          } else {
            wire_append_varint(key);
          }
        }
        break;
      case State::FieldLength:
        if (last) {
          std::uint64_t length = varint_;
          if (length > message_left_ && inflater_) return inflated_past_limit();
          if (length > room()) return malformed("length-delimited field runs past the message end");
          field_left_ = static_cast<std::size_t>(length);
          if (pending_wrapper_key_) {
            pending_wrapper_key_ = false;
            inside_ = true;
            wrapper_left_ = field_left_;
            field_left_ = 0;
            if (auto ok = end_field(); !ok) return ok;  // to its first field (or past it, empty)
            break;
          }
          if (pending_raw_key_) {
            if (auto ok = begin_raw_field(); !ok) return ok;
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
        ++held_;
        ++unreported_;
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
  std::uint8_t bytes[10];
  std::size_t n = 0;
  while (value >= 0x80) {
    bytes[n++] = static_cast<std::uint8_t>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  bytes[n++] = static_cast<std::uint8_t>(value);
  envelope_append(bytes, n);
}

// ---- Buffers for received tensors ------------------------------------------------------
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kMappedAbove = std::size_t{32} << 20;  // glibc's largest mmap threshold

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
}  // namespace

std::shared_ptr<std::uint8_t> allocate_tensor_buffer(std::size_t bytes,
                                                     std::shared_ptr<ReceiveAccount> account) {
  if (bytes <= kMappedAbove) {
    auto* data = new std::uint8_t[std::max<std::size_t>(bytes, 1)];
    try {
      if (!account)
        return std::shared_ptr<std::uint8_t>(data, std::default_delete<std::uint8_t[]>());
      return std::shared_ptr<std::uint8_t>(data,
                                           [bytes, account = std::move(account)](std::uint8_t* p) {
                                             delete[] p;
                                             account->released(bytes);
                                           });
    } catch (...) {
      delete[] data;
      throw;
    }
  }
  // Over-map by one huge page so that the buffer can start on a huge page boundary.
  std::size_t length = round_up(bytes, kHugePage);
  void* mapped = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto base = reinterpret_cast<std::uintptr_t>(mapped);
  std::uintptr_t start = round_up(base, kHugePage);
  std::size_t head = start - base;  // below one huge page, so some tail is always left over
  if (head > 0) munmap(mapped, head);
  munmap(reinterpret_cast<void*>(start + length), kHugePage - head);
  auto* data = reinterpret_cast<std::uint8_t*>(start);
  madvise(data, length, MADV_HUGEPAGE);  // advice only: without huge pages it still works
  try {
    return std::shared_ptr<std::uint8_t>(
        data, [length, bytes, account = std::move(account)](std::uint8_t* p) {
          munmap(p, length);
          if (account) account->released(bytes);
        });
  } catch (...) {
    munmap(data, length);
    throw;
  }
}

// ---- Headers and trailers ------------------------------------------------------------------
namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// google.rpc.Status { int32 code = 1; string message = 2; repeated google.protobuf.Any
// details = 3; }, Any { string type_url = 1; bytes value = 2; }, and google.rpc.ErrorInfo
// { string reason = 1; string domain = 2; map<string, string> metadata = 3; }.
constexpr std::string_view kErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo";

}  // namespace

std::string format_grpc_timeout(std::chrono::nanoseconds remaining) {
  std::int64_t ns = std::max<std::int64_t>(remaining.count(), 1);
  struct Unit {
    std::int64_t ns;
    char suffix;
  };
  constexpr Unit units[] = {{1, 'n'},          {1000, 'u'},        {1000000, 'm'},
                            {1000000000, 'S'}, {60000000000, 'M'}, {3600000000000, 'H'}};
  for (const auto& unit : units) {
    std::int64_t value = (ns + unit.ns - 1) / unit.ns;
    if (value < 100000000) return std::to_string(value) + unit.suffix;
  }
  return "99999999H";
}

std::optional<std::chrono::nanoseconds> parse_grpc_timeout(std::string_view text) {
  if (text.size() < 2 || text.size() > 9) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  switch (text.back()) {
    case 'n': return std::chrono::nanoseconds(value);
    case 'u': return std::chrono::microseconds(value);
    case 'm': return std::chrono::milliseconds(value);
    case 'S': return std::chrono::seconds(value);
    case 'M': return std::chrono::minutes(value);
    case 'H': return std::chrono::hours(std::min<std::int64_t>(value, 2562047));  // fits in ns
    default: return std::nullopt;
  }
}

StatusCode parse_grpc_status(std::string_view text) {
  if (text.empty() || text.size() > 3) return StatusCode::Unknown;
  std::int64_t code = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return StatusCode::Unknown;
    code = code * 10 + (c - '0');
  }
  return status_code_from_int(code);
}

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kBase64[(n >> 18) & 63]);
    out.push_back(kBase64[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kBase64[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kBase64[n & 63] : '=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int have = 0;
  for (char c : text) {
    int v = base64_value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      out.push_back(static_cast<char>((bits >> have) & 0xff));
    }
  }
  return out;
}

StatusCode status_from_http(int http_status) {
  switch (http_status) {
    case 400: return StatusCode::Internal;
    case 401: return StatusCode::Unauthenticated;
    case 403: return StatusCode::PermissionDenied;
    case 404: return StatusCode::Unimplemented;
    case 429:
    case 502:
    case 503:
    case 504: return StatusCode::Unavailable;
    default: return StatusCode::Unknown;
  }
}

Error error_from_reset(std::uint32_t h2_error) {
  switch (static_cast<H2Error>(h2_error)) {
    case H2Error::RefusedStream:
      return Error(StatusCode::Unavailable,
                   "server refused the stream before processing it; safe to retry");
    case H2Error::Cancel: return Error(StatusCode::Cancelled, "stream cancelled by the server");
    case H2Error::EnhanceYourCalm:
      return Error(StatusCode::ResourceExhausted, "server asked to slow down (ENHANCE_YOUR_CALM)");
    case H2Error::InadequateSecurity:
      return Error(StatusCode::PermissionDenied, "server requires stronger transport security");
    default:
      return Error(StatusCode::Internal,
                   "stream reset by the server with HTTP/2 error code " + std::to_string(h2_error));
  }
}

std::string encode_status_details(const Error& error) {
  std::string status;
  wire::put_varint_field(status, 1, static_cast<std::uint64_t>(error.code()));
  wire::put_string_field(status, 2, error.message());
  if (!error.reason().empty()) {
    std::string info;
    wire::put_string_field(info, 1, error.reason());
    wire::put_string_field(info, 2, kErrorDomain);
    std::string any;
    wire::put_string_field(any, 1, kErrorInfoType);
    wire::put_len_field(any, 2, info);
    wire::put_len_field(status, 3, any);
  }
  return status;
}

std::string reason_from_status_details(std::string_view status) {
  wire::Reader r(status);
  std::uint32_t field;
  wire::WireType type;
  while (!r.done()) {
    if (!r.tag(field, type)) return {};
    std::string_view any;
    if (field != 3 || type != wire::WireType::Len) {
      if (!r.skip(type)) return {};
      continue;
    }
    if (!r.bytes(any)) return {};
    std::string_view type_url, value;
    wire::Reader a(any);
    while (!a.done()) {
      if (!a.tag(field, type)) return {};
      std::string_view* into = field == 1 ? &type_url : field == 2 ? &value : nullptr;
      if (type == wire::WireType::Len && into) {
        if (!a.bytes(*into)) return {};
      } else if (!a.skip(type)) {
        return {};
      }
    }
    if (type_url != kErrorInfoType) continue;
    std::string_view reason, domain;
    wire::Reader info(value);
    while (!info.done()) {
      if (!info.tag(field, type)) return {};
      std::string_view* into = field == 1 ? &reason : field == 2 ? &domain : nullptr;
      if (type == wire::WireType::Len && into) {
        if (!info.bytes(*into)) return {};
      } else if (!info.skip(type)) {
        return {};
      }
    }
    // Reasons are only meaningful in the domain that defines them.
    if (domain == kErrorDomain) return std::string(reason);
  }
  return {};
}

}  // namespace sonic::protocol
