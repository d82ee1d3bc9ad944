// Test fixture: a sonic::Server on 127.0.0.1 hosting an identity model per datatype, and
// grpc+shm:// URLs to it, directly or through a byte-counting FaultProxy.
#pragma once

#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include "identity_models.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace sonic::test {

class ShmServer {
 public:
  explicit ShmServer(std::uint16_t port = 0, bool shared_memory = true)
      : server_(identity_executor(), options(port, shared_memory)) {
    server_.start();
  }
  std::uint16_t port() const { return server_.port(); }
  std::string shm_url() const { return "grpc+shm://127.0.0.1:" + std::to_string(port()); }
  std::string grpc_url() const { return "grpc://127.0.0.1:" + std::to_string(port()); }
  Server& server() { return server_; }

 private:
  static ServerOptions options(std::uint16_t port, bool shared_memory) {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.shared_memory = shared_memory;
    return o;
  }
  Server server_;
};

}  // namespace sonic::test
