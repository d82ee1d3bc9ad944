// The command-line reader the programs share, and sonic-perf's parts that need no server: load
// sweeps and the threshold search, --input and --shape, perf_analyzer's input data files and
// the shapes of the requests they make, the sequences of a sequence model.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "input_data.hpp"
#include "options.hpp"
#include "request_plan.hpp"
#include "sweep.hpp"

using sonic::tools::CommandLine;
using sonic::tools::UsageError;
using namespace sonic::perf;

namespace {

// Parses `args` (the program name is added) with a line of -u/--url, -m/--model, -q, -v.
struct Parsed {
  std::string url, model;
  int quiet = 0, verbose = 0;
  std::vector<std::string> rest;
};
Parsed parse(std::vector<const char*> args) {
  Parsed parsed;
  CommandLine line("prog", "usage: prog");
  line.option("-u, --url", "URL", "endpoint", [&](const std::string& v) { parsed.url = v; })
      .option("-m, --model", "NAME", "model", [&](const std::string& v) { parsed.model = v; })
      .option("--window", "S", "seconds", [](const std::string&) {})
      .flag("-q, --quiet", "quiet", [&] { ++parsed.quiet; })
      .flag("-v", "verbose", [&] { ++parsed.verbose; });
  args.insert(args.begin(), "prog");
  parsed.rest = line.parse(static_cast<int>(args.size()), args.data());
  return parsed;
}

std::string usage_error_of(std::vector<const char*> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

// A temporary file holding `text`, removed with it.
struct TempFile {
  explicit TempFile(const std::string& text) { std::ofstream(path) << text; }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path = "/tmp/sonic-test-input-data-" + std::to_string(::getpid()) + ".json";
};

sonic::TensorMetadata tensor(std::string name, sonic::DataType type, sonic::Shape shape) {
  sonic::TensorMetadata t;
  t.name = std::move(name);
  t.dtype = type;
  t.shape = std::move(shape);
  return t;
}

}  // namespace

TEST_CASE("options read the GNU way: --opt value, --opt=value, -oVALUE, grouped flags, --") {
  Parsed a = parse({"--url", "grpc://a:1", "--model=simple", "x", "-qv", "-q", "y"});
  CHECK(a.url == "grpc://a:1");
  CHECK(a.model == "simple");
  CHECK(a.quiet == 2);
  CHECK(a.verbose == 1);
  CHECK(a.rest == std::vector<std::string>{"x", "y"});
  Parsed b = parse({"-msimple", "-u", "tcp://b:2", "-qmother", "--", "--url", "-"});
  CHECK(b.model == "other");  // -q, then -m takes the rest of the word
  CHECK(b.url == "tcp://b:2");
  CHECK(b.quiet == 1);
  CHECK(b.rest == std::vector<std::string>{"--url", "-"});
  CHECK(parse({"--url="}).url.empty());           // an empty value, given
  CHECK(parse({"--window", "-1"}).rest.empty());  // a value may start with '-'
}

TEST_CASE("command-line mistakes say what is wrong and what was meant") {
  CHECK(usage_error_of({"--modle", "x"}) == "unknown option '--modle' (did you mean --model?)");
  CHECK(usage_error_of({"--frobnicate"}) == "unknown option '--frobnicate'");
  CHECK(usage_error_of({"-z"}) == "unknown option '-z'");
  CHECK(usage_error_of({"--url"}) == "--url needs a value");
  CHECK(usage_error_of({"-u"}) == "-u needs a value");
  CHECK(usage_error_of({"--quiet=yes"}) == "--quiet takes no value");
  CHECK(sonic::tools::comma_list("--url", "a,b") == std::vector<std::string>{"a", "b"});
  CHECK_THROWS_AS(sonic::tools::comma_list("--url", "a,,b"), UsageError);
}

TEST_CASE("the help lists every option with its value, wrapped and aligned, and -h, --version") {
  CommandLine line("prog", "usage: prog [options]");
  line.section("Options:")
      .option("-u, --url", "URL", "endpoint\nfirst", [](const std::string&) {})
      .option("--a-very-long-option-name", "VALUE",
              "a help text long enough to be wrapped at the help's width of eighty-eight columns",
              [](const std::string&) {})
      .epilogue("Exit status: 0, 1, 2.\n");
  std::ostringstream out;
  line.print_help(out);
  CHECK(out.str() ==
        "usage: prog [options]\n"
        "\n"
        "Options:\n"
        "  -u, --url URL           endpoint first\n"
        "  --a-very-long-option-name VALUE\n"
        "                          a help text long enough to be wrapped at the help's width of\n"
        "                          eighty-eight columns\n"
        "  -h, --help              print this help\n"
        "  --version               print the program's version\n"
        "\n"
        "Exit status: 0, 1, 2.\n");
}

TEST_CASE("load sweeps: lists, ranges with a step as perf_analyzer's, factors; mistakes refused") {
  CHECK(parse_sweep("--concurrency", "8") == std::vector<int>{8});
  CHECK(parse_sweep("--concurrency", "1,2,4") == std::vector<int>{1, 2, 4});
  CHECK(parse_sweep("--concurrency", "1:4") == std::vector<int>{1, 2, 3, 4});
  CHECK(parse_sweep("--concurrency", "4:16:4") == std::vector<int>{4, 8, 12, 16});
  CHECK(parse_sweep("--concurrency", "4:16:+4") == std::vector<int>{4, 8, 12, 16});
  CHECK(parse_sweep("--concurrency", "1:64:x2") == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  for (const char* bad : {"4:1", "1:8:x1", "0", "2abc", "1:8:y2", "1,,2", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_sweep("--concurrency", bad), UsageError);
  }
}

TEST_CASE("--latency-threshold: a sweep stops at the first load over it; a search bisects") {
  Options o;
  o.latency_threshold_us = 1000;
  std::vector<int> measured;
  // A server whose latency is 100 us per request in flight: 10 in flight is the most under 1 ms.
  auto measure = [&](int load) {
    measured.push_back(load);
    Point p;
    p.concurrency = load;
    p.load = "concurrency " + std::to_string(load);
    p.throughput = load * 1000.0;
    p.chosen_us = 100.0 * load;
    return p;
  };
  o.concurrency = parse_sweep("--concurrency", "1:64:x2");
  auto points = sweep(o, measure);
  CHECK(measured == std::vector<int>{1, 2, 4, 8, 16});  // 16 is over: the sweep ends there

  measured.clear();
  o.binary_search = true;
  o.concurrency = parse_sweep("--concurrency", "1:64");
  points = sweep(o, measure);
  CHECK(measured.size() <= 8);  // 64 values: the two ends and at most six halvings
  CHECK(std::find(measured.begin(), measured.end(), 10) != measured.end());
  CHECK(std::find(measured.begin(), measured.end(), 11) != measured.end());
  CHECK(std::is_sorted(points.begin(), points.end(), [](const Point& a, const Point& b) {
    return a.concurrency < b.concurrency;
  }));
  CHECK(report_threshold(o, points));

  o.latency_threshold_us = 50;  // not even one in flight meets it
  measured.clear();
  points = sweep(o, measure);
  CHECK(measured == std::vector<int>{1});
  CHECK_FALSE(report_threshold(o, points));

  o.latency_threshold_us = 1e9;  // every load meets it: the two ends are enough
  measured.clear();
  points = sweep(o, measure);
  CHECK(measured == std::vector<int>{1, 64});
}

TEST_CASE("--input and --shape take sonic-infer's syntax, and the earlier spellings") {
  InputSpec a = parse_input("INPUT0=fp32:1x16:zero");
  CHECK(a.name == "INPUT0");
  CHECK(a.dtype == sonic::DataType::Fp32);
  CHECK(a.shape == sonic::Shape{1, 16});
  CHECK(a.fill == "zero");
  CHECK(parse_input("INPUT0=FP32:1,16").shape == sonic::Shape{1, 16});
  CHECK(parse_input("IN=@data/x.npy").file == "data/x.npy");
  CHECK(parse_input("INPUT0:FP32:1,16:sparse").fill == "sparse");  // NAME:DTYPE:SHAPE[:FILL]
  CHECK(parse_input("IN=x.npy").file == "x.npy");                  // NAME=FILE.npy
  for (const char* bad :
       {"INPUT0=FP33:1", "INPUT0=FP32:1x-2", "INPUT0=FP32:1:hot", "=FP32:1", "INPUT0", "IN=@"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_input(bad), UsageError);
  }
  auto [name, shape] = parse_shape_option("IMAGE:3,224,224");
  CHECK(name == "IMAGE");
  CHECK(shape == sonic::Shape{3, 224, 224});
  CHECK_THROWS_AS(parse_shape_option("IMAGE"), UsageError);
}

TEST_CASE("request shapes: -b rows for a batching model, --shape for variable dimensions") {
  ModelLayout batching{true, {tensor("IMAGE", sonic::DataType::Fp32, {-1, 3, -1, -1})}, {}};
  const auto& image = batching.inputs[0];
  CHECK(request_shape(batching, image, sonic::Shape{3, 224, 224}, 4) ==
        sonic::Shape{4, 3, 224, 224});
  try {
    (void)request_shape(batching, image, std::nullopt, 4);
    FAIL("variable dimensions need --shape");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) ==
          "input 'IMAGE' of shape [-1,3,-1,-1] has variable dimensions: give them with --shape "
          "IMAGE:DIMS (batch dimension excluded)");
  }
  CHECK_THROWS_AS(request_shape(batching, image, sonic::Shape{4, 224, 224}, 1), UsageError);
  CHECK_THROWS_AS(request_shape(batching, image, sonic::Shape{1, 3, 224, 224}, 1), UsageError);

  ModelLayout fixed{false, {tensor("X", sonic::DataType::Int32, {2, -1})}, {}};
  CHECK(request_shape(fixed, fixed.inputs[0], std::nullopt, 1, 8) == sonic::Shape{2, 4});
  CHECK_THROWS_AS(request_shape(fixed, fixed.inputs[0], sonic::Shape{2, 4}, 2), UsageError);
}

TEST_CASE("perf_analyzer's input data: arrays, b64, content and shape, validation_data") {
  DatatypeOf inputs{{"INPUT0", sonic::DataType::Int32}, {"TEXT", sonic::DataType::Bytes}};
  DatatypeOf outputs{{"OUTPUT0", sonic::DataType::Int32}};
  // "AQAAAAIAAAA=" is the little-endian INT32s 1 and 2; "AgAAAGhp" is BYTES ["hi"].
  TempFile file(R"({"data": [
      {"INPUT0": [1, 2], "TEXT": ["a", "bc"]},
      {"INPUT0": {"b64": "AQAAAAIAAAA="}, "TEXT": {"content": {"b64": "AgAAAGhp"}, "shape": [1]}},
      {"INPUT0": {"content": [5, 6], "shape": [2]}, "TEXT": ["x", "y"]}],
    "validation_data": [{"OUTPUT0": [2, 4]}, {"OUTPUT0": [2, 4]}, {}]})");
  auto steps = read_input_data(file.path, inputs, outputs);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].inputs[0].elements == 2);
  CHECK(steps[0].inputs[0].bytes == steps[1].inputs[0].bytes);
  CHECK(steps[1].inputs[1].elements == 1);
  CHECK(steps[0].inputs[1].bytes ==
        std::vector<std::uint8_t>{1, 0, 0, 0, 'a', 2, 0, 0, 0, 'b', 'c'});
  CHECK(steps[2].inputs[0].shape == sonic::Shape{2});
  CHECK(steps[0].expected.size() == 1);
  CHECK(steps[2].expected.empty());

  auto error_of = [&](const std::string& json) {
    TempFile bad(json);
    try {
      read_input_data(bad.path, inputs, outputs);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of(R"({"data": [{"INPUT9": [1]}]})").find("the model has no input 'INPUT9'") !=
        std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": [1.5]}]})").find("1.5 is not INT32") != std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": [4294967296]}]})").find("is not INT32") !=
        std::string::npos);
  CHECK(error_of(R"({"data": [[{"INPUT0": [1]}]]})").find("data streams") != std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": {"b64": "AQA*"}}]})").find("not base64") !=
        std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": {"b64": "AQA="}}]})").find("not whole INT32") !=
        std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": [1]}], "validation_data": []})")
            .find("one entry per step") != std::string::npos);
  CHECK(error_of("{").find("is not JSON") != std::string::npos);
  CHECK(error_of(R"({"data": [{"INPUT0": [[1, 2]]}]})").find("flattened") != std::string::npos);
}

TEST_CASE("an answer that differs from validation_data is named, with the element") {
  PlannedRequest plan;
  plan.expected.push_back(
      {"OUTPUT0", sonic::Tensor::from_vector(std::vector<std::int32_t>{2, 4, 6}, {3}), {}});
  auto result_of = [](std::vector<std::int32_t> values) {
    auto count = static_cast<std::int64_t>(values.size());
    return sonic::InferResult(
        "m", "1", "", {{"OUTPUT0", sonic::Tensor::from_vector(std::move(values), {count}), {}}});
  };
  CHECK(mismatch(plan, result_of({2, 4, 6})).empty());
  CHECK(mismatch(plan, result_of({2, 4, 7})) ==
        "output 'OUTPUT0' differs from validation_data at element 2");
  CHECK(mismatch(plan, result_of({2, 4})) ==
        "output 'OUTPUT0' has 8 bytes where validation_data has 12");
  CHECK(mismatch(plan, sonic::InferResult("m", "1", "", {})) ==
        "output 'OUTPUT0' is missing from the answer");
}

TEST_CASE("sequences: START first, END last, ids in their range, one request of each out") {
  SequenceOptions options;
  parse_sequence_id_range("5:8", options);  // ids 5, 6, 7
  CHECK((options.start_id == 5 && options.id_range == 3));
  options.length = 3;
  options.variation = 0;
  Sequences sequences(options, 2, 0);
  auto a = sequences.next(), b = sequences.next();
  CHECK((a.slot == 0 && a.id == 5 && a.start && !a.end && a.position == 0));
  CHECK((b.slot == 1 && b.id == 6 && b.start && !b.end));
  // Slot 1 stays busy: slot 0 alone goes on, its sequence one request at a time.
  std::vector<std::uint64_t> firsts{5};
  for (int sent = 1; sent < 12; ++sent) {
    sequences.release(0);
    auto t = sequences.next();
    CHECK(t.slot == 0);
    CHECK(t.position == static_cast<std::size_t>(sent % 3));
    CHECK(t.start == (sent % 3 == 0));
    CHECK(t.end == (sent % 3 == 2));
    if (t.start) firsts.push_back(t.id);
  }
  // 7, then 5 (wrapped), then not 6, which slot 1 holds: slot 0 keeps its 5 instead.
  CHECK(firsts == std::vector<std::uint64_t>{5, 7, 5, 5});
  // Slot 1's sequence (one request sent) gets its END; slot 0's had it already.
  sequences.release(0);
  sequences.release(1);
  std::vector<Sequences::Turn> last;
  sequences.end_all(
      [&](sonic::InferRequest, sonic::Callback<sonic::InferResult> done) {
        last.push_back(sequences.next());
        sequences.release(last.back().slot);
        done(sonic::Error(sonic::StatusCode::Unavailable, "not sent"));
      },
      [] { return sonic::InferRequest("m"); });
  REQUIRE(last.size() == 1);
  CHECK((last[0].slot == 1 && last[0].id == 6 && last[0].end && !last[0].start));

  CHECK_THROWS_AS(parse_sequence_id_range("5:5", options), UsageError);
  CHECK_THROWS_AS(parse_sequence_id_range("x", options), UsageError);
  parse_sequence_id_range("0", options);  // 0 is no sequence: ids start at 1, as perf_analyzer's
  CHECK(options.start_id == 1);
}

TEST_CASE("sequence lengths vary within --sequence-length-variation, or are the file's steps") {
  SequenceOptions options;
  options.length = 10;  // +/- 20 %: 8 to 12
  Sequences varied(options, 1, 0);
  std::size_t shortest = 100, longest = 0, length = 0;
  for (int i = 0; i < 2000; ++i) {
    auto t = varied.next();
    varied.release(0);
    ++length;
    if (t.end) {
      shortest = std::min(shortest, length);
      longest = std::max(longest, length);
      length = 0;
    }
  }
  CHECK((shortest >= 8 && longest <= 12 && shortest < longest));
  Sequences steps(options, 1, 4);  // --input-data with 4 steps, no --sequence-length
  for (int i = 0; i < 8; ++i) {
    auto t = steps.next();
    steps.release(0);
    CHECK(t.end == (i % 4 == 3));
  }
}
