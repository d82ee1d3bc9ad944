// Test support: waiting, bounded, for something other threads bring about.
#pragma once

#include <chrono>
#include <thread>

namespace sonic::test {

/// Polls `condition` every millisecond or two until it holds (true) or `limit` has passed
/// (false), so that a test never hangs on what does not happen.
template <typename Condition>
bool eventually(Condition condition,
                std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace sonic::test
