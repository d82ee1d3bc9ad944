// ONNX's own conformance suite (Debian's libonnx-testdata: each test a model.onnx and data sets
// of input_N.pb and output_N.pb) through sonic's ONNX backend, both ways a model runs:
//   - as sonic-server runs it: a sonic::Server over a repository of the suite's models, asked
//     over gRPC by a sonic::Client;
//   - as a client's fallback runs it: a CpuExecutor over the same repository, in-process.
// Every output must match the suite's within rtol 1e-3 and atol 1e-4 (exactly for integers,
// booleans and strings), and the two ways must give the same bytes. Tests listed in the
// exclusions file, each with its reason, are expected to fail; one that passes must leave the list.
//
//   sonic-onnx-conformance DATA_DIR SCRATCH_DIR EXCLUSIONS [NAME_FILTER]
//
// Prints the count per group (node, pytorch-converted, pytorch-operator, simple) and every
// unexpected result; exits 0 when there is none.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sonic/executor.hpp"
#include "sonic/repository/repository.hpp"
#include "sonic/server.hpp"
#include "sonic/sonic.hpp"
#include "tensor_proto.hpp"

namespace fs = std::filesystem;
using namespace sonic;

namespace {

struct DataSet {
  std::vector<NamedTensor> inputs;
  std::vector<NamedTensor> outputs;
};

struct Test {
  std::string group;
  std::string name;
  fs::path directory;
  std::vector<DataSet> data_sets;
  std::string unreadable;  ///< why its data cannot be read, if so
};

Result<DataSet> read_data_set(const fs::path& directory) {
  DataSet set;
  for (const auto& [prefix, list] : {std::pair{"input_", &set.inputs}, {"output_", &set.outputs}}) {
    for (int i = 0;; ++i) {
      const fs::path file = directory / (prefix + std::to_string(i) + ".pb");
      if (!fs::exists(file)) break;
      auto tensor = conformance::read_tensor_proto_file(file.string());
      if (!tensor) {
        return Error(tensor.error().code(),
                     file.filename().string() + ": " + tensor.error().message());
      }
      list->push_back(std::move(*tensor));
    }
  }
  return set;
}

std::vector<Test> find_tests(const fs::path& root, const std::string& filter) {
  std::vector<Test> tests;
  for (const auto& group : fs::directory_iterator(root)) {
    if (!group.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(group.path())) {
      if (!fs::exists(entry.path() / "model.onnx")) continue;
      Test test{
          group.path().filename().string(), entry.path().filename().string(), entry.path(), {}, {}};
      if (!filter.empty() && test.name.find(filter) == std::string::npos) continue;
      std::vector<fs::path> sets;
      for (const auto& set : fs::directory_iterator(entry.path())) {
        if (set.is_directory()) sets.push_back(set.path());
      }
      std::sort(sets.begin(), sets.end());
      for (const auto& set : sets) {
        auto data = read_data_set(set);
        if (!data) {
          test.unreadable = data.error().message();
          break;
        }
        test.data_sets.push_back(std::move(*data));
      }
      tests.push_back(std::move(test));
    }
  }
  std::sort(tests.begin(), tests.end(), [](const Test& a, const Test& b) {
    return std::tie(a.group, a.name) < std::tie(b.group, b.name);
  });
  return tests;
}

// The model's config: no batching, and the tensors the data names, of their ranks (every
// dimension variable: data sets of one test may differ in size), their datatypes completed from
// the graph (the suite's data stores bfloat16 as UINT16). A scalar is served as Triton serves
// one, with dims [1] and an empty reshape. A suite tensor without a name leaves the list for the
// graph to complete.
std::string config_for(const Test& test) {
  std::ostringstream config;
  config << "name: \"" << test.name << "\"\nbackend: \"onnxruntime\"\nmax_batch_size: 0\n"
         << "instance_group [ { count: 1 kind: KIND_CPU } ]\n";
  if (test.data_sets.empty()) return config.str();
  const auto& first = test.data_sets.front();
  for (const auto& [kind, list] : {std::pair{"input", &first.inputs}, {"output", &first.outputs}}) {
    const bool named = std::all_of(list->begin(), list->end(),
                                   [](const NamedTensor& t) { return !t.name.empty(); });
    if (!named) continue;
    for (const auto& t : *list) {
      config << kind << " { name: \"" << t.name << "\" dims: [";
      for (std::size_t d = 0; d < t.tensor.shape().size(); ++d) config << (d ? ", -1" : "-1");
      config << (t.tensor.shape().empty() ? "1] reshape { shape: [] } }\n" : "] }\n");
    }
  }
  return config.str();
}

// Writes REPOSITORY/<test>/config.pbtxt, with version 1 a link to the test's directory, where
// model.onnx and any external data file it names are.
void add_to_repository(const fs::path& repository, const Test& test) {
  const fs::path model = repository / test.name;
  fs::create_directories(model);
  std::ofstream(model / "config.pbtxt") << config_for(test);
  if (!fs::exists(model / "1")) fs::create_directory_symlink(test.directory, model / "1");
}

double element(const Tensor& t, std::size_t i) {
  switch (t.dtype()) {
    case DataType::Fp32: return t.as<float>()[i];
    case DataType::Fp64: return t.as<double>()[i];
    case DataType::Bf16: return t.as<BFloat16>()[i].to_float();
    case DataType::Fp16: {
      const std::uint16_t h = t.as<Float16>()[i].bits;
      const int exponent = (h >> 10) & 0x1f;
      const int mantissa = h & 0x3ff;
      double value = exponent == 0    ? std::ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : std::ldexp(mantissa | 0x400, exponent - 25);
      return (h & 0x8000) ? -value : value;
    }
    default: return 0;
  }
}

// Empty when `got` is `want` within the suite's tolerances; else how it differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return std::string("datatype ") + to_string(got.dtype()) + ", expected " +
           to_string(want.dtype());
  }
  if (got.shape() != want.shape()) {
    return "shape " + to_string(got.shape()) + ", expected " + to_string(want.shape());
  }
  const DataType type = got.dtype();
  if (type != DataType::Fp32 && type != DataType::Fp64 && type != DataType::Fp16 &&
      type != DataType::Bf16) {
    const bool same = got.byte_size() == want.byte_size() &&
                      (got.byte_size() == 0 ||  // an empty tensor may have no address
                       std::memcmp(got.data(), want.data(), got.byte_size()) == 0);
    return same ? "" : "values differ";
  }
  const std::size_t count = got.byte_size() / element_size(type);
  for (std::size_t i = 0; i < count; ++i) {
    const double a = element(got, i);
    const double b = element(want, i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // infinities
    if (!(std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(b))) {
      std::ostringstream why;
      why << "element " << i << " is " << a << ", expected " << b;
      return why.str();
    }
  }
  return "";
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         (a.byte_size() == 0 || std::memcmp(a.data(), b.data(), a.byte_size()) == 0);
}

// The suite's tensor as the model's config takes it: a scalar as [1]; UINT16 data as the
// BF16 the graph declares (the suite's numpy stores bfloat16 so).
Tensor as_served(const Tensor& tensor, std::optional<DataType> declared) {
  DataType type = tensor.dtype();
  if (declared && *declared == DataType::Bf16 && type == DataType::UInt16) type = DataType::Bf16;
  Shape shape = tensor.shape().empty() ? Shape{1} : tensor.shape();
  return Tensor::copy_bytes(type, std::move(shape), tensor.data(), tensor.byte_size());
}

struct Signature {
  std::vector<std::string> names;
  std::vector<DataType> types;
};

InferRequest request_for(const Test& test, const DataSet& set, const Signature& inputs) {
  InferRequest request(test.name);
  for (std::size_t i = 0; i < set.inputs.size(); ++i) {
    const auto& name = set.inputs[i].name.empty() && i < inputs.names.size() ? inputs.names[i]
                                                                             : set.inputs[i].name;
    std::optional<DataType> declared;
    for (std::size_t k = 0; k < inputs.names.size(); ++k) {
      if (inputs.names[k] == name) declared = inputs.types[k];
    }
    request.input(name, as_served(set.inputs[i].tensor, declared));
  }
  return request;
}

// The output of `result` that data set's output `index` is: by name, else by position.
const Tensor* output_of(const InferResult& result, const DataSet& set, std::size_t index,
                        const Signature& outputs) {
  const std::string& name = set.outputs[index].name.empty() && index < outputs.names.size()
                                ? outputs.names[index]
                                : set.outputs[index].name;
  for (const auto& out : result.outputs()) {
    if (out.name == name) return &out.tensor;
  }
  return nullptr;
}

// Empty when both ways answer every data set right and alike; else the first difference.
std::string run_test(const Test& test, CpuExecutor& fallback, CpuExecutor& served, Client& client) {
  if (!test.unreadable.empty()) return "its data: " + test.unreadable;
  if (auto loaded = fallback.load_model(test.name); !loaded) {
    return "load: " + loaded.error().message();
  }
  if (auto loaded = served.load_model(test.name); !loaded) {
    return "server load: " + loaded.error().message();
  }
  struct Unload {
    CpuExecutor& a;
    CpuExecutor& b;
    std::string name;
    ~Unload() {
      (void)a.unload_model(name);
      (void)b.unload_model(name);
    }
  } unload{fallback, served, test.name};
  Signature inputs, outputs;
  if (auto model = fallback.model(test.name)) {
    for (const auto& [from, to] :
         {std::pair{&(*model)->inputs, &inputs}, {&(*model)->outputs, &outputs}}) {
      for (const auto& t : *from) {
        to->names.push_back(t.name);
        to->types.push_back(t.dtype);
      }
    }
  }
  for (std::size_t s = 0; s < test.data_sets.size(); ++s) {
    const auto& set = test.data_sets[s];
    const std::string where = "data set " + std::to_string(s) + ": ";
    auto in_process = fallback.infer(request_for(test, set, inputs));
    if (!in_process) return where + in_process.error().message();
    std::optional<InferResult> over_grpc;
    try {
      over_grpc = client.infer(request_for(test, set, inputs));
    } catch (const Error& e) {
      return where + "server: " + e.message();
    }
    for (std::size_t i = 0; i < set.outputs.size(); ++i) {
      const Tensor* got = output_of(*in_process, set, i, outputs);
      const Tensor* from_server = output_of(*over_grpc, set, i, outputs);
      if (!got || !from_server) return where + "output " + std::to_string(i) + " missing";
      std::optional<DataType> declared = got->dtype();
      Tensor want = as_served(set.outputs[i].tensor, declared);
      if (auto why = compare(*got, want); !why.empty()) {
        return where + "output '" + set.outputs[i].name + "': " + why;
      }
      if (!same_bytes(*got, *from_server)) {
        return where + "output '" + set.outputs[i].name + "': the server's answer differs";
      }
    }
  }
  return "";
}

std::map<std::string, std::string> read_exclusions(const std::string& path) {
  std::map<std::string, std::string> excluded;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.find_first_of(" \t");
    const std::string name = line.substr(0, space);
    const auto reason = space == std::string::npos ? space : line.find_first_not_of(" \t", space);
    excluded[name] = reason == std::string::npos ? "" : line.substr(reason);
  }
  return excluded;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " DATA_DIR SCRATCH_DIR EXCLUSIONS [NAME_FILTER]\n";
    return 2;
  }
  const fs::path data = argv[1];
  const fs::path scratch = argv[2];
  const auto excluded = read_exclusions(argv[3]);
  const std::string filter = argc > 4 ? argv[4] : "";
  const auto tests = find_tests(data, filter);
  if (tests.empty()) {
    std::cerr << "no tests under " << data << "\n";
    return 2;
  }
  const fs::path repository = scratch / "repository";
  fs::remove_all(repository);
  for (const auto& test : tests) add_to_repository(repository, test);

  auto source =
      std::make_shared<repository::Repository>(std::vector<std::string>{repository.string()});
  auto fallback = std::make_shared<CpuExecutor>(1);
  fallback->set_source(source, false);
  auto served = std::make_shared<CpuExecutor>(1);
  served->set_source(source, false);
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  Server server(served, options);
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));

  struct Count {
    int passed = 0, total = 0;
  };
  std::map<std::string, Count> groups;
  std::vector<std::string> unexpected;
  int passed = 0;
  for (const auto& test : tests) {
    const std::string failure = run_test(test, *fallback, *served, client);
    auto& count = groups[test.group];
    ++count.total;
    const bool is_excluded = excluded.count(test.name) > 0;
    if (failure.empty()) {
      ++count.passed;
      ++passed;
      if (is_excluded) unexpected.push_back(test.name + ": passes now; remove it from the list");
    } else if (!is_excluded) {
      unexpected.push_back(test.name + ": " + failure);
    }
  }
  server.stop();
  for (const auto& [group, count] : groups) {
    std::cout << group << ": " << count.passed << " of " << count.total << " pass\n";
  }
  std::cout << "all: " << passed << " of " << tests.size() << " pass (" << excluded.size()
            << " excluded, docs/models.md)\n";
  for (const auto& line : unexpected) std::cout << "UNEXPECTED " << line << "\n";
  return unexpected.empty() ? 0 : 1;
}
