// The error that content sonic refuses earns: INVALID_ARGUMENT, as Triton answers a request, a
// region or a model configuration it cannot take. The protocol's parsers, the server and the
// repository share it.
#pragma once

#include <string>
#include <utility>

#include "sonic/error.hpp"

namespace sonic::protocol {

inline Error invalid(std::string message) {
  return Error(StatusCode::InvalidArgument, std::move(message));
}

/// `what` is wrong in the file or model named by `origin`.
inline Error invalid(const std::string& origin, const std::string& what) {
  return invalid(origin + ": " + what);
}

}  // namespace sonic::protocol
