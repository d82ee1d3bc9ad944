// The typed control calls over REST (transports/http/src/rest_control.hpp): each goes straight
// to its route, and its answer is read from the JSON Triton's HTTP frontend writes
// (src/http_server.cc), lying answers included.
#include "rest_control.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "protocol/control_codec.hpp"

using namespace sonic;

namespace {

std::string line(const ControlRequest& request) {
  auto made = http::encode_rest_request(request);
  REQUIRE(made);
  return made->method + " " + made->target + (made->json.empty() ? "" : " " + made->json);
}

template <typename T>
T answer(const ControlRequest& request, int status, std::string_view body) {
  auto decoded = http::decode_rest_answer(request, status, body);
  REQUIRE(decoded);
  REQUIRE(std::holds_alternative<T>(*decoded));
  return std::get<T>(*decoded);
}

}  // namespace

TEST_CASE("typed control calls go straight to their REST routes") {
  CHECK(line(ServerLiveRequest{}) == "GET /v2/health/live");
  CHECK(line(ServerReadyRequest{}) == "GET /v2/health/ready");
  CHECK(line(ServerMetadataRequest{}) == "GET /v2");
  CHECK(line(ModelReadyRequest{{"m", "2"}}) == "GET /v2/models/m/versions/2/ready");
  CHECK(line(ModelMetadataRequest{{"a b", ""}}) == "GET /v2/models/a%20b");
  CHECK(line(ModelConfigRequest{{"m", ""}}) == "GET /v2/models/m/config");
  CHECK(line(ModelStatisticsRequest{}) == "GET /v2/models/stats");
  CHECK(line(RepositoryIndexRequest{true}) == R"(POST /v2/repository/index {"ready":true})");
  CHECK(line(RepositoryModelLoadRequest{"m", R"({"max_batch_size":4})"}) ==
        R"(POST /v2/repository/models/m/load {"parameters":{"config":"{\"max_batch_size\":4}"}})");
  CHECK(line(RepositoryModelUnloadRequest{"m"}) == "POST /v2/repository/models/m/unload {}");
  // A raw call goes through its message.
  CHECK(line(RawControlRequest{ControlMethod::ModelReady, protocol::encode_model_ref({"m", ""})}) ==
        "GET /v2/models/m/ready");
}

TEST_CASE("typed answers are read from Triton's JSON and statuses") {
  CHECK(answer<bool>(ServerLiveRequest{}, 200, "") == true);
  CHECK(answer<bool>(ModelReadyRequest{{"m", ""}}, 400, "") == false);
  auto metadata = answer<ServerMetadata>(
      ServerMetadataRequest{}, 200,
      R"({"name": "triton", "version": "2.50.0", "extensions": ["statistics"]})");
  CHECK(metadata.name == "triton");
  CHECK(metadata.extensions == std::vector<std::string>{"statistics"});
  auto model =
      answer<ModelMetadata>(ModelMetadataRequest{{"m", ""}}, 200,
                            R"({"name": "m", "versions": ["1"], "platform": "onnxruntime_onnx",
          "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}],
          "outputs": [{"name": "y", "datatype": "BYTES", "shape": [1]}]})");
  CHECK(model.inputs.at(0).shape == Shape{-1, 16});
  CHECK(model.outputs.at(0).dtype == DataType::Bytes);
  auto index = answer<std::vector<ModelIndex>>(RepositoryIndexRequest{}, 200,
                                               R"([{"name": "a", "version": "1", "state": "READY"},
          {"name": "b", "state": "UNAVAILABLE", "reason": "unloaded"}, {"name": "c"}])");
  REQUIRE(index.size() == 3);
  CHECK(index[0].state == ModelState::Ready);
  CHECK(index[1].unloaded);
  CHECK(index[2].state == ModelState::Unknown);
  CHECK(answer<bool>(RepositoryModelLoadRequest{"m", ""}, 200, "") == true);
  // The configuration is read through its message, so that every transport prints it alike.
  auto config = answer<std::string>(ModelConfigRequest{{"m", ""}}, 200,
                                    R"({"name": "m", "max_batch_size": 8})");
  CHECK(config.find("\"max_batch_size\"") != std::string::npos);
}

TEST_CASE("error statuses and lying answers") {
  auto missing = http::decode_rest_answer(ModelMetadataRequest{{"x", ""}}, 404,
                                          R"({"error": "Request for unknown model: 'x'"})");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == StatusCode::NotFound);
  auto down = http::decode_rest_answer(ServerReadyRequest{}, 503, "upstream connect error");
  REQUIRE_FALSE(down);
  CHECK(down.error().code() == StatusCode::Unavailable);
  for (const char* lie :
       {"not json", R"({"inputs": 5})", R"({"inputs": [{"name": "x", "datatype": "FP99",
        "shape": [1]}]})",
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": ["a"]}]})",
        R"({"versions": [1]})"}) {
    CAPTURE(lie);
    auto lied = http::decode_rest_answer(ModelMetadataRequest{{"m", ""}}, 200, lie);
    REQUIRE_FALSE(lied);
    CHECK(lied.error().code() == StatusCode::Internal);
  }
  auto index = http::decode_rest_answer(RepositoryIndexRequest{}, 200, R"({"models": []})");
  REQUIRE_FALSE(index);
  CHECK(index.error().code() == StatusCode::Internal);
}
