// sonic — what a server says about trying again, as the delay before the next attempt on it:
// gRPC's grpc-retry-pushback-ms trailer (gRFC A6) and HTTP's Retry-After (RFC 9110 10.2.3).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "sonic/detail/export.hpp"

namespace sonic::protocol {

/// The delay a grpc-retry-pushback-ms value asks for. gRFC A6: a non-negative integer is the
/// milliseconds before the next attempt; anything else asks that the call not be retried, which
/// is Error::kNoRetry. gRPC's client reads it the same way (metadata_batch.cc: a value that is
/// not an integer becomes negative infinity, and its retry filter does not retry on a negative
/// pushback). Spaces around the number and a leading '+' are accepted, as gRPC's
/// absl::SimpleAtoi accepts them.
SONIC_EXPORT std::chrono::milliseconds parse_retry_pushback(std::string_view value);

/// The delay a Retry-After value asks for at `now`: delay-seconds (decimal digits) or an
/// HTTP-date, in the preferred IMF-fixdate form ("Sun, 06 Nov 1994 08:49:37 GMT") or either
/// obsolete form a recipient must also accept (RFC 850's "Sunday, 06-Nov-94 08:49:37 GMT",
/// asctime's "Sun Nov  6 08:49:37 1994"). A date already past asks for no delay. Nothing for a
/// malformed value, which RFC 9110 leaves to be ignored.
SONIC_EXPORT std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

}  // namespace sonic::protocol
