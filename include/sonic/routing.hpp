// sonic — which endpoint a request goes to: model discovery, preferred endpoints, balancing,
// and models pinned to a version and configuration (ClientOptions::routing).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sonic {

/// How a request chooses among the endpoints that may serve it.
enum class Balancing {
  /// The one with the fewest requests of this client in flight (ties rotate): the default.
  LeastOutstanding,
  /// Two drawn at random, and of them the one that looks faster: requests in flight times its
  /// recent latency (a moving average of what this client measured, which includes the
  /// server's queue). Load balancers (Envoy, gRPC) use it: it follows slow and fast servers
  /// without the herd that always taking the best-looking one causes among many clients.
  PowerOfTwoChoices,
};

/// What a job expects of a model, so that it never gets answers from another one.
struct ModelPin {
  /// The version requests ask for when they name none; a request naming another version fails
  /// (FAILED_PRECONDITION), and so does an answer from another version.
  std::string version;
  /// The checksum of the model's configuration (model_config_checksum() of what
  /// Client::model_config returns) that an endpoint must report before it gets a request for
  /// the model: one that reports another configuration, or none, gets none. Empty: unchecked.
  std::string config_checksum;
};

/// Routing of requests over a client's endpoints.
struct Routing {
  /// Ask every endpoint which models it has ready (RepositoryIndex) when the client starts,
  /// then this often, and again soon after a NOT_FOUND: a model's requests go only to the
  /// endpoints that list it (one that has not answered yet is tried as without discovery). An
  /// endpoint that refuses or fails the question (an overloaded server, or a proxy in front of
  /// busy ones, as SuperSONIC's rejects it) takes no requests until it answers again: its load
  /// moves to the others, or to the fallback. Zero (the default): no discovery, unless a pin
  /// has a config_checksum, which is checked at start and after a NOT_FOUND.
  std::chrono::milliseconds discovery_interval{0};
  /// Endpoint URLs (as given in ClientOptions::endpoints) that a model's requests go to first,
  /// by model name: the others only while none of these is in rotation and has the model.
  std::map<std::string, std::vector<std::string>> preferred;
  Balancing balancing = Balancing::LeastOutstanding;
  /// Pinned models, by name.
  std::map<std::string, ModelPin> pins;
};

/// A checksum of a model configuration as JSON (what Client::model_config returns): 16 hex
/// digits of its 64-bit FNV-1a hash. Servers that report the same configuration give the same
/// checksum; any change (a new max_batch_size, another output) changes it.
inline std::string model_config_checksum(std::string_view config_json) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : config_json) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) out[static_cast<std::size_t>(i)] = kHex[hash & 15];
  return out;
}

}  // namespace sonic
