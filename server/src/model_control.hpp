// RepositoryModelLoad and RepositoryModelUnload (Triton's model repository extension), as
// Triton's grpc_server.cc and model_repository_manager.cc answer them.
#pragma once

#include <string>
#include <string_view>

#include "control_service.hpp"

namespace sonic::server {

/// Answers a serialized RepositoryModelLoadRequest (`load`) or RepositoryModelUnloadRequest:
/// the serialized (empty) response, or an Error in Triton's words. Blocks for the load.
Result<std::string> load_or_unload(const ControlContext& context, bool load,
                                   std::string_view request);

}  // namespace sonic::server
