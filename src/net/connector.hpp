// Connecting a client socket: name resolution, then the first reachable address, within a
// time limit.
#pragma once

#include <asio.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::net {

/// One connection attempt at a time, on the socket's thread. Not thread-safe.
class SONIC_EXPORT Connector {
 public:
  using Done = detail::UniqueFunction<void(std::string failure)>;

  explicit Connector(asio::io_context& io) : resolver_(io), timer_(io) {}

  /// Connects `socket` to `host`:`port`. `done` runs once, on the io thread: with an empty
  /// string once connected, else with why not ("Connection refused", "no connection after
  /// 3000 ms"). `owner` (who owns the socket and this connector) is kept alive until then.
  void start(asio::ip::tcp::socket& socket, const std::string& host, std::uint16_t port,
             std::chrono::milliseconds timeout, std::shared_ptr<void> owner, Done done);
  /// Abandons the attempt: `done` is not called. The caller closes the socket.
  void cancel();

 private:
  void finish(std::string failure);

  asio::ip::tcp::resolver resolver_;
  asio::steady_timer timer_;
  Done done_;
};

}  // namespace sonic::net
