#include "control_routes.hpp"

namespace sonic::protocol {

namespace {

std::vector<std::string_view> split(std::string_view route) {
  std::vector<std::string_view> out;
  while (!route.empty()) {
    const auto slash = route.find('/');
    out.push_back(route.substr(0, slash));
    if (slash == std::string_view::npos) break;
    route.remove_prefix(slash + 1);
  }
  return out;
}

// Matches path[at...] against pattern[p...]: the number of fixed segments matched, or -1.
int match(const std::vector<std::string_view>& pattern, std::size_t p,
          const std::vector<std::string_view>& path, std::size_t at, RouteValues& values) {
  if (p == pattern.size()) return at == path.size() ? 0 : -1;
  const std::string_view want = pattern[p];
  const std::size_t left = path.size() - at;
  auto rest = [&](std::size_t taken, int fixed) {
    const int more = match(pattern, p + 1, path, at + taken, values);
    return more < 0 ? -1 : more + fixed;
  };
  auto literal = [&](std::size_t i, std::string_view word) {
    return left > i && path[at + i] == word;
  };
  if (want.empty() || want.front() != '{') return literal(0, want) ? rest(1, 1) : -1;
  const bool optional = want.size() > 2 && want[want.size() - 2] == '?';
  const std::string_view what = want.substr(1, want.size() - (optional ? 3 : 2));
  RouteValues before = values;
  auto attempt = [&](std::size_t taken, int fixed, auto set) {
    set();
    const int n = rest(taken, fixed);
    if (n < 0) values = before;
    return n;
  };
  int n = -1;
  if (what == "model" || what == "models") {
    if (literal(0, "models")) {
      if (left >= 4 && path[at + 2] == "versions" && !path[at + 1].empty()) {
        n = attempt(4, 2, [&] {
          values.model = std::string(path[at + 1]);
          values.version = std::string(path[at + 3]);
        });
      }
      if (n < 0 && left >= 2 && !path[at + 1].empty()) {
        n = attempt(2, 1, [&] { values.model = std::string(path[at + 1]); });
      }
      if (n < 0 && what == "models") n = attempt(1, 1, [] {});
    }
  } else if (what == "region") {
    if (literal(0, "region") && left >= 2 && !path[at + 1].empty()) {
      n = attempt(2, 1, [&] { values.region = std::string(path[at + 1]); });
    }
  } else if (what == "repository" || what == "name") {
    if (left >= 1 && !path[at].empty()) {
      n = attempt(1, 0, [&] {
        (what == "name" ? values.model : values.repository) = std::string(path[at]);
      });
    }
  }
  if (n < 0 && optional) n = rest(0, 0);
  return n;
}

}  // namespace

std::optional<RouteMatch> match_control_route(const std::vector<std::string_view>& segments) {
  std::optional<RouteMatch> best;
  int best_fixed = -1;
  for (const auto& spec : kControlMethods) {
    RouteValues values;
    const int fixed = match(split(spec.route), 0, segments, 0, values);
    if (fixed > best_fixed) {
      best_fixed = fixed;
      best = RouteMatch{spec.method, std::move(values)};
    }
  }
  return best;
}

std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string control_route_path(ControlMethod method, const RouteValues& values) {
  std::string path;
  for (const std::string_view segment : split(spec_of(method).route)) {
    std::string part;
    if (segment.empty() || segment.front() != '{') {
      part = std::string(segment);
    } else if (segment.rfind("{model", 0) == 0) {
      part = "models";
      if (!values.model.empty()) {
        part += "/" + percent_encoded(values.model);
        if (!values.version.empty()) part += "/versions/" + percent_encoded(values.version);
      } else if (segment == "{model?}") {
        part.clear();
      }
    } else if (segment.rfind("{region", 0) == 0) {
      if (!values.region.empty()) part = "region/" + percent_encoded(values.region);
    } else if (segment == "{repository?}") {
      part = percent_encoded(values.repository);
    } else if (segment == "{name}") {
      part = percent_encoded(values.model);
    }
    if (!part.empty()) path += "/" + part;
  }
  return path;
}

}  // namespace sonic::protocol
