// Which local user is on the other end of a TCP connection: the kernel knows the owner of every
// socket on this host, and tells whoever asks by address (NETLINK_SOCK_DIAG, as `ss -e` does).
// A server uses it to grant a client only what that user could reach by itself.
#pragma once

#include <sys/types.h>

#include <asio.hpp>

#include <optional>

#include "sonic/detail/export.hpp"

namespace sonic::net {

/// The uid that owns the peer's socket of `connection` (an accepted socket), when the peer is
/// a process on this host in the same network namespace; nothing otherwise (another host, a
/// container with its own network, or no answer from the kernel). Blocks for one netlink
/// round trip: call it once per connection, when needed.
SONIC_EXPORT std::optional<uid_t> local_peer_user(asio::ip::tcp::socket& connection);

}  // namespace sonic::net
