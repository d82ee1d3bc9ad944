// sonic-infer: sends one inference request built from the command line and prints the outputs.
//
//   sonic-infer simple INPUT0=INT32:1x16:*1 INPUT1=@input1.npy
//   sonic-infer --save-dir out identity_fp32 INPUT0=FP32:2x3:0.5,1,1.5,2,2.5,3
//   sonic-infer --list simple
// Over 500 lines: a command line tool's options, each parsed and explained in one place.
#include <sonic/credentials.hpp>
#include <sonic/sonic.hpp>

#include "command_line.hpp"
#include "half_float.hpp"
#include "npy.hpp"
#include "number_option.hpp"
#include "tensor_spec.hpp"
#include "tls_options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using sonic::DataType;
using sonic::Shape;
using sonic::Tensor;

/// Largest inline tensor accepted, in bytes: a request cannot carry more than 2 GiB anyway, and
/// a typo such as "*1" over a shape of 100000x100000 should fail at once, not exhaust memory.
constexpr std::size_t kMaxInlineBytes = std::size_t{1} << 31;
/// How many values of each output are printed.
constexpr std::size_t kPrintedValues = 32;

using sonic::tools::UsageError;

/// What the command line asks for.
struct Options {
  std::vector<std::string> urls{"grpc://127.0.0.1:8001"};
  std::string token_file;    ///< a bearer token's file; empty: none
  sonic::TlsOptions tls;     ///< certificates of TLS endpoints
  long long timeout_ms = 0;  ///< 0: no limit
  std::string model_version;
  std::string id;
  std::vector<std::string> outputs;
  std::string save_dir;
  bool list = false;
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;  ///< name, spec
};

using sonic::tools::append_element;
using sonic::tools::bf16_to_float;
using sonic::tools::float_to_bf16;
using sonic::tools::float_to_half;
using sonic::tools::half_to_float;
using sonic::tools::owned_tensor;

// ---------------------------------------------------------------------------------------------
// Inline tensors: DTYPE:SHAPE:VALUES.

/// Throws the usage error of a malformed SPEC, naming the input.
[[noreturn]] void bad_spec(const std::string& input, const std::string& what) {
  throw UsageError("input '" + input + "': " + what);
}

/// The text without leading and trailing blanks.
std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

/// One integer of type T, in decimal, range-checked.
template <typename T>
T parse_integer(const std::string& input, DataType type, std::string_view text) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  bool negative = !text.empty() && text.front() == '-';
  if (ec == std::errc::result_out_of_range || (negative && std::is_unsigned_v<T>)) {
    bad_spec(input,
             "value '" + std::string(text) + "' is out of range for " + sonic::to_string(type));
  }
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    bad_spec(input, "value '" + std::string(text) + "' is not " + sonic::to_string(type));
  }
  return value;
}

/// One floating-point value (decimal, "inf", "nan"); a finite value too large for `type`,
/// once rounded, is an error rather than a silent infinity.
double parse_real(const std::string& input, DataType type, std::string_view text) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() ||
      std::isspace(static_cast<unsigned char>(copy[0]))) {
    bad_spec(input, "value '" + copy + "' is not " + sonic::to_string(type));
  }
  bool finite_text = !std::isinf(value) || errno == ERANGE;
  bool finite_result = true;
  if (type == DataType::Fp32) finite_result = !std::isinf(static_cast<float>(value));
  if (type == DataType::Fp16) {
    finite_result = (float_to_half(static_cast<float>(value)) & 0x7fffu) != 0x7c00u;
  }
  if (type == DataType::Bf16) {
    finite_result = (float_to_bf16(static_cast<float>(value)) & 0x7fffu) != 0x7f80u;
  }
  if (type == DataType::Fp64) finite_result = !std::isinf(value);
  if (finite_text && !std::isnan(value) && !finite_result) {
    bad_spec(input, "value '" + copy + "' is out of range for " + sonic::to_string(type));
  }
  return value;
}

/// Appends one element of `type` parsed from text.
void append_value(std::vector<std::uint8_t>& out, const std::string& input, DataType type,
                  std::string_view raw) {
  std::string_view text = trim(raw);
  switch (type) {
    case DataType::Bool:
      if (text == "1" || text == "true" || text == "True" || text == "TRUE") {
        out.push_back(1);
      } else if (text == "0" || text == "false" || text == "False" || text == "FALSE") {
        out.push_back(0);
      } else {
        bad_spec(input, "value '" + std::string(text) + "' is not BOOL (true, false, 1 or 0)");
      }
      return;
    case DataType::UInt8:
      return append_element(out, parse_integer<std::uint8_t>(input, type, text));
    case DataType::UInt16:
      return append_element(out, parse_integer<std::uint16_t>(input, type, text));
    case DataType::UInt32:
      return append_element(out, parse_integer<std::uint32_t>(input, type, text));
    case DataType::UInt64:
      return append_element(out, parse_integer<std::uint64_t>(input, type, text));
    case DataType::Int8: return append_element(out, parse_integer<std::int8_t>(input, type, text));
    case DataType::Int16:
      return append_element(out, parse_integer<std::int16_t>(input, type, text));
    case DataType::Int32:
      return append_element(out, parse_integer<std::int32_t>(input, type, text));
    case DataType::Int64:
      return append_element(out, parse_integer<std::int64_t>(input, type, text));
    case DataType::Fp16: {
      double value = parse_real(input, type, text);
      return append_element(out, float_to_half(static_cast<float>(value)));
    }
    case DataType::Bf16: {
      double value = parse_real(input, type, text);
      return append_element(out, float_to_bf16(static_cast<float>(value)));
    }
    case DataType::Fp32: {
      // strtof rounds once, where going through double could round twice.
      double checked = parse_real(input, type, text);
      std::string copy(text);
      float value = std::strtof(copy.c_str(), nullptr);
      if (std::isnan(checked)) value = static_cast<float>(checked);
      return append_element(out, value);
    }
    case DataType::Fp64: return append_element(out, parse_real(input, type, text));
    case DataType::Bytes: break;
  }
  bad_spec(input, "internal error: no parser for BYTES values");
}

/// Splits BYTES values at unescaped commas, undoing the escapes \, \\ and a leading \*.
std::vector<std::string> split_strings(const std::string& input, std::string_view text) {
  std::vector<std::string> items(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ',') {
      items.emplace_back();
    } else if (c == '\\') {
      if (i + 1 >= text.size()) bad_spec(input, "BYTES value ends with a lone '\\'");
      char next = text[++i];
      if (next != ',' && next != '\\' && next != '*') {
        bad_spec(input, std::string("unknown escape '\\") + next +
                            "' in BYTES values (use \\, \\\\ or \\*)");
      }
      items.back() += next;
    } else {
      items.back() += c;
    }
  }
  return items;
}

/// DTYPE:SHAPE:VALUES → a tensor.
Tensor parse_inline(const std::string& input, const std::string& spec) {
  std::size_t first = spec.find(':');
  std::size_t second = first == std::string::npos ? first : spec.find(':', first + 1);
  if (second == std::string::npos) {
    bad_spec(input, "expected @FILE.npy or DTYPE:SHAPE:VALUES, got '" + spec + "'");
  }
  const std::string what = "input '" + input + "'";
  auto type = std::optional<DataType>(sonic::tools::parse_datatype(what, spec.substr(0, first)));
  Shape shape =
      sonic::tools::parse_shape(what, std::string_view(spec).substr(first + 1, second - first - 1));
  auto count = sonic::element_count(shape);
  std::size_t width = *type == DataType::Bytes ? 4 : sonic::element_size(*type);
  if (!count || (*count != 0 && width > kMaxInlineBytes / *count)) {
    bad_spec(input, "shape " + sonic::to_string(shape) + " is too large for an inline tensor");
  }
  std::string_view values = std::string_view(spec).substr(second + 1);

  bool repeat = !values.empty() && values.front() == '*';
  if (repeat) values.remove_prefix(1);
  if (*type == DataType::Bytes) {
    std::vector<std::string> items = split_strings(input, values);
    if (repeat) {
      if (items.size() != 1)
        bad_spec(input, "'*' repeats one value, got " + std::to_string(items.size()));
      if (*count != 0 && items[0].size() + 4 > kMaxInlineBytes / *count) {
        bad_spec(input, "repeated BYTES value makes the tensor too large");
      }
      items.assign(*count, items[0]);
    } else if (*count == 0 && values.empty()) {
      items.clear();
    }
    if (items.size() != *count) {
      bad_spec(input, "shape " + sonic::to_string(shape) + " needs " + std::to_string(*count) +
                          " values, got " + std::to_string(items.size()));
    }
    return owned_tensor(DataType::Bytes, std::move(shape),
                        sonic::detail::encode_bytes_elements(items));
  }

  std::vector<std::string_view> items;
  if (!(values.empty() && *count == 0 && !repeat)) {
    std::size_t start = 0;
    while (true) {
      std::size_t comma = values.find(',', start);
      items.push_back(
          values.substr(start, comma == std::string_view::npos ? comma : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  std::vector<std::uint8_t> bytes;
  if (repeat) {
    if (items.size() != 1)
      bad_spec(input, "'*' repeats one value, got " + std::to_string(items.size()));
    std::vector<std::uint8_t> one;
    append_value(one, input, *type, items[0]);
    bytes.reserve(one.size() * *count);
    for (std::size_t i = 0; i < *count; ++i) bytes.insert(bytes.end(), one.begin(), one.end());
  } else {
    if (items.size() != *count) {
      bad_spec(input, "shape " + sonic::to_string(shape) + " needs " + std::to_string(*count) +
                          " values, got " + std::to_string(items.size()));
    }
    bytes.reserve(width * *count);
    for (std::string_view item : items) append_value(bytes, input, *type, item);
  }
  return owned_tensor(*type, std::move(shape), std::move(bytes));
}

/// An input tensor from its SPEC: a .npy file or inline values.
Tensor make_input(const std::string& input, const std::string& spec) {
  if (!spec.empty() && spec.front() == '@') {
    if (spec.size() == 1) bad_spec(input, "'@' needs a file name");
    return sonic::tools::read_npy(spec.substr(1));
  }
  return parse_inline(input, spec);
}

// ---------------------------------------------------------------------------------------------
// Printing.

/// The shortest decimal text that reads back as the same value of a 16-bit float type.
template <typename ToBits>
std::string shortest_16bit(float value, std::uint16_t bits, ToBits to_bits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, static_cast<double>(value));
    if (to_bits(std::strtof(buffer, nullptr)) == bits) break;
  }
  return buffer;
}

/// Shortest round-trip text of a float or double.
template <typename T>
std::string shortest(T value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

/// A BYTES element as a double-quoted string with C-style escapes.
std::string quoted(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// Element i of a fixed-size tensor. Reads through memcpy: received tensors may sit at any
/// alignment inside the message.
template <typename T>
T load(const Tensor& tensor, std::size_t i) {
  T value;
  std::memcpy(&value, tensor.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Element i of a fixed-size tensor as text: integers in decimal, floats in their shortest
/// round-trip form, 16-bit floats widened first.
std::string element_text(const Tensor& tensor, std::size_t i) {
  switch (tensor.dtype()) {
    case DataType::Bool: return tensor.data()[i] ? "true" : "false";
    case DataType::UInt8: return std::to_string(load<std::uint8_t>(tensor, i));
    case DataType::UInt16: return std::to_string(load<std::uint16_t>(tensor, i));
    case DataType::UInt32: return std::to_string(load<std::uint32_t>(tensor, i));
    case DataType::UInt64: return std::to_string(load<std::uint64_t>(tensor, i));
    case DataType::Int8: return std::to_string(load<std::int8_t>(tensor, i));
    case DataType::Int16: return std::to_string(load<std::int16_t>(tensor, i));
    case DataType::Int32: return std::to_string(load<std::int32_t>(tensor, i));
    case DataType::Int64: return std::to_string(load<std::int64_t>(tensor, i));
    case DataType::Fp16: {
      auto bits = load<std::uint16_t>(tensor, i);
      return shortest_16bit(half_to_float(bits), bits, float_to_half);
    }
    case DataType::Bf16: {
      auto bits = load<std::uint16_t>(tensor, i);
      return shortest_16bit(bf16_to_float(bits), bits, float_to_bf16);
    }
    case DataType::Fp32: return shortest(load<float>(tensor, i));
    case DataType::Fp64: return shortest(load<double>(tensor, i));
    case DataType::Bytes: break;
  }
  return "?";
}

/// "OUTPUT0 INT32 [1,16]" and, indented below, the first values.
void print_output(const sonic::NamedTensor& output) {
  const Tensor& tensor = output.tensor;
  std::cout << output.name << ' ' << sonic::to_string(tensor.dtype()) << ' '
            << sonic::to_string(tensor.shape()) << '\n';
  if (auto ok = tensor.check(); !ok) {
    throw sonic::Error(ok.code(), "output '" + output.name + "': " + ok.error().message());
  }
  std::vector<std::string> texts;
  std::size_t count = 0;
  if (tensor.dtype() == DataType::Bytes) {
    auto items = tensor.string_views();
    count = items.size();
    for (std::size_t i = 0; i < count && i < kPrintedValues; ++i) texts.push_back(quoted(items[i]));
  } else {
    count = tensor.byte_size() / sonic::element_size(tensor.dtype());
    for (std::size_t i = 0; i < count && i < kPrintedValues; ++i) {
      texts.push_back(element_text(tensor, i));
    }
  }
  std::cout << "  [";
  for (std::size_t i = 0; i < texts.size(); ++i) std::cout << (i ? ", " : "") << texts[i];
  std::cout << ']';
  if (count > texts.size()) std::cout << " ... (" << count - texts.size() << " more)";
  std::cout << '\n';
}

/// A file name for an output: its name with anything but [A-Za-z0-9._-] replaced by '_', so a
/// server's output name cannot point outside the save directory.
std::string file_name_for(const std::string& name) {
  std::string safe = name;
  for (char& c : safe) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (safe.empty() || safe == "." || safe == "..") safe = "_" + safe;
  return safe + ".npy";
}

/// Writes an output as DIR/NAME.npy; BF16, which numpy lacks, is widened to FP32 (exactly).
void save_output(const std::string& dir, const sonic::NamedTensor& output) {
  Tensor tensor = output.tensor;
  std::string note;
  if (tensor.dtype() == DataType::Bf16) {
    std::vector<std::uint8_t> widened;
    std::size_t count = tensor.byte_size() / 2;
    widened.reserve(count * 4);
    for (std::size_t i = 0; i < count; ++i) {
      append_element(widened, bf16_to_float(load<std::uint16_t>(tensor, i)));
    }
    tensor = owned_tensor(DataType::Fp32, tensor.shape(), std::move(widened));
    note = " (BF16 saved as FP32)";
  }
  std::string path = (std::filesystem::path(dir) / file_name_for(output.name)).string();
  sonic::tools::write_npy(path, tensor);
  std::cout << "  saved " << path << note << '\n';
}

/// "    INPUT0 INT32 [1,16]" for each tensor, under a title.
void print_tensor_metadata(const char* title, const std::vector<sonic::TensorMetadata>& tensors) {
  std::cout << "  " << title << ":\n";
  for (const auto& t : tensors) {
    std::cout << "    " << t.name << ' ' << sonic::to_string(t.dtype) << ' '
              << sonic::to_string(t.shape) << '\n';
  }
}

/// --list: the server's metadata and, when a model is named, the model's.
void print_list(sonic::Client& client, const Options& options) {
  sonic::ServerMetadata server = client.server_metadata();
  std::cout << "server: " << server.name << ' ' << server.version << '\n';
  std::cout << "  extensions:";
  for (const auto& extension : server.extensions) std::cout << ' ' << extension;
  std::cout << '\n';
  if (options.model.empty()) {
    std::vector<sonic::ModelIndex> models;
    try {
      models = client.repository_index();
    } catch (const sonic::Error& e) {
      if (e.code() != sonic::StatusCode::Unimplemented) throw;
      std::cout << "models: (the server does not list them)\n";
      return;
    }
    std::cout << "models:\n";
    for (const auto& m : models) {
      std::cout << "  " << m.name << (m.version.empty() ? "" : " v" + m.version) << "  "
                << model_state_name(m.state) << (m.reason.empty() ? "" : " (" + m.reason + ")")
                << '\n';
    }
    return;
  }
  sonic::ModelMetadata model = client.model_metadata(options.model, options.model_version);
  std::cout << "model: " << model.name << '\n';
  std::cout << "  versions:";
  for (const auto& version : model.versions) std::cout << ' ' << version;
  std::cout << '\n';
  if (!model.platform.empty()) std::cout << "  platform: " << model.platform << '\n';
  print_tensor_metadata("inputs", model.inputs);
  print_tensor_metadata("outputs", model.outputs);
}

// ---------------------------------------------------------------------------------------------
// The command line.

/// The --timeout value: a positive number of milliseconds (at most a year).
long long parse_timeout(const std::string& text) {
  auto value = sonic::tools::whole_number(text);
  if (!value || *value <= 0 || *value > 365LL * 24 * 3600 * 1000) {
    throw UsageError("--timeout takes a positive number of milliseconds, not '" + text + "'");
  }
  return *value;
}

/// The command line as Options; throws UsageError for a malformed one, exits after --help.
Options parse_args(int argc, char** argv) {
  Options options;
  sonic::tools::CommandLine command_line(
      "sonic-infer",
      "usage: sonic-infer [options] MODEL INPUT=SPEC...\n"
      "       sonic-infer [-u URL] --list [MODEL]\n"
      "Sends one inference request and prints each output's name, datatype, shape and values.");
  command_line.section("Options:")
      .option("-u, --url", "URL",
              "server endpoint: grpc://, grpcs://, grpc+shm://, tcp://, tcp+zstd:// "
              "(or with +tls), http://, https:// HOST:PORT; without a scheme grpc:// "
              "(default grpc://127.0.0.1:8001); "
              "several, comma-separated, are tried in turn",
              [&](const std::string& v) { options.urls = sonic::tools::comma_list("--url", v); })
      .option("--token-file", "FILE",
              "send FILE's bearer token with every call (sonic::TokenFile: read "
              "again when the file changes)",
              [&](const std::string& v) { options.token_file = v; });
  sonic::tools::add_tls_options(command_line, options.tls);
  command_line
      .option("-t, --timeout", "MS", "time limit of each call in milliseconds (default: none)",
              [&](const std::string& v) { options.timeout_ms = parse_timeout(v); })
      .option("-x, --model-version", "V", "model version (default: the server's choice)",
              [&](const std::string& v) { options.model_version = v; })
      .option("--id", "ID", "request id, echoed by the server",
              [&](const std::string& v) { options.id = v; })
      .option("-o, --output", "NAME", "return only this output (repeat for several; default: all)",
              [&](const std::string& v) {
                if (v.empty()) throw UsageError("--output needs a name");
                options.outputs.push_back(v);
              })
      .option("--save-dir", "DIR", "also write each output to DIR/NAME.npy (BF16 as FP32)",
              [&](const std::string& v) {
                if (v.empty()) throw UsageError("--save-dir needs a directory");
                options.save_dir = v;
              })
      .flag("-l, --list",
            "print the server's metadata and its models with their states or, "
            "given MODEL, the model's inputs and outputs; sends no request",
            [&] { options.list = true; })
      .epilogue(
          "SPEC is one of:\n"
          "  @FILE.npy              a NumPy array (little-endian, C order; |S<n> arrays are "
          "BYTES)\n"
          "  DTYPE:SHAPE:VALUES     inline: INT32:1x16:1,2,...,16   BYTES:2:hello,world\n"
          "  DTYPE:SHAPE:*VALUE     one value repeated over the shape: FP32:2x3:*0.5\n"
          "DTYPE is a KServe datatype (BOOL, UINT8..UINT64, INT8..INT64, FP16, BF16, FP32, FP64,\n"
          "BYTES), in any case; SHAPE is dimensions joined by 'x' or ',' (1x16 or 1,16); VALUES\n"
          "are separated by commas (in BYTES values, write '\\,' for a comma, '\\\\' for a\n"
          "backslash, a leading '\\*' for '*'). sonic-perf --input takes the same NAME=SPEC.\n"
          "Prints 'latency: X.XXX ms', the round trip of the inference call, at the end.\n"
          "Exit status: 0 success, 1 a failed call or unreadable input, 2 a bad command line.\n");
  std::vector<std::string> positional = command_line.parse(argc, argv);

  if (!positional.empty()) {
    options.model = positional.front();
    if (options.model.find('=') != std::string::npos) {
      throw UsageError("the first argument must be the MODEL name, got '" + options.model + "'");
    }
  }
  for (std::size_t i = 1; i < positional.size(); ++i) {
    auto [name, spec] = sonic::tools::split_named_spec(positional[i], "INPUT=SPEC");
    for (const auto& known : options.inputs) {
      if (known.first == name) throw UsageError("input '" + name + "' given twice");
    }
    options.inputs.emplace_back(name, spec);
  }
  if (options.list) {
    if (!options.inputs.empty()) throw UsageError("--list sends no request: drop the inputs");
  } else if (options.model.empty()) {
    throw UsageError("no MODEL given");
  } else if (options.inputs.empty()) {
    throw UsageError("no INPUT=SPEC given (see --list for the model's inputs)");
  }
  return options;
}

/// Does what the options ask; throws sonic::Error (or another std::exception) on failure.
int run(const Options& options) {
  sonic::ClientOptions client_options;
  // Inputs are validated here, against metadata fetched before the request, so that the timed
  // call is the inference round trip alone, on a connection already established.
  client_options.validate_inputs = false;
  if (options.timeout_ms > 0) {
    std::chrono::milliseconds limit(options.timeout_ms);
    client_options.control_timeout = limit;
    client_options.connect_timeout = std::min(client_options.connect_timeout, limit);
  }
  client_options.endpoints = options.urls;
  client_options.tls = options.tls;
  if (!options.token_file.empty())
    client_options.bearer_token = sonic::TokenFile(options.token_file);
  sonic::Client client(client_options);
  if (options.list) {
    print_list(client, options);
    return 0;
  }

  sonic::InferRequest request(options.model, options.model_version);
  for (const auto& [name, spec] : options.inputs) request.input(name, make_input(name, spec));
  for (const auto& name : options.outputs) request.output(name);
  if (!options.id.empty()) request.id(options.id);
  if (options.timeout_ms > 0) request.timeout(std::chrono::milliseconds(options.timeout_ms));

  sonic::ModelMetadata metadata = client.model_metadata(options.model, options.model_version);
  sonic::validate_request(metadata, request).value();

  auto start = std::chrono::steady_clock::now();
  sonic::InferResult result = client.infer(std::move(request));
  std::chrono::duration<double, std::milli> latency = std::chrono::steady_clock::now() - start;

  std::cout << "model: " << result.model_name();
  if (!result.model_version().empty()) std::cout << " (version " << result.model_version() << ')';
  if (!result.request_id().empty()) std::cout << ", id " << quoted(result.request_id());
  std::cout << '\n';
  if (!options.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.save_dir, ec);
    if (ec) {
      throw sonic::Error(sonic::StatusCode::InvalidArgument,
                         "cannot create '" + options.save_dir + "': " + ec.message());
    }
  }
  for (const auto& output : result.outputs()) {
    print_output(output);
    if (!options.save_dir.empty()) save_output(options.save_dir, output);
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", latency.count());
  std::cout << "latency: " << text << " ms\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return sonic::tools::CommandLine::run("sonic-infer", [&] { return run(parse_args(argc, argv)); });
}
