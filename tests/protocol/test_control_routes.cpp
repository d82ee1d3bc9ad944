// The control plane's table (src/protocol/control_methods.hpp) and its REST routes read both
// ways (control_routes.hpp): every method's path leads back to it, with its values, and the
// routes Triton's HTTP frontend serves (server src/http_server.cc) name the methods it answers.
#include "protocol/control_routes.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using sonic::ControlMethod;
using namespace sonic::protocol;

namespace {

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty()) {
    const auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::optional<RouteMatch> match(std::string_view path) {
  return match_control_route(segments(path));
}

}  // namespace

TEST_CASE("every control method has its gRPC name and is found by it") {
  for (const auto& spec : kControlMethods) {
    CAPTURE(spec.name);
    CHECK(find_control_method(spec.name) == spec.method);
    CHECK(spec.request_type == "inference." + std::string(spec.name) + "Request");
    CHECK(spec.response_type == "inference." + std::string(spec.name) + "Response");
  }
  CHECK_FALSE(find_control_method(kModelInfer));
  CHECK_FALSE(find_control_method(kModelStreamInfer));
  CHECK_FALSE(find_control_method("modelready"));  // names are exact
  CHECK_FALSE(find_control_method(""));
}

TEST_CASE("every control method's path leads back to it, with its values") {
  for (const auto& spec : kControlMethods) {
    CAPTURE(spec.name);
    RouteValues values;
    if (spec.route.find("{model") != std::string_view::npos) {
      values.model = "jet tagger";
      values.version = "2";
    }
    if (spec.route.find("{name}") != std::string_view::npos) values.model = "jets";
    if (spec.route.find("{region") != std::string_view::npos) values.region = "r 1";
    const std::string path = control_route_path(spec.method, values);
    CAPTURE(path);
    // The client encodes; the server's HTTP parser decodes before routing.
    std::string decoded = path;
    for (const auto& [encoded, plain] : {std::pair{"%20", " "}, std::pair{"%2F", "/"}}) {
      for (auto at = decoded.find(encoded); at != std::string::npos; at = decoded.find(encoded)) {
        decoded.replace(at, 3, plain);
      }
    }
    auto found = match(decoded);
    REQUIRE(found);
    CHECK(found->method == spec.method);
    CHECK(found->values.model == values.model);
    CHECK(found->values.region == values.region);
    const bool versions = spec.route.find("{name}") == std::string_view::npos;
    CHECK(found->values.version == (versions ? values.version : std::string()));
  }
}

TEST_CASE("Triton's REST routes name the methods it answers") {
  CHECK(match("/v2/health/live")->method == ControlMethod::ServerLive);
  CHECK(match("/v2/health/ready")->method == ControlMethod::ServerReady);
  CHECK(match("/v2")->method == ControlMethod::ServerMetadata);
  CHECK(match("/v2/models/m")->method == ControlMethod::ModelMetadata);
  auto versioned = match("/v2/models/m/versions/3/ready");
  REQUIRE(versioned);
  CHECK(versioned->method == ControlMethod::ModelReady);
  CHECK(versioned->values.model == "m");
  CHECK(versioned->values.version == "3");
  // The statistics of every model, not the metadata of a model named "stats".
  auto stats = match("/v2/models/stats");
  REQUIRE(stats);
  CHECK(stats->method == ControlMethod::ModelStatistics);
  CHECK(stats->values.model.empty());
  CHECK(match("/v2/models/stats/ready")->method == ControlMethod::ModelReady);
  CHECK(match("/v2/models/m/config")->method == ControlMethod::ModelConfig);
  auto index = match("/v2/repository/index");
  REQUIRE(index);
  CHECK(index->method == ControlMethod::RepositoryIndex);
  CHECK(index->values.repository.empty());
  CHECK(match("/v2/repository/other/index")->values.repository == "other");
  auto load = match("/v2/repository/models/m/load");
  REQUIRE(load);
  CHECK(load->method == ControlMethod::RepositoryModelLoad);
  CHECK(load->values.model == "m");
  CHECK(match("/v2/repository/other/models/m/unload")->method ==
        ControlMethod::RepositoryModelUnload);
  CHECK(match("/v2/systemsharedmemory/status")->method == ControlMethod::SystemSharedMemoryStatus);
  auto region = match("/v2/cudasharedmemory/region/r/register");
  REQUIRE(region);
  CHECK(region->method == ControlMethod::CudaSharedMemoryRegister);
  CHECK(region->values.region == "r");
  // A registration must name its region: the route matches, and the port refuses it in
  // Triton's words.
  CHECK(match("/v2/systemsharedmemory/register")->values.region.empty());
  CHECK(match("/v2/trace/setting")->method == ControlMethod::TraceSetting);
  CHECK(match("/v2/models/m/trace/setting")->values.model == "m");
  CHECK(match("/v2/logging")->method == ControlMethod::LogSettings);
  // Not control routes: inference, and paths Triton does not serve.
  CHECK_FALSE(match("/v2/models/m/infer"));
  CHECK_FALSE(match("/v2/models/m/versions/1/infer"));
  CHECK_FALSE(match("/v2/models"));
  CHECK_FALSE(match("/v2/health"));
  CHECK_FALSE(match("/v1/health/live"));
  CHECK_FALSE(match("/v2/models/m/ready/more"));
}

TEST_CASE("a client's paths are percent-encoded, a missing model leaves its segments out") {
  CHECK(control_route_path(ControlMethod::ModelConfig, {"m/x", "", "", ""}) ==
        "/v2/models/m%2Fx/config");
  CHECK(control_route_path(ControlMethod::ModelStatistics, {}) == "/v2/models/stats");
  CHECK(control_route_path(ControlMethod::ModelStatistics, {"m", "1", "", ""}) ==
        "/v2/models/m/versions/1/stats");
  CHECK(control_route_path(ControlMethod::TraceSetting, {}) == "/v2/trace/setting");
  CHECK(control_route_path(ControlMethod::SystemSharedMemoryUnregister, {}) ==
        "/v2/systemsharedmemory/unregister");
  CHECK(control_route_path(ControlMethod::RepositoryModelLoad, {"m", "", "", ""}) ==
        "/v2/repository/models/m/load");
}
