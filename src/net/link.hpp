// A connection's byte stream: a TCP socket, or TLS over one. Both connection types (the HTTP/2
// session and the frame stream) read and write through it, so that everything above the bytes
// is the same with and without TLS.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"
#include "tls.hpp"

namespace sonic::net {

/// Not thread-safe: used on its socket's thread. Not movable (the TLS layer refers to the
/// socket).
class SONIC_EXPORT Link {
 public:
  using Done = detail::UniqueFunction<void(std::string failure)>;

  /// A plaintext link when `tls` is null, else TLS as the context says (its handshake is
  /// handshake()'s to start, once the socket is connected).
  Link(asio::ip::tcp::socket socket, std::shared_ptr<TlsContext> tls);
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  /// The TCP socket beneath (to connect it, set its options, close it).
  asio::ip::tcp::socket& socket() noexcept { return socket_; }
  /// Whether the link speaks TLS.
  bool secure() const noexcept { return tls_ != nullptr; }

  /// A client's TLS: verifies that the server's certificate is for `host` (or the context's
  /// server_name), which it also announces (SNI) when it is a name. Before handshake().
  void expect_server(const std::string& host);

  /// Performs the TLS handshake, as the context's side, within `timeout` (none when zero);
  /// `done` runs once on the socket's thread, with an empty string once the link is secure,
  /// else with why not (describe_tls_failure(), or "no TLS handshake after 3000 ms"). A
  /// client's gRPC link also fails when the server did not choose HTTP/2 (ALPN). `owner`
  /// (who owns the link) is kept alive until then. A plaintext link completes at once.
  void handshake(std::chrono::milliseconds timeout, std::shared_ptr<void> owner, Done done);

  /// Reads some bytes into `buffer`, like asio's async_read_some. A TLS link hands at most
  /// one record (16 KiB) per read.
  template <typename Handler>
  void async_read_some(asio::mutable_buffer buffer, Handler&& handler) {
    if (tls_) return tls_->async_read_some(buffer, std::forward<Handler>(handler));
    socket_.async_read_some(buffer, std::forward<Handler>(handler));
  }

  /// Writes all of `buffers`, which must stay valid until `handler` runs (one write at a
  /// time). Over TLS, runs of small buffers are first copied together, so that they become one
  /// record rather than one each: TLS copies every byte once anyway, to encrypt it.
  template <typename Handler>
  void async_write(const std::vector<asio::const_buffer>& buffers, Handler&& handler) {
    if (tls_) return asio::async_write(*tls_, coalesce(buffers), std::forward<Handler>(handler));
    asio::async_write(socket_, buffers, std::forward<Handler>(handler));
  }

  /// Closes the socket at once (no TLS close_notify: the peer sees the connection end, as it
  /// would without TLS); pending operations end with operation_aborted.
  void close();

  /// The TLS connection, or null for a plaintext link.
  SSL* native_tls() { return tls_ ? tls_->native_handle() : nullptr; }

 private:
  const std::vector<asio::const_buffer>& coalesce(const std::vector<asio::const_buffer>& buffers);

  asio::ip::tcp::socket socket_;
  std::shared_ptr<TlsContext> context_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
  // Over TLS, the buffers of the write under way, and the small ones copied together.
  std::vector<asio::const_buffer> coalesced_;
  std::vector<std::uint8_t> staging_;
};

}  // namespace sonic::net
