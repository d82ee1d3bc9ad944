// config.pbtxt as sonic reads it: every field it acts on, checked against libprotobuf's reading of
// the same text; Triton's other fields read past and named; mistakes refused with the file, line
// and what to change.
#include "sonic/repository/model_config.hpp"

#include <doctest/doctest.h>
#include <google/protobuf/text_format.h>

#include "model_config.pb.h"

using namespace sonic;
using repository::InstanceGroup;
using repository::ModelConfig;
using repository::VersionPolicy;

namespace {

const char* kJetTagger = R"(
name: "jet_tagger"
backend: "onnxruntime"
max_batch_size: 128
version_policy { specific { versions: [2, 5] } }
input [ { name: "features" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 5 ] },
         { name: "embedding" data_type: TYPE_FP16 dims: [ -1, 8 ] } ]
instance_group [ { name: "cpu" count: 2 kind: KIND_CPU }, { count: 1 } ]
dynamic_batching {
  preferred_batch_size: [ 32, 64 ] max_queue_delay_microseconds: 500
  priority_levels: 2 default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 7000 }
  priority_queue_policy { key: 1 value { allow_timeout_override: true max_queue_size: 16 } }
}
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
model_warmup { name: "zeros" batch_size: 1 }
)";

ModelConfig parse(const std::string& text) {
  auto config = repository::parse_model_config(text, "config.pbtxt");
  REQUIRE_MESSAGE(config, config.error().message());
  return *config;
}

}  // namespace

TEST_CASE("every field sonic acts on is read as libprotobuf reads it") {
  ModelConfig config = parse(kJetTagger);
  inference::ModelConfig theirs;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);  // optimization, model_warmup: not in the subset
  REQUIRE(parser.ParseFromString(kJetTagger, &theirs));

  CHECK(config.name == theirs.name());
  CHECK(config.backend == theirs.backend());
  CHECK(config.max_batch_size == theirs.max_batch_size());
  CHECK(config.version_policy.kind == VersionPolicy::Kind::Specific);
  CHECK(config.version_policy.versions ==
        std::vector<std::int64_t>(theirs.version_policy().specific().versions().begin(),
                                  theirs.version_policy().specific().versions().end()));
  REQUIRE(config.inputs.size() == 1);
  CHECK(config.inputs[0].name == "features");
  CHECK(config.inputs[0].data_type == DataType::Fp32);
  CHECK(config.inputs[0].dims == std::vector<std::int64_t>{16});
  REQUIRE(config.outputs.size() == 2);
  CHECK(config.outputs[1].data_type == DataType::Fp16);
  CHECK(config.outputs[1].dims == std::vector<std::int64_t>{-1, 8});
  REQUIRE(config.instance_groups.size() == 2);
  CHECK(config.instance_groups[0].kind == InstanceGroup::Kind::Cpu);
  CHECK(config.instance_groups[0].count == theirs.instance_group(0).count());
  CHECK(config.instance_count() == 3);
  REQUIRE(config.dynamic_batching);
  CHECK(config.dynamic_batching->preferred_batch_sizes == std::vector<std::int32_t>{32, 64});
  CHECK(config.dynamic_batching->max_queue_delay_microseconds ==
        theirs.dynamic_batching().max_queue_delay_microseconds());
  CHECK(config.dynamic_batching->priority_levels == 2);
  CHECK(config.dynamic_batching->default_priority_level == 2);
  CHECK(config.dynamic_batching->default_queue_policy.delay_on_timeout);
  CHECK(config.dynamic_batching->default_queue_policy.default_timeout_microseconds == 7000);
  CHECK(config.dynamic_batching->priority_queue_policy.at(1).allow_timeout_override);
  CHECK(config.dynamic_batching->priority_queue_policy.at(1).max_queue_size ==
        theirs.dynamic_batching().priority_queue_policy().at(1).max_queue_size());
  CHECK(config.parameters.at("intra_op_thread_count") ==
        theirs.parameters().at("intra_op_thread_count").string_value());
  CHECK(config.ignored_fields ==
        std::vector<std::string>{"ModelConfig.optimization", "ModelConfig.model_warmup"});
  CHECK(repository::check_model_config(config, "config.pbtxt"));
}

TEST_CASE("sequence_batching is read as libprotobuf reads it, and reported as it came") {
  const std::string text = R"(
name: "tracker"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 2500000
  oldest { max_candidate_sequences: 8 preferred_batch_size: [ 2 ] }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1.5 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP16 dims: [ -1, 32 ]
            initial_state [ { data_type: TYPE_FP16 dims: [ 3, 32 ] data_file: "h0" } ] } ]
}
)";
  ModelConfig config = parse(text);
  inference::ModelConfig theirs;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &theirs));
  REQUIRE(config.sequence_batching);
  const auto& mine = *config.sequence_batching;
  const auto& their = theirs.sequence_batching();
  CHECK(mine.max_sequence_idle_microseconds == their.max_sequence_idle_microseconds());
  REQUIRE(mine.controls.size() == static_cast<std::size_t>(their.control_input_size()));
  for (std::size_t i = 0; i < mine.controls.size(); ++i) {
    const auto& control = their.control_input(static_cast<int>(i));
    CHECK(mine.controls[i].input == control.name());
    CHECK(static_cast<int>(mine.controls[i].kind) == static_cast<int>(control.control(0).kind()));
  }
  CHECK(mine.controls[0].fp32_false_true ==
        std::vector<float>{their.control_input(0).control(0).fp32_false_true(0),
                           their.control_input(0).control(0).fp32_false_true(1)});
  CHECK(mine.controls[1].bool_false_true == std::vector<bool>{false, true});
  CHECK(mine.controls[2].int32_false_true == std::vector<std::int32_t>{0, 1});
  CHECK(mine.controls[3].data_type == DataType::UInt64);
  REQUIRE(mine.states.size() == 1);
  CHECK(mine.states[0].input_name == their.state(0).input_name());
  CHECK(mine.states[0].output_name == their.state(0).output_name());
  CHECK(mine.states[0].data_type == DataType::Fp16);
  CHECK(mine.states[0].dims == std::vector<std::int64_t>{-1, 32});
  CHECK(mine.states[0].initial_dims == std::vector<std::int64_t>{3, 32});
  CHECK(mine.states[0].initial_data_file == their.state(0).initial_state(0).data_file());
  auto checked = repository::check_model_config(config, "config.pbtxt");
  CHECK_MESSAGE(checked, checked.error().message());
  // The ModelConfig call reports the message as the file gave it.
  inference::ModelConfig reported;
  REQUIRE(reported.ParseFromString(repository::serialize_model_config(config)));
  CHECK(reported.sequence_batching().SerializeAsString() == their.SerializeAsString());
}

TEST_CASE("the serialized config reads back, in libprotobuf, as the config") {
  ModelConfig config = parse(kJetTagger);
  inference::ModelConfig theirs;
  REQUIRE(theirs.ParseFromString(repository::serialize_model_config(config)));
  CHECK(theirs.name() == "jet_tagger");
  CHECK(theirs.max_batch_size() == 128);
  CHECK(theirs.version_policy().specific().versions_size() == 2);
  REQUIRE(theirs.input_size() == 1);
  CHECK(theirs.input(0).data_type() == inference::TYPE_FP32);
  CHECK(theirs.input(0).dims(0) == 16);
  CHECK(theirs.output(1).dims(0) == -1);
  CHECK(theirs.instance_group(0).kind() == inference::ModelInstanceGroup::KIND_CPU);
  CHECK(theirs.instance_group(1).count() == 1);
  CHECK(theirs.dynamic_batching().preferred_batch_size(1) == 64);
  CHECK(theirs.dynamic_batching().default_queue_policy().timeout_action() ==
        inference::ModelQueuePolicy::DELAY);
  CHECK(theirs.dynamic_batching().priority_queue_policy().at(1).max_queue_size() == 16);
  CHECK(theirs.parameters().at("intra_op_thread_count").string_value() == "1");
  CHECK(theirs.backend() == "onnxruntime");
}

TEST_CASE("an empty config takes Triton's defaults") {
  ModelConfig config = parse("");
  CHECK(config.version_policy.kind == VersionPolicy::Kind::Latest);
  CHECK(config.version_policy.latest_count == 1);
  CHECK(config.max_batch_size == 0);
  CHECK(config.instance_count() == 1);
  CHECK_FALSE(config.dynamic_batching);
}

TEST_CASE("syntax errors name the file, the line and the column") {
  auto config = repository::parse_model_config("name: \"m\"\ninput [ { name: \"x\" dims: [1 } ]\n",
                                               "/models/m/config.pbtxt");
  REQUIRE_FALSE(config);
  CHECK(config.error().code() == StatusCode::InvalidArgument);
  CHECK(config.error().message().rfind("/models/m/config.pbtxt:2:", 0) == 0);
  // A field Triton does not have either is a mistake, not something to skip.
  auto typo = repository::parse_model_config("max_batch_sise: 8", "c.pbtxt");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().message() ==
        "c.pbtxt:1:1: inference.ModelConfig has no field named "
        "\"max_batch_sise\"");
}

TEST_CASE("configs Triton would refuse are refused, saying what to change") {
  auto refused = [](const std::string& text) {
    auto config = repository::parse_model_config(text, "m/config.pbtxt");
    REQUIRE(config);
    auto ok = repository::check_model_config(*config, "m/config.pbtxt");
    REQUIRE_FALSE(ok);
    CHECK(ok.error().code() == StatusCode::InvalidArgument);
    return ok.error().message();
  };
  const std::string output = " output { name: \"y\" data_type: TYPE_FP32 dims: [1] }";
  // Triton's words (core model_config_utils.cc), then sonic's hint.
  CHECK(refused("name: \"m\" input { name: \"x\" dims: [4] }" + output) ==
        "m/config.pbtxt: model input 'x' must specify 'data_type' for m (TYPE_FP32, TYPE_INT64, "
        "...)");
  CHECK(refused("name: \"m\" max_batch_size: 8 input { name: \"x\" data_type: TYPE_FP32 }" +
                output) ==
        "m/config.pbtxt: model input 'x' must specify 'dims' for m (without the batch "
        "dimension: max_batch_size > 0)");
  CHECK(refused("input { name: \"x\" data_type: TYPE_FP32 dims: [0] }" + output)
            .find("dimension must be integer >= 1, or -1 to indicate a variable-size dimension") !=
        std::string::npos);
  CHECK(refused("input { name: \"x\" data_type: TYPE_FP32 dims: [1] }"
                "input { name: \"x\" data_type: TYPE_FP32 dims: [1] }" +
                output) == "m/config.pbtxt: input 'x' is given twice");
  CHECK(refused("max_batch_size: 8 dynamic_batching { preferred_batch_size: 16 }" + output)
            .find("dynamic batching preferred size must be <= max batch size") !=
        std::string::npos);
  CHECK(refused("max_batch_size: 8 dynamic_batching { priority_levels: 2 }" + output)
            .find("default priority level must be in range [1, 2]") != std::string::npos);
  CHECK(refused("version_policy { specific {} }" + output).find("lists no versions") !=
        std::string::npos);
  CHECK(refused("instance_group { count: 1 kind: KIND_GPU }" + output)
            .find("has kind KIND_GPU but server does not support GPUs") != std::string::npos);
  CHECK(refused("max_batch_size: 0").find("no output") != std::string::npos);
  // Triton accepts a dynamic batcher on a model that does not batch: it merges nothing.
  auto unbatched = repository::parse_model_config("dynamic_batching {}" + output, "m");
  CHECK(repository::check_model_config(unbatched.value(), "m"));
}
