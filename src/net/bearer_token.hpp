// The "authorization" header of ClientOptions::bearer_token, for the transports that send it.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

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

/// ClientOptions::bearer_token as every client transport sends it: asked for each call, so that
/// a rotated token is picked up by the next one. Thread-safe as far as the token function is
/// (the transports call it on the caller's thread).
class Credentials {
 public:
  /// `max_bytes`: the longest "Bearer TOKEN" the transport can carry.
  explicit Credentials(std::function<Result<std::string>()> token,
                       std::size_t max_bytes = std::numeric_limits<std::size_t>::max())
      : token_(std::move(token)), max_bytes_(max_bytes) {}

  /// Calls `add(value)` with the kAuthorization header's value for a call made now, or does
  /// nothing when the client has no token. Fails, without calling `add`, with the token's own
  /// error, or UNAUTHENTICATED for a token bearer_authorization() refuses or one over
  /// `max_bytes`. Runs on the calling thread, inside this call.
  template <typename Add>
  Result<void> add_to(Add&& add) const {
    static_assert(std::is_invocable_v<Add&, std::string>,
                  "add is called with the header's value, a std::string");
    if (!token_) return {};
    auto authorization = bearer_authorization(token_);
    if (!authorization) return authorization.error();
    if (authorization->size() > max_bytes_) {
      return Error(StatusCode::Unauthenticated,
                   "the bearer token is longer than " + std::to_string(max_bytes_) + " bytes");
    }
    add(std::move(*authorization));
    return {};
  }

 private:
  std::function<Result<std::string>()> token_;
  std::size_t max_bytes_;
};

}  // namespace sonic::net
