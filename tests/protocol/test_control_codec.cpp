// The control messages, both directions, against libprotobuf: what sonic encodes, libprotobuf
// parses field for field; what libprotobuf serializes, sonic decodes.
#include "protocol/control_codec.hpp"

#include <doctest/doctest.h>

#include <string>

#include "grpc_service.pb.h"

using namespace sonic;
using namespace sonic::protocol;

namespace {

template <typename Message>
Message parsed(const std::string& bytes) {
  Message message;
  REQUIRE(message.ParseFromString(bytes));
  return message;
}

// A field number no version of the proto uses: decoders must skip it, as protobuf does.
std::string with_unknown_fields(std::string bytes) {
  bytes += std::string("\xf8\x3e\x05", 3);  // field 999, varint 5
  bytes += std::string(
      "\xfa\x3e\x03"
      "abc",
      6);  // field 999, 3 bytes
  return bytes;
}

}  // namespace

TEST_CASE("requests naming a model: ModelReady, ModelMetadata, ModelConfig, ModelStatistics") {
  auto bytes = encode_model_ref({"jet_tagger", "3"});
  auto pb = parsed<inference::ModelMetadataRequest>(bytes);
  CHECK(pb.name() == "jet_tagger");
  CHECK(pb.version() == "3");
  CHECK(encode_model_ref({}).empty());  // proto3 writes no default

  inference::ModelReadyRequest ready;
  ready.set_name("simple");
  auto decoded = decode_model_ref(with_unknown_fields(ready.SerializeAsString()));
  REQUIRE(decoded);
  CHECK(decoded->name == "simple");
  CHECK(decoded->version.empty());
}

TEST_CASE("repository requests: index, load with parameters of every kind, unload") {
  auto query = parsed<inference::RepositoryIndexRequest>(encode_repository_query({"repo", true}));
  CHECK(query.repository_name() == "repo");
  CHECK(query.ready());

  RepositoryModelRequest load;
  load.repository = "r";
  load.model = "cnn";
  load.parameters["config"] = std::string("{\"max_batch_size\": 8}");
  load.parameters["flag"] = true;
  load.parameters["count"] = std::int64_t{-7};
  load.parameters["file:1/model.onnx"] = RepositoryBytes{std::string("\0\x01\xff", 3)};
  auto pb = parsed<inference::RepositoryModelLoadRequest>(encode_repository_model_request(load));
  CHECK(pb.repository_name() == "r");
  CHECK(pb.model_name() == "cnn");
  REQUIRE(pb.parameters().size() == 4);
  CHECK(pb.parameters().at("config").string_param() == "{\"max_batch_size\": 8}");
  CHECK(pb.parameters().at("flag").bool_param());
  CHECK(pb.parameters().at("count").int64_param() == -7);
  CHECK(pb.parameters().at("file:1/model.onnx").bytes_param() == std::string("\0\x01\xff", 3));

  auto back = decode_repository_model_request(with_unknown_fields(pb.SerializeAsString()));
  REQUIRE(back);
  CHECK(back->model == "cnn");
  CHECK(back->parameters == load.parameters);

  inference::RepositoryModelUnloadRequest unload;
  unload.set_model_name("cnn");
  auto decoded = decode_repository_model_request(unload.SerializeAsString());
  REQUIRE(decoded);
  CHECK(decoded->model == "cnn");
  CHECK(decoded->parameters.empty());
}

TEST_CASE("shared memory requests: register (system and CUDA), unregister, status") {
  auto system = parsed<inference::SystemSharedMemoryRegisterRequest>(
      encode_system_shm_registration({"r0", "/sonic-1-0", 4096, 1u << 20}));
  CHECK(system.name() == "r0");
  CHECK(system.key() == "/sonic-1-0");
  CHECK(system.offset() == 4096);
  CHECK(system.byte_size() == 1u << 20);
  auto system_back = decode_system_shm_registration(system.SerializeAsString());
  REQUIRE(system_back);
  CHECK(system_back->key == "/sonic-1-0");
  CHECK(system_back->offset == 4096);

  std::string handle(64, '\0');
  for (std::size_t i = 0; i < handle.size(); ++i) handle[i] = static_cast<char>(i * 7);
  auto cuda = parsed<inference::CudaSharedMemoryRegisterRequest>(
      encode_cuda_shm_registration({"g0", handle, 1, 256}));
  CHECK(cuda.raw_handle() == handle);
  CHECK(cuda.device_id() == 1);
  CHECK(cuda.byte_size() == 256);
  auto cuda_back = decode_cuda_shm_registration(cuda.SerializeAsString());
  REQUIRE(cuda_back);
  CHECK(cuda_back->raw_handle == handle);
  CHECK(cuda_back->device_id == 1);

  CHECK(parsed<inference::SystemSharedMemoryUnregisterRequest>(encode_region_name("r0")).name() ==
        "r0");
  inference::CudaSharedMemoryStatusRequest status;
  status.set_name("g0");
  auto name = decode_region_name(status.SerializeAsString());
  REQUIRE(name);
  CHECK(*name == "g0");
}

TEST_CASE("health and metadata responses") {
  CHECK(parsed<inference::ServerLiveResponse>(encode_flag(true)).live());
  CHECK_FALSE(parsed<inference::ModelReadyResponse>(encode_flag(false)).ready());
  inference::ServerReadyResponse ready;
  ready.set_ready(true);
  CHECK(decode_flag(ready.SerializeAsString()).value());
  CHECK_FALSE(decode_flag("").value());

  ServerMetadata server{"sonic-server", "0.2.0", {"statistics", "system_shared_memory"}};
  auto pb = parsed<inference::ServerMetadataResponse>(encode_server_metadata(server));
  CHECK(pb.name() == "sonic-server");
  REQUIRE(pb.extensions_size() == 2);
  CHECK(pb.extensions(1) == "system_shared_memory");
  auto back = decode_server_metadata(with_unknown_fields(pb.SerializeAsString()));
  REQUIRE(back);
  CHECK(back->extensions == server.extensions);

  ModelMetadata model{"identity_fp32",
                      {"1", "2"},
                      "onnxruntime_onnx",
                      {{"INPUT0", DataType::Fp32, {-1, 48, 48}}},
                      {{"OUTPUT0", DataType::Bytes, {-1}}, {"OUTPUT1", DataType::Bf16, {}}}};
  auto mpb = parsed<inference::ModelMetadataResponse>(encode_model_metadata(model));
  CHECK(mpb.platform() == "onnxruntime_onnx");
  REQUIRE(mpb.inputs_size() == 1);
  CHECK(mpb.inputs(0).datatype() == "FP32");
  CHECK(mpb.inputs(0).shape(0) == -1);  // a negative dimension is a 10-byte varint
  CHECK(mpb.inputs(0).shape(2) == 48);
  CHECK(mpb.outputs(0).datatype() == "BYTES");
  auto mback = decode_model_metadata(mpb.SerializeAsString());
  REQUIRE(mback);
  CHECK(mback->versions == model.versions);
  CHECK(mback->inputs[0].shape == model.inputs[0].shape);
  CHECK(mback->outputs[1].dtype == DataType::Bf16);
  CHECK(mback->outputs[1].shape.empty());

  // Unpacked shapes (another serializer's right) read the same.
  inference::ModelMetadataResponse unpacked;
  auto* t = unpacked.add_inputs();
  t->set_name("x");
  t->set_datatype("INT64");
  std::string bytes = unpacked.SerializeAsString();
  std::string tensor;  // name, datatype, then shape as two separate varint fields
  tensor += std::string("\x0a\x01x\x12\x05INT64", 10);
  tensor += std::string("\x18\x02\x18\x03", 4);
  std::string message = "\x22" + std::string(1, static_cast<char>(tensor.size())) + tensor;
  auto read = decode_model_metadata(message);
  REQUIRE(read);
  CHECK(read->inputs[0].shape == Shape{2, 3});
}

TEST_CASE("a metadata datatype sonic does not know is INTERNAL, naming it") {
  inference::ModelMetadataResponse pb;
  auto* t = pb.add_outputs();
  t->set_name("probabilities");
  t->set_datatype("FP8");
  auto decoded = decode_model_metadata(pb.SerializeAsString());
  REQUIRE_FALSE(decoded);
  CHECK(decoded.code() == StatusCode::Internal);
  CHECK(decoded.error().message().find("'FP8' for tensor 'probabilities'") != std::string::npos);
}

TEST_CASE("statistics, batch statistics included") {
  ModelStatistics s;
  s.name = "cnn";
  s.version = "1";
  s.last_inference_ms = 1700000000000;
  s.inference_count = 640;
  s.execution_count = 20;
  s.success = {20, 123456789};
  s.queue = {20, 1000};
  s.compute_infer = {20, 99999};
  s.batch_stats = {{32, {20, 10}, {20, 99999}, {20, 30}}};
  auto pb = parsed<inference::ModelStatisticsResponse>(encode_model_statistics({s, {}}));
  REQUIRE(pb.model_stats_size() == 2);
  const auto& m = pb.model_stats(0);
  CHECK(m.inference_count() == 640);
  CHECK(m.inference_stats().success().ns() == 123456789);
  CHECK(m.inference_stats().queue().count() == 20);
  REQUIRE(m.batch_stats_size() == 1);
  CHECK(m.batch_stats(0).batch_size() == 32);
  CHECK(m.batch_stats(0).compute_infer().ns() == 99999);

  auto back = decode_model_statistics(with_unknown_fields(pb.SerializeAsString()));
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].last_inference_ms == s.last_inference_ms);
  CHECK((*back)[0].success.ns == 123456789);
  CHECK((*back)[0].compute_infer.count == 20);
  REQUIRE((*back)[0].batch_stats.size() == 1);
  CHECK((*back)[0].batch_stats[0].compute_output.ns == 30);
}

TEST_CASE("repository index and shared memory status responses") {
  std::vector<ModelIndex> models = {
      {"simple", "1", ModelState::Ready, "", false},
      {"cnn", "2", ModelState::Unavailable, "model.onnx: unsupported op TopK", false},
      {"old", "1", ModelState::Unavailable, "unloaded", true}};
  auto pb = parsed<inference::RepositoryIndexResponse>(encode_repository_index(models));
  REQUIRE(pb.models_size() == 3);
  CHECK(pb.models(0).state() == "READY");
  CHECK(pb.models(1).state() == "UNAVAILABLE");
  CHECK(pb.models(1).reason() == "model.onnx: unsupported op TopK");
  auto back = decode_repository_index(pb.SerializeAsString());
  REQUIRE(back);
  CHECK((*back)[0].state == ModelState::Ready);
  CHECK((*back)[1].state == ModelState::Unavailable);
  CHECK_FALSE((*back)[1].unloaded);
  CHECK((*back)[2].unloaded);  // Triton's reason for a model taken out on purpose
  // A state this library does not know, or none, is Unknown.
  inference::RepositoryIndexResponse odd;
  odd.add_models()->set_name("a");
  odd.add_models()->set_state("WARMING");
  auto unknown = decode_repository_index(odd.SerializeAsString());
  REQUIRE(unknown);
  CHECK((*unknown)[0].state == ModelState::Unknown);
  CHECK((*unknown)[1].state == ModelState::Unknown);

  auto system = parsed<inference::SystemSharedMemoryStatusResponse>(
      encode_system_shm_status({{"a", "/a", 0, 64}, {"b", "/b", 4096, 128}}));
  REQUIRE(system.regions().size() == 2);
  CHECK(system.regions().at("b").offset() == 4096);
  auto system_back = decode_system_shm_status(system.SerializeAsString());
  REQUIRE(system_back);
  CHECK(system_back->size() == 2);

  auto cuda =
      parsed<inference::CudaSharedMemoryStatusResponse>(encode_cuda_shm_status({{"g", 1, 256}}));
  CHECK(cuda.regions().at("g").device_id() == 1);
  auto cuda_back = decode_cuda_shm_status(cuda.SerializeAsString());
  REQUIRE(cuda_back);
  CHECK((*cuda_back)[0].byte_size == 256);
}

TEST_CASE("ModelConfigResponse carries the config's bytes unchanged") {
  inference::ModelConfigResponse pb;
  pb.mutable_config()->set_name("cnn");
  pb.mutable_config()->set_max_batch_size(8);
  auto config = decode_model_config_response(pb.SerializeAsString());
  REQUIRE(config);
  CHECK(*config == pb.config().SerializeAsString());
  CHECK(parsed<inference::ModelConfigResponse>(encode_model_config_response(*config))
            .config()
            .max_batch_size() == 8);
}

TEST_CASE("malformed requests are INVALID_ARGUMENT, malformed responses INTERNAL") {
  const std::string truncated("\x0a\x10only-", 7);  // a string field longer than the message
  CHECK(decode_model_ref(truncated).code() == StatusCode::InvalidArgument);
  CHECK(decode_system_shm_registration(truncated).code() == StatusCode::InvalidArgument);
  CHECK(decode_repository_model_request(truncated).code() == StatusCode::InvalidArgument);
  CHECK(decode_server_metadata(truncated).code() == StatusCode::Internal);
  CHECK(decode_model_metadata(truncated).code() == StatusCode::Internal);
  CHECK(decode_model_statistics(truncated).code() == StatusCode::Internal);
  // A wire type that does not fit the field: a string sent as a varint.
  CHECK(decode_model_ref(std::string("\x08\x01", 2)).code() == StatusCode::InvalidArgument);
  CHECK(decode_flag(std::string("\x0a\x00", 2)).code() == StatusCode::Internal);
}
