// The HTTP/REST port's inference bodies (server/src/http_infer_json.*): JSON tensors of every
// JSON-able datatype, nested or flat, Triton's binary tensor data extension both ways, the
// frontend's own parameters kept from the model's, and bodies that must be refused without
// reading past them or recursing on their nesting.
#include "http_infer_json.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using sonic::DataType;
using sonic::InferResult;
using sonic::NamedTensor;
using sonic::StatusCode;
using sonic::Tensor;
using sonic::server::decode_http_infer;
using sonic::server::encode_http_infer;

namespace {

sonic::Result<sonic::server::HttpInferRequest> decode(const std::string& body,
                                                      std::optional<std::size_t> json_length = {}) {
  auto owner = std::make_shared<const std::string>(body);
  return decode_http_infer("m", "", owner, *owner, json_length);
}

}  // namespace

TEST_CASE("JSON inputs of each datatype, nested or flat, become the request's tensors") {
  auto decoded = decode(R"({"id": "r7", "parameters": {"priority": 2, "binary_data_output": true},
    "inputs": [
      {"name": "I", "shape": [2, 2], "datatype": "INT32", "data": [[1, -2], [3, 4]]},
      {"name": "U", "shape": [2], "datatype": "UINT64", "data": [18446744073709551615, 0]},
      {"name": "F", "shape": [3], "datatype": "FP32", "data": [0.5, 1, -2.25]},
      {"name": "B", "shape": [2], "datatype": "BOOL", "data": [true, false]},
      {"name": "S", "shape": [2], "datatype": "BYTES", "data": ["", "héllo"]}],
    "outputs": [{"name": "O", "parameters": {"classification": 3, "binary_data": false}}]})");
  REQUIRE_MESSAGE(decoded, decoded.error().message());
  const auto& request = decoded->request;
  CHECK(request.model_name() == "m");
  CHECK(request.request_id() == "r7");
  // binary_data_output is the frontend's; priority the model's.
  CHECK(decoded->binary_outputs);
  CHECK(request.parameters().count("binary_data_output") == 0);
  CHECK(std::get<std::int64_t>(request.parameters().at("priority")) == 2);
  const auto values = request.find_input("I")->tensor.to_owned();
  CHECK(std::vector<std::int32_t>(values.as<std::int32_t>().begin(),
                                  values.as<std::int32_t>().end()) ==
        std::vector<std::int32_t>{1, -2, 3, 4});
  CHECK(request.find_input("U")->tensor.to_owned().as<std::uint64_t>()[0] == ~std::uint64_t{0});
  CHECK(request.find_input("F")->tensor.to_owned().as<float>()[2] == -2.25f);
  CHECK(request.find_input("B")->tensor.to_owned().as<bool>()[0]);
  CHECK(request.find_input("S")->tensor.to_strings() == std::vector<std::string>{"", "héllo"});
  REQUIRE(request.outputs().size() == 1);
  CHECK(std::get<std::int64_t>(request.outputs()[0].parameters.at("classification")) == 3);
  CHECK(decoded->binary_output.at("O") == false);
}

TEST_CASE("binary inputs take their bytes after the JSON, in the order the inputs are listed") {
  const std::string json = R"({"inputs": [
    {"name": "A", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
    {"name": "B", "shape": [1], "datatype": "INT64", "parameters": {"binary_data_size": 8}}]})";
  const float a[2] = {1.5f, -3};
  const std::int64_t b = 42;
  std::string body = json;
  body.append(reinterpret_cast<const char*>(a), sizeof a);
  body.append(reinterpret_cast<const char*>(&b), sizeof b);
  auto decoded = decode(body, json.size());
  REQUIRE_MESSAGE(decoded, decoded.error().message());
  // The JSON's length leaves them unaligned here: they are copied to aligned memory.
  CHECK(decoded->request.find_input("A")->tensor.as<float>()[1] == -3);
  CHECK(decoded->request.find_input("B")->tensor.as<std::int64_t>()[0] == 42);
  // binary_data_size is the extension's, not the tensor's.
  CHECK(decoded->request.find_input("A")->parameters.empty());
}

TEST_CASE("bodies that do not describe a request are refused, naming what is wrong") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "failed to parse"},
      {R"({"inputs": {}})", "'inputs' array"},
      {R"({"inputs": [{"name": "I", "shape": [2], "datatype": "INT32", "data": [1]}]})",
       "unexpected number of elements"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "INT8", "data": [300]}]})",
       "expected INT8"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "UINT8", "data": [-1]}]})",
       "expected UINT8"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP16", "data": [1]}]})",
       "receiving FP16 data via JSON is not supported"},
      {R"({"inputs": [{"name": "I", "shape": [-1], "datatype": "FP32", "data": []}]})",
       "non-negative"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "NOPE", "data": [1]}]})",
       "unknown datatype"},
      // Triton's words (ValidateInputContentType).
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32"}]})", "But no field is set"},
      {R"({"inputs": [{"name": "I", "shape": [4], "datatype": "FP32",
            "parameters": {"binary_data_size": 16}}]})",
       "unexpected total byte size 16"},
      {R"({"parameters": {"p": [1]}, "inputs": []})", "invalid type"},
  };
  for (const auto& refused : cases) {
    const std::string& body = refused.first;
    const std::string& words = refused.second;
    auto decoded = decode(body);
    REQUIRE_FALSE_MESSAGE(decoded, body);
    CHECK(decoded.error().code() == StatusCode::InvalidArgument);
    CHECK_MESSAGE(decoded.error().message().find(words) != std::string::npos,
                  decoded.error().message());
  }
  // A JSON length past the body is refused before anything is read past it.
  auto past = decode(R"({"inputs": []})", 1000);
  REQUIRE_FALSE(past);
  CHECK(past.error().message().find("past the body") != std::string::npos);
}

TEST_CASE("a deeply nested 'data' is read without recursion") {
  const int depth = 200000;
  std::string body = R"({"inputs": [{"name": "I", "shape": [1], "datatype": "INT32", "data": )";
  body += std::string(depth, '[') + "5" + std::string(depth, ']') + "}]}";
  auto decoded = decode(body);
  REQUIRE_MESSAGE(decoded, decoded.error().message());
  CHECK(decoded->request.find_input("I")->tensor.to_owned().as<std::int32_t>()[0] == 5);
}

TEST_CASE("answers: JSON data flat in row-major order, or binary after the JSON") {
  std::vector<NamedTensor> outputs;
  outputs.push_back({"J", Tensor::from_vector(std::vector<std::int16_t>{1, -2, 3, 4}, {2, 2}), {}});
  outputs.push_back({"S", Tensor::from_strings(std::vector<std::string>{"a", "bc"}, {2}), {}});
  outputs.push_back({"H", Tensor::copy_bytes(DataType::Fp16, {2}, "\x00\x3c\x00\x40", 4), {}});
  InferResult result("m", "1", "id9", std::move(outputs));
  sonic::server::HttpInferRequest asked;
  asked.binary_output["H"] = true;  // FP16 has no JSON form: asked for as binary
  auto encoded = encode_http_infer(result, asked);
  REQUIRE_MESSAGE(encoded, encoded.error().message());
  REQUIRE(encoded->json_length);
  CHECK(*encoded->json_length == encoded->body.size());  // the binary data follows it
  const std::string& json = encoded->body;
  CHECK(json.find(R"("id":"id9")") != std::string::npos);
  CHECK(json.find(R"("data":[1,-2,3,4])") != std::string::npos);
  CHECK(json.find(R"("data":["a","bc"])") != std::string::npos);
  CHECK(json.find(R"("binary_data_size":4)") != std::string::npos);
  REQUIRE(encoded->binary.size() == 1);
  CHECK(encoded->binary[0].data() == result.outputs()[2].tensor.data());  // not copied
  // A borrowed output is copied into a tensor that owns its bytes: the answer outlives it.
  const std::vector<std::int32_t> kept{7, 8};
  InferResult borrowing("m", "1", "", {{"B", Tensor::view(kept, {2}), {}}});
  sonic::server::HttpInferRequest binary;
  binary.binary_outputs = true;
  auto copied = encode_http_infer(borrowing, binary);
  REQUIRE(copied);
  CHECK(copied->binary[0].data() != reinterpret_cast<const std::uint8_t*>(kept.data()));
  CHECK(copied->binary[0].as<std::int32_t>()[1] == 8);
  // Without binary data asked for, FP16 cannot be answered as JSON.
  auto refused = encode_http_infer(result, sonic::server::HttpInferRequest{});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("FP16") != std::string::npos);
}

TEST_CASE("JSON of the wrong shape is refused, not thrown") {
  for (const char* body :
       {R"({"inputs": [{"name": 5, "shape": [1], "datatype": "FP32"}]})",
        R"({"inputs": [{"name": "I", "shape": [1], "datatype": 7}]})", R"({"inputs": [5]})",
        R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32",
                               "data": [1]}], "outputs": [{"name": []}]})"}) {
    CAPTURE(body);
    auto decoded = decode(body);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().code() == StatusCode::InvalidArgument);
  }
}

TEST_CASE("tensors in shared memory: inputs as descriptors, outputs answered without bytes") {
  // simple_http_shm_client.py's request: set_shared_memory() on every input and output.
  auto decoded = decode(R"({"inputs": [
      {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
       "parameters": {"shared_memory_region": "input_data", "shared_memory_byte_size": 64}},
      {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
       "parameters": {"shared_memory_region": "input_data", "shared_memory_byte_size": 64,
                      "shared_memory_offset": 64}}],
    "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": false,
       "shared_memory_region": "output_data", "shared_memory_byte_size": 64}}]})");
  REQUIRE_MESSAGE(decoded, decoded.error().message());
  const auto* in = decoded->request.find_input("INPUT1");
  REQUIRE(in);
  CHECK(in->tensor.dtype() == DataType::Int32);
  CHECK(in->tensor.shape() == sonic::Shape{1, 16});
  CHECK(in->tensor.byte_size() == 0);  // bound to the region by the server, not read here
  CHECK(std::get<std::string>(in->parameters.at("shared_memory_region")) == "input_data");
  CHECK(std::get<std::int64_t>(in->parameters.at("shared_memory_offset")) == 64);
  REQUIRE(decoded->request.outputs().size() == 1);
  CHECK(decoded->request.outputs()[0].parameters.count("shared_memory_byte_size") == 1);

  // An input in a region takes none of the binary data: the next binary input's bytes start
  // right after the JSON.
  const std::string header = R"({"inputs": [
      {"name": "S", "shape": [2], "datatype": "INT32",
       "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 8}},
      {"name": "B", "shape": [2], "datatype": "INT32", "parameters": {"binary_data_size": 8}}]})";
  const std::int32_t ints[] = {7, 9};
  std::string mixed = header;
  mixed.append(reinterpret_cast<const char*>(ints), sizeof ints);
  auto both = decode(mixed, header.size());
  REQUIRE_MESSAGE(both, both.error().message());
  CHECK(both->request.find_input("B")->tensor.to_owned().as<std::int32_t>()[1] == 9);
  CHECK(both->request.find_input("S")->tensor.byte_size() == 0);

  // Triton's ValidateInputContentType and ValidateOutputParameter, in its words.
  const std::string shm = R"("shared_memory_region": "r", "shared_memory_byte_size": 4)";
  const std::pair<std::string, std::string> refused[] = {
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32", "data": [1],
          "parameters": {)" +
           shm + "}}]}",
       "Input must set only one of the following fields: 'data', 'binary_data_size' in "
       "'parameters', 'shared_memory_region' in 'parameters'. But set 'data' "
       "'shared_memory_region'"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32"}]})",
       "Input must set only one of the following fields: 'data', 'binary_data_size' in "
       "'parameters', 'shared_memory_region' in 'parameters'. But no field is set"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32", "data": [1]}],
          "outputs": [{"name": "O", "parameters": {"binary_data": true, )" +
           shm + "}}]}",
       "Output can't set both 'shared_memory_region' and 'binary_data'"},
      {R"({"inputs": [{"name": "I", "shape": [1], "datatype": "FP32", "data": [1]}],
          "outputs": [{"name": "O", "parameters": {"classification": 2, )" +
           shm + "}}]}",
       "Output can't set both 'shared_memory_region' and 'classification'"},
  };
  for (const auto& refused_case : refused) {
    // Not a structured binding: CAPTURE's lambda cannot name one in C++17 (clang).
    const std::string& body = refused_case.first;
    const std::string& error = refused_case.second;
    CAPTURE(body);
    auto failed = decode(body);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().code() == StatusCode::InvalidArgument);
    CHECK(failed.error().message() == error);
  }

  // Once written to its region (SharedMemoryRegistry::complete leaves an empty tensor and the
  // placement), an output is answered as Triton answers it: name, datatype and shape, with no
  // data and no binary_data_size; the binary data that follows is the other outputs' alone.
  std::vector<NamedTensor> outputs;
  outputs.push_back({"OUTPUT0",
                     Tensor::view_bytes(DataType::Int32, {1, 16}, nullptr, 0),
                     {{"shared_memory_region", std::string("output_data")},
                      {"shared_memory_byte_size", std::int64_t{64}},
                      {"shared_memory_offset", std::int64_t{64}}}});
  outputs.push_back({"OUTPUT1", Tensor::from_vector(std::vector<std::int32_t>{5, 6}, {2}), {}});
  sonic::server::HttpInferRequest asked;
  asked.binary_outputs = true;
  auto encoded = encode_http_infer(InferResult("m", "1", "", std::move(outputs)), asked);
  REQUIRE_MESSAGE(encoded, encoded.error().message());
  auto answer = nlohmann::json::parse(encoded->body);
  CHECK(answer["outputs"][0] ==
        nlohmann::json::parse(R"({"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]})"));
  CHECK(answer["outputs"][1]["parameters"]["binary_data_size"] == 8);
  REQUIRE(encoded->binary.size() == 1);
  CHECK(encoded->binary[0].byte_size() == 8);
}
