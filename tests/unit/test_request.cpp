#include "sonic/request.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "sonic/transport.hpp"
#include "sonic/validate.hpp"

using namespace std::chrono_literals;

TEST_CASE("InferRequest builds fluently and keeps everything it was given") {
  std::vector<std::int32_t> a(16, 1);
  auto request = sonic::InferRequest("simple", "1")
                     .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                     .output("OUTPUT1", {{"classification", std::int64_t{2}}})
                     .id("req-7")
                     .parameter("priority", std::uint64_t{3})
                     .timeout(250ms)
                     .header("x-trace", "abc");
  CHECK(request.model_name() == "simple");
  CHECK(request.model_version() == "1");
  CHECK(request.request_id() == "req-7");
  REQUIRE(request.inputs().size() == 1);
  CHECK(request.find_input("INPUT0") != nullptr);
  CHECK(request.find_input("INPUT1") == nullptr);
  REQUIRE(request.outputs().size() == 1);
  CHECK(std::get<std::int64_t>(request.outputs()[0].parameters.at("classification")) == 2);
  CHECK(std::get<std::uint64_t>(request.parameters().at("priority")) == 3u);
  CHECK(request.timeout() == 250ms);
  CHECK(request.headers().at(0).first == "x-trace");
}

TEST_CASE("InferResult finds outputs by name and names the missing ones") {
  sonic::InferResult result(
      "m", "1", "id", {{"OUT", sonic::Tensor::from_vector(std::vector<float>{1, 2}, {2}), {}}});
  CHECK(result.output("OUT").as<float>()[1] == 2.f);
  CHECK(result.find_output("NOPE") == nullptr);
  try {
    (void)result.output("NOPE");
    FAIL("missing output must throw");
  } catch (const sonic::Error& e) {
    CHECK(e.code() == sonic::StatusCode::NotFound);
    CHECK(e.message().find("OUT") != std::string::npos);
  }
}

TEST_CASE("reading an output as the wrong type names the output, the model and the type to use") {
  // A new user's first mistake: the model answers INT32 and the code reads float.
  sonic::InferResult result(
      "simple", "1", "",
      {{"OUTPUT0", sonic::Tensor::from_vector(std::vector<int>{1, 2}, {2}), {}}});
  CHECK(result.as<std::int32_t>("OUTPUT0")[1] == 2);
  try {
    (void)result.as<float>("OUTPUT0");
    FAIL("reading INT32 as float must throw");
  } catch (const sonic::Error& e) {
    CHECK(e.code() == sonic::StatusCode::InvalidArgument);
    CHECK(e.message() ==
          "output 'OUTPUT0' of model 'simple': cannot read an INT32 tensor as FP32: read it as "
          "std::int32_t");
  }
  CHECK_THROWS_AS((void)result.as<float>("OUTPUT9"), sonic::Error);  // no such output
}

TEST_CASE("endpoint URLs parse with defaults and reject junk") {
  auto e = sonic::parse_endpoint("grpc://127.0.0.1:8001").value();
  CHECK(e.scheme == "grpc");
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 8001);
  auto v6 = sonic::parse_endpoint("grpc://[::1]:9000").value();
  CHECK(v6.host == "::1");
  CHECK(v6.port == 9000);
  auto bare = sonic::parse_endpoint("localhost").value();
  CHECK(bare.scheme == "grpc");
  CHECK(bare.port == 8001);
  CHECK(sonic::parse_endpoint("tcp+zstd://gpu.example.org:8010").value().scheme == "tcp+zstd");
  // Triton's ports by scheme: HTTP/REST on 8000, gRPC on 8001.
  CHECK(sonic::parse_endpoint("http://gpu.example.org").value().port == 8000);
  CHECK(sonic::parse_endpoint("https://gpu.example.org").value().port == 8000);
  CHECK(sonic::parse_endpoint("grpcs://gpu.example.org").value().port == 8001);
  CHECK(sonic::parse_endpoint("http://gpu.example.org:9000").value().port == 9000);
  for (const char* bad : {"grpc://", "grpc://host:0", "grpc://host:70000", "grpc://host:8x",
                          "grpc://[::1", "grpc://host:", "grpc://[::1]:"}) {
    CAPTURE(bad);
    auto r = sonic::parse_endpoint(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.code() == sonic::StatusCode::InvalidArgument);
  }
}

TEST_CASE("an unlinked scheme names the CMake target to link") {
  sonic::ClientOptions options;
  auto r =
      sonic::transport_registry().create(sonic::parse_endpoint("tcp+zstd://h:1").value(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("sonic::tcp") != std::string::npos);
}

TEST_CASE("requests are validated against model metadata, naming the tensor") {
  sonic::ModelMetadata model{
      "simple",
      {"1"},
      "x",
      {{"INPUT0", sonic::DataType::Int32, {1, 16}}, {"INPUT1", sonic::DataType::Int32, {-1, 16}}},
      {{"OUTPUT0", sonic::DataType::Int32, {1, 16}}}};
  std::vector<std::int32_t> ints(16);
  std::vector<float> floats(16);
  auto check = [&](const sonic::InferRequest& r) { return sonic::validate_request(model, r); };

  CHECK(check(sonic::InferRequest("simple").input("INPUT0", sonic::Tensor::view(ints, {1, 16})))
            .ok());
  CHECK(check(sonic::InferRequest("simple").input("INPUT1", sonic::Tensor::view(ints, {1, 16})))
            .ok());

  auto unknown =
      check(sonic::InferRequest("simple").input("INPUT9", sonic::Tensor::view(ints, {1, 16})));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.code() == sonic::StatusCode::InvalidArgument);
  CHECK(unknown.error().message().find("INPUT9") != std::string::npos);

  auto dtype =
      check(sonic::InferRequest("simple").input("INPUT0", sonic::Tensor::view(floats, {1, 16})));
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.error().message().find("must be INT32, got FP32") != std::string::npos);

  auto shape = check(
      sonic::InferRequest("simple").input("INPUT0", sonic::Tensor::view(ints.data(), 16, {16})));
  REQUIRE_FALSE(shape.ok());
  CHECK(shape.error().message().find("[1,16]") != std::string::npos);

  auto bytes = check(
      sonic::InferRequest("simple").input("INPUT0", sonic::Tensor::view(ints.data(), 15, {1, 16})));
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().message().find("INPUT0") != std::string::npos);

  auto twice = check(sonic::InferRequest("simple")
                         .input("INPUT0", sonic::Tensor::view(ints, {1, 16}))
                         .input("INPUT0", sonic::Tensor::view(ints, {1, 16})));
  CHECK_FALSE(twice.ok());

  auto output = check(sonic::InferRequest("simple")
                          .input("INPUT0", sonic::Tensor::view(ints, {1, 16}))
                          .output("X"));
  CHECK_FALSE(output.ok());
  CHECK_FALSE(sonic::check_request(sonic::InferRequest("")).ok());
  // A negative timeout is a mistake, never "no deadline".
  auto negative =
      sonic::check_request(sonic::InferRequest("m").timeout(std::chrono::milliseconds(-5)));
  CHECK(negative.code() == sonic::StatusCode::InvalidArgument);
  CHECK(negative.error().message().find("negative") != std::string::npos);
  CHECK(sonic::check_request(sonic::InferRequest("m").timeout(std::chrono::microseconds(0))).ok());
}

TEST_CASE("metadata headers are checked before they reach the wire") {
  using Headers = std::vector<std::pair<std::string, std::string>>;
  CHECK(sonic::check_headers(
            Headers{{"x-trace-id", "abc-123"}, {"x-blob-bin", std::string("\0\xff", 2)}})
            .ok());
  for (const char* reserved :
       {"grpc-timeout", "te", "content-type", "user-agent", "X-Upper", "", "bad name"}) {
    CAPTURE(reserved);
    CHECK(sonic::check_headers(Headers{{reserved, "v"}}).code() ==
          sonic::StatusCode::InvalidArgument);
  }
  CHECK_FALSE(sonic::check_headers(Headers{{"x-text", std::string("a\nb")}}).ok());
  CHECK(sonic::check_request(sonic::InferRequest("m").header("grpc-status", "0")).code() ==
        sonic::StatusCode::InvalidArgument);
}
