// sonic — credentials: a bearer token read from a file that its issuer rewrites.
//
// Sites hand jobs short-lived tokens (WLCG and SciTokens bearer tokens, an ingress's JWT) as a
// file that an agent rewrites before each expires. ClientOptions::bearer_token asks for the
// token before every call; TokenFile answers from memory and reads the file again only when it
// changed, so that a job running for days follows the rotation without a restart.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "sonic/error.hpp"

namespace sonic {

/// A bearer token kept in a file, for ClientOptions::bearer_token:
///
///   options.bearer_token = sonic::TokenFile("/run/user/1000/bt_u1000");
///
/// The token is the file's text without the whitespace around it. The file is looked at (its
/// size and modification time) at most once per `recheck`, and read only when they changed:
/// have the issuer replace it whole (write another file, rename it over this one). A missing,
/// unreadable or empty file, one of more than 16 KiB, or a token with bytes a header cannot
/// carry, is UNAUTHENTICATED naming the file. Copies share one cache; thread-safe.
class TokenFile {
 public:
  explicit TokenFile(std::string path,
                     std::chrono::milliseconds recheck = std::chrono::milliseconds(1000))
      : state_(std::make_shared<State>(std::move(path), recheck)) {}

  Result<std::string> operator()() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const auto now = std::chrono::steady_clock::now();
    if (state_->checked && now - state_->checked_at < state_->recheck) return state_->token;
    state_->checked = true;
    state_->checked_at = now;
    std::error_code error;
    const auto size = std::filesystem::file_size(state_->path, error);
    const auto written = error ? std::filesystem::file_time_type{}
                               : std::filesystem::last_write_time(state_->path, error);
    if (error) {
      state_->read = false;
      return state_->token = failure("cannot read bearer token file '" + state_->path +
                                     "': " + error.message());
    }
    if (state_->read && size == state_->size && written == state_->written) return state_->token;
    state_->read = true;
    state_->size = size;
    state_->written = written;
    if (size > kMaxBytes) {
      return state_->token =
                 failure("bearer token file '" + state_->path + "' holds " + std::to_string(size) +
                         " bytes: a token has at most " + std::to_string(kMaxBytes));
    }
    return state_->token = read_token(state_->path);
  }

  const std::string& path() const noexcept { return state_->path; }

 private:
  // More than any token (JWTs run to a few KiB), and what a metadata frame carries.
  static constexpr std::uintmax_t kMaxBytes = 16 << 10;

  struct State {
    State(std::string p, std::chrono::milliseconds r) : path(std::move(p)), recheck(r) {}
    std::mutex mutex;
    const std::string path;
    const std::chrono::milliseconds recheck;
    bool checked = false;
    std::chrono::steady_clock::time_point checked_at;
    bool read = false;  // size and written describe what token holds
    std::uintmax_t size = 0;
    std::filesystem::file_time_type written;
    Result<std::string> token = failure("bearer token file not read yet");
  };

  static Error failure(std::string message) {
    return Error(StatusCode::Unauthenticated, std::move(message));
  }

  static Result<std::string> read_token(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    if (!file) return failure("cannot read bearer token file '" + path + "'");
    std::string token = text.str();
    const auto first = token.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return failure("bearer token file '" + path + "' is empty");
    token = token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
    for (unsigned char c : token) {
      if (c < 0x21 || c > 0x7e) {  // RFC 6750: a token is visible ASCII
        return failure("bearer token file '" + path +
                       "' holds bytes a token cannot have (visible ASCII only)");
      }
    }
    return token;
  }

  std::shared_ptr<State> state_;
};

}  // namespace sonic
