// gRPC-over-HTTP/2 conventions in headers and trailers: timeouts, status codes, message
// encoding, binary metadata, the mapping of HTTP and HTTP/2 errors to status codes, and the
// machine-readable reason of an error (google.rpc.Status in grpc-status-details-bin).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

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
/// The domain of the reasons sonic's servers give (google.rpc.ErrorInfo.domain).
inline constexpr std::string_view kErrorDomain = "sonic";

/// A google.rpc.Status for `error` whose details hold a google.rpc.ErrorInfo with its reason
/// (empty when the error has none), serialized; the trailer value is its base64.
SONIC_EXPORT std::string encode_status_details(const Error& error);
/// The reason of the first google.rpc.ErrorInfo in a serialized google.rpc.Status; empty when
/// there is none or the bytes do not parse (a detail nobody needs is never an error).
SONIC_EXPORT std::string reason_from_status_details(std::string_view status);

}  // namespace sonic::protocol
