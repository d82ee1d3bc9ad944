#include "compression.hpp"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "grpc_wire.hpp"

namespace sonic::protocol {

namespace {

constexpr int kWindowBits = 15;  // gRPC core's, and zlib's largest
constexpr int kGzipWindowBits = kWindowBits + 16;
// zlib counts in uInt: larger runs go in pieces.
constexpr std::size_t kMaxRun = std::numeric_limits<uInt>::max();

int window_bits(Compression compression) {
  return compression == Compression::Gzip ? kGzipWindowBits : kWindowBits;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view encoding_name(Compression compression) noexcept {
  switch (compression) {
    case Compression::Deflate: return "deflate";
    case Compression::Gzip: return "gzip";
    case Compression::None: break;
  }
  return "identity";
}

std::optional<Compression> parse_encoding(std::string_view name) noexcept {
  name = trim(name);
  if (name == "identity") return Compression::None;
  if (name == "deflate") return Compression::Deflate;
  if (name == "gzip") return Compression::Gzip;
  return std::nullopt;
}

bool accepts(std::string_view accept_encoding, Compression compression) noexcept {
  const std::string_view wanted = encoding_name(compression);
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    if (trim(accept_encoding.substr(0, comma)) == wanted) return true;
    if (comma == std::string_view::npos) break;
    accept_encoding.remove_prefix(comma + 1);
  }
  return false;
}

std::size_t inflate_bound(std::size_t compressed, std::size_t ratio,
                          std::size_t max_bytes) noexcept {
  const std::size_t most = std::numeric_limits<std::size_t>::max() / kMaxInflateRatio;
  compressed = std::min(compressed, most);
  const std::size_t by_ratio = compressed * std::min(ratio, kMaxInflateRatio);
  const std::size_t floor = std::min(kInflateFloorBytes, compressed * kMaxInflateRatio);
  return std::min(max_bytes, std::max(by_ratio, floor));
}

Error inflated_past_bound(std::size_t compressed, std::size_t ratio, std::size_t max_bytes) {
  const std::size_t bound = inflate_bound(compressed, ratio, max_bytes);
  if (bound == max_bytes) {
    return Error(StatusCode::ResourceExhausted, "a compressed message inflates past the limit of " +
                                                    std::to_string(max_bytes) + " bytes");
  }
  return Error(StatusCode::InvalidArgument,
               "a compressed message of " + std::to_string(compressed) + " bytes inflates past " +
                   std::to_string(bound) + " bytes: more than " + std::to_string(ratio) +
                   " times its size, the server's limit (--max-inflate-ratio)");
}

struct Inflater::Stream {
  z_stream z{};
};

Inflater::Inflater(Compression compression) : stream_(std::make_unique<Stream>()) {
  if (inflateInit2(&stream_->z, window_bits(compression)) != Z_OK) throw std::bad_alloc();
}

Inflater::~Inflater() { inflateEnd(&stream_->z); }

Result<std::size_t> Inflater::inflate(const std::uint8_t*& in, std::size_t& in_size,
                                      std::uint8_t* out, std::size_t out_size) {
  z_stream& z = stream_->z;
  std::size_t written = 0;
  while (written < out_size && !finished_) {
    const std::size_t in_run = std::min(in_size, kMaxRun);
    const std::size_t out_run = std::min(out_size - written, kMaxRun);
    z.next_in = const_cast<Bytef*>(in);
    z.avail_in = static_cast<uInt>(in_run);
    z.next_out = out + written;
    z.avail_out = static_cast<uInt>(out_run);
    const int rv = ::inflate(&z, Z_NO_FLUSH);
    const std::size_t taken = in_run - z.avail_in;
    const std::size_t produced = out_run - z.avail_out;
    in += taken;
    in_size -= taken;
    written += produced;
    if (rv == Z_STREAM_END) {
      finished_ = true;
    } else if (rv == Z_BUF_ERROR || (taken == 0 && produced == 0)) {
      break;  // it needs more input than there is
    } else if (rv != Z_OK) {
      return Error(StatusCode::Internal,
                   std::string("invalid compressed message: ") + (z.msg ? z.msg : "zlib error"));
    }
  }
  if (finished_ && in_size > 0) {
    return Error(StatusCode::Internal, "invalid compressed message: bytes after its end");
  }
  return written;
}

std::string compress_bytes(const std::vector<std::string_view>& pieces, Compression compression,
                           int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, window_bits(compression), 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::bad_alloc();
  }
  std::size_t length = 0;
  for (auto piece : pieces) length += piece.size();
  std::string out(deflateBound(&z, static_cast<uLong>(std::min(length, kMaxRun))), '\0');
  std::size_t produced = 0;
  bool failed = false;
  for (std::size_t i = 0; i < pieces.size() && !failed; ++i) {
    const auto* data = reinterpret_cast<const Bytef*>(pieces[i].data());
    std::size_t size = pieces[i].size();
    const bool last = i + 1 == pieces.size();
    do {
      const std::size_t run = std::min(size, kMaxRun);
      z.next_in = const_cast<Bytef*>(data);
      z.avail_in = static_cast<uInt>(run);
      do {
        if (produced == out.size()) out.resize(out.size() * 2);
        z.next_out = reinterpret_cast<Bytef*>(&out[produced]);
        z.avail_out = static_cast<uInt>(std::min(out.size() - produced, kMaxRun));
        const std::size_t room = z.avail_out;
        const int rv = deflate(&z, last && run == size ? Z_FINISH : Z_NO_FLUSH);
        produced += room - z.avail_out;
        if (rv == Z_STREAM_END) break;
        if (rv != Z_OK && rv != Z_BUF_ERROR) failed = true;
      } while (!failed && (z.avail_in > 0 || z.avail_out == 0));
      data += run - z.avail_in;
      size -= run - z.avail_in;
    } while (!failed && size > 0);
  }
  deflateEnd(&z);
  if (failed) throw std::bad_alloc();  // deflate fails only for want of memory
  out.resize(produced);
  return out;
}

Result<std::string> inflate_bytes(std::string_view bytes, Compression compression,
                                  std::size_t limit) {
  Inflater inflater(compression);
  const auto* in = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t in_size = bytes.size();
  // Grown as the stream inflates, not sized by the ratio it could reach: a bomb costs what it
  // really inflates to, up to `limit`.
  std::string out(std::min(limit, std::max<std::size_t>(4 * bytes.size(), 4096)), '\0');
  std::size_t produced = 0;
  while (!inflater.finished()) {
    if (produced == out.size()) {
      if (out.size() == limit) {
        return Error(
            StatusCode::ResourceExhausted,
            "a compressed body inflates past the limit of " + std::to_string(limit) + " bytes");
      }
      out.resize(std::min(limit, out.size() * 2));
    }
    auto n = inflater.inflate(in, in_size, reinterpret_cast<std::uint8_t*>(&out[produced]),
                              out.size() - produced);
    if (!n) return n.error();
    produced += *n;
    if (*n == 0 && !inflater.finished() && produced < out.size()) {
      return Error(StatusCode::Internal, "invalid compressed message: it ends before its end");
    }
  }
  if (in_size != 0) {
    return Error(StatusCode::Internal, "invalid compressed message: bytes after its end");
  }
  out.resize(produced);
  return out;
}

std::shared_ptr<OutgoingBody> compress_message(const OutgoingBody& message, Compression compression,
                                               int level) {
  if (compression == Compression::None || message.size() <= kPrefixBytes) return nullptr;
  const std::size_t length = message.size() - kPrefixBytes;
  std::vector<std::string_view> pieces;
  std::size_t skip = kPrefixBytes;  // the message's own prefix is not compressed
  for (const auto& piece : message.pieces()) {
    const std::size_t skipped = std::min(skip, piece.size);
    skip -= skipped;
    if (piece.size == skipped) continue;
    pieces.emplace_back(reinterpret_cast<const char*>(message.piece_data(piece)) + skipped,
                        piece.size - skipped);
  }
  const std::string out = compress_bytes(pieces, compression, level);
  if (out.size() >= length) return nullptr;  // gRPC then sends it as it is
  auto body = std::make_shared<OutgoingBody>();
  body->append_owned(out.data(), out.size());
  if (!body->finish(0xffffffffu, true)) return nullptr;
  return body;
}

}  // namespace sonic::protocol
