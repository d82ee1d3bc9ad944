// Name resolution's decisions: the endpoint URLs a lookup's addresses stand for (at most
// max_addresses), and how a name's endpoints change to match them (joining, draining).
#include "client/endpoint_resolution.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

using sonic::detail::address_change;
using sonic::detail::resolved_urls;

TEST_CASE("a lookup's addresses become endpoint URLs of the name's scheme") {
  auto resolved = resolved_urls("grpc", {"10.0.0.1:8001", "[::1]:8001", "10.0.0.1:8001"}, 64);
  CHECK_FALSE(resolved.truncated);
  CHECK(resolved.urls == std::set<std::string>{"grpc://10.0.0.1:8001", "grpc://[::1]:8001"});
  CHECK(resolved_urls("tcp", {}, 4).urls.empty());
}

TEST_CASE("at most max_addresses addresses, the first ones") {
  auto resolved = resolved_urls("grpc", {"a:1", "b:1", "c:1", "d:1"}, 2);
  CHECK(resolved.truncated);
  CHECK(resolved.urls == std::set<std::string>{"grpc://a:1", "grpc://b:1"});
  // A repeated address takes no place of its own.
  auto repeated = resolved_urls("grpc", {"a:1", "a:1", "b:1"}, 2);
  CHECK_FALSE(repeated.truncated);
  CHECK(repeated.urls.size() == 2);
  CHECK_FALSE(resolved_urls("grpc", {"a:1", "b:1"}, 2).truncated);  // exactly max
}

TEST_CASE("new addresses join, absent ones drain, the others stay") {
  const std::vector<std::pair<std::size_t, std::string>> active{
      {4, "grpc://a:1"}, {5, "grpc://b:1"}, {7, "grpc://c:1"}};
  auto change = address_change(active, {"grpc://b:1", "grpc://d:1", "grpc://e:1"});
  CHECK(change.draining == std::vector<std::size_t>{4, 7});
  CHECK(change.joining == std::vector<std::string>{"grpc://d:1", "grpc://e:1"});

  auto same = address_change(active, {"grpc://a:1", "grpc://b:1", "grpc://c:1"});
  CHECK(same.draining.empty());
  CHECK(same.joining.empty());

  auto first = address_change({}, {"grpc://a:1"});
  CHECK(first.draining.empty());
  CHECK(first.joining == std::vector<std::string>{"grpc://a:1"});
}
