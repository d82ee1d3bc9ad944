#include "tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace sonic::net {

namespace {

// ALPN's wire form: each protocol preceded by its length.
constexpr unsigned char kAlpnH2[] = {2, 'h', '2'};

Error unusable(const std::string& what, const std::error_code& error) {
  return Error(StatusCode::InvalidArgument, "TLS: cannot use " + what + ": " + error.message());
}

// TLS 1.2 and 1.3 only: older versions have known weaknesses (RFC 8996 deprecates them).
void common_settings(asio::ssl::context& context) {
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression);
}

// A gRPC port offers HTTP/2 and nothing else: a client that offers ALPN without "h2" is
// refused (no_application_protocol), as it could not speak gRPC here; one that offers no ALPN
// at all goes on, as HTTP/2 with prior knowledge.
int select_h2(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
              unsigned int in_length, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_length, kAlpnH2, sizeof kAlpnH2, in, in_length) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// Loads one PEM item from memory when `pem` is set, else from `file`.
template <typename FromMemory, typename FromFile>
Result<void> load(const std::string& what, const std::string& pem, const std::string& file,
                  FromMemory from_memory, FromFile from_file) {
  std::error_code error;
  if (!pem.empty()) {
    from_memory(asio::buffer(pem), error);
    if (error) return unusable(what + " (PEM text)", error);
  } else {
    from_file(file, error);
    if (error) return unusable(what + " '" + file + "'", error);
  }
  return {};
}

Result<std::shared_ptr<TlsContext>> make_client_context(const TlsOptions& options,
                                                        TlsPurpose purpose) {
  auto context = std::make_shared<TlsContext>();
  auto& ssl = context->ssl;
  context->purpose = purpose;
  context->server_name = options.server_name;
  common_settings(ssl);
  ssl.set_verify_mode(asio::ssl::verify_peer);
  std::error_code error;
  if (options.ca_pem.empty() && options.ca_file.empty()) {
    ssl.set_default_verify_paths(error);
    if (error) return unusable("the system's certificate authorities", error);
  } else {
    auto ok = load(
        "the certificate authorities", options.ca_pem, options.ca_file,
        [&](asio::const_buffer pem, std::error_code& ec) {
          ssl.add_certificate_authority(pem, ec);
        },
        [&](const std::string& file, std::error_code& ec) { ssl.load_verify_file(file, ec); });
    if (!ok) return ok.error();
  }
  const bool has_cert = !options.cert_pem.empty() || !options.cert_file.empty();
  const bool has_key = !options.key_pem.empty() || !options.key_file.empty();
  if (has_cert != has_key) {
    return Error(StatusCode::InvalidArgument,
                 "TLS: a client certificate needs its private key, and a key its certificate");
  }
  if (has_cert) {
    auto ok = load(
        "the client certificate", options.cert_pem, options.cert_file,
        [&](asio::const_buffer pem, std::error_code& ec) { ssl.use_certificate_chain(pem, ec); },
        [&](const std::string& file, std::error_code& ec) {
          ssl.use_certificate_chain_file(file, ec);
        });
    if (!ok) return ok.error();
    ok = load(
        "the client key", options.key_pem, options.key_file,
        [&](asio::const_buffer pem, std::error_code& ec) {
          ssl.use_private_key(pem, asio::ssl::context::pem, ec);
        },
        [&](const std::string& file, std::error_code& ec) {
          ssl.use_private_key_file(file, asio::ssl::context::pem, ec);
        });
    if (!ok) return ok.error();
    if (SSL_CTX_check_private_key(ssl.native_handle()) != 1) {
      return Error(StatusCode::InvalidArgument,
                   "TLS: the client key does not match the client certificate");
    }
  }
  if (purpose == TlsPurpose::kGrpc) {
    SSL_CTX_set_alpn_protos(ssl.native_handle(), kAlpnH2, sizeof kAlpnH2);
  }
  return context;
}

// Text that tells client contexts (and so their connections) apart; the PEM texts by hash.
std::string key_of(const TlsOptions& options, TlsPurpose purpose) {
  auto h = [](const std::string& text) { return std::to_string(std::hash<std::string>{}(text)); };
  return std::to_string(static_cast<int>(purpose)) + '\n' + options.ca_file + '\n' +
         h(options.ca_pem) + '\n' + options.cert_file + '\n' + h(options.cert_pem) + '\n' +
         options.key_file + '\n' + h(options.key_pem) + '\n' + options.server_name;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> client_tls_context(const TlsOptions& options,
                                                       TlsPurpose purpose) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<TlsContext>> contexts;
  const std::string key = key_of(options, purpose);
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = contexts.begin(); it != contexts.end();) {
    it = it->second.expired() ? contexts.erase(it) : std::next(it);
  }
  if (auto context = contexts[key].lock()) return context;
  auto made = make_client_context(options, purpose);
  if (!made) {
    contexts.erase(key);
    return made.error();
  }
  (*made)->key = key;
  contexts[key] = *made;
  return *made;
}

Result<std::shared_ptr<TlsContext>> server_tls_context(const std::string& cert_file,
                                                       const std::string& key_file,
                                                       const std::string& client_ca_file,
                                                       TlsPurpose purpose) {
  if (cert_file.empty() || key_file.empty()) {
    return Error(StatusCode::InvalidArgument, "TLS: a server needs a certificate and its key");
  }
  auto context = std::make_shared<TlsContext>();
  auto& ssl = context->ssl;
  context->purpose = purpose;
  context->server = true;
  common_settings(ssl);
  std::error_code error;
  ssl.use_certificate_chain_file(cert_file, error);
  if (error) return unusable("the certificate '" + cert_file + "'", error);
  ssl.use_private_key_file(key_file, asio::ssl::context::pem, error);
  if (error) return unusable("the key '" + key_file + "'", error);
  if (SSL_CTX_check_private_key(ssl.native_handle()) != 1) {
    return Error(
        StatusCode::InvalidArgument,
        "TLS: the key '" + key_file + "' does not match the certificate '" + cert_file + "'");
  }
  if (!client_ca_file.empty()) {
    ssl.load_verify_file(client_ca_file, error);
    if (error)
      return unusable("the client certificate authorities '" + client_ca_file + "'", error);
    ssl.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  if (purpose == TlsPurpose::kGrpc) {
    SSL_CTX_set_alpn_select_cb(ssl.native_handle(), &select_h2, nullptr);
  }
  return context;
}

std::string describe_tls_failure(const std::error_code& error, SSL* ssl, bool server) {
  if (ssl != nullptr) {
    const long verified = SSL_get_verify_result(ssl);
    if (verified != X509_V_OK) {
      return std::string(server ? "the client's" : "the server's") +
             " certificate was refused: " + X509_verify_cert_error_string(verified);
    }
  }
  if (error == asio::ssl::error::stream_truncated || error == asio::error::eof) {
    return "the peer closed the connection during the TLS handshake";
  }
  if (error.category() == asio::error::get_ssl_category()) {
    const auto reason = ERR_GET_REASON(static_cast<unsigned long>(error.value()));
    // What OpenSSL meets when the first bytes are not a TLS record: plaintext HTTP/2's
    // "PRI * HTTP/2.0", an HTTP/1 request, sonic's TCP frames.
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
        reason == SSL_R_HTTP_REQUEST || reason == SSL_R_RECORD_LENGTH_MISMATCH) {
      return std::string(server ? "the client" : "the server") + " does not speak TLS (" +
             error.message() + ")";
    }
  }
  return "TLS handshake failed: " + error.message();
}

std::string client_certificate_refusal(const std::string& why) {
  // OpenSSL's words for the alerts (RFC 8446 §6.2): certificate_required (116), unknown_ca (48),
  // bad_certificate (42), certificate_expired (45), certificate_unknown (46).
  for (const char* alert :
       {"alert certificate required", "alert unknown ca", "alert bad certificate",
        "alert certificate expired", "alert certificate unknown"}) {
    if (why.find(alert) != std::string::npos) {
      return "the server refused this client's certificate (" + why +
             "): it requires one it trusts (ClientOptions::tls.cert_file, key_file)";
    }
  }
  return {};
}

}  // namespace sonic::net
