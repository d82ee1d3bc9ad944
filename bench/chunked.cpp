// One request with a large batch (ProtoDUNE's patches of one event), sent whole and through
// Client::infer_chunked at several chunk sizes and numbers in flight, against a running server:
// medians over interleaved rounds.
//
//   sonic-chunk-bench --url grpc://127.0.0.1:8001 --model emtrk_cnn_onnx --input patch
//                     --row-shape 1,48,48 --rows 8000 --chunks 64,512,2048 --in-flight 1,4
//                     [--whole] [--rounds 3]
#include <sonic/sonic.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "timing.hpp"

namespace {

using namespace sonic;
using sonic::bench::Clock;

std::vector<std::int64_t> numbers(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    out.push_back(std::stoll(text.substr(at, comma == std::string::npos ? comma : comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

struct Config {
  std::string url = "grpc://127.0.0.1:8001", model = "emtrk_cnn_onnx", input = "patch";
  Shape row_shape{1, 48, 48};
  std::int64_t rows = 8000;
  std::vector<std::int64_t> chunks{64, 512, 2048}, in_flight{1, 4};
  bool whole = false;
  int rounds = 3;
};

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--whole") {
      c.whole = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "sonic-chunk-bench: " << flag << " needs a value\n";
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--url")
      c.url = value;
    else if (flag == "--model")
      c.model = value;
    else if (flag == "--input")
      c.input = value;
    else if (flag == "--row-shape")
      c.row_shape = numbers(value);
    else if (flag == "--rows")
      c.rows = std::stoll(value);
    else if (flag == "--chunks")
      c.chunks = numbers(value);
    else if (flag == "--in-flight")
      c.in_flight = numbers(value);
    else if (flag == "--rounds")
      c.rounds = std::stoi(value);
    else {
      std::cerr << "sonic-chunk-bench: unknown option " << flag << '\n';
      std::exit(2);
    }
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) try {
  const Config c = parse(argc, argv);
  std::size_t per_row = 1;
  for (auto d : c.row_shape) per_row *= static_cast<std::size_t>(d);
  std::vector<float> patches(per_row * static_cast<std::size_t>(c.rows));
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(0, 1);
  for (auto& v : patches) v = uniform(random);
  Shape shape{c.rows};
  shape.insert(shape.end(), c.row_shape.begin(), c.row_shape.end());

  ClientOptions options;
  options.default_timeout = std::chrono::minutes(10);
  Client client(c.url, options);
  auto request = [&] { return InferRequest(c.model).input(c.input, Tensor::view(patches, shape)); };

  // Each configuration, in the order of a round.
  struct Way {
    std::string name;
    ChunkOptions chunk;  // rows 0 with whole: one plain request
    std::vector<double> ms;
  };
  std::vector<Way> ways;
  if (c.whole) ways.push_back({"whole (one request)", {}, {}});
  for (auto rows : c.chunks) {
    for (auto flight : c.in_flight) {
      ChunkOptions chunk;
      chunk.rows = rows;
      chunk.max_in_flight = static_cast<std::size_t>(flight);
      ways.push_back(
          {std::to_string(rows) + " rows x " + std::to_string(flight) + " in flight", chunk, {}});
    }
  }
  ways.push_back({"automatic (ChunkOptions{})", ChunkOptions{}, {}});

  client.infer_chunked(request());  // warm-up: connection, model load
  for (int round = 0; round < c.rounds; ++round) {
    for (auto& way : ways) {
      const auto start = Clock::now();
      if (way.name.rfind("whole", 0) == 0) {
        client.infer(request());
      } else {
        client.infer_chunked(request(), way.chunk);
      }
      way.ms.push_back(sonic::bench::ms_between(start, Clock::now()));
    }
  }
  std::printf("%s, %lld rows of [", c.model.c_str(), static_cast<long long>(c.rows));
  for (std::size_t i = 0; i < c.row_shape.size(); ++i) {
    std::printf("%s%lld", i ? "," : "", static_cast<long long>(c.row_shape[i]));
  }
  std::printf("] FP32 (%.1f MB), medians of %d rounds\n",
              static_cast<double>(patches.size() * sizeof(float)) / 1e6, c.rounds);
  std::printf("%-34s %10s %12s\n", "how", "ms", "rows/s");
  for (auto& way : ways) {
    const double ms = sonic::bench::median(way.ms);
    std::printf("%-34s %10.1f %12.0f\n", way.name.c_str(), ms,
                static_cast<double>(c.rows) / (ms / 1000));
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "sonic-chunk-bench: " << e.what() << '\n';
  return 1;
}
