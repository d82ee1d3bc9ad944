// sonic's client next to protoc-generated KServe code in one process. libprotobuf aborts a
// program in which two libraries register the same .proto file in its global pool ("File
// already exists in database"), which is what a program linking sonic and Triton's C++ client
// (CMSSW does) met while sonic's client registered grpc_service.proto: this program would not
// have reached main(). Now sonic's libraries register nothing, so it starts, and both stacks
// serve requests side by side.
#include <doctest/doctest.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <sonic/sonic.hpp>

#include "grpc_service.pb.h"
#include "loopback_server.hpp"
#include "model_config.pb.h"

using namespace sonic;

TEST_CASE("generated KServe code and sonic::grpc serve requests in one process") {
  // The generated code owns the file names sonic's client once registered.
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  REQUIRE(pool->FindFileByName("grpc_service.proto") != nullptr);
  REQUIRE(pool->FindFileByName("model_config.proto") != nullptr);

  test::LoopbackServer server;
  Client client(server.url());

  // Through sonic's API.
  auto result = client.infer(test::simple_request(40, 2));
  CHECK(result.output("OUTPUT0").as<std::int32_t>()[0] == 42);

  // Through generated messages, on sonic's connection.
  inference::ModelMetadataRequest request;
  request.set_name("simple");
  inference::ModelMetadataResponse metadata;
  REQUIRE(metadata.ParseFromString(client.call("ModelMetadata", request.SerializeAsString())));
  CHECK(metadata.name() == "simple");
  REQUIRE(metadata.inputs_size() == 2);
  CHECK(metadata.inputs(0).datatype() == "INT32");

  // sonic's JSON of a ModelConfig is what the generated code reads.
  inference::ModelConfig config;
  REQUIRE(google::protobuf::util::JsonStringToMessage(client.model_config("simple"), &config).ok());
  CHECK(config.name() == "simple");
  CHECK(config.input_size() == 2);
  CHECK(config.input(0).data_type() == inference::TYPE_INT32);
}
