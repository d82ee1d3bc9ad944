// Messages printed as JSON from the embedded schema, against libprotobuf's own printer (with
// preserve_proto_field_names, as Client::model_config promises): both parsed, then compared as
// JSON values, so that number spelling and field order do not matter.
#include "protocol/proto_json.hpp"

#include <doctest/doctest.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "model_config.pb.h"

using namespace sonic;

namespace {

std::string libprotobuf_json(const google::protobuf::Message& message,
                             protocol::JsonPrint print = protocol::JsonPrint::kSetFields) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = print == protocol::JsonPrint::kWithDefaults;
  REQUIRE(google::protobuf::util::MessageToJsonString(message, &json, options).ok());
  return json;
}

void check_same_json(const google::protobuf::Message& message,
                     protocol::JsonPrint print = protocol::JsonPrint::kSetFields) {
  auto ours = protocol::message_to_json(message.GetTypeName(), message.SerializeAsString(), print);
  REQUIRE(ours);
  INFO("sonic:       " << *ours);
  INFO("libprotobuf: " << libprotobuf_json(message, print));
  CHECK(nlohmann::json::parse(*ours) == nlohmann::json::parse(libprotobuf_json(message, print)));
}

}  // namespace

TEST_CASE("a ModelConfig with every field kind prints as libprotobuf prints it") {
  inference::ModelConfig config;
  config.set_name("jet \"tagger\"\n\xc3\xa9");  // escapes and UTF-8
  config.set_platform("onnxruntime_onnx");
  config.set_backend("onnxruntime");
  config.set_max_batch_size(64);
  auto* in = config.add_input();
  in->set_name("INPUT__0");
  in->set_data_type(inference::TYPE_FP32);
  in->set_format(inference::ModelInput::FORMAT_NCHW);
  for (auto d : {-1, 1, 48, 48}) in->add_dims(d);
  in->mutable_reshape()->add_shape(2304);
  in->set_allow_ragged_batch(true);
  in->set_optional(true);
  auto* out = config.add_output();
  out->set_name("OUTPUT__0");
  out->set_data_type(inference::TYPE_STRING);
  out->add_dims(3);
  out->set_label_filename("labels.txt");
  config.add_output()->set_name("SECOND");  // everything else default: {"name": ...} only
  auto* group = config.add_instance_group();
  group->set_count(4);
  group->set_kind(inference::ModelInstanceGroup::KIND_GPU);
  group->add_gpus(0);
  group->add_gpus(1);
  config.add_instance_group();  // all defaults: printed as {}
  config.mutable_dynamic_batching()->add_preferred_batch_size(16);
  config.mutable_dynamic_batching()->add_preferred_batch_size(32);
  config.mutable_dynamic_batching()->set_max_queue_delay_microseconds(100);
  check_same_json(config);

  inference::ModelConfig empty;
  check_same_json(empty);  // "{}"
  inference::ModelConfig present;
  present.mutable_dynamic_batching();  // an empty message that is present
  check_same_json(present);

  // With always_print_primitive_fields, as Triton's ModelConfigToJson prints: every field
  // without presence at its default too (0, false, "", the first enum value, [] and {}), and
  // still no unset message or oneof member.
  for (const auto* message : {&config, &empty, &present}) {
    check_same_json(*message, protocol::JsonPrint::kWithDefaults);
  }
}

TEST_CASE("maps, oneofs, bytes, doubles and 64-bit integers print as libprotobuf prints them") {
  inference::ModelInferRequest request;
  request.set_model_name("simple");
  request.set_id("r1");
  (*request.mutable_parameters())["priority"].set_uint64_param(18446744073709551615ull);
  (*request.mutable_parameters())["sequence_id"].set_int64_param(-5);
  (*request.mutable_parameters())["flag"].set_bool_param(false);  // oneof: printed though false
  (*request.mutable_parameters())["ratio"].set_double_param(0.1);
  (*request.mutable_parameters())["nan"].set_double_param(std::nan(""));
  (*request.mutable_parameters())["inf"].set_double_param(-INFINITY);
  (*request.mutable_parameters())["name"].set_string_param("");
  auto* input = request.add_inputs();
  input->set_name("INPUT0");
  input->set_datatype("FP32");
  input->add_shape(1);
  input->add_shape(3);
  for (float v : {1.5f, -0.1f, 3e38f}) input->mutable_contents()->add_fp32_contents(v);
  input->mutable_contents()->add_bool_contents(true);
  input->mutable_contents()->add_bytes_contents(std::string("\0\xff binary", 9));
  request.add_raw_input_contents(std::string("\x01\x02\x03", 3));
  request.add_outputs()->set_name("OUTPUT0");
  check_same_json(request);
  check_same_json(request, protocol::JsonPrint::kWithDefaults);  // oneofs stay as set

  inference::ModelStatisticsResponse stats;
  auto* s = stats.add_model_stats();
  s->set_name("m");
  s->set_inference_count(9007199254740993ull);  // above 2^53: why 64-bit integers are strings
  s->mutable_inference_stats()->mutable_success()->set_count(3);
  auto& response_stats = (*s->mutable_response_stats())["0"];
  response_stats.mutable_success()->set_ns(42);
  check_same_json(stats);
  check_same_json(stats, protocol::JsonPrint::kWithDefaults);  // maps' values in full
}

TEST_CASE("hostile bytes are INTERNAL; an unknown type is NOT_FOUND") {
  auto truncated = protocol::message_to_json("inference.ModelConfig", std::string("\x0a\x10x", 3));
  CHECK(truncated.code() == StatusCode::Internal);
  // A string field sent as a varint, and a nested message that is not one.
  CHECK(protocol::message_to_json("inference.ModelConfig", std::string("\x08\x01", 2)).code() ==
        StatusCode::Internal);
  CHECK(protocol::message_to_json("inference.ModelConfig", std::string("\x2a\x02\xff\xff", 4))
            .code() == StatusCode::Internal);
  CHECK(protocol::message_to_json("inference.NoSuchMessage", "").code() == StatusCode::NotFound);
  // Unknown fields are skipped, as protobuf does.
  auto unknown =
      protocol::message_to_json("inference.ModelConfig", std::string("\xf8\x3e\x05\x0a\x01x", 6));
  REQUIRE(unknown);
  CHECK(nlohmann::json::parse(*unknown) == nlohmann::json{{"name", "x"}});
}

// ---- JSON read back: what Triton's RepositoryModelLoad "config" parameter carries ----

namespace {

// Empty when sonic and libprotobuf's JsonStringToMessage agree on `json` (both refuse it, or
// both build the same ModelConfig); else what differs.
std::string json_disagreement(const std::string& json) {
  inference::ModelConfig theirs, reread;
  // A string that is not UTF-8 passes libprotobuf's JSON parser and fails its binary one.
  const bool accepted = google::protobuf::util::JsonStringToMessage(json, &theirs).ok() &&
                        reread.ParseFromString(theirs.SerializeAsString());
  auto ours = protocol::message_from_json("inference.ModelConfig", json);
  const std::string context =
      "\njson: " + json + "\nsonic: " + (ours ? std::string("accepted") : ours.error().message()) +
      "\nlibprotobuf: " + (accepted ? "accepted" : "refused");
  if (accepted != ours.ok()) return "the parsers disagree" + context;
  if (!ours) return {};
  inference::ModelConfig parsed;
  if (!parsed.ParseFromString(*ours)) return "libprotobuf cannot read sonic's bytes" + context;
  if (!google::protobuf::util::MessageDifferencer::Equals(parsed, theirs)) {
    return "different messages" + context + "\nsonic's: " + parsed.ShortDebugString();
  }
  return {};
}

}  // namespace

TEST_CASE("a ModelConfig as JSON reads back as libprotobuf reads it") {
  const std::vector<std::string> accepted = {
      // As Triton's Python client sends it (json.dumps of a dict), and libprotobuf prints it.
      R"({"name": "jet", "backend": "onnxruntime", "max_batch_size": 8,
          "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [16]}],
          "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": ["5"]}],
          "instance_group": [{"count": 2, "kind": "KIND_CPU"}],
          "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": "100"},
          "parameters": {"INTRA_OP_THREAD_COUNT": {"string_value": "1"}},
          "version_policy": {"specific": {"versions": ["1", 3]}}})",
      // lowerCamelCase names, enum numbers, null, escapes, an exponent that is an integer.
      R"({"maxBatchSize": 1e1, "input": [{"dataType": 11, "name": "a\u00e9\n", "dims": [-1]}],
          "modelTransactionPolicy": {"decoupled": true}, "platform": null})",
      R"({})",
  };
  for (const auto& json : accepted) CHECK(json_disagreement(json) == "");
  const std::vector<std::string> refused = {
      R"({"nmae": "typo"})",
      R"({"max_batch_size": 2147483648})",
      R"({"max_batch_size": 1.5})",
      R"({"input": [{"data_type": "TYPE_FLOAT"}]})",
      R"({"name": 7})",
      R"({"dims": [1]})",
      R"({"input": {"name": "not a list"}})",
      R"({"version_policy": {"latest": {}, "all": {}}})",
      R"({"name": "open")",
      R"([1, 2])",
      R"({"name": "a"} trailing)",
      "{\"name\": \"\xff is not UTF-8\"}",
  };
  for (const auto& json : refused) CHECK(json_disagreement(json) == "");
  // One-character mutations of the first: both parsers accept and refuse the same texts.
  const std::string alphabet = "{}[]:,\"-.0123456789eE_ nulltruefalse\\";
  std::mt19937 random(20261126);
  int both_accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string json = accepted[0];
    std::size_t at = random() % json.size();
    switch (random() % 3) {
      case 0: json.erase(at, 1); break;
      case 1: json.insert(at, 1, json[at]); break;
      default: json[at] = alphabet[random() % alphabet.size()]; break;
    }
    const std::string difference = json_disagreement(json);
    REQUIRE_MESSAGE(difference.empty(), difference);
    inference::ModelConfig ignored;
    both_accepted += google::protobuf::util::JsonStringToMessage(json, &ignored).ok();
  }
  CHECK(both_accepted > 300);
  auto bad = protocol::message_from_json("inference.ModelConfig",
                                         R"({"input": [{"name": "x", "dimz": [1]}]})");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() ==
        "inference.ModelConfig.input[0].dimz: inference.ModelInput has no such field");
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "[";
  CHECK_FALSE(protocol::message_from_json("inference.ModelConfig", deep));
}
