// Triton's model configuration, model repository and shared memory extensions over HTTP/REST.
// Each REST request becomes the protobuf request of the gRPC method of the same name and is
// answered by answer_control(), as on the gRPC port (so both ports agree on every answer and
// error); its answer is then written as the JSON Triton's HTTP frontend writes (server
// src/http_server.cc: HandleModelConfig, HandleRepositoryControl, HandleSystemSharedMemory,
// HandleCudaSharedMemory).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "control_service.hpp"
#include "http_replies.hpp"
#include "http_server.hpp"

namespace sonic::server {

/// GET v2/models/NAME[/versions/VERSION]/config: the model's configuration as Triton prints it
/// (core src/model_config_utils.cc, ModelConfigToJson).
HttpReply model_config_reply(const ControlContext& context, const HttpRequest& request,
                             const ModelRoute& route);

/// POST v2/repository[/REPOSITORY]/models/NAME/(load|unload), and
/// v2/(systemsharedmemory|cudasharedmemory)[/region/NAME]/(status|register|unregister): the
/// answer, or nothing for a path that is none of these.
std::optional<HttpReply> control_reply(const ControlContext& context, const HttpRequest& request,
                                       const std::vector<std::string_view>& parts);

}  // namespace sonic::server
