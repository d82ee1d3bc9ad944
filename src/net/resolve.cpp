#include "resolve.hpp"

#include <asio.hpp>

#include <algorithm>

namespace sonic::net {

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

}  // namespace sonic::net
