// The control methods over HTTP/REST (health, metadata, configuration, statistics, the model
// repository, shared memory, settings). Each REST request becomes the protobuf request of its
// method and is answered by answer_control(), as on the gRPC port (so both ports agree on every
// answer and error); its answer is then written as the JSON Triton's HTTP frontend writes
// (server src/http_server.cc: HandleHealth, HandleServerMetadata, HandleModelMetadata,
// HandleModelConfig, HandleModelStats, HandleRepositoryIndex, HandleRepositoryControl,
// HandleSystemSharedMemory, HandleCudaSharedMemory).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "control_service.hpp"
#include "http_replies.hpp"
#include "http_server.hpp"
#include "protocol/control_routes.hpp"

namespace sonic::server {

/// Answers a request whose path is a control method's route (protocol/control_routes.hpp),
/// through the port's handler of that method: Triton's 405 for a verb the route does not take,
/// its 501 for a method this server does not serve.
HttpReply answer_http_control(const ControlContext& context, const protocol::RouteMatch& route,
                              const HttpRequest& request);

}  // namespace sonic::server
