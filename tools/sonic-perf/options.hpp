// sonic-perf — command-line options and the inputs they describe.
#pragma once

#include <sonic/sonic.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy.hpp"
#include "number_option.hpp"

namespace sonic::perf {

/// One input: a name and either a .npy file or a datatype, shape and fill.
struct InputSpec {
  std::string name;
  std::string file;  ///< a .npy file, when given
  DataType dtype = DataType::Fp32;
  Shape shape;
  std::string fill = "random";  ///< random, zero or sparse (5 % non-zero)
};

struct Options {
  std::string url = "grpc://127.0.0.1:8001";
  std::string model;
  std::vector<InputSpec> inputs;  ///< empty: from the model's metadata (dynamic dims -> 1)
  std::vector<int> concurrency{1};
  double rate = 0;       ///< requests per second; > 0 selects the fixed-rate mode
  bool poisson = false;  ///< exponential gaps between requests in fixed-rate mode
  CallbackThread callbacks = CallbackThread::Network;  ///< ClientOptions::callbacks
  bool streaming = false;  ///< requests on one stream (ModelStreamInfer)
  bool sync = false;       ///< blocking infer() calls, a thread per request in flight
  /// Client-side batching of the model (ClientOptions::batching): most rows per merged
  /// request (0: the model's max_batch_size), and how long a batch waits to fill.
  std::optional<int> client_batch;
  int batch_delay_us = 500;
  double warmup_s = 1;
  double window_s = 2;
  int window_requests = 0;  ///< > 0: windows end after this many requests instead
  double stability = 0.10;  ///< windows agree within this fraction of throughput and p99
  int stable_windows = 3;
  int max_windows = 10;
  std::string csv, json, plot;
};

/// A mistake on the command line: exit status 2, where a failure while running is 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void usage_error(const std::string& message) {
  throw UsageError(message + " (see sonic-perf --help)");
}

inline DataType parse_dtype(const std::string& text) {
  for (DataType type : kAllDataTypes) {
    if (text == to_string(type)) return type;
  }
  usage_error("unknown datatype '" + text + "'");
}

inline Shape parse_shape(const std::string& text) {
  Shape shape;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    std::string dim = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    long long value = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end || value < 0) usage_error("bad shape '" + text + "'");
    shape.push_back(value);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return shape;
}

/// NAME=FILE.npy or NAME:DTYPE:D0,D1,...[:random|zero|sparse]
inline InputSpec parse_input(const std::string& text) {
  InputSpec spec;
  if (auto eq = text.find('='); eq != std::string::npos) {
    spec.name = text.substr(0, eq);
    spec.file = text.substr(eq + 1);
    return spec;
  }
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (std::size_t colon; (colon = text.find(':', at)) != std::string::npos; at = colon + 1) {
    parts.push_back(text.substr(at, colon - at));
  }
  parts.push_back(text.substr(at));
  if (parts.size() < 3 || parts.size() > 4) usage_error("bad --input '" + text + "'");
  spec.name = parts[0];
  spec.dtype = parse_dtype(parts[1]);
  spec.shape = parse_shape(parts[2]);
  if (parts.size() == 4) spec.fill = parts[3];
  if (spec.fill != "random" && spec.fill != "zero" && spec.fill != "sparse") {
    usage_error("fill must be random, zero or sparse, not '" + spec.fill + "'");
  }
  return spec;
}

/// "8", "1:64:x2" (1, 2, 4, ... 64) or "4:16:+4" (4, 8, 12, 16).
/// A whole number of at least `least` for `flag`, all of `text` ("2abc" and "0" are refused,
/// not read as 2 and 1).
inline int parse_count(const std::string& flag, const std::string& text, int least = 1) {
  auto value = tools::whole_number(text);
  if (!value || *value < least || *value > 1'000'000) {
    usage_error(flag + " takes a whole number from " + std::to_string(least) +
                " to 1000000, not '" + text + "'");
  }
  return static_cast<int>(*value);
}

/// A number of seconds (or any positive quantity) for `flag`: finite, above zero, or at least
/// zero when `zero_allowed`.
inline double parse_positive(const std::string& flag, const std::string& text,
                             bool zero_allowed = false) {
  auto value = tools::finite_number(text);
  if (!value || *value < 0 || (*value == 0 && !zero_allowed)) {
    usage_error(flag + " takes a number " + (zero_allowed ? "of at least 0" : "above 0") +
                ", not '" + text + "'");
  }
  return *value;
}

/// N, a list N,M,... or a sweep FROM:TO:xFACTOR / FROM:TO:+STEP.
inline std::vector<int> parse_sweep(const std::string& text) {
  const std::string flag = "--concurrency";
  auto first = text.find(':');
  if (first == std::string::npos) {
    std::vector<int> values;
    std::size_t at = 0;
    for (;;) {
      std::size_t comma = text.find(',', at);
      values.push_back(parse_count(flag, text.substr(at, comma - at)));
      if (comma == std::string::npos) return values;
      at = comma + 1;
    }
  }
  auto second = text.find(':', first + 1);
  if (second == std::string::npos || second + 2 > text.size())
    usage_error("bad sweep '" + text + "': use FROM:TO:xFACTOR or FROM:TO:+STEP");
  int from = parse_count(flag, text.substr(0, first));
  int to = parse_count(flag, text.substr(first + 1, second - first - 1));
  char op = text[second + 1];
  int step = parse_count(flag, text.substr(second + 2));
  if ((op != 'x' && op != '+') || step < (op == 'x' ? 2 : 1) || to < from) {
    usage_error("bad sweep '" + text + "': use FROM:TO:xFACTOR or FROM:TO:+STEP");
  }
  std::vector<int> values;
  for (int v = from; v <= to; v = op == 'x' ? v * step : v + step) values.push_back(v);
  return values;
}

/// Refuses an output file whose folder does not exist or cannot be written, before a sweep
/// that may last minutes rather than after it.
inline void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    usage_error(flag + " " + path + ": the folder " + folder.string() + " does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    usage_error(flag + " " + path + ": the folder " + folder.string() + " is not writable");
  }
}

/// The tensor an input spec describes (a .npy file, or generated data).
inline Tensor make_tensor(const InputSpec& spec, std::mt19937& random) {
  if (!spec.file.empty()) return tools::read_npy(spec.file);
  auto count = element_count(spec.shape).value_or(0);
  if (spec.dtype == DataType::Bytes) {
    std::vector<std::string> strings(count, spec.fill == "zero" ? "" : "sonic");
    return Tensor::from_strings(strings, spec.shape);
  }
  std::vector<std::uint8_t> bytes(count * element_size(spec.dtype), 0);
  if (spec.fill != "zero") {
    std::uniform_int_distribution<int> byte(0, 255), percent(0, 99);
    std::size_t width = element_size(spec.dtype);
    for (std::size_t i = 0; i < count; ++i) {
      if (spec.fill == "sparse" && percent(random) >= 5) continue;
      for (std::size_t b = 0; b < width; ++b) {
        bytes[i * width + b] = static_cast<std::uint8_t>(byte(random));
      }
      if (spec.dtype == DataType::Bool) bytes[i] &= 1;
      // Keep floats finite: clear the top exponent bit of the most significant byte.
      if (spec.dtype == DataType::Fp32 || spec.dtype == DataType::Fp64 ||
          spec.dtype == DataType::Fp16 || spec.dtype == DataType::Bf16) {
        bytes[i * width + width - 1] &= 0x3f;
      }
    }
  }
  return Tensor::copy_bytes(spec.dtype, spec.shape, bytes.data(), bytes.size());
}

}  // namespace sonic::perf
