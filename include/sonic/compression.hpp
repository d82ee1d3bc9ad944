// sonic — gRPC message compression (grpc-encoding), as Triton's clients offer it.
#pragma once

#include <cstdint>

namespace sonic {

/// How a request's message is compressed on the wire. Compression costs CPU at both ends and
/// pays only on slow links with compressible tensors; responses come compressed only when the
/// server chooses to (Triton: --grpc-infer-response-compression-level), and sonic always
/// accepts them.
enum class Compression : std::uint8_t {
  None,     ///< as it is (gRPC's "identity")
  Deflate,  ///< gRPC's "deflate": a zlib stream (RFC 1950)
  Gzip,     ///< gRPC's "gzip" (RFC 1952)
};

}  // namespace sonic
