#include "peer_user.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>

namespace sonic::net {

namespace {

// Closes a descriptor on scope exit.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// The peer's socket seen from the peer: its source is the peer's address, its destination
// ours. IPv4 peers of an IPv6 listener appear as ::ffff:a.b.c.d here and as IPv4 there.
bool describe(const asio::ip::tcp::endpoint& peer, const asio::ip::tcp::endpoint& local,
              inet_diag_req_v2& request) {
  auto put = [](const asio::ip::address& address, __be32* out) {
    if (address.is_v4()) {
      auto bytes = address.to_v4().to_bytes();
      std::memcpy(out, bytes.data(), bytes.size());
    } else {
      auto bytes = address.to_v6().to_bytes();
      std::memcpy(out, bytes.data(), bytes.size());
    }
  };
  asio::ip::address peer_address = peer.address();
  asio::ip::address local_address = local.address();
  if (peer_address.is_v6() && peer_address.to_v6().is_v4_mapped()) {
    peer_address = asio::ip::make_address_v4(asio::ip::v4_mapped, peer_address.to_v6());
    if (!local_address.is_v6() || !local_address.to_v6().is_v4_mapped()) return false;
    local_address = asio::ip::make_address_v4(asio::ip::v4_mapped, local_address.to_v6());
  }
  if (peer_address.is_v4() != local_address.is_v4()) return false;
  request.sdiag_family = peer_address.is_v4() ? AF_INET : AF_INET6;
  request.sdiag_protocol = IPPROTO_TCP;
  request.idiag_states = ~0u;
  request.id.idiag_sport = htons(peer.port());
  request.id.idiag_dport = htons(local.port());
  put(peer_address, request.id.idiag_src);
  put(local_address, request.id.idiag_dst);
  request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  return true;
}

}  // namespace

std::optional<uid_t> local_peer_user(asio::ip::tcp::socket& connection) {
  std::error_code ec;
  auto peer = connection.remote_endpoint(ec);
  if (ec) return std::nullopt;
  auto local = connection.local_endpoint(ec);
  if (ec) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 body;
  } request{};
  if (!describe(peer, local, request.body)) return std::nullopt;
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.header.nlmsg_flags = NLM_F_REQUEST;

  Descriptor netlink{::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (netlink.fd < 0) return std::nullopt;
  timeval patience{1, 0};  // the kernel answers at once; never wait longer than this
  ::setsockopt(netlink.fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(netlink.fd, &request, sizeof request, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(sizeof request)) {
    return std::nullopt;
  }
  alignas(nlmsghdr) char answer[4096];
  ssize_t n = ::recv(netlink.fd, answer, sizeof answer, 0);
  // The netlink header, padded to 4 bytes, then the message (NLMSG_DATA, without its casts).
  constexpr std::size_t kHeaderBytes = (sizeof(nlmsghdr) + 3) & ~std::size_t{3};
  if (n < static_cast<ssize_t>(kHeaderBytes + sizeof(inet_diag_msg))) return std::nullopt;
  const auto* header = reinterpret_cast<const nlmsghdr*>(answer);
  if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
      header->nlmsg_len < kHeaderBytes + sizeof(inet_diag_msg) ||
      header->nlmsg_len > static_cast<std::size_t>(n)) {
    return std::nullopt;  // NLMSG_ERROR: no such socket here (another host or namespace)
  }
  const auto* socket = reinterpret_cast<const inet_diag_msg*>(answer + kHeaderBytes);
  return static_cast<uid_t>(socket->idiag_uid);
}

}  // namespace sonic::net
