#include "link.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <utility>

namespace sonic::net {

namespace {

// Buffers below this are copied together before TLS takes them (one record for a run of
// frame headers and small tensors); larger ones go as they are, a record or more each.
constexpr std::size_t kCoalesceBelowBytes = 16 * 1024;

}  // namespace

Link::Link(asio::ip::tcp::socket socket, std::shared_ptr<TlsContext> tls)
    : socket_(std::move(socket)), context_(std::move(tls)) {
  if (!context_) return;
  tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, context_->ssl);
  // OpenSSL's buffers are let go while a connection is idle: an idle TLS connection, of which
  // a server may hold thousands, keeps tens of kilobytes fewer.
  SSL_set_mode(tls_->native_handle(), SSL_MODE_RELEASE_BUFFERS);
}

void Link::expect_server(const std::string& host) {
  if (!tls_) return;
  const std::string& name = context_->server_name.empty() ? host : context_->server_name;
  SSL* ssl = tls_->native_handle();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  // RFC 6125: "*.example.org" covers one whole label, never part of one.
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  std::error_code not_address;
  asio::ip::make_address(name, not_address);
  if (!not_address) {
    // An IP address must be among the certificate's subjectAltName addresses; SNI carries
    // names only (RFC 6066 §3).
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    return;
  }
  X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  // SSL_set_tlsext_host_name() spelled out: the macro's C cast would hide the const_cast.
  SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(name.c_str()));
}

void Link::handshake(std::chrono::milliseconds timeout, std::shared_ptr<void> owner, Done done) {
  if (!tls_) return done(std::string());
  struct Attempt {
    explicit Attempt(const asio::any_io_executor& executor) : timer(executor) {}
    asio::steady_timer timer;
    Done done;
    bool timed_out = false;
  };
  auto attempt = std::make_shared<Attempt>(socket_.get_executor());
  attempt->done = std::move(done);
  if (timeout.count() > 0) {
    attempt->timer.expires_after(timeout);
    attempt->timer.async_wait([this, attempt, owner](std::error_code ec) {
      if (ec || !attempt->done) return;
      attempt->timed_out = true;
      std::error_code ignored;
      socket_.close(ignored);  // the handshake ends with operation_aborted
    });
  }
  const bool server = context_->server;
  tls_->async_handshake(
      server ? asio::ssl::stream_base::server : asio::ssl::stream_base::client,
      [this, attempt, owner, timeout, server](std::error_code ec) {
        attempt->timer.cancel();
        auto finish = std::move(attempt->done);
        attempt->done = nullptr;
        if (attempt->timed_out) {
          return finish("no TLS handshake after " + std::to_string(timeout.count()) + " ms");
        }
        if (ec) return finish(describe_tls_failure(ec, tls_->native_handle(), server));
        if (!server && context_->purpose == TlsPurpose::kGrpc) {
          // gRPC over TLS is HTTP/2 chosen through ALPN (gRPC's PROTOCOL-HTTP2.md); gRPC's own
          // clients refuse a server that chose nothing, and so does this one.
          const unsigned char* chosen = nullptr;
          unsigned int length = 0;
          SSL_get0_alpn_selected(tls_->native_handle(), &chosen, &length);
          if (length != 2 || std::memcmp(chosen, "h2", 2) != 0) {
            return finish("the server did not choose HTTP/2 in the TLS handshake (ALPN h2)");
          }
        }
        finish(std::string());
      });
}

void Link::close() {
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

const std::vector<asio::const_buffer>& Link::coalesce(
    const std::vector<asio::const_buffer>& buffers) {
  coalesced_.clear();
  staging_.clear();
  std::size_t small = 0;
  for (const auto& buffer : buffers)
    small += buffer.size() < kCoalesceBelowBytes ? buffer.size() : 0;
  staging_.reserve(small);    // never reallocated below: the addresses taken into it stay valid
  bool staging_last = false;  // whether coalesced_'s last buffer is a run in staging_
  for (const auto& buffer : buffers) {
    if (buffer.size() >= kCoalesceBelowBytes) {
      coalesced_.push_back(buffer);
      staging_last = false;
      continue;
    }
    const auto* bytes = static_cast<const std::uint8_t*>(buffer.data());
    const std::uint8_t* run = staging_.data() + staging_.size();
    staging_.insert(staging_.end(), bytes, bytes + buffer.size());
    if (staging_last) {
      coalesced_.back() =
          asio::const_buffer(coalesced_.back().data(), coalesced_.back().size() + buffer.size());
    } else {
      coalesced_.emplace_back(run, buffer.size());
      staging_last = true;
    }
  }
  return coalesced_;
}

}  // namespace sonic::net
