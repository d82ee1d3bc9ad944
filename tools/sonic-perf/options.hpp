// sonic-perf — command-line options and the inputs they describe.
#pragma once

#include <sonic/sonic.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "command_line.hpp"
#include "npy.hpp"
#include "number_option.hpp"
#include "sequences.hpp"
#include "tensor_spec.hpp"

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
  std::vector<std::string> urls{"grpc://127.0.0.1:8001"};
  bool urls_given = false;  ///< -u given: -i then only adds a missing scheme
  std::string protocol;     ///< -i grpc|http (perf_analyzer's); empty: grpc
  std::string token_file;   ///< a bearer token's file (--token-file); empty: none
  TlsOptions tls;           ///< certificates of TLS endpoints (--tls-*)
  std::string model;
  std::vector<InputSpec> inputs;  ///< empty: from the model's metadata (or --input-data)
  /// --shape NAME:DIMS: the variable dimensions of the model's inputs (batch dimension excluded).
  std::map<std::string, Shape> shapes;
  int batch_size = 1;      ///< -b: rows of each request, for a model that batches
  std::string input_data;  ///< --input-data FILE.json, perf_analyzer's format
  std::vector<int> concurrency{1};
  std::vector<int> rates;  ///< requests per second; not empty selects the fixed-rate mode
  bool poisson = false;    ///< exponential gaps between requests in fixed-rate mode
  CallbackThread callbacks = CallbackThread::Network;  ///< ClientOptions::callbacks
  bool streaming = false;  ///< requests on one stream (ModelStreamInfer)
  bool sync = false;       ///< blocking infer() calls, a thread per request in flight
  /// With `sync`: the blocking calls go through the shared connections and their network
  /// thread (ClientOptions::drive_blocking_calls off) instead of the caller's own.
  bool sync_shared = false;
  /// Client-side batching of the model (ClientOptions::batching): most rows per merged
  /// request (0: the model's max_batch_size), and how long a batch waits to fill.
  std::optional<int> client_batch;
  int batch_delay_us = 500;
  double warmup_s = 1;
  double window_s = 2;
  int window_requests = 0;  ///< > 0: windows end after this many requests instead
  int percentile = 99;      ///< the latency that stability and the threshold use
  double stability = 0.10;  ///< windows agree within this fraction of throughput and latency
  int stable_windows = 3;
  int max_windows = 10;
  double latency_threshold_us = 0;  ///< > 0: the highest load whose latency stays under it
  bool binary_search = false;       ///< bisect the sweep's range for that load
  SequenceOptions sequences;        ///< for a model with sequence_batching
  std::string csv, json, plot;
};

using tools::UsageError;

[[noreturn]] inline void usage_error(const std::string& message) { throw UsageError(message); }

/// One --input: NAME=@FILE.npy or NAME=DTYPE:SHAPE[:random|zero|sparse], as sonic-infer's
/// inputs (whose third field is values). Earlier spellings are still read: NAME:DTYPE:SHAPE[:FILL]
/// and NAME=FILE.npy.
inline InputSpec parse_input(const std::string& text) {
  InputSpec spec;
  std::string rest;
  std::size_t eq = text.find('='), colon = text.find(':');
  if (eq != std::string::npos && (colon == std::string::npos || eq < colon)) {
    std::tie(spec.name, rest) = tools::split_named_spec(text, "--input NAME=SPEC");
    if (!rest.empty() && rest.front() == '@') {
      spec.file = rest.substr(1);
      if (spec.file.empty()) usage_error("--input " + text + ": '@' needs a file name");
      return spec;
    }
    if (rest.find(':') == std::string::npos) {  // NAME=FILE.npy, the earlier spelling
      spec.file = rest;
      return spec;
    }
  } else if (colon != std::string::npos && colon > 0) {
    spec.name = text.substr(0, colon);
    rest = text.substr(colon + 1);
  } else {
    usage_error("--input takes NAME=@FILE.npy or NAME=DTYPE:SHAPE[:random|zero|sparse], not '" +
                text + "'");
  }
  const std::string what = "--input " + spec.name;
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (std::size_t next; (next = rest.find(':', at)) != std::string::npos; at = next + 1) {
    parts.push_back(rest.substr(at, next - at));
  }
  parts.push_back(rest.substr(at));
  if (parts.size() < 2 || parts.size() > 3) {
    usage_error(what + ": expected DTYPE:SHAPE[:random|zero|sparse], got '" + rest + "'");
  }
  spec.dtype = tools::parse_datatype(what, parts[0]);
  spec.shape = tools::parse_shape(what, parts[1]);
  if (parts.size() == 3) spec.fill = parts[2];
  if (spec.fill != "random" && spec.fill != "zero" && spec.fill != "sparse") {
    usage_error(what + ": fill must be random, zero or sparse, not '" + spec.fill + "'");
  }
  return spec;
}

/// One --shape: NAME:DIMS (dimensions joined by ',' or 'x', batch dimension excluded).
inline std::pair<std::string, Shape> parse_shape_option(const std::string& text) {
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    usage_error("--shape takes NAME:DIMS (e.g. IMAGE:3,224,224), not '" + text + "'");
  }
  std::string name = text.substr(0, colon);
  return {name, tools::parse_shape("--shape " + name, text.substr(colon + 1))};
}

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

/// The values of a load sweep for `flag`: N; a list N,M,...; FROM:TO (step 1); FROM:TO:STEP
/// or FROM:TO:+STEP (4:16:4 is 4, 8, 12, 16, perf_analyzer's --concurrency-range); or
/// FROM:TO:xFACTOR (1:64:x2 is 1, 2, 4, ... 64).
inline std::vector<int> parse_sweep(const std::string& flag, const std::string& text) {
  auto first = text.find(':');
  if (first == std::string::npos) {
    std::vector<int> values;
    for (const auto& item : tools::comma_list(flag, text))
      values.push_back(parse_count(flag, item));
    return values;
  }
  const std::string form = "use N, N,M,..., FROM:TO, FROM:TO:STEP or FROM:TO:xFACTOR";
  auto second = text.find(':', first + 1);
  int from = parse_count(flag, text.substr(0, first));
  int to = parse_count(
      flag,
      text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1));
  char op = '+';
  int step = 1;
  if (second != std::string::npos) {
    std::string step_text = text.substr(second + 1);
    if (!step_text.empty() && (step_text[0] == 'x' || step_text[0] == '+')) {
      op = step_text[0];
      step_text.erase(0, 1);
    }
    step = parse_count(flag, step_text);
  }
  if (to < from) usage_error(flag + " " + text + ": FROM is above TO (" + form + ")");
  if (op == 'x' && step < 2) usage_error(flag + " " + text + ": a FACTOR must be at least 2");
  std::vector<int> values;
  for (long long v = from; v <= to; v = op == 'x' ? v * step : v + step) {
    values.push_back(static_cast<int>(v));
  }
  return values;
}

/// Applies -i (perf_analyzer's --protocol): a URL without a scheme gets the protocol's, and
/// without -u the default is perf_analyzer's port of the protocol (8001 gRPC, 8000 HTTP). A URL
/// whose scheme is of the other protocol is refused rather than silently kept.
inline void apply_protocol(Options& o) {
  if (o.protocol.empty()) return;
  for (auto& c : o.protocol) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (o.protocol != "grpc" && o.protocol != "http") {
    usage_error("-i takes grpc or http, not '" + o.protocol + "'");
  }
  const bool http = o.protocol == "http";
  if (!o.urls_given) {
    o.urls = {http ? "http://127.0.0.1:8000" : "grpc://127.0.0.1:8001"};
    return;
  }
  for (auto& url : o.urls) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) {
      url = (http ? "http://" : "grpc://") + url;
    } else if ((url.compare(0, 4, "http") == 0) != http) {
      usage_error("-i " + o.protocol + ": the URL " + url + " is of another protocol");
    }
  }
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
