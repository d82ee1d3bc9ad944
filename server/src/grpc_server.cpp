#include "grpc_server.hpp"

#include "grpc_connection.hpp"

namespace sonic::server {

// At the cap, a connection that has not begun a call makes room for a newcomer.
static_assert(EvictsWaiting<GrpcConnection>::value);

GrpcServer::GrpcServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : context_(context),
      acceptor_(context, threads, context->options.port, server_connections(context)) {}

void GrpcServer::start() {
  acceptor_.start(
      [this](asio::ip::tcp::socket socket, GrpcConnection::IoContext io, ConnectionSlot slot) {
        return std::make_shared<GrpcConnection>(std::move(socket), io, context_,
                                                acceptor_.connections(), std::move(slot));
      });
}

void GrpcServer::stop() {
  acceptor_.stop([](GrpcConnection& connection) { connection.shutdown(); });
}

}  // namespace sonic::server
