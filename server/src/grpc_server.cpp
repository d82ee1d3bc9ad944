#include "grpc_server.hpp"

#include "grpc_connection.hpp"

namespace sonic::server {

using IoContext = GrpcConnection::IoContext;

GrpcServer::GrpcServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : context_(std::move(context)),
      threads_(threads),
      accept_io_(threads_.next()),
      listener_(*accept_io_, context_->options.host, context_->options.port),
      connections_(std::make_shared<net::ConnectionSet<GrpcConnection>>()) {}

void GrpcServer::start() {
  listener_.start([this] { return threads_.next(); },
                  [this](asio::ip::tcp::socket socket, IoContext io) {
                    ConnectionSlot slot(context_, [this] { return make_room(*connections_); });
                    if (!slot) return;  // as many as allowed, each with a call: this one closes
                    auto connection = std::make_shared<GrpcConnection>(
                        std::move(socket), io, context_, connections_, std::move(slot));
                    if (!connections_->add(connection)) return;  // stopping: it closes now
                    asio::post(*io, [connection] { connection->start(); });
                  });
}

void GrpcServer::stop() {
  listener_.close();
  for (auto& connection : connections_->close()) {
    auto io = connection->io_context();
    asio::post(*io, [connection] { connection->shutdown(); });
  }
}

}  // namespace sonic::server