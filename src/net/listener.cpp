#include "listener.hpp"

#include <chrono>

#include "sonic/error.hpp"

namespace sonic::net {

Listener::Listener(asio::io_context& io, const std::string& host, std::uint16_t port)
    : io_(io), acceptor_(io), pause_(io) {
  std::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) {
    throw Error(StatusCode::InvalidArgument, "cannot listen on '" + host + "': not an IP address");
  }
  asio::ip::tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw Error(StatusCode::Unavailable,
                "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
}

void Listener::start(Pick pick, Accept accept) {
  pick_ = std::move(pick);
  accept_ = std::move(accept);
  asio::post(io_, [this] { accept_next(); });
}

void Listener::close() {
  asio::post(io_, [this] {
    std::error_code ignored;
    acceptor_.close(ignored);
    pause_.cancel();
  });
}

void Listener::accept_next() {
  if (!acceptor_.is_open()) return;
  auto io = pick_();
  acceptor_.async_accept(*io, [this, io](std::error_code ec, asio::ip::tcp::socket socket) {
    if (!acceptor_.is_open() || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors, say: keep serving the connections there are, try again soon.
      pause_.expires_after(std::chrono::milliseconds(50));
      pause_.async_wait([this](std::error_code wait) {
        if (!wait) accept_next();
      });
      return;
    }
    accept_(std::move(socket), io);
    accept_next();
  });
}

}  // namespace sonic::net
