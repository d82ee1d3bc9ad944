// Test fixture: a sonic::Server on 127.0.0.1 with ephemeral ports (gRPC, and TCP when asked),
// hosting the built-in models plus test models (slow, bytes identity), stopped when the fixture
// goes away.
#pragma once

#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include "simple_request.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace sonic::test {

/// FP32 identity that sleeps first: deadlines and in-flight failures.
inline constexpr const char* kSlowModel = "slow_fp32";
inline constexpr std::chrono::milliseconds kSlowDelay{1000};

inline std::shared_ptr<CpuExecutor> test_executor(std::size_t threads = 4) {
  auto executor = CpuExecutor::with_models(models::builtin(), threads);
  executor->add_model(models::identity(kSlowModel, DataType::Fp32, kSlowDelay));
  executor->add_model(models::identity("paced_fp32", DataType::Fp32, std::chrono::milliseconds(5)));
  return executor;
}

class LoopbackServer {
 public:
  explicit LoopbackServer(ServerOptions options = {}, std::size_t threads = 4)
      : LoopbackServer(test_executor(threads), std::move(options)) {}
  LoopbackServer(std::shared_ptr<CpuExecutor> executor, ServerOptions options)
      : executor_(std::move(executor)),
        server_(executor_, with_ephemeral_ports(std::move(options))) {
    server_.start();
  }

  std::string url() const { return "grpc://127.0.0.1:" + std::to_string(server_.port()); }
  /// tcp:// (or "tcp+zstd") URL of the server's TCP port (ServerOptions::tcp_port set).
  std::string tcp_url(const std::string& scheme = "tcp") const {
    return scheme + "://127.0.0.1:" + std::to_string(server_.tcp_port());
  }
  std::uint16_t port() const { return server_.port(); }
  std::uint16_t tcp_port() const { return server_.tcp_port(); }
  /// The HTTP/REST port (ServerOptions::http_port set).
  std::uint16_t http_port() const { return server_.http_port(); }
  CpuExecutor& executor() { return *executor_; }
  Server& server() { return server_; }
  void stop() { server_.stop(); }

 private:
  static ServerOptions with_ephemeral_ports(ServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    if (options.tcp_port) options.tcp_port = 0;
    if (options.http_port >= 0) options.http_port = 0;
    if (options.metrics_port >= 0) options.metrics_port = 0;
    return options;
  }

  std::shared_ptr<CpuExecutor> executor_;
  Server server_;
};

/// How many times `server`'s `simple` model ran (to check that a refused call never reached it).
inline std::uint64_t simple_executions(LoopbackServer& server) {
  return server.executor().statistics("simple", "").value().execution_count;
}

}  // namespace sonic::test
