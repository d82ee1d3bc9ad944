// gRPC message compression (PROTOCOL-HTTP2: the Compressed-Flag byte of a message, the
// grpc-encoding header naming its algorithm, grpc-accept-encoding naming those a peer takes).
// gRPC's "deflate" is a zlib stream and its "gzip" a gzip one, as gRPC core makes them
// (deflateInit2 with window bits 15, plus 16 for gzip), and a message that would not get
// smaller goes uncompressed, as gRPC core sends it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/compression.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

class OutgoingBody;

/// The zlib level gRPC core compresses at (Z_DEFAULT_COMPRESSION).
inline constexpr int kDefaultLevel = 6;
/// The most deflate inflates one byte to (zlib's technical details: 1032:1), so a compressed
/// message of N bytes holds at most about 1032 N.
inline constexpr std::size_t kMaxInflateRatio = 1032;
/// What a compressed message may inflate to whatever its ratio (see inflate_bound()): an
/// attention mask or a one-hot batch of up to a megabyte compresses 400 to 600 times.
inline constexpr std::size_t kInflateFloorBytes = std::size_t{1} << 20;

/// What a compressed message of `compressed` bytes may inflate to: `ratio` times its size
/// (deflate's kMaxInflateRatio at most), or kInflateFloorBytes whatever its ratio (within
/// deflate's), and never past `max_bytes`.
SONIC_EXPORT std::size_t inflate_bound(std::size_t compressed, std::size_t ratio,
                                       std::size_t max_bytes) noexcept;
/// The error for a message of `compressed` bytes that inflates past inflate_bound(): past
/// `max_bytes`, RESOURCE_EXHAUSTED as any message too large; past the ratio, INVALID_ARGUMENT
/// naming it (as Triton answers a body that inflates past --http-max-input-size).
SONIC_EXPORT Error inflated_past_bound(std::size_t compressed, std::size_t ratio,
                                       std::size_t max_bytes);

/// The grpc-encoding name of `compression`.
SONIC_EXPORT std::string_view encoding_name(Compression compression) noexcept;
/// What a grpc-encoding value names ("identity" is None); nullopt for an unknown one.
SONIC_EXPORT std::optional<Compression> parse_encoding(std::string_view name) noexcept;
/// Whether a grpc-accept-encoding value (a comma-separated list) lists `compression`.
SONIC_EXPORT bool accepts(std::string_view accept_encoding, Compression compression) noexcept;

/// Inflates one deflate or gzip stream as its bytes arrive. Not thread-safe.
class SONIC_EXPORT Inflater {
 public:
  /// Throws std::bad_alloc when zlib cannot have its state.
  explicit Inflater(Compression compression);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  /// Inflates bytes of `in` (advanced past those taken) into `out`, at most `out_size` of
  /// them; returns how many it wrote. Stops at the end of the stream. INTERNAL for bytes that
  /// are not a stream of its kind, or that follow its end.
  Result<std::size_t> inflate(const std::uint8_t*& in, std::size_t& in_size, std::uint8_t* out,
                              std::size_t out_size);
  /// Whether the stream ended (its checksum checked).
  bool finished() const noexcept { return finished_; }

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool finished_ = false;
};

/// `pieces`, in order, compressed as one deflate or gzip stream at zlib level `level` (an HTTP
/// body's Content-Encoding). Runs on the calling thread; throws std::bad_alloc when zlib cannot
/// have its memory.
SONIC_EXPORT std::string compress_bytes(const std::vector<std::string_view>& pieces,
                                        Compression compression, int level);

/// `bytes`, one whole deflate or gzip stream, inflated: at most `limit` bytes, grown as they
/// come (RESOURCE_EXHAUSTED past it); INTERNAL for bytes that are not one whole stream. For a
/// request, see inflate_bound() and server/src/paced_inflate.hpp.
SONIC_EXPORT Result<std::string> inflate_bytes(std::string_view bytes, Compression compression,
                                               std::size_t limit);

/// `message`, a finished body, compressed with `compression` at zlib level `level` (1 to 9)
/// into a new finished body flagged compressed that keeps nothing of `message`; null when it
/// would not be smaller. Runs on the calling thread.
SONIC_EXPORT std::shared_ptr<OutgoingBody> compress_message(const OutgoingBody& message,
                                                            Compression compression, int level);

}  // namespace sonic::protocol
