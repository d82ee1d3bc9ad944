// sonic — endpoint URLs and the registry of linked transports.
#include "sonic/transport.hpp"

#include <mutex>
#include <string>
#include <utility>

namespace sonic {
namespace {

// What to link for a scheme that has no transport.
std::string link_hint(std::string_view scheme) {
  if (scheme == "grpc" || scheme == "grpcs") return "link the CMake target sonic::grpc";
  if (scheme == "grpc+shm") return "link the CMake target sonic::shm";
  if (scheme == "tcp" || scheme == "tcp+zstd" || scheme == "tcp+tls" || scheme == "tcp+zstd+tls")
    return "link the CMake target sonic::tcp";
  return "known schemes are grpc, grpcs, grpc+shm, tcp, tcp+zstd, tcp+tls and tcp+zstd+tls";
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint ep;
  ep.url = std::string(url);
  std::string_view rest = url;
  if (auto sep = rest.find("://"); sep != std::string_view::npos) {
    ep.scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  } else {
    ep.scheme = "grpc";
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view port_text;
  bool port_given = false;  // a ':' after the host: a port must follow
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) {
      return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': unclosed '[' in host");
    }
    ep.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': junk after host");
      }
      port_text = rest.substr(1);
      port_given = true;
    }
  } else {
    auto colon = rest.rfind(':');
    ep.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      port_given = true;
    }
  }
  if (ep.host.empty()) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has no host; expected scheme://host:port");
  }
  if (!port_given) {
    ep.port = 8001;
    return ep;
  }
  if (port_text.empty()) {  // "host:" (an unset variable in a script, say)
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an empty port; expected scheme://host:port");
  }
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) {
      port = 70000;
      break;
    }
    port = port * 10 + static_cast<unsigned long>(c - '0');
  }
  if (port == 0 || port > 65535) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an invalid port '" + std::string(port_text) + "'");
  }
  ep.port = static_cast<std::uint16_t>(port);
  return ep;
}

bool is_ip_literal(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return true;  // IPv6
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

TransportStream::~TransportStream() = default;

Transport::~Transport() = default;

void Transport::repository_index_async(bool, Deadline, Callback<std::vector<ModelIndex>> done) {
  done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
}

void Transport::load_model_async(std::string, std::string, Deadline, Callback<bool> done) {
  done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
}

void Transport::unload_model_async(std::string, Deadline, Callback<bool> done) {
  done(Error(StatusCode::Unimplemented, "this transport has no model repository calls"));
}

Result<std::unique_ptr<TransportStream>> Transport::open_stream(Deadline,
                                                                std::function<void(StreamResponse)>,
                                                                Callback<void>) {
  return Error(StatusCode::Unimplemented, "this transport has no streams (ModelStreamInfer)");
}

void TransportRegistry::add(std::string scheme, TransportFactory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  factories_[std::move(scheme)] = std::move(factory);
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(const Endpoint& endpoint,
                                                             const ClientOptions& options) const {
  TransportFactory factory;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = factories_.find(endpoint.scheme);
    if (it != factories_.end()) factory = it->second;
  }
  if (!factory) {
    return Error(StatusCode::InvalidArgument, "no transport for scheme '" + endpoint.scheme +
                                                  "' in '" + endpoint.url +
                                                  "': " + link_hint(endpoint.scheme));
  }
  return factory(endpoint, options);
}

bool TransportRegistry::has(std::string_view scheme) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return factories_.find(scheme) != factories_.end();
}

void TransportRegistry::set_resolver(Resolver resolver) {
  std::lock_guard<std::mutex> lock(mutex_);
  resolver_ = std::move(resolver);
}

Resolver TransportRegistry::resolver() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resolver_;
}

TransportRegistry& transport_registry() {
  static TransportRegistry registry;
  return registry;
}

}  // namespace sonic
