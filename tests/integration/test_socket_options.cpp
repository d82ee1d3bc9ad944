// The server's accepted sockets send without Nagle's delay (TCP_NODELAY) on every port: an
// answer's last segment must not wait for the acknowledgement of the one before it, which a
// client that is only reading delays by up to 40 ms (the kernel's delayed ACK). And the http://
// client's connections, which have no PING, ask the kernel to probe a silent peer on the
// client's keepalive schedule. Each checked on its own socket, found among this process's
// descriptors.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <sonic/client.hpp>

#include "loopback_server.hpp"

using namespace sonic;
using namespace sonic::test;

namespace socket_options {

std::uint16_t port_of(int fd, bool peer) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? ::getpeername(fd, raw, &length) : ::getsockname(fd, raw, &length)) != 0) return 0;
  return address.sin_family == AF_INET ? ntohs(address.sin_port) : 0;
}

// A client connection to 127.0.0.1:`port`; its descriptor.
int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// The server's end of the client's connection `client`: the descriptor of this process whose
// local port is the client's peer port and whose peer port is the client's own. -1 until the
// server has accepted it.
int server_end(int client) {
  const std::uint16_t server_port = port_of(client, true), client_port = port_of(client, false);
  DIR* fds = ::opendir("/proc/self/fd");
  REQUIRE(fds != nullptr);
  int found = -1;
  while (dirent* entry = ::readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2 || fd == client) continue;
    if (port_of(fd, false) == server_port && port_of(fd, true) == client_port) found = fd;
  }
  ::closedir(fds);
  return found;
}

bool sends_without_delay(std::uint16_t port) {
  const int client = connect_to(port);
  int server = -1;
  for (int i = 0; i < 200 && server < 0; ++i) {
    server = server_end(client);
    if (server < 0) ::usleep(5000);
  }
  REQUIRE_MESSAGE(server >= 0, "the server never accepted the connection on port " << port);
  // The connection's thread sets the option once it takes the socket: a second, at most.
  int flag = 0;
  for (int i = 0; i < 200 && flag == 0; ++i) {
    socklen_t length = sizeof flag;
    REQUIRE(::getsockopt(server, IPPROTO_TCP, TCP_NODELAY, &flag, &length) == 0);
    if (flag == 0) ::usleep(5000);
  }
  ::close(client);
  return flag != 0;
}

TEST_CASE("every port of the server sends without Nagle's delay") {
  ServerOptions options;
  options.tcp_port = 0;
  options.http_port = 0;
  options.metrics_port = 0;
  LoopbackServer server(options);
  CHECK_MESSAGE(sends_without_delay(server.port()), "the gRPC port");
  CHECK_MESSAGE(sends_without_delay(server.tcp_port()), "the TCP port");
  CHECK_MESSAGE(sends_without_delay(server.http_port()), "the HTTP/REST port");
  CHECK_MESSAGE(sends_without_delay(server.server().metrics_port()), "the metrics port");
}

// The option `name` at `level` of this process's connection from a local port to 127.0.0.1:`port`.
int client_option(std::uint16_t port, int level, int name) {
  DIR* fds = ::opendir("/proc/self/fd");
  REQUIRE(fds != nullptr);
  int value = -1;
  while (dirent* entry = ::readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2 || port_of(fd, true) != port) continue;
    socklen_t length = sizeof value;
    REQUIRE(::getsockopt(fd, level, name, &value, &length) == 0);
  }
  ::closedir(fds);
  return value;
}

TEST_CASE("http:// connections probe a silent server on the keepalive schedule") {
  ServerOptions server_options;
  server_options.http_port = 0;
  LoopbackServer server(server_options);
  ClientOptions options;
  options.endpoints = {"http://127.0.0.1:" + std::to_string(server.http_port())};
  options.keepalive_interval = std::chrono::seconds(20);
  options.keepalive_timeout = std::chrono::seconds(9);
  Client client(options);
  REQUIRE(client.server_ready());
  const std::uint16_t port = server.http_port();
  CHECK(client_option(port, SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(client_option(port, IPPROTO_TCP, TCP_KEEPIDLE) == 20);
  CHECK(client_option(port, IPPROTO_TCP, TCP_KEEPINTVL) == 3);
  CHECK(client_option(port, IPPROTO_TCP, TCP_KEEPCNT) == 3);
}

}  // namespace socket_options
