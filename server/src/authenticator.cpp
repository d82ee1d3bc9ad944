#include "authenticator.hpp"

#include <cstddef>

namespace sonic::server {

namespace {

constexpr std::string_view kBearer = "Bearer ";

// Compares without stopping at the first difference, so that the time taken does not tell a
// guesser how much of the token was right. (The length is not hidden: tokens are long.)
bool same_secret(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ expected[i]);
  }
  return difference == 0;
}

}  // namespace

Authenticator::Authenticator(const std::string& token_file) {
  if (token_file.empty()) return;
  token_.emplace(token_file);
  if (auto token = (*token_)(); !token) {
    throw Error(StatusCode::InvalidArgument, "--auth-token-file: " + token.error().message());
  }
}

std::optional<Error> Authenticator::refusal(std::string_view authorization) const {
  if (!token_) return std::nullopt;
  auto expected = (*token_)();
  if (!expected) {
    return Error(StatusCode::Unauthenticated,
                 "the server cannot read its token file: no call is accepted");
  }
  if (authorization.empty()) {
    return Error(StatusCode::Unauthenticated,
                 "this server requires a bearer token (\"authorization: Bearer ...\")");
  }
  // The scheme is case-insensitive (RFC 9110 §11.1); clients write "Bearer".
  if (authorization.size() < kBearer.size() ||
      (authorization.substr(0, kBearer.size()) != kBearer &&
       authorization.substr(0, kBearer.size()) != "bearer ")) {
    return Error(StatusCode::Unauthenticated, "the authorization header is not a bearer token");
  }
  if (!same_secret(authorization.substr(kBearer.size()), *expected)) {
    return Error(StatusCode::Unauthenticated, "the bearer token is not valid for this server");
  }
  return std::nullopt;
}

}  // namespace sonic::server
