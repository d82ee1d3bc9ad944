// gRPC-over-HTTP/2 conventions: timeouts, status mapping, message encoding in trailers.
#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sonic/error.hpp"

namespace sonic::grpc {

inline constexpr std::string_view kServicePrefix = "/inference.GRPCInferenceService/";

/// A grpc-timeout header value: at most 8 digits and a unit, rounded up so that the server
/// never sees a shorter limit than the client has.
inline std::string format_grpc_timeout(std::chrono::nanoseconds remaining) {
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

/// Parses a grpc-timeout header value; nothing when malformed.
inline std::optional<std::chrono::nanoseconds> parse_grpc_timeout(std::string_view text) {
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

/// The code of a grpc-status header: decimal digits; anything else (empty included) is UNKNOWN.
inline StatusCode parse_grpc_status(std::string_view text) {
  if (text.empty() || text.size() > 3) return StatusCode::Unknown;
  std::int64_t code = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return StatusCode::Unknown;
    code = code * 10 + (c - '0');
  }
  return status_code_from_int(code);
}

/// grpc-message is percent-encoded: bytes outside printable ASCII and '%' itself.
inline std::string percent_encode(std::string_view text) {
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

inline std::string percent_decode(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && digit(text[i + 1]) >= 0 &&
        digit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(digit(text[i + 1]) * 16 + digit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);  // malformed escapes pass through, as gRPC specifies
    }
  }
  return out;
}

/// Binary ("-bin") metadata values travel base64-encoded (standard alphabet, padded).
inline std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? alphabet[n & 63] : '=');
  }
  return out;
}

/// The gRPC code for a non-200 HTTP status (gRPC's HTTP-to-status mapping).
inline StatusCode status_from_http(int http_status) {
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

/// The outcome of a stream reset by the peer with an HTTP/2 error code.
inline Error error_from_reset(std::uint32_t h2_error) {
  switch (h2_error) {
    case NGHTTP2_REFUSED_STREAM:
      return Error(StatusCode::Unavailable,
                   "server refused the stream before processing it; safe to retry");
    case NGHTTP2_CANCEL: return Error(StatusCode::Cancelled, "stream cancelled by the server");
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return Error(StatusCode::ResourceExhausted, "server asked to slow down (ENHANCE_YOUR_CALM)");
    case NGHTTP2_INADEQUATE_SECURITY:
      return Error(StatusCode::PermissionDenied, "server requires stronger transport security");
    default:
      return Error(StatusCode::Internal,
                   std::string("stream reset by the server: ") + nghttp2_http2_strerror(h2_error));
  }
}

}  // namespace sonic::grpc
