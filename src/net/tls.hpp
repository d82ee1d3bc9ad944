// TLS settings as OpenSSL contexts, for both halves of the socket transports: a client's
// (verifies the server and its name, offers ALPN h2 for gRPC, may present a certificate) and a
// server's (its certificate, ALPN h2 on the gRPC port, optionally requiring client
// certificates). TLS 1.2 is the oldest version either accepts.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>

#include <memory>
#include <string>
#include <system_error>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/options.hpp"

namespace sonic::net {

/// What speaks over the TLS connection, which decides the ALPN protocol: gRPC needs HTTP/2
/// ("h2"); sonic's TCP framing announces none.
enum class TlsPurpose { kGrpc, kFrames };

/// A context and what a connection made from it must check. Immutable once made; shared by
/// every connection of the clients (or the server port) that made it.
struct TlsContext {
  TlsContext() : ssl(asio::ssl::context::tls) {}
  asio::ssl::context ssl;
  TlsPurpose purpose = TlsPurpose::kFrames;
  bool server = false;
  /// Client: the name the server's certificate must be for, when not the endpoint's host.
  std::string server_name;
  /// Client: text that tells its options apart from others' (for sharing connections).
  std::string key;
};

/// The client context for `options`, made once per process for equal options and purpose
/// (loading a CA bundle takes milliseconds): INVALID_ARGUMENT naming the file or PEM item that
/// cannot be used.
SONIC_EXPORT Result<std::shared_ptr<TlsContext>> client_tls_context(const TlsOptions& options,
                                                                    TlsPurpose purpose);

/// A server context: its certificate chain and key (PEM files), and when `client_ca_file` is
/// set, client certificates signed by those authorities required. INVALID_ARGUMENT naming the
/// file that cannot be used, or a key that does not match the certificate.
SONIC_EXPORT Result<std::shared_ptr<TlsContext>> server_tls_context(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca_file,
    TlsPurpose purpose);

/// Why a handshake failed, in words a user can act on: the certificate check that failed
/// ("certificate has expired", "hostname mismatch"), a peer that does not speak TLS, or
/// OpenSSL's reason. `ssl` is the connection's, for its verification result (may be null).
SONIC_EXPORT std::string describe_tls_failure(const std::error_code& error, SSL* ssl, bool server);

/// When a client connection ended with `why`, a TLS alert by which the server refused the
/// client's certificate (none sent, or not one it trusts): what to do about it; else empty.
/// TLS 1.3 servers send that alert after the client's side of the handshake is over, so the
/// client learns of it on its first read.
SONIC_EXPORT std::string client_certificate_refusal(const std::string& why);

}  // namespace sonic::net
