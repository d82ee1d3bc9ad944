// sonic — a model as a request names it, for the client's maps and routing.
#pragma once

#include <string>
#include <tuple>

#include "sonic/request.hpp"

namespace sonic::detail {

/// A model's name and version (empty: the server's choice), as one request names it: the key
/// of the metadata cache, of an endpoint's models known to be missing, and of routing.
struct ModelRef {
  std::string name;
  std::string version;

  static ModelRef of(const InferRequest& request) {
    return {request.model_name(), request.model_version()};
  }
  friend bool operator<(const ModelRef& a, const ModelRef& b) {
    return std::tie(a.name, a.version) < std::tie(b.name, b.version);
  }
  friend bool operator==(const ModelRef& a, const ModelRef& b) {
    return a.name == b.name && a.version == b.version;
  }
};

}  // namespace sonic::detail
