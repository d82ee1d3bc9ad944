// The gRPC transport: sonic::Transport over one HTTP/2 connection per endpoint, driven by its
// own network thread. Registers the "grpc" URL scheme when linked.
#include "grpc_transport.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace sonic::grpc {

namespace {

// The system's lookup (getaddrinfo), for Resolution::each_address: every TCP address of a name.
Result<std::vector<std::string>> resolve_addresses(const std::string& host, std::uint16_t port) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  std::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Error(StatusCode::Unavailable, "cannot resolve '" + host + "': " + ec.message());
  std::vector<std::string> addresses;
  for (const auto& entry : results) {
    auto address = entry.endpoint().address();
    std::string text = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
    text += ":" + std::to_string(entry.endpoint().port());
    if (std::find(addresses.begin(), addresses.end(), text) == addresses.end()) {
      addresses.push_back(std::move(text));
    }
  }
  return addresses;
}

const bool registered = [] {
  transport_registry().set_resolver(&resolve_addresses);
  transport_registry().add(
      "grpc",
      [](const Endpoint& endpoint,
         const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
        return std::unique_ptr<Transport>(std::make_unique<GrpcTransport>(endpoint, options));
      });
  return true;
}();

}  // namespace

}  // namespace sonic::grpc

// Referenced by the sonic::grpc CMake target (-Wl,-u) so that linking the static library
// always keeps this file, and with it the registration above.
extern "C" {
int sonic_grpc_transport_anchor = 1;
}
