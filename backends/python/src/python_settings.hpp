// The settings a Python model's config.pbtxt may give as string parameters: its time limits and
// the largest message its stubs may send. Read once at load, then only read, so that every part
// of the backend takes them from one place with one meaning.
#pragma once

#include <chrono>
#include <optional>

#include "sonic/error.hpp"
#include "sonic/repository/model_config.hpp"
#include "stub_frame.hpp"

namespace sonic::python_backend {

/// A model's time limits and message size. A plain value: copied into each part that needs it.
struct Settings {
  /// How long the stub may take over each read and write of an execute: from sending the
  /// request (or the answer to one of its BLS calls) to its next message, and for each message
  /// sent to it, from the start of the write until the stub has read all of it. Past it the
  /// stub is killed and the model retired. 0: no limit.
  std::chrono::milliseconds execute_timeout{300000};
  /// How long starting a stub, auto_complete_config and initialize may take, each.
  std::chrono::milliseconds initialize_timeout{300000};
  /// How long a request waits for a free instance (every instance busy) before it fails
  /// UNAVAILABLE. 0: no limit.
  std::chrono::milliseconds instance_wait_timeout{300000};
  /// How long finalize may take when the model is unloaded, before the stub is killed.
  std::chrono::milliseconds finalize_timeout{10000};
  /// What a stub's message may declare (max_message_bytes), and what the tensors made from it
  /// may cost (stub_tensors.hpp).
  FrameLimits limits;
};

/// The settings `config`'s parameters give (execute_timeout_ms, initialize_timeout_ms,
/// finalize_timeout_ms, instance_wait_timeout_ms, max_message_bytes), the defaults above for
/// those it leaves out. INVALID_ARGUMENT for a value that is not a whole number, or a timeout
/// past 2^40 ms (a wait that could overflow a time point). Thread-safe; never blocks.
Result<Settings> settings_of(const repository::ModelConfig& config);

/// `limit` from now; none (wait as long as it takes) for a limit of 0. Never blocks.
std::optional<std::chrono::steady_clock::time_point> deadline_after(
    std::chrono::milliseconds limit);

}  // namespace sonic::python_backend
