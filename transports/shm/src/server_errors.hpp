// What a server's error means to the grpc+shm:// client: a registration it lost, an output that
// outgrew its space, or shared memory it cannot use at all. sonic's servers say so by reason
// (Error::reason()); servers that give none (Triton, sonic before 0.2) only in words, which are
// matched as the fallback.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

#include "protocol/names.hpp"
#include "sonic/error.hpp"

namespace sonic::shm {

namespace detail {
inline bool mentions(const Error& error, const char* text) {
  std::string message = error.message();
  std::transform(message.begin(), message.end(), message.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return message.find(text) != std::string::npos;
}
}  // namespace detail

/// The server no longer knows a region the request names: it restarted, or the registration
/// went away. Triton: INVALID_ARGUMENT or NOT_FOUND, "Unable to find shared memory region ...".
inline bool lost_registration(const Error& error) {
  if (!error.reason().empty()) return error.reason() == protocol::reason::kShmRegionNotFound;
  return (error.code() == StatusCode::InvalidArgument || error.code() == StatusCode::NotFound) &&
         detail::mentions(error, "unable to find") &&
         detail::mentions(error, "shared memory region");
}

/// An output outgrew the space the request reserved for it. Triton: INVALID_ARGUMENT or
/// INTERNAL, "... should be at least N bytes ..."; sonic 0.1: "... shared memory space holds".
inline bool output_space_too_small(const Error& error) {
  if (!error.reason().empty()) return error.reason() == protocol::reason::kShmOutputTooSmall;
  return (error.code() == StatusCode::InvalidArgument || error.code() == StatusCode::Internal) &&
         (detail::mentions(error, "should be at least") ||
          detail::mentions(error, "shared memory space holds"));
}

/// A registration refused for a reason other than a passing network failure: the server cannot
/// use this client's memory (another host, another IPC namespace, no extension).
inline bool refuses_shared_memory(const Error& error) {
  return error.code() != StatusCode::Unavailable && error.code() != StatusCode::DeadlineExceeded &&
         error.code() != StatusCode::Cancelled;
}

}  // namespace sonic::shm
