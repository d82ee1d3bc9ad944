// The server's check of bearer tokens (ServerOptions::auth_token_file): a call is let in when
// its "authorization" header is "Bearer TOKEN" with the file's token.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sonic/credentials.hpp"
#include "sonic/error.hpp"

namespace sonic::server {

class Authenticator {
 public:
  /// No check when `token_file` is empty. Throws sonic::Error(InvalidArgument) when the file
  /// cannot be read now: a server that would refuse every call must not start.
  explicit Authenticator(const std::string& token_file);

  bool required() const noexcept { return token_.has_value(); }

  /// Nothing when `authorization` (the header's value; empty when absent) carries the token;
  /// else UNAUTHENTICATED, saying what was wrong but never what the token is. A token file
  /// that became unreadable refuses every call. Thread-safe.
  std::optional<Error> refusal(std::string_view authorization) const;

 private:
  std::optional<TokenFile> token_;
};

}  // namespace sonic::server
