// The http:// transport's REST codec (transports/http/src/rest_codec.*) against the bodies of
// Triton's protocol documents (docs/protocol/extension_binary_data.md, the KServe v2 REST
// routes): what it sends, and what it makes of answers, lying ones included.
#include "rest_codec.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "protocol/control_codec.hpp"
#include "protocol/control_methods.hpp"
#include "protocol/infer_codec.hpp"
#include "protocol/proto_json.hpp"

using nlohmann::json;
using sonic::DataType;
using sonic::InferRequest;
using sonic::StatusCode;
using sonic::Tensor;
namespace http = sonic::http;

namespace {

std::shared_ptr<std::uint8_t> part_of(const void* bytes, std::size_t size) {
  std::shared_ptr<std::uint8_t> part(new std::uint8_t[size], std::default_delete<std::uint8_t[]>());
  std::memcpy(part.get(), bytes, size);
  return part;
}

}  // namespace

TEST_CASE("an inference request asks for binary data both ways and borrows its tensors") {
  const std::vector<float> values{1.5f, -2.0f, 3.25f, 0.0f};
  InferRequest request("my model", "2");
  request.id("r-9")
      .parameter("priority", std::int64_t{2})
      .input("INPUT0", Tensor::view(values, {2, 2}))
      .input("SHM", Tensor::descriptor(DataType::Fp32, {4}),
             {{"shared_memory_region", std::string("region")},
              {"shared_memory_byte_size", std::int64_t{16}}})
      .output("OUTPUT0")
      .output("PLACED", {{"shared_memory_region", std::string("out")}});
  const auto sent = http::encode_rest_infer(request);
  CHECK(sent.method == "POST");
  CHECK(sent.target == "/v2/models/my%20model/versions/2/infer");
  const json body = json::parse(sent.json);
  CHECK(body["id"] == "r-9");
  CHECK(body["parameters"]["priority"] == 2);
  CHECK(body["parameters"]["binary_data_output"] == true);
  CHECK(body["inputs"][0] == json::parse(R"({"name": "INPUT0", "shape": [2, 2],
    "datatype": "FP32", "parameters": {"binary_data_size": 16}})"));
  // An input in shared memory sends no bytes, so it has no binary_data_size.
  CHECK(body["inputs"][1]["parameters"].count("binary_data_size") == 0);
  CHECK(body["outputs"][0] == json::parse(R"({"name": "OUTPUT0",
    "parameters": {"binary_data": true}})"));
  CHECK(body["outputs"][1]["parameters"].count("binary_data") == 0);
  REQUIRE(sent.binary.size() == 1);
  CHECK(sent.binary[0].data == static_cast<const void*>(values.data()));  // not copied
  CHECK(sent.binary_bytes == 16);
}

TEST_CASE("an answer's binary outputs and JSON outputs both become tensors") {
  // The answer of extension_binary_data.md's example: one output binary, one in JSON.
  const std::string answer = R"({"model_name": "mymodel", "model_version": "1", "id": "42",
    "parameters": {"sequence_end": true},
    "outputs": [
      {"name": "output0", "shape": [3, 2], "datatype": "FP32",
       "parameters": {"binary_data_size": 24}},
      {"name": "output1", "shape": [2, 2], "datatype": "INT32", "data": [1, 2, 3, 4]},
      {"name": "strings", "shape": [2], "datatype": "BYTES", "data": ["a", "bc"]}]})";
  auto parsed = http::parse_rest_answer(answer);
  REQUIRE(parsed);
  auto layout = http::binary_layout(*parsed, 24);
  REQUIRE(layout);
  CHECK(*layout == std::vector<std::size_t>{24});
  const std::vector<float> floats{1, 2, 3, 4, 5, 6};
  auto result = http::decode_rest_infer(*parsed, {part_of(floats.data(), 24)}, *layout);
  REQUIRE(result);
  CHECK(result->model_name() == "mymodel");
  CHECK(result->request_id() == "42");
  CHECK(std::get<bool>(result->parameters().at("sequence_end")));
  CHECK(result->output("output0").as<float>()[5] == 6.0f);
  CHECK(result->output("output0").shape() == sonic::Shape{3, 2});
  CHECK(result->output("output1").as<std::int32_t>()[3] == 4);
  CHECK(result->output("strings").to_strings() == std::vector<std::string>{"a", "bc"});
}

TEST_CASE("outputs placed in shared memory take the request's placement: Triton names none") {
  // Triton's HTTP frontend answers an output it wrote to a region with its name, datatype and
  // shape alone (no data, no binary_data_size, no parameters): only the request says where its
  // bytes went, as with gRPC (protocol::decode_infer_response's `placed`).
  const std::string answer = R"({"model_name": "simple", "model_version": "1", "outputs": [
      {"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]},
      {"name": "OUTPUT1", "datatype": "INT32", "shape": [2], "parameters":
       {"binary_data_size": 8}}]})";
  auto parsed = http::parse_rest_answer(answer);
  REQUIRE(parsed);
  auto layout = http::binary_layout(*parsed, 8);
  REQUIRE(layout);
  const std::vector<std::int32_t> ints{3, 4};
  InferRequest request("simple");
  request.output("OUTPUT0", {{"shared_memory_region", std::string("output_data")},
                             {"shared_memory_byte_size", std::int64_t{64}},
                             {"shared_memory_offset", std::int64_t{64}}});
  request.output("OUTPUT1");
  const auto placed = sonic::protocol::outputs_in_shared_memory(request);
  auto result = http::decode_rest_infer(*parsed, {part_of(ints.data(), 8)}, *layout, &placed);
  REQUIRE_MESSAGE(result, result.error().message());
  const auto* out = result->find_output("OUTPUT0");
  REQUIRE(out);
  CHECK(out->tensor.byte_size() == 0);
  CHECK(out->tensor.shape() == sonic::Shape{1, 16});
  CHECK(std::get<std::string>(out->parameters.at("shared_memory_region")) == "output_data");
  CHECK(std::get<std::int64_t>(out->parameters.at("shared_memory_offset")) == 64);
  CHECK(result->output("OUTPUT1").as<std::int32_t>()[1] == 4);
  // Without the request's placement, such an output is a malformed answer.
  REQUIRE_FALSE(http::decode_rest_infer(*parsed, {part_of(ints.data(), 8)}, *layout));
}

TEST_CASE("answers whose binary sizes do not add up are refused") {
  auto layout = [](const std::string& answer, std::size_t binary_bytes) {
    auto parsed = http::parse_rest_answer(answer);
    return parsed ? http::binary_layout(*parsed, binary_bytes) : parsed.error();
  };
  const std::string two = R"({"outputs": [
    {"name": "a", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}},
    {"name": "b", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}}]})";
  CHECK(layout(two, 8));
  CHECK(layout(two, 12).error().code() == StatusCode::Internal);  // bytes left over
  CHECK(layout(two, 6).error().code() == StatusCode::Internal);   // runs past
  CHECK(layout(R"({"outputs": [{"name": "a", "parameters": {"binary_data_size": -4}}]})", 0)
            .error()
            .code() == StatusCode::Internal);
  CHECK(layout("[1, 2", 0).error().code() == StatusCode::Internal);
  CHECK(layout("[1, 2]", 0).error().code() == StatusCode::Internal);  // not an object
  // A size that fits the body but not the shape.
  const std::string wrong_shape = R"({"outputs": [
    {"name": "a", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 4}}]})";
  const float one = 1;
  auto result =
      http::decode_rest_infer(*http::parse_rest_answer(wrong_shape), {part_of(&one, 4)}, {4});
  CHECK(result.error().code() == StatusCode::Internal);
}

TEST_CASE("answers whose JSON is of the wrong shape are refused, not thrown") {
  for (const char* answer : {R"({"model_name": 5, "outputs": []})", R"({"outputs": [5]})",
                             R"({"outputs": [{"name": "a", "datatype": "FP32", "shape": 3}]})",
                             R"({"outputs": [{"name": "a", "datatype": "FP32", "shape": [1],
                                 "data": [1], "parameters": [1]}]})"}) {
    CAPTURE(answer);
    auto parsed = http::parse_rest_answer(answer);
    REQUIRE(parsed);
    auto result = http::decode_rest_infer(*parsed, {}, {});
    REQUIRE_FALSE(result);
    CHECK(result.error().code() == StatusCode::Internal);
  }
}

TEST_CASE("control methods go to their REST routes") {
  using sonic::protocol::encode_model_ref;
  auto route = [](const char* method, const std::string& request) {
    auto made = http::encode_rest_control(*sonic::protocol::find_control_method(method), request);
    REQUIRE(made);
    return made->method + " " + made->target + (made->json.empty() ? "" : " " + made->json);
  };
  CHECK(route("ServerLive", "") == "GET /v2/health/live");
  CHECK(route("ServerReady", "") == "GET /v2/health/ready");
  CHECK(route("ServerMetadata", "") == "GET /v2");
  CHECK(route("ModelReady", encode_model_ref({"m", ""})) == "GET /v2/models/m/ready");
  CHECK(route("ModelMetadata", encode_model_ref({"m", "3"})) == "GET /v2/models/m/versions/3");
  CHECK(route("ModelConfig", encode_model_ref({"m/x", ""})) == "GET /v2/models/m%2Fx/config");
  CHECK(route("ModelStatistics", encode_model_ref({"", ""})) == "GET /v2/models/stats");
  CHECK(route("ModelStatistics", encode_model_ref({"m", ""})) == "GET /v2/models/m/stats");
  CHECK(route("RepositoryIndex", sonic::protocol::encode_repository_query({"", true})) ==
        R"(POST /v2/repository/index {"ready":true})");
  sonic::protocol::RepositoryModelRequest load{"", "m", {}};
  load.parameters["config"] = R"({"max_batch_size": 4})";
  CHECK(route("RepositoryModelLoad", sonic::protocol::encode_repository_model_request(load)) ==
        R"(POST /v2/repository/models/m/load {"parameters":{"config":"{\"max_batch_size\": 4}"}})");
  auto shm = sonic::protocol::message_from_json(
      "inference.SystemSharedMemoryRegisterRequest",
      R"({"name": "r", "key": "/k", "offset": "8", "byte_size": "64"})");
  REQUIRE(shm);
  CHECK(route("SystemSharedMemoryRegister", *shm) ==
        R"(POST /v2/systemsharedmemory/region/r/register {"byte_size":64,"key":"/k","offset":8})");
}

TEST_CASE("REST answers become the protobuf responses the client reads") {
  auto live = http::decode_rest_control(sonic::ControlMethod::ServerLive, 400, "");
  REQUIRE(live);
  CHECK(*sonic::protocol::decode_flag(*live) == false);
  CHECK(*sonic::protocol::decode_flag(
      *http::decode_rest_control(sonic::ControlMethod::ModelReady, 200, "")));
  auto metadata =
      http::decode_rest_control(sonic::ControlMethod::ModelMetadata, 200, R"({"name": "m",
    "versions": ["1"], "platform": "onnxruntime_onnx",
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}],
    "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 5]}]})");
  REQUIRE(metadata);
  auto decoded = sonic::protocol::decode_model_metadata(*metadata);
  REQUIRE(decoded);
  CHECK(decoded->inputs[0].shape == sonic::Shape{-1, 16});
  // Triton answers .../config with the configuration itself; the response wraps it.
  auto config = http::decode_rest_control(sonic::ControlMethod::ModelConfig, 200,
                                          R"({"name": "m", "max_batch_size": 8})");
  REQUIRE(config);
  auto inner = sonic::protocol::decode_model_config_response(*config);
  REQUIRE(inner);
  CHECK(json::parse(*sonic::protocol::message_to_json("inference.ModelConfig", *inner)) ==
        json::parse(R"({"name": "m", "max_batch_size": 8})"));
  auto index = http::decode_rest_control(sonic::ControlMethod::RepositoryIndex, 200,
                                         R"([{"name": "a", "version": "1", "state": "READY"}])");
  REQUIRE(index);
  CHECK(sonic::protocol::decode_repository_index(*index)->at(0).name == "a");
  CHECK(http::decode_rest_control(sonic::ControlMethod::ModelMetadata, 200, "not json")
            .error()
            .code() == StatusCode::Internal);
}

TEST_CASE("error answers keep Triton's words and map its statuses back to codes") {
  auto error = http::rest_error(404, R"({"error":"Request for unknown model: 'x' is not found"})");
  CHECK(error.code() == StatusCode::NotFound);
  CHECK(error.message() == "Request for unknown model: 'x' is not found");
  CHECK(http::rest_error(400, R"({"error":"bad"})").code() == StatusCode::InvalidArgument);
  CHECK(http::rest_error(500, "").code() == StatusCode::Internal);
  CHECK(http::rest_error(501, "").code() == StatusCode::Unimplemented);
  CHECK(http::rest_error(503, "upstream connect error").code() == StatusCode::Unavailable);
  CHECK(http::rest_error(503, "upstream connect error").message() == "upstream connect error");
  CHECK(http::rest_error(502, "").code() == StatusCode::Unavailable);
  CHECK(http::rest_error(418, "teapot").code() == StatusCode::Unknown);
  // sonic-server's reason beside Triton's "error" (an early refusal's, say).
  auto refused = http::rest_error(503, R"({"error":"too late","reason":"WOULD_MISS_DEADLINE"})");
  CHECK(refused.code() == StatusCode::Unavailable);
  CHECK(refused.message() == "too late");
  CHECK(refused.reason() == "WOULD_MISS_DEADLINE");
}

TEST_CASE("trace and log settings go to Triton's routes and back") {
  // Triton's HandleTrace and HandleLogging (src/http_server.cc): trace settings as strings,
  // trace_level a list, null to clear one; log settings as booleans, a number and strings.
  using sonic::protocol::message_from_json;
  using sonic::protocol::message_to_json;
  auto route = [](const char* method, const char* type, const char* request) {
    auto bytes = message_from_json(type, request);
    REQUIRE(bytes);
    auto made = http::encode_rest_control(*sonic::protocol::find_control_method(method), *bytes);
    REQUIRE(made);
    return made->method + " " + made->target + (made->json.empty() ? "" : " " + made->json);
  };
  CHECK(route("TraceSetting", "inference.TraceSettingRequest", "{}") == "GET /v2/trace/setting");
  CHECK(route("TraceSetting", "inference.TraceSettingRequest", R"({"model_name": "m/x"})") ==
        "GET /v2/models/m%2Fx/trace/setting");
  CHECK(route("TraceSetting", "inference.TraceSettingRequest",
              R"({"settings": {"trace_level": {"value": ["TIMESTAMPS", "TENSORS"]},
                  "trace_rate": {"value": ["2"]}, "trace_count": {}}})") ==
        R"(POST /v2/trace/setting {"trace_count":null,"trace_level":["TIMESTAMPS","TENSORS"],)"
        R"("trace_rate":"2"})");
  CHECK(route("LogSettings", "inference.LogSettingsRequest", "{}") == "GET /v2/logging");
  CHECK(route("LogSettings", "inference.LogSettingsRequest",
              R"({"settings": {"log_info": {"bool_param": false},
                  "log_verbose_level": {"uint32_param": 2},
                  "log_format": {"string_param": "ISO8601"}}})") ==
        R"(POST /v2/logging {"log_format":"ISO8601","log_info":false,"log_verbose_level":2})");

  auto trace = http::decode_rest_control(sonic::ControlMethod::TraceSetting, 200,
                                         R"({"trace_level": ["TIMESTAMPS"], "trace_rate": "1000",
                                             "trace_count": "-1", "trace_mode": "triton"})");
  REQUIRE(trace);
  CHECK(json::parse(*message_to_json("inference.TraceSettingResponse", *trace)) ==
        json::parse(R"({"settings": {"trace_level": {"value": ["TIMESTAMPS"]},
          "trace_rate": {"value": ["1000"]}, "trace_count": {"value": ["-1"]},
          "trace_mode": {"value": ["triton"]}}})"));
  auto log = http::decode_rest_control(sonic::ControlMethod::LogSettings, 200,
                                       R"({"log_file": "", "log_info": true,
                                           "log_verbose_level": 0, "log_format": "default"})");
  REQUIRE(log);
  CHECK(json::parse(*message_to_json("inference.LogSettingsResponse", *log)) ==
        json::parse(R"({"settings": {"log_file": {"string_param": ""},
          "log_info": {"bool_param": true}, "log_verbose_level": {"uint32_param": 0},
          "log_format": {"string_param": "default"}}})"));
}
