#include "grpc_metadata.hpp"

#include <algorithm>

#include "wire.hpp"

namespace sonic::protocol {

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
