// Messages written by field name through the embedded schema, against libprotobuf's own
// serialization of the same message: the bytes must be the same.
#include "protocol/proto_writer.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "model_config.pb.h"

using sonic::protocol::MessageWriter;

TEST_CASE("a ModelConfig written by field name is the one libprotobuf serializes") {
  inference::ModelConfig expected;
  expected.set_name("tagger");
  expected.set_platform("onnxruntime_onnx");
  expected.set_max_batch_size(64);
  auto* input = expected.add_input();
  input->set_name("points");
  input->set_data_type(inference::TYPE_FP32);
  input->add_dims(128);
  input->add_dims(-1);
  auto* output = expected.add_output();
  output->set_name("scores");
  output->set_data_type(inference::TYPE_FP16);
  output->add_dims(5);
  auto* group = expected.add_instance_group();
  group->set_count(2);
  group->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  expected.set_backend("sonic");
  expected.mutable_model_transaction_policy()->set_decoupled(true);

  MessageWriter config("inference.ModelConfig");
  config.string("name", "tagger").string("platform", "onnxruntime_onnx");
  config.number("max_batch_size", 64);
  config.message("input", config.of("input")
                              .string("name", "points")
                              .enumerator("data_type", "TYPE_FP32")
                              .packed("dims", std::vector<std::int64_t>{128, -1}));
  config.message("output", config.of("output")
                               .string("name", "scores")
                               .number("data_type", inference::TYPE_FP16)
                               .packed("dims", std::vector<int>{5}));
  config.message("instance_group",
                 config.of("instance_group").number("count", 2).enumerator("kind", "KIND_CPU"));
  config.string("backend", "sonic");
  config.message("model_transaction_policy",
                 config.of("model_transaction_policy").number("decoupled", 1));
  CHECK(config.bytes() == expected.SerializeAsString());
}

TEST_CASE("no dims: nothing is written, as proto3 leaves an empty repeated field out") {
  MessageWriter input("inference.ModelInput");
  input.string("name", "x").packed("dims", std::vector<std::int64_t>{});
  inference::ModelInput expected;
  expected.set_name("x");
  CHECK(input.bytes() == expected.SerializeAsString());
}

TEST_CASE("a field the message lacks, or a value of the wrong kind, is a mistake in sonic") {
  MessageWriter config("inference.ModelConfig");
  CHECK_THROWS_AS(config.string("no_such_field", "x"), std::logic_error);
  CHECK_THROWS_AS(config.number("name", 1), std::logic_error);              // a string
  CHECK_THROWS_AS(config.string("max_batch_size", "8"), std::logic_error);  // a varint
  CHECK_THROWS_AS(config.string("input", "x"), std::logic_error);           // a message
  CHECK_THROWS_AS(config.packed("name", std::vector<int>{1}), std::logic_error);
  CHECK_THROWS_AS(config.of("name"), std::logic_error);
  CHECK_THROWS_AS(config.message("input", config.of("output")), std::logic_error);
  CHECK_THROWS_AS(config.of("instance_group").enumerator("kind", "KIND_QUANTUM"), std::logic_error);
  CHECK_THROWS_AS(MessageWriter("inference.NoSuchMessage"), std::logic_error);
  CHECK(config.bytes().empty());
}
