// A Triton model repository on disk, loaded through a backend this test registers ("scale": its
// model file holds a number k, and the model multiplies its FP32 input by k): directory layout,
// versions and their policy, completion of a config from the model, the executor's states and
// loads (RepositoryIndex, load, unload, on first request), and a broken model failing alone.
// Over 500 lines: one case per rule of the repository's layout, all with the same backend.
#include "sonic/repository/repository.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

using namespace sonic;
namespace fs = std::filesystem;
using repository::LoadedModel;
using repository::ModelConfig;

namespace {

std::atomic<int> loads{0};
std::mutex last_input_mutex;
Shape last_input_shape;  // what the scale model was last given, under last_input_mutex

// The "scale" backend: completes a config with no tensors as INPUT0 -> OUTPUT0, FP32, [-1].
Result<LoadedModel> load_scale(const ModelConfig& given, const std::string& file,
                               const repository::LoadContext& /*context*/) {
  loads.fetch_add(1);
  std::ifstream model_file(file);
  float k = 0;
  if (!(model_file >> k)) return Error(StatusCode::InvalidArgument, "no number in the model file");
  LoadedModel loaded;
  loaded.config = given;
  auto tensor = [](const char* name) {
    repository::TensorConfig t;
    t.name = name;
    t.data_type = DataType::Fp32;
    t.dims = {-1};
    return t;
  };
  if (loaded.config.inputs.empty()) loaded.config.inputs.push_back(tensor("INPUT0"));
  if (loaded.config.outputs.empty()) loaded.config.outputs.push_back(tensor("OUTPUT0"));
  loaded.compute = [k](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
    const Tensor& in = request.find_input("INPUT0")->tensor;
    {
      std::lock_guard<std::mutex> lock(last_input_mutex);
      last_input_shape = in.shape();
    }
    std::vector<float> out;
    for (float v : in.as<float>()) out.push_back(v * k);
    return std::vector<NamedTensor>{
        {"OUTPUT0", Tensor::from_vector(std::move(out), in.shape()), {}}};
  };
  return loaded;
}

const bool registered = [] {
  repository::register_backend({"scale", {"scale_platform"}, "model.scale", load_scale});
  return true;
}();

// A scratch repository for one test case, emptied first.
class Scratch {
 public:
  explicit Scratch(const std::string& name) : root_(fs::path(SONIC_TEST_SCRATCH) / name) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::path file = root_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

std::vector<float> run(CpuExecutor& executor, const std::string& model, std::vector<float> in) {
  auto result = executor.infer(InferRequest(model).input(
      "INPUT0", Tensor::from_vector(in, {static_cast<std::int64_t>(in.size())})));
  REQUIRE_MESSAGE(result, result.error().message());
  auto out = result->output("OUTPUT0").as<float>();
  return std::vector<float>(out.begin(), out.end());
}

}  // namespace

TEST_CASE("model directories are the models; files and hidden directories are not") {
  Scratch repo("names");
  repo.write("b/1/model.scale", "2");
  repo.write("a/config.pbtxt", "");
  repo.write(".hidden/1/model.scale", "1");
  repo.write("README", "not a model");
  repository::Repository repository({repo.root()});
  CHECK(repository.model_names() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("the highest version its policy selects is served") {
  Scratch repo("versions");
  for (const char* v : {"1", "2", "10"}) repo.write(std::string("m/") + v + "/model.scale", v);
  repo.write("m/notes/model.scale", "99");  // not a version: its name is not a number
  repository::Repository repository({repo.root()});
  auto latest = repository.load("m");
  REQUIRE_MESSAGE(latest, latest.error().message());
  CHECK(latest->version == "10");  // numerically highest, not "2"

  repo.write("m/config.pbtxt",
             "platform: \"scale_platform\" version_policy { specific { versions: [1, 2] } }");
  auto specific = repository.load("m");
  REQUIRE(specific);
  CHECK(specific->version == "2");

  repo.write("m/config.pbtxt", "version_policy { specific { versions: [7] } }");
  auto none = repository.load("m");
  REQUIRE_FALSE(none);
  CHECK(none.error().message().find("no version directory") != std::string::npos);
}

TEST_CASE("several versions served at once, as their policy selects, each answering for itself") {
  Scratch repo("several_versions");
  for (const char* v : {"1", "2", "10"}) repo.write(std::string("m/") + v + "/model.scale", v);
  auto executor = std::make_shared<CpuExecutor>(1);
  executor->set_source(std::make_shared<repository::Repository>(std::vector{repo.root()}), false);
  auto scaled = [&](const std::string& version) {
    return executor->infer(InferRequest("m", version)
                               .input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1})));
  };
  auto versions_in_index = [&] {
    std::vector<std::string> versions;
    for (const auto& entry : executor->repository_index()) {
      if (entry.name == "m")
        versions.push_back(entry.version + ":" + std::string(model_state_name(entry.state)));
    }
    return versions;
  };

  repo.write("m/config.pbtxt", "version_policy { all {} }");
  REQUIRE(executor->load_model("m"));
  // One index entry per version, as Triton lists them.
  CHECK(versions_in_index() == std::vector<std::string>{"1:READY", "2:READY", "10:READY"});
  for (const char* v : {"1", "2", "10"}) {
    auto result = scaled(v);
    REQUIRE_MESSAGE(result, result.error().message());
    CHECK(result->model_version() == v);
    CHECK(result->output("OUTPUT0").as<float>()[0] == std::stof(v));
  }
  auto latest = scaled("");  // no version named: the highest, numerically
  REQUIRE(latest);
  CHECK(latest->model_version() == "10");
  auto missing = scaled("5");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == StatusCode::NotFound);
  CHECK(missing.error().message() ==
        "Request for unknown model: 'm' version 5 is not found (versions here: 1, 2, 10)");
  auto metadata = executor->metadata("m");
  REQUIRE(metadata);
  CHECK(metadata->versions == std::vector<std::string>{"1", "2", "10"});
  std::size_t statistics = 0;
  for (const auto& s : executor->all_statistics()) statistics += s.name == "m" ? 1 : 0;
  CHECK(statistics == 3);
  CHECK(executor->statistics("m", "2")->inference_count == 1);

  repo.write("m/config.pbtxt", "version_policy { latest { num_versions: 2 } }");
  REQUIRE(executor->load_model("m"));
  CHECK(versions_in_index() == std::vector<std::string>{"2:READY", "10:READY"});
  CHECK_FALSE(scaled("1"));

  REQUIRE(executor->unload_model("m"));
  CHECK(versions_in_index() == std::vector<std::string>{":UNAVAILABLE"});
  CHECK(scaled("2").error().code() == StatusCode::Unavailable);

  // A version that cannot load keeps the model out of service whole, saying which.
  repo.write("m/config.pbtxt", "version_policy { all {} }");
  repo.write("m/2/model.scale", "not a number");
  auto broken = executor->load_model("m");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message().find("m/2/model.scale") != std::string::npos);
  CHECK_FALSE(scaled("10"));
}

TEST_CASE("registered models: a second version is added, a taken one refused") {
  auto executor = std::make_shared<CpuExecutor>(1);
  auto model = [](const std::string& version, float k) {
    Model m;
    m.name = "m";
    m.version = version;
    m.inputs = {{"INPUT0", DataType::Fp32, {-1}}};
    m.outputs = {{"OUTPUT0", DataType::Fp32, {-1}}};
    m.compute = [k](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
      std::vector<float> out;
      for (float v : request.find_input("INPUT0")->tensor.as<float>()) out.push_back(v * k);
      return std::vector<NamedTensor>{{"OUTPUT0", Tensor::from_vector(std::move(out), {1}), {}}};
    };
    return m;
  };
  executor->add_model(model("2", 2));
  executor->add_model(model("1", 1));
  CHECK_THROWS_AS(executor->add_model(model("2", 3)), Error);
  auto result = executor->infer(
      InferRequest("m").input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1})));
  REQUIRE(result);
  CHECK(result->output("OUTPUT0").as<float>()[0] == 2.0f);
  CHECK(executor->has_model("m", "1"));
  REQUIRE(executor->unload_model("m"));
  CHECK_FALSE(executor->has_model("m", "1"));
  CHECK_FALSE(executor->has_model("m", "2"));
  REQUIRE(executor->load_model("m"));
  CHECK(executor->has_model("m", "1"));
}

TEST_CASE("a config left out, or partial, is completed by the backend") {
  Scratch repo("complete");
  repo.write("m/1/model.scale", "3");
  repository::Repository repository({repo.root()});
  auto model = repository.load("m");
  REQUIRE_MESSAGE(model, model.error().message());
  CHECK(model->name == "m");
  CHECK(model->platform == "scale_platform");
  REQUIRE(model->inputs.size() == 1);
  CHECK(model->inputs[0].name == "INPUT0");
  CHECK_FALSE(model->config.empty());
  auto executor = CpuExecutor::with_models({*model}, 1);
  CHECK(run(*executor, "m", {1, 2}) == std::vector<float>{3, 6});
}

TEST_CASE("mistakes name the file and what to do") {
  Scratch repo("mistakes");
  repo.write("wrong_name/config.pbtxt", "name: \"other\"");
  repo.write("wrong_name/1/model.scale", "1");
  repo.write("no_backend/config.pbtxt", "platform: \"tensorrt_plan\"");
  repo.write("no_backend/1/model.plan", "");
  repo.write("onnx/config.pbtxt", "platform: \"onnxruntime_onnx\"");
  repo.write("onnx/1/model.onnx", "");
  repo.write("no_file/config.pbtxt", "backend: \"scale\"");
  repo.write("no_file/1/other.bin", "");
  repo.write("syntax/config.pbtxt", "max_batch_size: 8\ninput [ { name: \"x\" ]\n");
  repo.write("syntax/1/model.scale", "1");
  repository::Repository repository({repo.root()});

  auto wrong_name = repository.load("wrong_name");
  REQUIRE_FALSE(wrong_name);
  CHECK(wrong_name.error().message().find("differs from its directory's name") !=
        std::string::npos);
  auto no_backend = repository.load("no_backend");
  REQUIRE_FALSE(no_backend);
  CHECK(no_backend.error().code() == StatusCode::NotFound);
  // The platform names Triton's backend (tensorrt), which this program lacks.
  CHECK(no_backend.error().message().find("no backend 'tensorrt'") != std::string::npos);
  auto onnx = repository.load("onnx");
  REQUIRE_FALSE(onnx);
  CHECK(onnx.error().message().find("link sonic::onnx") != std::string::npos);
  auto no_file = repository.load("no_file");
  REQUIRE_FALSE(no_file);
  CHECK(no_file.error().message().find("model.scale does not exist") != std::string::npos);
  auto syntax = repository.load("syntax");
  REQUIRE_FALSE(syntax);
  CHECK(syntax.error().message().find("syntax/config.pbtxt:2:") != std::string::npos);
  CHECK_FALSE(repository.load("missing"));
  CHECK(repository.load("missing").error().code() == StatusCode::NotFound);
  CHECK(repository.load("../mistakes").error().code() == StatusCode::NotFound);
}

TEST_CASE("a model in two repositories is an error, as in Triton") {
  Scratch a("twice_a"), b("twice_b");
  a.write("m/1/model.scale", "1");
  b.write("m/1/model.scale", "2");
  repository::Repository repository({a.root(), b.root()});
  auto model = repository.load("m");
  REQUIRE_FALSE(model);
  CHECK(model.error().message().find("two repositories") != std::string::npos);
}

TEST_CASE("batched models refuse a batch above max_batch_size with Triton's words") {
  Scratch repo("batch");
  repo.write("m/config.pbtxt",
             "max_batch_size: 2 input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [1] }"
             "output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [1] }");
  repo.write("m/1/model.scale", "2");
  auto model = repository::Repository({repo.root()}).load("m");
  REQUIRE_MESSAGE(model, model.error().message());
  CHECK(model->inputs[0].shape == Shape{-1, 1});
  auto executor = CpuExecutor::with_models({*model}, 1);
  auto ok = executor->infer(
      InferRequest("m").input("INPUT0", Tensor::from_vector(std::vector<float>{1, 2}, {2, 1})));
  CHECK(ok);
  auto too_big = executor->infer(
      InferRequest("m").input("INPUT0", Tensor::from_vector(std::vector<float>{1, 2, 3}, {3, 1})));
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().message() == "inference request batch-size must be <= 2 for 'm'");
}

TEST_CASE("optional inputs may be left out; missing required ones get Triton's words") {
  Scratch repo("optional");
  const std::string output = "output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [-1] }";
  repo.write("opt/config.pbtxt",
             "input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [-1] }"
             "input { name: \"INPUT1\" data_type: TYPE_FP32 dims: [-1] optional: true }" +
                 output);
  repo.write("opt/1/model.scale", "3");
  repo.write("req/config.pbtxt",
             "input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [-1] }"
             "input { name: \"INPUT1\" data_type: TYPE_FP32 dims: [-1] }" +
                 output);
  repo.write("req/1/model.scale", "3");
  repository::Repository repository({repo.root()});
  auto optional = repository.load("opt");
  auto required = repository.load("req");
  REQUIRE_MESSAGE(optional, optional.error().message());
  REQUIRE_MESSAGE(required, required.error().message());
  CHECK(optional->optional_inputs == std::vector<std::string>{"INPUT1"});
  auto executor = CpuExecutor::with_models({*optional, *required}, 1);
  auto x = Tensor::from_vector(std::vector<float>{1, 2}, {2});

  // Left out, the optional input never reaches the model.
  auto without = executor->infer(InferRequest("opt").input("INPUT0", x));
  REQUIRE_MESSAGE(without, without.error().message());
  CHECK(without->output("OUTPUT0").as<float>()[1] == 6.0f);

  // The messages are Triton's (its server's input validation tests quote them).
  auto only_optional = executor->infer(InferRequest("opt").input("INPUT1", x));
  REQUIRE_FALSE(only_optional);
  CHECK(only_optional.error().code() == StatusCode::InvalidArgument);
  CHECK(only_optional.error().message() ==
        "expected number of inputs between 1 and 2 but got 1 inputs for model 'opt'. Got "
        "input(s) ['INPUT1'], but missing required input(s) ['INPUT0']. Please provide all "
        "required input(s).");
  auto none = executor->infer(InferRequest("req"));
  REQUIRE_FALSE(none);
  CHECK(none.error().message() ==
        "expected 2 inputs but got 0 inputs for model 'req'. Got input(s) [], but missing "
        "required input(s) ['INPUT0','INPUT1']. Please provide all required input(s).");
}

TEST_CASE("an executor over a repository: states, load, unload, and one broken model") {
  Scratch repo("executor");
  repo.write("good/1/model.scale", "2");
  repo.write("broken/1/model.scale", "not a number");
  auto executor = std::make_shared<CpuExecutor>(1);
  auto source = std::make_shared<repository::Repository>(std::vector<std::string>{repo.root()});
  executor->set_source(source, false);

  auto index = executor->repository_index();
  REQUIRE(index.size() == 2);
  CHECK(index[0].state == ModelState::Unavailable);
  CHECK(index[0].reason == "unloaded");
  // Not on demand: a request for a model not loaded fails.
  CHECK_FALSE(executor->infer(
      InferRequest("good").input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1}))));

  REQUIRE(executor->load_model("good"));
  auto broken = executor->load_model("broken");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message().find("no number in the model file") != std::string::npos);
  index = executor->repository_index();
  CHECK(index[0].name == "broken");
  CHECK(index[0].state == ModelState::Unavailable);
  CHECK(index[0].reason.find("no number") != std::string::npos);
  CHECK(index[1].state == ModelState::Ready);
  CHECK(index[1].version == "1");
  CHECK(run(*executor, "good", {5}) == std::vector<float>{10});

  // A reload reads the repository again: the new file's number is used.
  repo.write("good/1/model.scale", "3");
  REQUIRE(executor->load_model("good"));
  CHECK(run(*executor, "good", {5}) == std::vector<float>{15});

  REQUIRE(executor->unload_model("good"));
  auto unloaded = executor->infer(
      InferRequest("good").input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1})));
  REQUIRE_FALSE(unloaded);
  CHECK(unloaded.error().code() == StatusCode::Unavailable);
  CHECK(executor->unload_model("never_there").error().code() == StatusCode::NotFound);
}

TEST_CASE("on demand, the first requests load a model once, whatever their number") {
  Scratch repo("on_demand");
  repo.write("m/1/model.scale", "4");
  auto executor = repository::executor_from_repository({repo.root()}, 2);
  const int before = loads.load();
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      if (run(*executor, "m", {1}) == std::vector<float>{4}) right.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(right.load() == 8);
  CHECK(loads.load() - before == 1);
  // A model no repository has is still NOT_FOUND.
  auto missing = executor->infer(
      InferRequest("nope").input("INPUT0", Tensor::from_vector(std::vector<float>{1}, {1})));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == StatusCode::NotFound);
}

TEST_CASE("a configuration given with the load replaces the repository's, as in Triton") {
  Scratch repo("override");
  repo.write("m/config.pbtxt", "max_batch_size: 2");
  repo.write("m/1/model.scale", "2");
  repository::Repository repository({repo.root()});
  auto given = repository.load(
      "m", R"({"max_batch_size": 16, "input": [{"name": "INPUT0", "data_type": "TYPE_FP32",
               "dims": [1]}], "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32",
               "dims": [1]}]})");
  REQUIRE_MESSAGE(given, given.error().message());
  CHECK(given->max_batch_size == 16);
  auto on_disk = repository.load("m");
  REQUIRE(on_disk);
  CHECK(on_disk->max_batch_size == 2);  // the next load reads the repository again
  auto broken = repository.load("m", R"({"max_batch_size": "lots"})");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message().find("the configuration given for 'm'") != std::string::npos);
  CHECK(broken.error().message().find("max_batch_size") != std::string::npos);
}

TEST_CASE("reshape: clients use the config's dims, the model its own shape, bytes shared") {
  Scratch repo("reshape");
  repo.write(
      "m/config.pbtxt",
      "max_batch_size: 8"
      " input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [4] reshape { shape: [2, 2] } }"
      " output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [4] reshape { shape: [2, -1] } }");
  repo.write("m/1/model.scale", "3");
  auto model = repository::Repository({repo.root()}).load("m");
  REQUIRE_MESSAGE(model, model.error().message());
  CHECK(model->inputs[0].shape == Shape{-1, 4});  // what clients see
  auto executor = CpuExecutor::with_models({*model}, 1);
  auto result = executor->infer(InferRequest("m").input(
      "INPUT0", Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})));
  REQUIRE_MESSAGE(result, result.error().message());
  {
    std::lock_guard<std::mutex> lock(last_input_mutex);
    CHECK(last_input_shape == Shape{2, 2, 2});  // what the model got
  }
  const Tensor& out = result->output("OUTPUT0");
  CHECK(out.shape() == Shape{2, 4});
  CHECK(out.as<float>()[7] == 24);

  repo.write("m/config.pbtxt",
             "input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [4] reshape { shape: [3] } }"
             " output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [4] }");
  auto mismatch = repository::Repository({repo.root()}).load("m");
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().message().find("has different size for dims and reshape") !=
        std::string::npos);
}

TEST_CASE("Triton's config defaults: backend, platform, model file, instance groups") {
  // As core src/model_config_utils.cc completes a config on a host without GPUs.
  Scratch repo("triton_defaults");
  repo.write("by_platform/config.pbtxt", "platform: \"onnxruntime_onnx\"");
  repo.write("by_backend/config.pbtxt", "backend: \"pytorch\"");
  repo.write("by_file/1/model.onnx", "");
  repo.write("by_file/config.pbtxt",
             "instance_group [ { kind: KIND_CPU }, { count: 3 }, { name: \"g\" count: 0 } ]");
  repo.write("own_platform/config.pbtxt", "platform: \"scale_platform\"");
  repo.write("conflict/config.pbtxt", "platform: \"onnxruntime_onnx\" backend: \"pytorch\"");
  repo.write("unknown_platform/config.pbtxt", "platform: \"my_engine\"");
  repo.write("nothing/1/weights.bin", "");
  repo.write("gpu/config.pbtxt",
             "platform: \"onnxruntime_onnx\" instance_group [ { kind: KIND_GPU } ]");
  repository::Repository r({repo.root()});

  auto by_platform = r.config("by_platform").value();
  CHECK(by_platform.backend == "onnxruntime");
  CHECK(by_platform.default_model_filename == "model.onnx");
  // No instance_group: one group named after the model, on the CPU, of 2 instances for ONNX
  // Runtime (SetDefaultInstanceCount).
  REQUIRE(by_platform.instance_groups.size() == 1);
  CHECK(by_platform.instance_groups[0].name == "by_platform");
  CHECK(by_platform.instance_groups[0].kind == repository::InstanceGroup::Kind::Cpu);
  CHECK(by_platform.instance_groups[0].count == 2);
  CHECK(by_platform.version_policy.kind == repository::VersionPolicy::Kind::Latest);
  CHECK(by_platform.version_policy.latest_count == 1);

  auto by_backend = r.config("by_backend").value();
  CHECK(by_backend.platform == "pytorch_libtorch");
  CHECK(by_backend.default_model_filename == "model.pt");
  CHECK(by_backend.instance_groups.at(0).count == 1);  // 1 for the others

  // Neither given: the model file in the first version directory decides. Groups without a
  // name are "<model>_<index>"; without a count (or 0) they take the default.
  auto by_file = r.config("by_file").value();
  CHECK(by_file.platform == "onnxruntime_onnx");
  CHECK(by_file.backend == "onnxruntime");
  REQUIRE(by_file.instance_groups.size() == 3);
  CHECK(by_file.instance_groups[0].name == "by_file_0");
  CHECK(by_file.instance_groups[0].count == 2);
  CHECK(by_file.instance_groups[1].name == "by_file_1");
  CHECK(by_file.instance_groups[1].count == 3);
  CHECK(by_file.instance_groups[1].kind == repository::InstanceGroup::Kind::Cpu);  // KIND_AUTO
  CHECK(by_file.instance_groups[2].name == "g");
  CHECK(by_file.instance_groups[2].count == 2);

  // A platform of a backend this program registered.
  auto own = r.config("own_platform").value();
  CHECK(own.backend == "scale");
  CHECK(own.default_model_filename == "model.scale");

  // Triton's refusals, in its words.
  auto message = [&](const std::string& model) {
    auto config = r.config(model);
    REQUIRE_FALSE(config);
    CHECK(config.error().code() == StatusCode::InvalidArgument);
    return config.error().message();
  };
  CHECK(message("conflict")
            .find("unexpected 'platform' and 'backend' pair, "
                  "got:onnxruntime_onnx, pytorch") != std::string::npos);
  CHECK(message("unknown_platform")
            .find("unexpected platform type 'my_engine' for "
                  "unknown_platform") != std::string::npos);
  CHECK(message("nothing").find("Could not determine backend for model 'nothing'") !=
        std::string::npos);
  CHECK(message("gpu").find("instance group gpu_0 of model gpu has kind KIND_GPU but server does "
                            "not support GPUs") != std::string::npos);
}
