#include "connector.hpp"

#include <utility>

namespace sonic::net {

// Every handler holds `owner`, which owns this connector and the socket: they outlive every
// pending operation, cancelled ones included.
void Connector::start(asio::ip::tcp::socket& socket, const std::string& host, std::uint16_t port,
                      std::chrono::milliseconds timeout, std::shared_ptr<void> owner, Done done) {
  done_ = std::move(done);
  timer_.expires_after(timeout);
  timer_.async_wait([this, owner, timeout](std::error_code ec) {
    if (ec || !done_) return;
    resolver_.cancel();
    finish("no connection after " + std::to_string(timeout.count()) + " ms");
  });
  // An IP address needs no lookup (asio's lookups also start a thread per network thread).
  std::error_code not_literal;
  auto address = asio::ip::make_address(host, not_literal);
  if (!not_literal) {
    socket.async_connect(asio::ip::tcp::endpoint(address, port), [this, owner](std::error_code ec) {
      if (!done_) return;
      finish(ec ? ec.message() : std::string());
    });
    return;
  }
  resolver_.async_resolve(
      host, std::to_string(port),
      [this, owner, &socket](std::error_code ec, asio::ip::tcp::resolver::results_type results) {
        if (!done_) return;
        if (ec) return finish("cannot resolve host: " + ec.message());
        asio::async_connect(socket, results,
                            [this, owner](std::error_code ec2, const asio::ip::tcp::endpoint&) {
                              if (!done_) return;
                              finish(ec2 ? ec2.message() : std::string());
                            });
      });
}

void Connector::cancel() {
  done_ = nullptr;
  timer_.cancel();
  resolver_.cancel();
}

void Connector::finish(std::string failure) {
  timer_.cancel();
  auto done = std::move(done_);
  done_ = nullptr;
  done(std::move(failure));
}

}  // namespace sonic::net
