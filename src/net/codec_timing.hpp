// sonic — InferTiming for a transport that times only its own encoding and decoding (tcp://,
// http://): the time between is one span, "wait".
#pragma once

#include <chrono>

#include "sonic/request.hpp"

namespace sonic::net {

/// Fills `timing` from when the attempt began, its request was encoded and its answer's
/// decoding began; the decoding ends now.
inline void record_codec_timing(InferTiming& timing, std::chrono::steady_clock::time_point begun,
                                std::chrono::steady_clock::time_point encoded,
                                std::chrono::steady_clock::time_point decoding) {
  const auto now = std::chrono::steady_clock::now();
  timing.serialize = encoded - begun;
  timing.wait = decoding - encoded;
  timing.deserialize = now - decoding;
  timing.total = now - begun;
}

}  // namespace sonic::net
