// The system's name lookup (getaddrinfo), for endpoints whose every address is an endpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::net {

/// Every TCP address of `host`, as "address:port" ("[::1]:8001" for IPv6), without duplicates.
/// Blocks while the system looks the name up. UNAVAILABLE when it cannot be resolved.
SONIC_EXPORT Result<std::vector<std::string>> resolve_addresses(const std::string& host,
                                                                std::uint16_t port);

}  // namespace sonic::net
