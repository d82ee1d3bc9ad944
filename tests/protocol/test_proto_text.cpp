// Protobuf text format parsed from the embedded schema, against libprotobuf's own
// TextFormat::Parser: for every text, both accept it and build the same message, or both refuse
// it (and sonic says where). The texts are Triton's own config.pbtxt shapes, every syntax the
// format has, and a few thousand mutations of them.
#include "protocol/proto_text.hpp"

#include <doctest/doctest.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "model_config.pb.h"

using namespace sonic;

namespace {

// Keeps libprotobuf's parse errors off stderr; remembers the first line it names (0-based).
class QuietErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int, const std::string&) override {
    if (first_line < 0) first_line = line;
  }
  int first_line = -1;
};

struct Outcome {
  bool accepted = false;
  int error_line = -1;  // 1-based
};

Outcome libprotobuf_parse(const std::string& text, google::protobuf::Message& message) {
  google::protobuf::TextFormat::Parser parser;
  QuietErrors errors;
  parser.RecordErrorsTo(&errors);
  Outcome outcome;
  outcome.accepted = parser.ParseFromString(text, &message);
  // libprotobuf's text parser only logs a string that is not UTF-8, and its binary parser then
  // refuses the message: sonic refuses the text.
  if (outcome.accepted) {
    std::unique_ptr<google::protobuf::Message> reread(message.New());
    outcome.accepted = reread->ParseFromString(message.SerializeAsString());
  }
  outcome.error_line = errors.first_line + 1;
  return outcome;
}

// Both parsers on `text`: empty when they agree (and, when they accept, on the message), else
// what differs.
std::string disagreement(const std::string& text, bool expect_accepted) {
  inference::ModelConfig theirs;
  Outcome outcome = libprotobuf_parse(text, theirs);
  auto ours = protocol::parse_text_message("inference.ModelConfig", text);
  std::string context = "\ntext:\n" + text +
                        "\nsonic: " + (ours ? std::string("accepted") : ours.error().message()) +
                        "\nlibprotobuf: " + (outcome.accepted ? "accepted" : "refused");
  if (outcome.accepted != ours.ok()) return "the parsers disagree" + context;
  if (outcome.accepted != expect_accepted) return "not the expected outcome" + context;
  if (!ours) return {};
  inference::ModelConfig parsed;
  if (!parsed.ParseFromString(ours->bytes))
    return "libprotobuf cannot read sonic's bytes" + context;
  if (!google::protobuf::util::MessageDifferencer::Equals(parsed, theirs)) {
    return "different messages" + context + "\nsonic's: " + parsed.ShortDebugString() +
           "\nlibprotobuf's: " + theirs.ShortDebugString();
  }
  return {};
}

// What Triton's documentation and model repositories write, and every syntax of the format.
const std::vector<std::string> kValidConfigs = {
    // Triton's quick-start ONNX model.
    R"(name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
)",
    // Batching, instances, versions and parameters, as a CMS jet tagger's might be.
    R"(# a comment before anything
name: "particlenet"  # and after a field
backend: "pytorch"
max_batch_size: 800
version_policy: { specific: { versions: [1, 3] } }
input { name: "INPUT__0" data_type: TYPE_FP32 dims: [ -1, 7 ] }
input { name: "INPUT__1" data_type: TYPE_INT64 dims: [ 2 ] optional: true }
output { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 5 ] }
instance_group [ { count: 2 kind: KIND_CPU }, { kind: KIND_GPU gpus: [ 0, 1 ] } ]
dynamic_batching {
  preferred_batch_size: [ 64, 128 ]
  max_queue_delay_microseconds: 100
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5000 }
  priority_queue_policy { key: 1 value { max_queue_size: 8 } }
}
parameters: { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "1" } }
parameters [ { key: "ENABLE_JIT" value { string_value: 'false' } } ]
model_transaction_policy < decoupled: true >
)",
    // Separators, spellings of numbers, booleans and enums, adjacent strings, escapes.
    "name: \"a\" \"b\\n\\x41\\101\\u00e9\\\"\"; max_batch_size: 0x10, "
    "version_policy { latest { num_versions: 017 } }\n"
    "input { name: 'x'; data_type: 8; dims: -1 dims: 0 dims: 9223372036854775807 "
    "is_shape_tensor: True allow_ragged_batch: t optional: 0 }\n"
    "dynamic_batching { max_queue_delay_microseconds: 18446744073709551615 }",
    "version_policy { all {} } metric_tags { key: \"site\" value: \"T2_US\" }",
    "input []  output: [] instance_group: []",
    "input { data_type: 99 }",  // proto3 enums are open: unknown numbers are kept
    "",
    "# only a comment",
};

const std::vector<std::string> kInvalidConfigs = {
    "name \"colon missing\"",
    "nmae: \"misspelled\"",
    "name: \"twice\" name: \"again\"",
    "max_batch_size: 2147483648",
    "max_batch_size: -2147483649",
    "max_batch_size: 1.5",
    "max_batch_size: \"8\"",
    "input { data_type: TYPE_FLOAT32 }",
    "input { dims: [1, 2 }",
    "input { name: \"open\"",
    "name: \"unterminated",
    "input: \"a string for a message\"",
    "name: [\"a list for a single field\"]",
    "model_transaction_policy { decoupled: yes }",
    "version_policy { latest {} all {} }",
    "dynamic_batching { max_queue_delay_microseconds: -1 }",
    "input { name: \"a\" } }",
    "name: \"bad escape \\q\"",
    "instance_group [ { count: 1 } { count: 2 } ]",
    "name: \"\\xff is not UTF-8\"",
};

}  // namespace

TEST_CASE("valid configs parse to the message libprotobuf parses") {
  for (const auto& text : kValidConfigs) CHECK(disagreement(text, true) == "");
}

TEST_CASE("a config without maps serializes byte for byte as libprotobuf serializes it") {
  inference::ModelConfig theirs;
  REQUIRE(libprotobuf_parse(kValidConfigs[0], theirs).accepted);
  auto ours = protocol::parse_text_message("inference.ModelConfig", kValidConfigs[0]);
  REQUIRE(ours);
  CHECK(ours->bytes == theirs.SerializeAsString());
}

TEST_CASE("invalid configs are refused by both, with the line libprotobuf names") {
  for (const auto& text : kInvalidConfigs) {
    CHECK(disagreement(text, false) == "");
    auto ours = protocol::parse_text_message("inference.ModelConfig", text);
    REQUIRE_FALSE(ours);
    CHECK(ours.error().code() == StatusCode::InvalidArgument);
    CHECK(ours.error().message().rfind("1:", 0) == 0);  // every text above is one line
  }
  inference::ModelConfig theirs;
  const std::string text = "name: \"ok\"\ninput {\n  name: \"x\"\n  dimz: [1]\n}\n";
  Outcome outcome = libprotobuf_parse(text, theirs);
  auto ours = protocol::parse_text_message("inference.ModelConfig", text);
  REQUIRE_FALSE(ours);
  CHECK_FALSE(outcome.accepted);
  CHECK(outcome.error_line == 4);
  CHECK(ours.error().message() == "4:3: inference.ModelInput has no field named \"dimz\"");
}

TEST_CASE("mutated configs: both parsers accept and refuse the same texts") {
  // Each text differs from a valid one by one character deleted, doubled, or replaced by a
  // character of the format's syntax: the near misses a hand-edited file has.
  const std::string alphabet = "{}[]<>:;,\"'#-.0123456789xefnatrue_ \n\\";
  std::mt19937 random(20261126);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = kValidConfigs[random() % 4];
    if (text.empty()) continue;
    std::size_t at = random() % text.size();
    switch (random() % 3) {
      case 0: text.erase(at, 1); break;
      case 1: text.insert(at, 1, text[at]); break;
      default: text[at] = alphabet[random() % alphabet.size()]; break;
    }
    inference::ModelConfig theirs;
    bool both = libprotobuf_parse(text, theirs).accepted;
    REQUIRE(disagreement(text, both) == "");
    (both ? accepted : refused) += 1;
  }
  // The mutations exercise both outcomes.
  CHECK(accepted > 300);
  CHECK(refused > 300);
}

TEST_CASE("fields the caller chooses to skip are read past and named") {
  // Names the schema does not have (a newer Triton's fields, say), which a caller may skip.
  protocol::TextParseOptions options;
  options.skip_unknown_field = [](std::string_view message, std::string_view field) {
    return message == "inference.ModelConfig" && field == "future_policy";
  };
  auto parsed = protocol::parse_text_message(
      "inference.ModelConfig",
      "name: \"m\" future_policy { accelerators { cpu_accelerator : "
      "[ { name : \"openvino\" } ] } pinned_memory: { enable: false } } max_batch_size: 4",
      options);
  REQUIRE(parsed);
  CHECK(parsed->skipped_fields == std::vector<std::string>{"inference.ModelConfig.future_policy"});
  inference::ModelConfig config;
  REQUIRE(config.ParseFromString(parsed->bytes));
  CHECK(config.name() == "m");
  CHECK(config.max_batch_size() == 4);
  // A list of messages needs no colon (Triton's configs write model_warmup [ {...} ]).
  options.skip_unknown_field = [](std::string_view, std::string_view field) {
    return field == "future_list";
  };
  auto list = protocol::parse_text_message(
      "inference.ModelConfig", "future_list [ { name: \"a\" }, { name: \"b\" } ] name: \"m\"",
      options);
  REQUIRE(list);
  CHECK(list->skipped_fields.size() == 1);
  // Any other unknown field is still an error.
  CHECK_FALSE(
      protocol::parse_text_message("inference.ModelConfig", "future_scheduling {}", options));
}

TEST_CASE("nesting deeper than the limit is refused, not followed down the stack") {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "version_policy { latest {";
  auto parsed = protocol::parse_text_message("inference.ModelConfig", deep);
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code() == StatusCode::InvalidArgument);
  protocol::TextParseOptions skip_all;
  skip_all.skip_unknown_field = [](std::string_view, std::string_view) { return true; };
  std::string deep_unknown = "x " + std::string(100000, '{');
  CHECK_FALSE(protocol::parse_text_message("inference.ModelConfig", deep_unknown, skip_all));
}

TEST_CASE("an unknown message type is NOT_FOUND") {
  auto parsed = protocol::parse_text_message("inference.NoSuchMessage", "");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code() == StatusCode::NotFound);
}
