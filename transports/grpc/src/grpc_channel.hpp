// One endpoint's HTTP/2 connection, shared by the clients of a process (see net::Channel).
#pragma once

#include <memory>

#include "client_connection.hpp"
#include "net/channel.hpp"

namespace sonic::grpc {

using GrpcChannel = net::Channel<ClientConnection, ClientCall>;

/// The channel of `endpoint` for a client with `options`: shared with the process's other
/// clients of the endpoint whose connection settings agree, unless share_connections is off.
inline std::shared_ptr<GrpcChannel> channel_for(const Endpoint& endpoint,
                                                const ClientOptions& options) {
  auto settings = ConnectionSettings::of(options);
  std::string key = endpoint.url + '\n' + settings.key() + '\n' +
                    std::to_string(options.reconnect_backoff.count()) + '/' +
                    std::to_string(options.reconnect_backoff_max.count());
  return GrpcChannel::get(
      key, options.share_connections, endpoint, options,
      [endpoint, settings](asio::io_context& io, net::ChannelEvents<ClientCall> events) {
        return std::make_shared<ClientConnection>(io, endpoint, settings, std::move(events));
      });
}

}  // namespace sonic::grpc
