#include "sonic/repository/repository.hpp"
#include "protocol/invalid.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ensemble.hpp"
#include "reshape.hpp"
#include "sequence_tensors.hpp"
#include "triton_defaults.hpp"

namespace sonic::repository {

namespace fs = std::filesystem;

namespace {

using protocol::invalid;

// No config or label file is near this; a bigger file is not one (and is not read into
// memory).
constexpr std::uintmax_t kMaxTextFileBytes = 4 << 20;

// A version directory's number: its name must be all digits, as Triton requires.
std::optional<std::int64_t> version_number(const std::string& name) {
  if (name.empty() || name.size() > 18 ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(name);
}

std::vector<std::int64_t> versions_in(const fs::path& model_directory) {
  std::vector<std::int64_t> versions;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(model_directory, error)) {
    if (!entry.is_directory(error)) continue;
    if (auto v = version_number(entry.path().filename().string())) versions.push_back(*v);
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

// The versions the policy serves, highest last.
std::vector<std::int64_t> selected(const VersionPolicy& policy, std::vector<std::int64_t> all) {
  switch (policy.kind) {
    case VersionPolicy::Kind::All: return all;
    case VersionPolicy::Kind::Latest: {
      std::size_t keep = std::min<std::size_t>(policy.latest_count, all.size());
      return std::vector<std::int64_t>(all.end() - static_cast<std::ptrdiff_t>(keep), all.end());
    }
    case VersionPolicy::Kind::Specific: {
      std::vector<std::int64_t> chosen;
      for (auto v : all) {
        if (std::find(policy.versions.begin(), policy.versions.end(), v) != policy.versions.end()) {
          chosen.push_back(v);
        }
      }
      return chosen;
    }
  }
  return {};
}

// A config or label file's text; `what` it is, for the error.
Result<std::string> read_text_file(const fs::path& file, const char* what) {
  std::error_code error;
  auto size = fs::file_size(file, error);
  if (error) return invalid(file.string() + ": cannot read: " + error.message());
  if (size > kMaxTextFileBytes) {
    return invalid(file.string() + ": " + std::to_string(size) + " bytes is not " + what);
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return invalid(file.string() + ": cannot read");
  return text.str();
}

// An output's labels (Triton's label_filename, core src/model.cc and label_provider.cc): a file
// of the model's directory, not outside it, one label per line.
Result<std::vector<std::string>> read_labels(const std::string& directory,
                                             const TensorConfig& output) {
  const fs::path file = fs::path(directory) / output.label_filename;
  std::error_code error;
  const fs::path inside = fs::weakly_canonical(file, error);
  const fs::path root = fs::weakly_canonical(directory, error);
  auto [end, ignored] = std::mismatch(root.begin(), root.end(), inside.begin(), inside.end());
  if (error || end != root.end()) {
    // Triton's words.
    return invalid("label file path '" + output.label_filename + "' for output '" + output.name +
                   "' is outside model directory");
  }
  auto text = read_text_file(file, "a label file");
  if (!text) return text.error();
  std::vector<std::string> labels;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) labels.push_back(std::move(line));
  return labels;
}

// The batch a request carries: every input's first dimension, the same for all, within
// 1..max_batch_size.
Result<void> check_batch(const std::string& model, std::int32_t max_batch_size,
                         const InferRequest& request) {
  std::int64_t batch = -1;
  for (const auto& input : request.inputs()) {
    const auto& shape = input.tensor.shape();
    if (shape.empty()) continue;
    if (batch >= 0 && shape.front() != batch) {
      return invalid("the inputs of a request for '" + model +
                     "' must share their first (batch) dimension; got " + std::to_string(batch) +
                     " and " + std::to_string(shape.front()));
    }
    batch = shape.front();
  }
  if (batch > max_batch_size || batch == 0) {
    // Triton's words for the same refusal.
    return invalid("inference request batch-size must be <= " + std::to_string(max_batch_size) +
                   " for '" + model + "'");
  }
  return {};
}

QueuePolicy queue_policy(const QueuePolicyConfig& config) {
  QueuePolicy policy;
  policy.delay_expired = config.delay_on_timeout;
  policy.default_timeout = std::chrono::microseconds(config.default_timeout_microseconds);
  policy.allow_timeout_override = config.allow_timeout_override;
  policy.max_queue_size = config.max_queue_size;
  return policy;
}

Shape metadata_shape(const TensorConfig& t, bool batched) {
  Shape shape;
  if (batched) shape.push_back(-1);
  shape.insert(shape.end(), t.dims.begin(), t.dims.end());
  return shape;
}

// The model's requests checked first for the batch they carry, when it batches.
void check_batches(Model& model) {
  if (model.max_batch_size <= 0) return;
  const std::string name = model.name;
  const std::int32_t max = model.max_batch_size;
  if (model.compute) {
    model.compute = [name, max, compute = std::move(model.compute)](
                        const InferRequest& request) -> Result<std::vector<NamedTensor>> {
      if (auto ok = check_batch(name, max, request); !ok) return ok.error();
      return compute(request);
    };
  }
  if (model.decoupled) {
    model.decoupled = [name, max, decoupled = std::move(model.decoupled)](
                          const InferRequest& request, const ResponseSink& respond) {
      if (auto ok = check_batch(name, max, request); !ok) return ok;
      return decoupled(request, respond);
    };
  }
}

// An ensemble's version: no file, its steps are models of `host`.
Result<Model> load_ensemble_version(const ModelConfig& config, const std::string& directory,
                                    const std::string& version,
                                    const std::shared_ptr<ModelHost>& host) {
  if (auto ok = check_model_config(config, directory + "/config.pbtxt"); !ok) return ok.error();
  auto model = load_ensemble(config, version, host);
  if (!model) return model.error();
  model->config = serialize_model_config(config);
  check_batches(*model);
  return model;
}

// One version of a model: its directory under the model's `directory`, read with its backend.
Result<Model> load_version(const std::string& name, const ModelConfig& config,
                           const std::string& directory, const std::string& version,
                           const std::shared_ptr<ModelHost>& host) {
  if (config.platform == "ensemble") return load_ensemble_version(config, directory, version, host);
  const fs::path version_directory = fs::path(directory) / version;
  auto backend = find_backend(config, version_directory.string());
  if (!backend) {
    return Error(backend.error().code(), directory + ": " + backend.error().message());
  }
  const std::string file_name = config.default_model_filename.empty()
                                    ? backend->default_model_filename
                                    : config.default_model_filename;
  const fs::path model_file = version_directory / file_name;
  std::error_code error;
  if (!fs::exists(model_file, error)) {
    return invalid(model_file.string() + " does not exist (the " + backend->name +
                   " backend reads " + file_name + " in each version directory)");
  }
  const std::string origin = directory + "/config.pbtxt";
  // The backend loads and checks the model in its own shapes; clients use the config's dims.
  ModelConfig for_backend = config;
  Reshapes reshapes = take_reshapes(for_backend);
  // A stateful model also takes the sequence batcher's control and state inputs and gives its
  // state outputs: the backend sees them (unless it completes the lists from the model file),
  // clients do not.
  SequenceTensors sequence;
  if (config.sequence_batching) {
    sequence = sequence_tensors(*config.sequence_batching);
    if (auto ok = check_not_listed(config, sequence, origin); !ok) return ok.error();
    if (auto ok = check_sequence_batching(config, origin); !ok) return ok.error();
    auto add = [](std::vector<TensorConfig>& list, const std::vector<TensorConfig>& more) {
      if (!list.empty()) list.insert(list.end(), more.begin(), more.end());
    };
    add(for_backend.inputs, sequence.inputs);
    add(for_backend.outputs, sequence.outputs);
  }
  auto loaded =
      backend->load(for_backend, model_file.string(), LoadContext{name, version, directory, host});
  if (!loaded) {
    return Error(loaded.error().code(), model_file.string() + ": " + loaded.error().message());
  }
  ModelConfig& complete = loaded->config;
  restore_reshapes(complete, reshapes);
  add_completed_reshapes(complete, reshapes);
  remove_sequence_tensors(complete, sequence);
  if (complete.backend.empty()) complete.backend = backend->name;
  if (complete.platform.empty() && !backend->platforms.empty()) {
    complete.platform = backend->platforms.front();
  }
  if (auto ok = check_model_config(complete, origin); !ok) return ok.error();

  Model model;
  model.name = name;
  model.version = version;
  model.platform = complete.platform;
  model.max_batch_size = complete.max_batch_size;
  const bool batched = complete.max_batch_size > 0;
  for (const auto& t : complete.inputs) {
    model.inputs.push_back({t.name, *t.data_type, metadata_shape(t, batched)});
    if (t.optional) model.optional_inputs.push_back(t.name);
  }
  for (const auto& t : complete.outputs) {
    model.outputs.push_back({t.name, *t.data_type, metadata_shape(t, batched)});
  }
  for (const auto& t : complete.outputs) {
    if (t.label_filename.empty()) continue;
    auto labels = read_labels(directory, t);
    if (!labels) return labels.error();
    model.labels[t.name] = std::move(*labels);
  }
  model.config = serialize_model_config(complete);
  model.instances = complete.instance_count();
  if (complete.dynamic_batching && batched) {
    sonic::DynamicBatching batching;
    for (auto size : complete.dynamic_batching->preferred_batch_sizes) {
      batching.preferred_batch_sizes.push_back(size);
    }
    const auto& configured = *complete.dynamic_batching;
    batching.max_queue_delay = std::chrono::microseconds(configured.max_queue_delay_microseconds);
    batching.priority_levels = configured.priority_levels;
    batching.default_priority_level = configured.default_priority_level;
    batching.default_queue_policy = queue_policy(configured.default_queue_policy);
    for (const auto& [level, policy] : configured.priority_queue_policy) {
      batching.priority_queue_policy[level] = queue_policy(policy);
    }
    model.dynamic_batching = std::move(batching);
  }
  if (complete.sequence_batching) {
    auto batching = executor_sequence_batching(*complete.sequence_batching, directory);
    if (!batching) return batching.error();
    model.sequence_batching = std::move(*batching);
  }
  if (loaded->decoupled) {
    // Its responses go through infer_responses() (a stream), each as the model gives it.
    if (!reshapes.empty()) {
      return invalid(origin + ": reshape is not supported for a decoupled model (" + name +
                     " answers through a stream)");
    }
    model.decoupled = std::move(loaded->decoupled);
  } else {
    // A batch's requests as they came, when the model takes them so (and reshapes nothing, which
    // apply_reshapes does per request).
    if (reshapes.empty()) model.compute_batch = std::move(loaded->compute_batch);
    model.compute = apply_reshapes(std::move(loaded->compute), std::move(reshapes), batched);
  }
  check_batches(model);
  return model;
}

}  // namespace

Repository::Repository(std::vector<std::string> roots) : roots_(std::move(roots)) {}

std::vector<std::string> Repository::model_names() const {
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& own : own_directories_) names.push_back(own.first);
  }
  std::error_code error;
  for (const auto& root : roots_) {
    for (const auto& entry : fs::directory_iterator(root, error)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_directory(error) || name.empty() || name[0] == '.') continue;
      names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<std::string> Repository::model_directory(const std::string& name) const {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) {
    return Error(StatusCode::NotFound, "'" + name + "' is not a model name");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto own = own_directories_.find(name); own != own_directories_.end()) {
      return own->second.path;
    }
  }
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& root : roots_) {
    fs::path directory = fs::path(root) / name;
    if (fs::is_directory(directory, error)) found.push_back(directory.string());
  }
  if (found.empty()) {
    std::string roots;
    for (const auto& root : roots_) roots += (roots.empty() ? "" : ", ") + root;
    return Error(StatusCode::NotFound, "no model '" + name + "' in " + roots);
  }
  if (found.size() > 1) {
    return invalid("model '" + name + "' is in two repositories (" + found[0] + ", " + found[1] +
                   "): a name must be in one only");
  }
  return found.front();
}

Result<ModelConfig> Repository::config(const std::string& name,
                                       const std::string& config_json) const {
  auto directory = model_directory(name);
  if (!directory) return directory.error();
  const fs::path file = fs::path(*directory) / "config.pbtxt";
  ModelConfig config;
  std::error_code error;
  std::string given = config_json;
  if (given.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto own = own_directories_.find(name); own != own_directories_.end()) {
      given = own->second.config_json;
    }
  }
  if (!given.empty()) {
    auto parsed = parse_model_config_json(given, "the configuration given for '" + name + "'");
    if (!parsed) return parsed.error();
    config = std::move(*parsed);
  } else if (fs::exists(file, error)) {
    auto text = read_text_file(file, "a config");
    if (!text) return text.error();
    auto parsed = parse_model_config(*text, file.string());
    if (!parsed) return parsed.error();
    config = std::move(*parsed);
  }
  if (config.name.empty()) config.name = name;
  if (config.name != name) {
    return invalid(file.string() + ": name \"" + config.name +
                   "\" differs from its directory's name '" + name + "' (they must be the same)");
  }
  if (auto ok = apply_triton_defaults(config, *directory); !ok) {
    return invalid(file.string() + ": " + ok.error().message());
  }
  return config;
}

Result<void> Repository::poll(const std::string& name, const std::string& config_json) const {
  auto config = this->config(name, config_json);
  if (!config) return config.error();
  return {};
}

Result<ModelSource::ModelDirectory> Repository::set_model_directory(
    const std::string& name, ModelDirectory directory) const {
  std::lock_guard<std::mutex> lock(mutex_);
  ModelDirectory before;
  if (auto own = own_directories_.find(name); own != own_directories_.end()) {
    before = std::move(own->second);
    own_directories_.erase(own);
  }
  if (!directory.path.empty()) own_directories_[name] = std::move(directory);
  return before;
}

Result<Model> Repository::load(const std::string& name, const std::string& config_json) const {
  auto versions = load_selected(name, config_json, false, nullptr);
  if (!versions) return versions.error();
  return std::move(versions->back());
}

Result<std::vector<Model>> Repository::load_versions(const std::string& name,
                                                     const std::string& config_json) const {
  return load_selected(name, config_json, true, nullptr);
}

Result<std::vector<Model>> Repository::load_versions_hosted(
    const std::string& name, const std::string& config_json,
    const std::shared_ptr<ModelHost>& host) const {
  return load_selected(name, config_json, true, host);
}

Result<std::vector<Model>> Repository::load_selected(const std::string& name,
                                                     const std::string& config_json,
                                                     bool every_version,
                                                     const std::shared_ptr<ModelHost>& host) const {
  auto directory = model_directory(name);
  if (!directory) return directory.error();
  auto config = this->config(name, config_json);
  if (!config) return config.error();
  if (config->platform == "ensemble") {
    auto acyclic = check_no_ensemble_cycle(
        *config, [this](const std::string& other) { return this->config(other); });
    if (!acyclic) return acyclic.error();
  }
  auto versions = selected(config->version_policy, versions_in(*directory));
  if (versions.empty()) {
    return invalid(*directory +
                   ": no version directory its version_policy serves (a numbered "
                   "directory, such as 1/, holding the model file)");
  }
  if (!every_version) versions.erase(versions.begin(), versions.end() - 1);
  std::vector<Model> models;
  for (auto version : versions) {
    auto model = load_version(name, *config, *directory, std::to_string(version), host);
    if (!model) return model.error();
    models.push_back(std::move(*model));
  }
  return models;
}

std::shared_ptr<CpuExecutor> executor_from_repository(std::vector<std::string> roots,
                                                      std::size_t threads) {
  return executor_from_repository(std::move(roots), CpuExecutorOptions{threads, {}});
}

std::shared_ptr<CpuExecutor> executor_from_repository(std::vector<std::string> roots,
                                                      CpuExecutorOptions options) {
  auto executor = std::make_shared<CpuExecutor>(std::move(options));
  executor->set_source(std::make_shared<Repository>(std::move(roots)), true);
  return executor;
}

}  // namespace sonic::repository
