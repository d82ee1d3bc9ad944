// An HTTP/1.1 port of sonic-server: a listener whose connections read one request at a time
// (keep-alive; pipelined requests are answered in order), hand it to a service, and write the
// service's reply. The metrics port and the KServe v2 REST port are two services on it. What a
// client can make a connection hold is bounded: see HttpLimits and docs/limits.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acceptor.hpp"
#include "infer_dispatch.hpp"
#include "memory_budget.hpp"
#include "net/http_head.hpp"
#include "net/link.hpp"
#include "sonic/caller.hpp"

namespace sonic::server {

/// A request's body: Content-Length bytes, allocated when its head is read but left untouched
/// (not resident) until they arrive, so that a client that declares a large body and stalls
/// costs the server's memory budget, not its memory.
struct HttpBody {
  std::shared_ptr<char[]> bytes;
  std::size_t size = 0;
  std::string_view view() const { return {bytes.get(), size}; }
};

/// One request as a service sees it.
struct HttpRequest {
  std::string method;       ///< "GET", "POST", ...
  std::string path;         ///< the target before any '?'
  net::HttpFields headers;  ///< names lower-cased; a repeated name: the last
  HttpBody body;            ///< no chunked bodies
  /// Who sent it, for the shared memory extension: the connection, and the local user on its
  /// other end, asked of the kernel on first need, once per connection. Call it on the
  /// connection's network thread (where the service's `handle` runs).
  std::function<const ShmClient&()> client;
  /// The connection's share of the server's memory budget, for what a request grows to past
  /// its body (a compressed body, inflated). Thread-safe.
  std::shared_ptr<ConnectionBudget> budget;
  /// Who waits for the answer: cancelled when the client closes the connection before it is
  /// written (the connection reads on while the service works, to notice); without a deadline
  /// until the service finds one in the request.
  std::shared_ptr<Caller> caller;
  /// Where its inference runs: the connection's dispatch, as on the gRPC and TCP ports
  /// (infer_dispatch.hpp). Touched on the connection's thread (`io`) only, while `owner` lives.
  struct Models {
    InferDispatch* dispatch = nullptr;
    std::weak_ptr<void> owner;
    std::shared_ptr<asio::io_context> io;
  } models;

  /// The header's value, or empty.
  const std::string& header(const std::string& lower_name) const;
};

/// A service's answer.
struct HttpReply {
  int status = 200;
  std::string content_type;  ///< none when empty (an answer without a body)
  std::string body;
  std::string extra_headers;  ///< whole lines, each ending in CRLF
  /// Bytes written after `body`, by reference (tensors' bytes, not copied), which `tail_owner`
  /// keeps alive until they are written. Counted in the Content-Length.
  std::vector<std::string_view> tail = {};
  std::shared_ptr<const void> tail_owner = {};
};

/// Answers a request exactly once, from any thread (the connection writes it on its own).
using HttpRespond = std::function<void(HttpReply)>;

/// What one port's clients may make it hold.
struct HttpLimits {
  std::size_t max_head_bytes = 8 << 10;  ///< request line and header fields (431 past it)
  std::size_t max_body_bytes = 0;        ///< Content-Length (413 past it; 0: no bodies)
  std::size_t max_connections = 64;      ///< more are closed as they are accepted (acceptor.hpp)
};

/// A port's service: its limits and the function that answers each request. `handle` runs on
/// the connection's network thread and must not block: slow work answers through `respond`
/// later.
struct HttpService {
  HttpLimits limits;
  std::function<void(HttpRequest, HttpRespond)> handle;
};

class HttpConnection;

/// What the connections of one port share.
struct HttpShared {
  std::shared_ptr<ServerContext> context;
  HttpService service;
  std::shared_ptr<net::TlsContext> tls;  ///< null: plaintext
};

/// Listens on the options' host and `port`; connections run on the given network threads,
/// over TLS when `tls` is set (HTTP/1.1 over TLS: no ALPN protocol is chosen).
class HttpServer {
 public:
  /// Binds (throws sonic::Error as Server::start says).
  HttpServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads,
             std::uint16_t port, HttpService service, std::shared_ptr<net::TlsContext> tls);
  void start();
  std::uint16_t port() const { return acceptor_.port(); }
  /// Stops accepting and closes every connection; returns at once.
  void stop();

 private:
  std::shared_ptr<HttpShared> shared_;
  Acceptor<HttpConnection> acceptor_;
};

/// The reason phrase of a status code this server sends.
const char* http_reason(int status);

}  // namespace sonic::server
