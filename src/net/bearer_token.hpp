// The "authorization" header of ClientOptions::bearer_token, for the transports that send it.
#pragma once

#include <functional>
#include <string>

#include "sonic/error.hpp"

namespace sonic::net {

inline constexpr const char* kAuthorization = "authorization";

/// "Bearer TOKEN" from `token` (asked now), or why not: its own error, or UNAUTHENTICATED for
/// an empty token or one with bytes other than visible ASCII (RFC 6750's b64token is a subset;
/// anything else could split or corrupt the header).
inline Result<std::string> bearer_authorization(const std::function<Result<std::string>()>& token) {
  auto value = token();
  if (!value) return value.error();
  if (value->empty()) return Error(StatusCode::Unauthenticated, "the bearer token is empty");
  for (unsigned char c : *value) {
    if (c < 0x21 || c > 0x7e) {
      return Error(StatusCode::Unauthenticated,
                   "the bearer token has bytes a header cannot carry (visible ASCII only)");
    }
  }
  return "Bearer " + *value;
}

}  // namespace sonic::net
