// KServe v2 over HTTP/REST (Triton's HTTP port, 8000): health, server and model metadata,
// model readiness, statistics, the repository index, and inference with JSON tensors,
// Triton's binary tensor data extension and tensors in shared memory regions (system and
// CUDA, bound as on the gRPC port); the model configuration, model load and unload and shared
// memory regions through http_control_routes.
// Answers and error bodies ({"error": "..."}, with the HTTP status Triton derives from the
// error's code) follow Triton's HTTP frontend (server src/http_server.cc).
#pragma once

#include <memory>

#include "http_server.hpp"

namespace sonic::server {

/// The HTTP/REST port's service. Inference is decoded, run and encoded off the network thread
/// (on the executor's pool); the rest is answered at once.
HttpService http_api_service(std::shared_ptr<ServerContext> context);

}  // namespace sonic::server
