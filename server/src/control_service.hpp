// The control methods of the inference service, answered the same way whatever carries them
// (gRPC streams, TCP frames).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "model_files.hpp"
#include "settings_service.hpp"
#include "shm_registry.hpp"
#include "sonic/control.hpp"
#include "sonic/executor.hpp"
#include "sonic/server.hpp"

namespace sonic::server {

/// What a control call may consult.
struct ControlContext {
  CpuExecutor& executor;
  const ServerOptions& options;
  SharedMemoryRegistry* shared_memory;  ///< null: the shared memory extension is not served
  /// Who calls, for the shared memory extension (made on first need: it asks the kernel).
  std::function<const ShmClient&()> client;
  /// Where a load's "file:" parameters are written; null: a load with files is refused.
  ModelFiles* model_files = nullptr;
  /// The run-time log and trace settings (LogSettings, TraceSetting).
  ServerSettings* settings = nullptr;
};

/// ServerReady's answer: with `strict` (Triton's --strict-readiness), whether every model the
/// executor was to serve is READY; else true.
bool server_ready(const CpuExecutor& executor, bool strict);

/// UNIMPLEMENTED for a method of inference.GRPCInferenceService this server does not serve.
Error unimplemented(std::string_view method);

/// The control method of that gRPC name if this server serves it (the shared memory methods
/// only with `shared_memory`); none otherwise.
std::optional<ControlMethod> served_control(std::string_view name, bool shared_memory);

/// Answers `method` given its serialized request message, through the server's handler table:
/// the serialized response, or an Error (INVALID_ARGUMENT for a malformed request,
/// UNIMPLEMENTED for a method this server does not serve).
Result<std::string> answer_control(const ControlContext& context, ControlMethod method,
                                   std::string_view request);

}  // namespace sonic::server
