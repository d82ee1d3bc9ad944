// The REST routes of the control methods (control_methods.hpp), read both ways: a server finds
// the method a request's path names, a client writes the path of the call it makes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control_methods.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::protocol {

/// What a route's braced segments stand for (empty: absent).
struct RouteValues {
  std::string model;
  std::string version;
  std::string region;
  std::string repository;
};

/// A path a control method's route matched.
struct RouteMatch {
  ControlMethod method;
  RouteValues values;
};

/// The control method whose route the path's segments (split at "/", percent-decoded, no
/// empty first segment) match, with what its braced segments stood for; none for a path that is
/// no control route. Where two routes match ("v2/models/stats": the statistics of every model,
/// or the metadata of a model named "stats"), the one with more fixed segments wins, as in
/// Triton, where the statistics route is tried first.
SONIC_EXPORT std::optional<RouteMatch> match_control_route(
    const std::vector<std::string_view>& segments);

/// The path of `method`'s route ("/v2/models/simple/versions/2/ready"), its braced segments
/// from `values`, each percent-encoded (RFC 3986's unreserved characters stay as they are).
SONIC_EXPORT std::string control_route_path(ControlMethod method, const RouteValues& values);

/// `text` percent-encoded for one path segment.
SONIC_EXPORT std::string percent_encoded(std::string_view text);

}  // namespace sonic::protocol
