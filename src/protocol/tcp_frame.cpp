// Over 500 lines: the frames' encoder beside their incremental decoder, one format in one place.
#include "tcp_frame.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "grpc_wire.hpp"

namespace sonic::protocol::tcp {

namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'N', 'C', 'T'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kRaw = 0;
constexpr std::uint8_t kZstd = 1;
// Adaptive mode compresses a sample first; tensors that shrink less than this go raw.
constexpr std::size_t kSampleBytes = 64 << 10;
constexpr double kWorthIt = 0.9;

template <typename T>
void put(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff));
  }
}

template <typename T>
T get(const std::uint8_t* in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= std::uint64_t{in[i]} << (8 * i);
  return static_cast<T>(value);
}

std::string header(FrameKind kind, std::uint16_t flags, std::uint64_t id, std::size_t envelope,
                   std::size_t tensors, std::uint64_t section) {
  std::string h(reinterpret_cast<const char*>(kMagic), 4);
  h.push_back(static_cast<char>(kVersion));
  h.push_back(static_cast<char>(kind));
  put<std::uint16_t>(h, flags);
  put<std::uint64_t>(h, id);
  put<std::uint32_t>(h, static_cast<std::uint32_t>(envelope));
  put<std::uint32_t>(h, static_cast<std::uint32_t>(tensors));
  put<std::uint64_t>(h, section);
  return h;
}

std::string record(std::uint8_t codec, std::uint64_t stored, std::uint64_t raw) {
  std::string r(1, static_cast<char>(codec));
  r.append(7, '\0');
  put<std::uint64_t>(r, stored);
  put<std::uint64_t>(r, raw);
  return r;
}

// zstd contexts are costly to create (hundreds of KiB): one of each per thread, reused.
ZSTD_CCtx* compressor() {
  thread_local std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> context(ZSTD_createCCtx(),
                                                                            &ZSTD_freeCCtx);
  return context.get();
}

ZSTD_DCtx* decompressor() {
  thread_local std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(),
                                                                            &ZSTD_freeDCtx);
  return context.get();
}

// Whether zstd at `level` shrinks a sample of the tensor enough to be worth its CPU.
bool compresses(const std::uint8_t* data, std::size_t size, int level) {
  std::size_t sample = std::min(size, kSampleBytes);
  std::string out(ZSTD_compressBound(sample), '\0');
  std::size_t n = ZSTD_compressCCtx(compressor(), out.data(), out.size(), data, sample, level);
  return !ZSTD_isError(n) && static_cast<double>(n) < kWorthIt * static_cast<double>(sample);
}

Error framing(std::string what) {
  return Error(StatusCode::Internal, "malformed frame on the connection: " + std::move(what));
}

}  // namespace

OutgoingFrame encode_frame(FrameKind kind, std::uint64_t id, std::string envelope,
                           const std::vector<NamedTensor>& tensors,
                           std::shared_ptr<const void> keep, const ZstdPolicy& compression,
                           std::uint16_t flags) {
  OutgoingFrame f;
  f.keep = std::move(keep);
  // Records first (their lengths make the header), then lay the pieces out in order.
  struct Stored {
    std::string record;
    const void* data;
    std::size_t size;
  };
  std::vector<Stored> stored;
  stored.reserve(tensors.size());
  std::uint64_t section = 0;
  for (const auto& t : tensors) {
    const std::uint8_t* data = t.tensor.data();
    std::size_t size = t.tensor.byte_size();
    // Adaptive mode samples big tensors first; a small one is its own sample, compressed once.
    bool sampled = compression.adaptive && size > kSampleBytes;
    bool zstd =
        compression.zstd && size > 0 && (!sampled || compresses(data, size, compression.level));
    if (zstd) {
      std::string& out = f.owned.emplace_back(ZSTD_compressBound(size), '\0');
      std::size_t n =
          ZSTD_compressCCtx(compressor(), out.data(), out.size(), data, size, compression.level);
      double limit =
          compression.adaptive ? kWorthIt * static_cast<double>(size) : static_cast<double>(size);
      if (!ZSTD_isError(n) && static_cast<double>(n) < limit) {
        out.resize(n);
        stored.push_back({record(kZstd, n, size), out.data(), n});
        section += kRecordBytes + n;
        f.raw_tensor_bytes += size;
        f.stored_tensor_bytes += n;
        continue;
      }
      f.owned.pop_back();  // did not help enough: send it as it is
    }
    stored.push_back({record(kRaw, size, size), data, size});
    section += kRecordBytes + size;
    f.raw_tensor_bytes += size;
    f.stored_tensor_bytes += size;
  }
  const std::string& h =
      f.owned.emplace_back(header(kind, flags, id, envelope.size(), tensors.size(), section));
  f.pieces.emplace_back(h.data(), h.size());
  const std::string& e = f.owned.emplace_back(std::move(envelope));
  if (!e.empty()) f.pieces.emplace_back(e.data(), e.size());
  for (auto& s : stored) {
    const std::string& r = f.owned.emplace_back(std::move(s.record));
    f.pieces.emplace_back(r.data(), r.size());
    if (s.size) f.pieces.emplace_back(s.data, s.size);
  }
  f.bytes = kHeaderBytes + e.size() + section;
  return f;
}

OutgoingFrame encode_error(std::uint64_t id, const Error& error) {
  std::string envelope;
  put<std::uint32_t>(envelope, static_cast<std::uint32_t>(error.code()));
  const std::string reason = error.reason().substr(0, kMaxReasonBytes);
  const std::size_t room = kMaxErrorBytes - 4 - (reason.empty() ? 0 : reason.size() + 1);
  envelope += error.message().substr(0, std::min(room, error.message().find('\0')));
  if (!reason.empty()) envelope += '\0' + reason;
  return encode_frame(FrameKind::Error, id, std::move(envelope), {}, nullptr, {});
}

OutgoingFrame encode_control(FrameKind kind) { return encode_frame(kind, 0, {}, {}, nullptr, {}); }

OutgoingFrame encode_cancel(std::uint64_t id) {
  return encode_frame(FrameKind::Cancel, id, {}, {}, nullptr, {});
}

OutgoingFrame encode_call(std::uint64_t id, const std::string& method, const std::string& request) {
  std::string envelope(1, static_cast<char>(method.size()));
  envelope += method;
  envelope += request;
  return encode_frame(FrameKind::Call, id, std::move(envelope), {}, nullptr, {});
}

// Each header: u16 name length, the name, u32 value length, the value.
Result<OutgoingFrame> encode_metadata(const Headers& headers) {
  std::string envelope;
  for (const auto& [name, value] : headers) {
    if (name.size() + value.size() + 6 > kMaxErrorBytes - envelope.size()) {
      return Error(StatusCode::InvalidArgument, "headers of more than " +
                                                    std::to_string(kMaxErrorBytes) +
                                                    " bytes do not fit a metadata frame");
    }
    put<std::uint16_t>(envelope, static_cast<std::uint16_t>(name.size()));
    envelope += name;
    put<std::uint32_t>(envelope, static_cast<std::uint32_t>(value.size()));
    envelope += value;
  }
  return encode_frame(FrameKind::Metadata, 0, std::move(envelope), {}, nullptr, {});
}

Result<Headers> decode_metadata(const Frame& frame) {
  const std::string& e = frame.envelope;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(e.data());
  const Error malformed(StatusCode::InvalidArgument, "malformed metadata frame");
  Headers headers;
  std::size_t at = 0;
  while (at < e.size()) {
    if (e.size() - at < 2) return malformed;
    const std::size_t name_bytes = get<std::uint16_t>(bytes + at);
    at += 2;
    if (e.size() - at < name_bytes + 4) return malformed;
    std::string name = e.substr(at, name_bytes);
    at += name_bytes;
    const std::size_t value_bytes = get<std::uint32_t>(bytes + at);
    at += 4;
    if (e.size() - at < value_bytes) return malformed;
    headers.emplace_back(std::move(name), e.substr(at, value_bytes));
    at += value_bytes;
  }
  return headers;
}

Result<std::pair<std::string, std::string>> decode_call(const Frame& frame) {
  if (frame.envelope.empty() ||
      frame.envelope.size() < 1u + static_cast<std::uint8_t>(frame.envelope[0])) {
    return Error(StatusCode::InvalidArgument, "call frame without a method name");
  }
  std::size_t length = static_cast<std::uint8_t>(frame.envelope[0]);
  return std::make_pair(frame.envelope.substr(1, length), frame.envelope.substr(1 + length));
}

Error decode_error(const Frame& frame) {
  if (frame.envelope.size() < 4) return framing("error frame without a status code");
  auto code = get<std::uint32_t>(reinterpret_cast<const std::uint8_t*>(frame.envelope.data()));
  if (code == 0 || code > 16)
    return framing("error frame with status code " + std::to_string(code));
  std::string message = frame.envelope.substr(4);
  // A reason follows a NUL (sonic 0.3): what an older peer shows as the message's end.
  const std::size_t nul = message.find('\0');
  if (nul == std::string::npos) return Error(static_cast<StatusCode>(code), std::move(message));
  std::string reason = message.substr(nul + 1, kMaxReasonBytes);
  message.resize(nul);
  return Error(static_cast<StatusCode>(code), std::move(message), std::move(reason));
}

FrameReader::~FrameReader() { abandon(); }

void FrameReader::take(std::size_t bytes) noexcept {
  held_ += bytes;
  unreported_ += bytes;
}

void FrameReader::report_arriving() noexcept {
  if (account_ && unreported_ > 0) account_->arriving(unreported_);
  unreported_ = 0;
}

void FrameReader::settle() noexcept {
  if (account_ && admitted_ + deferred_ > 0) account_->settle(admitted_ + deferred_);
  admitted_ = 0;
  deferred_ = 0;
}

void FrameReader::abandon() noexcept {
  if (stage_ == Stage::Broken) return;
  if (account_ && !kept_.empty()) {
    account_->arrived(kept_.size());
    account_->released(kept_.size());
  }
  kept_.clear();
  settle();
  if (account_ && held_ + unreported_ > 0) {
    // A tensor being received reports its whole stored length released when it is freed:
    // count the part that never came as arriving first, so that the account balances.
    if (stage_ == Stage::Stored && buffer_) take(static_cast<std::size_t>(stored_ - have_));
    report_arriving();
    account_->arrived(held_);
    account_->released(frame_.envelope.size());
  }
  held_ = 0;
  unreported_ = 0;
  buffer_.reset();
  frame_ = Frame{};
  stage_ = Stage::Broken;
}

Result<void> FrameReader::feed(const std::uint8_t* data, std::size_t size) {
  if (stage_ == Stage::Broken) return framing("the stream failed before");
  auto result = consume(data, size);
  report_arriving();
  if (!result) abandon();
  return result;
}

Result<void> FrameReader::consume(const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    switch (stage_) {
      case Stage::Admission: {
        // Kept until the frame is admitted; the caller reads no more meanwhile.
        kept_.append(reinterpret_cast<const char*>(data), size);
        if (account_) account_->arriving(size);
        return {};
      }
      case Stage::Header: {
        std::size_t n = std::min(size, kHeaderBytes - have_);
        std::memcpy(header_ + have_, data, n);
        have_ += n, data += n, size -= n;
        if (have_ == kHeaderBytes) {
          if (auto ok = start_frame(); !ok) return ok;
        }
        break;
      }
      case Stage::Envelope: {
        std::size_t n = std::min<std::size_t>(size, envelope_bytes_ - have_);
        frame_.envelope.append(reinterpret_cast<const char*>(data), n);
        take(n);
        have_ += n, data += n, size -= n;
        if (have_ == envelope_bytes_) {
          if (auto ok = start_record(); !ok) return ok;
        }
        break;
      }
      case Stage::RecordHeader: {
        std::size_t n = std::min(size, kRecordBytes - have_);
        std::memcpy(record_ + have_, data, n);
        have_ += n, data += n, size -= n;
        if (have_ == kRecordBytes) {
          if (auto ok = finish_record(); !ok) return ok;
        }
        break;
      }
      case Stage::Stored: {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size, stored_ - have_));
        std::memcpy(buffer_.get() + have_, data, n);
        take(n);
        have_ += n, data += n, size -= n;
        if (have_ == stored_) {
          if (auto ok = finish_stored(); !ok) return ok;
        }
        break;
      }
      case Stage::Skip: {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size, skip_left_));
        skip_left_ -= n, data += n, size -= n;
        if (skip_left_ == 0) {
          stage_ = Stage::Header;
          have_ = 0;
        }
        break;
      }
      case Stage::Broken: return framing("the stream failed before");
    }
  }
  return {};
}

namespace {

// Decodes one zstd tensor of `raw` bytes into a buffer of its own.
Result<std::shared_ptr<std::uint8_t>> decode_zstd(const std::uint8_t* stored, std::size_t size,
                                                  std::size_t raw, std::size_t index,
                                                  const std::shared_ptr<ReceiveAccount>& account) {
  std::shared_ptr<std::uint8_t> out;
  try {
    out = allocate_tensor_buffer(raw, account);
  } catch (const std::bad_alloc&) {
    return Error(StatusCode::ResourceExhausted,
                 "cannot allocate " + std::to_string(raw) + " bytes for a received tensor");
  }
  if (account) account->arriving(raw);
  std::size_t got = ZSTD_decompressDCtx(decompressor(), out.get(), raw, stored, size);
  if (account) account->arrived(raw);
  if (ZSTD_isError(got) || got != raw) {
    return Error(StatusCode::InvalidArgument,
                 "corrupt zstd data in tensor " + std::to_string(index) +
                     (ZSTD_isError(got) ? std::string(": ") + ZSTD_getErrorName(got)
                                        : std::string(": wrong decoded size")));
  }
  return out;
}

}  // namespace

Result<void> decompress(Frame& frame, const std::shared_ptr<ReceiveAccount>& account) {
  for (const auto& c : frame.compressed) {
    auto& tensor = frame.tensors[c.index];
    auto out = decode_zstd(tensor.data.get(), tensor.size, c.raw_bytes, c.index, account);
    if (!out) {
      frame.promised.settle();
      return out.error();
    }
    tensor = {std::move(*out), c.raw_bytes};  // the stored bytes are released now
  }
  frame.compressed.clear();
  frame.promised.settle();
  return {};
}

Result<void> FrameReader::finish_stored() {
  auto tensor = buffer_;
  if (codec_ == kZstd) {
    // The size the zstd frame declares must be the record's, before anything is allocated for
    // it: a frame that lies about its size is an error, not a huge buffer.
    auto declared = ZSTD_getFrameContentSize(buffer_.get(), stored_);
    if (declared != raw_) {
      return framing("zstd tensor " + std::to_string(frame_.tensors.size()) +
                     " does not declare its raw length of " + std::to_string(raw_) + " bytes");
    }
    if (defer_decompression_) {
      // Handed over compressed; its decoded size stays promised until the caller decodes it.
      frame_.compressed.push_back({frame_.tensors.size(), static_cast<std::size_t>(raw_)});
      if (account_) {
        admitted_ -= static_cast<std::size_t>(raw_);
        deferred_ += static_cast<std::size_t>(raw_);
      }
      frame_.tensors.push_back({std::move(tensor), static_cast<std::size_t>(stored_)});
      buffer_.reset();
      return start_record();
    }
    // Decoded here: the stored bytes are freed right after, so their part of the frame has
    // arrived.
    auto out = decode_zstd(buffer_.get(), static_cast<std::size_t>(stored_),
                           static_cast<std::size_t>(raw_), frame_.tensors.size(), account_);
    if (!out) {
      if (out.error().code() == StatusCode::ResourceExhausted) {
        skip_left_ = section_left_;
        refuse(out.error());
        return {};
      }
      return framing(out.error().message());
    }
    report_arriving();
    if (account_) account_->arrived(static_cast<std::size_t>(stored_));
    held_ -= static_cast<std::size_t>(stored_);
    tensor = std::move(*out);
  }
  frame_.tensors.push_back({std::move(tensor), static_cast<std::size_t>(raw_)});
  buffer_.reset();
  return start_record();
}

Result<void> FrameReader::start_frame() {
  if (std::memcmp(header_, kMagic, 4) != 0) return framing("bad magic (not a sonic TCP peer?)");
  if (header_[4] != kVersion) {
    return framing("unsupported version " + std::to_string(header_[4]) + " (this is version 1)");
  }
  std::uint8_t kind = header_[5];
  if (kind < 1 || kind > 9) return framing("unknown frame kind " + std::to_string(kind));
  auto flags = get<std::uint16_t>(header_ + 6);
  if (flags & ~(kind == static_cast<std::uint8_t>(FrameKind::Request) ? kCompressResponse : 0)) {
    return framing("unknown flags " + std::to_string(flags));
  }
  frame_ = Frame{};
  frame_.kind = static_cast<FrameKind>(kind);
  frame_.flags = flags;
  frame_.id = get<std::uint64_t>(header_ + 8);
  envelope_bytes_ = get<std::uint32_t>(header_ + 16);
  tensors_left_ = get<std::uint32_t>(header_ + 20);
  section_left_ = get<std::uint64_t>(header_ + 24);
  raw_total_ = 0;
  bool data_frame = frame_.kind == FrameKind::Request || frame_.kind == FrameKind::Response;
  const bool small = frame_.kind == FrameKind::Error || frame_.kind == FrameKind::Metadata;
  if (envelope_bytes_ > (small ? kMaxErrorBytes : kMaxEnvelopeBytes)) {
    return framing("envelope of " + std::to_string(envelope_bytes_) + " bytes is over the limit");
  }
  if (frame_.kind == FrameKind::Cancel && (envelope_bytes_ != 0 || section_left_ != 0)) {
    return framing("a cancel frame with contents");
  }
  if (tensors_left_ > (data_frame ? kMaxTensors : 0)) {
    return framing(std::to_string(tensors_left_) + " tensors in a frame that allows fewer");
  }
  if (section_left_ < std::uint64_t{tensors_left_} * kRecordBytes) {
    return framing("tensor section of " + std::to_string(section_left_) + " bytes for " +
                   std::to_string(tensors_left_) + " tensors");
  }
  have_ = 0;
  if (section_left_ - std::uint64_t{tensors_left_} * kRecordBytes > max_message_bytes_ ||
      envelope_bytes_ > max_message_bytes_) {
    if (!data_frame) return framing("a frame of its kind with a tensor section");
    // Well formed, too big to take: skip its bytes and say so for its id.
    skip_left_ = envelope_bytes_ + section_left_;
    refuse(Error(StatusCode::ResourceExhausted,
                 "frame of " + std::to_string(envelope_bytes_ + section_left_) +
                     " bytes exceeds the maximum message size of " +
                     std::to_string(max_message_bytes_) + " bytes"));
    return {};
  }
  if (account_ && data_frame) {
    const std::size_t declared =
        envelope_bytes_ +
        static_cast<std::size_t>(section_left_ - std::uint64_t{tensors_left_} * kRecordBytes);
    if (declared > 0) {
      if (!account_->admit(declared)) {
        asking_ = declared;
        stage_ = Stage::Admission;
        return {};
      }
      admitted_ = declared;
    }
  }
  return start_body();
}

Result<void> FrameReader::start_body() {
  frame_.envelope.reserve(std::min<std::size_t>(envelope_bytes_, 4096));
  frame_.tensors.reserve(tensors_left_);
  have_ = 0;
  stage_ = Stage::Envelope;
  if (envelope_bytes_ == 0) return start_record();
  return {};
}

Result<bool> FrameReader::retry_admission() {
  if (stage_ != Stage::Admission) return true;
  if (!account_->admit(asking_)) return false;
  admitted_ = asking_;
  if (auto ok = start_body(); !ok) return ok.error();
  // The kept bytes leave the waiting room for the frame itself.
  std::string kept = std::move(kept_);
  kept_.clear();
  account_->arrived(kept.size());
  account_->released(kept.size());
  auto fed = feed(reinterpret_cast<const std::uint8_t*>(kept.data()), kept.size());
  if (!fed) return fed.error();
  return true;
}

Result<void> FrameReader::start_record() {
  have_ = 0;
  if (tensors_left_ == 0) {
    if (section_left_ != 0) return framing("tensor section longer than its records");
    finish_frame();
    return {};
  }
  --tensors_left_;
  stage_ = Stage::RecordHeader;
  return {};
}

Result<void> FrameReader::finish_record() {
  codec_ = record_[0];
  for (std::size_t i = 1; i < 8; ++i) {
    if (record_[i] != 0) return framing("reserved bytes of a tensor record are not zero");
  }
  stored_ = get<std::uint64_t>(record_ + 8);
  raw_ = get<std::uint64_t>(record_ + 16);
  if (codec_ != kRaw && codec_ != kZstd) return framing("unknown codec " + std::to_string(codec_));
  if (codec_ == kRaw && stored_ != raw_) return framing("raw tensor whose lengths differ");
  if (codec_ == kZstd && stored_ > ZSTD_compressBound(static_cast<std::size_t>(
                                       std::min<std::uint64_t>(raw_, max_message_bytes_)))) {
    return framing("zstd tensor larger than any compression of its raw length");
  }
  if (kRecordBytes + stored_ > section_left_) return framing("tensor runs past its section");
  section_left_ -= kRecordBytes + stored_;
  have_ = 0;
  // What the tensors decode to is capped before anything is allocated or decompressed.
  if (raw_ > max_message_bytes_ - std::min<std::uint64_t>(raw_total_, max_message_bytes_)) {
    skip_left_ = stored_ + section_left_;
    refuse(
        Error(StatusCode::ResourceExhausted, "frame tensors exceed the maximum message size of " +
                                                 std::to_string(max_message_bytes_) + " bytes"));
    return {};
  }
  raw_total_ += raw_;
  if (codec_ == kZstd && account_ && raw_ > 0) {
    // What it decodes to comes on top of the stored bytes the frame was admitted with: it is
    // admitted too, or the frame is refused (a frame half-read does not wait).
    if (!account_->admit(static_cast<std::size_t>(raw_))) {
      skip_left_ = stored_ + section_left_;
      refuse(Error(StatusCode::ResourceExhausted,
                   "the server's memory is full: a zstd tensor of " + std::to_string(raw_) +
                       " bytes cannot be decoded now (try again later)"));
      return {};
    }
    admitted_ += static_cast<std::size_t>(raw_);
  }
  if (stored_ == 0) {
    if (raw_ != 0) return framing("empty zstd data for a non-empty tensor");
    frame_.tensors.push_back({nullptr, 0});
    return start_record();
  }
  try {
    buffer_ = allocate_tensor_buffer(static_cast<std::size_t>(stored_), account_);
  } catch (const std::bad_alloc&) {
    skip_left_ = stored_ + section_left_;
    refuse(Error(StatusCode::ResourceExhausted,
                 "cannot allocate " + std::to_string(stored_) + " bytes for a received tensor"));
    return {};
  }
  stage_ = Stage::Stored;
  return {};
}

void FrameReader::refuse(Error why) {
  if (stage_ == Stage::Stored && buffer_) {
    // Bytes of the tensor under way that will not be stored are skipped instead.
    skip_left_ += stored_ - have_;
    take(static_cast<std::size_t>(stored_ - have_));  // its buffer reports all of it released
  }
  report_arriving();
  if (account_) {
    account_->arrived(held_);
    account_->released(frame_.envelope.size());
  }
  settle();
  held_ = 0;
  buffer_.reset();
  Frame refused;
  refused.kind = frame_.kind;
  refused.flags = frame_.flags;
  refused.id = frame_.id;
  refused.refused = std::move(why);
  frame_ = Frame{};
  frames_.push_back(std::move(refused));
  have_ = 0;
  stage_ = skip_left_ > 0 ? Stage::Skip : Stage::Header;
}

void FrameReader::finish_frame() {
  if (deferred_ > 0) {
    frame_.promised = FramePromise(account_, deferred_);  // the frame's taker settles it
    deferred_ = 0;
  }
  report_arriving();
  if (account_) {
    // The envelope is decoded and dropped as soon as the frame is taken: released now.
    account_->arrived(held_);
    account_->released(frame_.envelope.size());
  }
  settle();
  held_ = 0;
  frames_.push_back(std::move(frame_));
  frame_ = Frame{};
  stage_ = Stage::Header;
  have_ = 0;
}

}  // namespace sonic::protocol::tcp
