// What every part of a server shares: the models, the options and the shared memory registry.
// Connections hold it, so it outlives them whatever the order of shutdown.
#pragma once

#include <memory>

#include "shm_registry.hpp"
#include "sonic/executor.hpp"
#include "sonic/server.hpp"

namespace sonic::server {

struct ServerContext {
  ServerContext(std::shared_ptr<CpuExecutor> exec, ServerOptions opts)
      : executor(std::move(exec)), options(std::move(opts)) {}

  std::shared_ptr<CpuExecutor> executor;
  const ServerOptions options;
  SharedMemoryRegistry shared_memory;
};

}  // namespace sonic::server
