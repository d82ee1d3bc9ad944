// How an inference answer is compressed, chosen here for every port: by what its client
// accepts (gRPC's grpc-accept-encoding, HTTP's Accept-Encoding, a TCP frame's flag) and the
// port's setting. The answer is compressed where the model ran, with its encoding.
#pragma once

#include <string_view>

#include "protocol/compression.hpp"
#include "protocol/tcp_frame.hpp"
#include "sonic/server.hpp"

namespace sonic::server {

/// The encoding of an answer for a client that accepts `accept_encoding` at `level`, as gRPC
/// core chooses for a compression level (grpc_compression_algorithm_for_level: gzip and deflate
/// ranked in that order; low takes the first the client accepts, medium and high the last).
inline Compression reply_compression(ServerOptions::ResponseCompression level,
                                     std::string_view accept_encoding) {
  using Level = ServerOptions::ResponseCompression;
  if (level == Level::None) return Compression::None;
  const bool gzip = protocol::accepts(accept_encoding, Compression::Gzip);
  const bool deflate = protocol::accepts(accept_encoding, Compression::Deflate);
  if (!gzip && !deflate) return Compression::None;
  if (level == Level::Low) return gzip ? Compression::Gzip : Compression::Deflate;
  return deflate ? Compression::Deflate : Compression::Gzip;
}

/// The level of each port. gRPC: ServerOptions::infer_response_compression (Triton's
/// --grpc-infer-response-compression-level). HTTP: whenever the client accepts it, gzip first,
/// as Triton's HTTP frontend answers, so low:
inline constexpr ServerOptions::ResponseCompression kHttpReplyLevel =
    ServerOptions::ResponseCompression::Low;
/// TCP: zstd at ServerOptions::zstd_level for a request frame that asks for it
/// (protocol::tcp::kCompressResponse).
inline protocol::tcp::ZstdPolicy tcp_reply_compression(const ServerOptions& options, bool asked) {
  return {asked, options.zstd_level, true};
}

}  // namespace sonic::server
