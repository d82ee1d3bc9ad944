// The parts of an HTTP/1.1 message head (RFC 9112) that sonic-server's HTTP port and the
// http:// client transport read the same way: header fields and length values. Strict on
// purpose: a length read two ways is how requests get smuggled past proxies.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// Header fields by lower-cased name; a repeated name keeps its last value.
using HttpFields = std::map<std::string, std::string>;

/// A length header's value (Content-Length, Inference-Header-Content-Length): decimal digits
/// only, no sign or spaces, at most 19 of them; nothing for anything else.
SONIC_EXPORT std::optional<std::size_t> parse_http_length(std::string_view value);

/// Reads the header field lines of a head (each "name: value" ending in CRLF, up to and
/// without the blank line) into `fields`, names lower-cased and values trimmed. Returns why it
/// refused them, or an empty string: a line without a colon, or Content-Length fields that
/// differ (the body's end would be in doubt, RFC 9112 6.3).
SONIC_EXPORT std::string parse_http_fields(std::string_view lines, HttpFields& fields);

/// `text` in ASCII lower case.
SONIC_EXPORT std::string ascii_lower(std::string_view text);

}  // namespace sonic::net
