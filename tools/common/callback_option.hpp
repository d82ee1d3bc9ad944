// The measuring programs' --callbacks option: where the client's completion callbacks run.
#pragma once

#include <optional>
#include <string>

#include "sonic/options.hpp"

namespace sonic::bench {

/// The values --callbacks takes, for usage texts.
inline constexpr const char* kCallbackThreadNames = "network|pool|inline";

/// ClientOptions::callbacks from its name on the command line; nullopt for another word.
inline std::optional<CallbackThread> parse_callback_thread(const std::string& name) {
  if (name == "network") return CallbackThread::Network;
  if (name == "pool") return CallbackThread::Pool;
  if (name == "inline") return CallbackThread::Inline;
  return std::nullopt;
}

}  // namespace sonic::bench
