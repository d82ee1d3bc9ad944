// The TLS options of sonic's client programs, declared one way in all of them.
#pragma once

#include <sonic/options.hpp>

#include <string>

#include "command_line.hpp"

namespace sonic::tools {

/// Adds --tls-ca, --tls-cert, --tls-key and --tls-server-name, which fill `tls` (used by
/// grpcs://, tcp+tls:// and tcp+zstd+tls:// endpoints).
inline void add_tls_options(CommandLine& line, TlsOptions& tls) {
  line.option("--tls-ca", "FILE",
              "certificate authorities (PEM) the server's certificate must chain to "
              "(default: the system's)",
              [&tls](const std::string& v) { tls.ca_file = v; })
      .option("--tls-cert", "FILE", "client certificate chain (PEM), for mutual TLS",
              [&tls](const std::string& v) { tls.cert_file = v; })
      .option("--tls-key", "FILE", "the client certificate's private key (PEM)",
              [&tls](const std::string& v) { tls.key_file = v; })
      .option("--tls-server-name", "NAME",
              "the name the server's certificate must be for (default: the URL's host)",
              [&tls](const std::string& v) { tls.server_name = v; });
}

}  // namespace sonic::tools
