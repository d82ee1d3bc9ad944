#include "sonic/server.hpp"

#include <mutex>
#include <optional>

#include "grpc_server.hpp"
#include "http_api.hpp"
#include "metrics_server.hpp"
#include "tcp_server.hpp"

namespace sonic {

struct Server::Impl {
  std::shared_ptr<server::ServerContext> context;
  std::optional<net::NetworkThreads> threads;  // the server's own, not the clients' pool
  // Their handlers run on `threads`: stop() joins those before these are destroyed.
  std::optional<server::GrpcServer> grpc;
  std::optional<server::TcpServer> tcp;
  std::optional<server::HttpServer> metrics;
  std::optional<server::HttpServer> http;
  std::mutex mutex;
  bool started = false;
  bool stopped = false;
};

Server::Server(std::shared_ptr<CpuExecutor> executor, ServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!executor) throw Error(StatusCode::InvalidArgument, "a Server needs an executor");
  const ServerLimits& limits = options.limits;
  if (limits.max_buffered_bytes < options.max_message_bytes ||
      limits.max_connection_buffered_bytes < options.max_message_bytes) {
    throw Error(StatusCode::InvalidArgument,
                "ServerLimits::max_buffered_bytes and max_connection_buffered_bytes must be at "
                "least ServerOptions::max_message_bytes: a message must fit");
  }
  if (options.metrics_port < -1 || options.metrics_port > 65535) {
    throw Error(StatusCode::InvalidArgument,
                "ServerOptions::metrics_port must be -1 (none), 0 (a free port) or a port");
  }
  if (options.http_port < -1 || options.http_port > 65535) {
    throw Error(StatusCode::InvalidArgument,
                "ServerOptions::http_port must be -1 (none), 0 (a free port) or a port");
  }
  if (limits.max_shm_regions > 16384 || limits.max_connection_shm_regions > 16384) {
    throw Error(StatusCode::InvalidArgument,
                "at most 16384 shared memory regions can be mapped by a process");
  }
  impl_->context = std::make_shared<server::ServerContext>(std::move(executor), std::move(options));
}

Server::~Server() { stop(); }

void Server::start() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->started) return;
  const ServerOptions& options = impl_->context->options;
  impl_->threads.emplace(std::max<std::size_t>(1, options.io_threads));
  impl_->grpc.emplace(impl_->context, *impl_->threads);
  if (options.tcp_port) impl_->tcp.emplace(impl_->context, *impl_->threads);
  if (options.metrics_port >= 0) {
    impl_->metrics.emplace(impl_->context, *impl_->threads,
                           static_cast<std::uint16_t>(options.metrics_port),
                           server::metrics_service(impl_->context), nullptr);
  }
  if (options.http_port >= 0) {
    impl_->http.emplace(impl_->context, *impl_->threads,
                        static_cast<std::uint16_t>(options.http_port),
                        server::http_api_service(impl_->context), impl_->context->tcp_tls);
  }
  impl_->grpc->start();
  if (impl_->tcp) impl_->tcp->start();
  if (impl_->metrics) impl_->metrics->start();
  if (impl_->http) impl_->http->start();
  impl_->started = true;
}

std::uint16_t Server::port() const { return impl_->grpc ? impl_->grpc->port() : 0; }

std::uint16_t Server::tcp_port() const { return impl_->tcp ? impl_->tcp->port() : 0; }

std::uint16_t Server::metrics_port() const { return impl_->metrics ? impl_->metrics->port() : 0; }

std::uint16_t Server::http_port() const { return impl_->http ? impl_->http->port() : 0; }

const ServerOptions& Server::options() const { return impl_->context->options; }

void Server::stop() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  impl_->grpc->stop();
  if (impl_->tcp) impl_->tcp->stop();
  if (impl_->metrics) impl_->metrics->stop();
  if (impl_->http) impl_->http->stop();
  impl_->threads.reset();  // joins the threads once the connections are closed
}

std::size_t Server::shared_memory_regions() const { return impl_->context->shared_memory.size(); }

}  // namespace sonic
