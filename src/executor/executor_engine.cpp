// sonic — CpuExecutor's engine, its registry: models and their versions, lookups, metadata,
// statistics. Loads from a source are in model_loading.cpp, requests in infer_paths.cpp.
#include "executor/executor_engine.hpp"

#include <algorithm>
#include <utility>

#include "executor/request_checks.hpp"
#include "executor/response_parameters.hpp"
#include "protocol/names.hpp"

namespace sonic::detail {

void ExecutorEngine::add_model(Model model) {
  if (auto ok = check_functions(model); !ok) throw ok.error();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(model.name);
  if (it == models_.end()) {
    std::string name = model.name;  // the entry takes the model
    models_[name] = {make_entry(std::move(model), false)};
    return;
  }
  for (const auto& entry : it->second) {
    if (entry->from_source || entry->model.version == model.version) {
      throw Error(StatusCode::AlreadyExists, "model '" + model.name + "' version '" +
                                                 model.version + "' is already registered");
    }
  }
  add_version(it->second, make_entry(std::move(model), false));
}

namespace {

// A model out of service, and why: protocol::reason::kUnloaded when taken out on purpose.
ModelIndex unavailable(const std::string& name, const std::string& version,
                       const std::string& reason) {
  return {name, version, ModelState::Unavailable, reason, reason == protocol::reason::kUnloaded};
}

}  // namespace

std::vector<ModelIndex> ExecutorEngine::repository_index() const {
  std::map<std::string, std::vector<ModelIndex>> index;
  const std::string unloaded(protocol::reason::kUnloaded);
  for (const auto& name : source_names()) index[name] = {unavailable(name, "", unloaded)};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, why] : states_) index[name] = {unavailable(name, "", why)};
  for (const auto& name : loading_) {
    if (!models_.count(name)) index[name] = {{name, "", ModelState::Loading, "", false}};
  }
  for (const auto& [name, versions] : models_) {
    auto& entries = index[name];
    entries.clear();
    for (const auto& entry : versions) {
      if (!entry->loaded.load()) {
        entries.push_back(unavailable(name, entry->model.version, unloaded));
        continue;
      }
      // An ensemble whose composing model is out of service is too.
      auto ready = find_locked(name, entry->model.version, Loaded::kOnly, 0);
      if (ready) {
        entries.push_back({name, entry->model.version, ModelState::Ready, "", false});
      } else {
        entries.push_back(unavailable(name, entry->model.version, ready.error().message()));
      }
    }
  }
  std::vector<ModelIndex> all;
  for (auto& [name, entries] : index) {
    for (auto& entry : entries) all.push_back(std::move(entry));
  }
  return all;
}

std::vector<std::string> ExecutorEngine::model_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, versions] : models_) names.push_back(name);
  return names;
}

bool ExecutorEngine::batches(const std::string& name, const std::string& version) const {
  auto found = find(name, version);
  return found && (*found)->batcher != nullptr;
}

Result<ModelMetadata> ExecutorEngine::metadata(const std::string& name,
                                               const std::string& version) const {
  auto entry = find(name, version);
  if (!entry) return entry.error();
  ModelMetadata metadata = (*entry)->metadata;
  metadata.versions.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = models_.find(name); it != models_.end()) {
    for (const auto& e : it->second) {
      if (e->loaded.load()) metadata.versions.push_back(e->model.version);
    }
  }
  return metadata;
}

Result<std::shared_ptr<const Model>> ExecutorEngine::model(const std::string& name,
                                                           const std::string& version) const {
  auto entry = find(name, version);
  if (!entry) return entry.error();
  return std::shared_ptr<const Model>(*entry, &(*entry)->model);
}

Result<ModelStatistics> ExecutorEngine::statistics(const std::string& name,
                                                   const std::string& version) const {
  auto found = find(name, version, Loaded::kEither);
  if (!found) return found.error();
  return (*found)->stats.snapshot((*found)->model.name, (*found)->model.version);
}

std::vector<ModelStatistics> ExecutorEngine::all_statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ModelStatistics> all;
  for (const auto& [name, versions] : models_) {
    for (const auto& entry : versions) {
      all.push_back(entry->stats.snapshot(entry->model.name, entry->model.version));
    }
  }
  return all;
}

Result<void> ExecutorEngine::set_loaded(const std::string& name, bool loaded) {
  auto entry = find(name, {}, Loaded::kEither);
  if (!entry) return entry.error();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = models_.find(name); it != models_.end()) {
    for (const auto& version : it->second) version->loaded.store(loaded);
  }
  return {};
}

Result<std::shared_ptr<ExecutorEngine::Entry>> ExecutorEngine::find(const std::string& name,
                                                                    const std::string& version,
                                                                    Loaded which) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_locked(name, version, which, 0);
}

Result<std::shared_ptr<ExecutorEngine::Entry>> ExecutorEngine::find_locked(
    const std::string& name, const std::string& version, Loaded which, int depth) const {
  auto it = models_.find(name);
  if (it == models_.end()) {
    if (auto state = states_.find(name); state != states_.end()) {
      return Error(StatusCode::Unavailable, "model '" + name + "' is not loaded: " + state->second);
    }
    // Triton's words (its clients look for them), and what there is instead.
    std::string message = "Request for unknown model: '" + name + "' is not found";
    std::size_t listed = 0;
    for (const auto& entry : models_) {
      if (listed == kModelsListed) {
        message += ", ...";
        break;
      }
      message += (listed++ == 0 ? " (models here: " : ", ") + entry.first;
    }
    if (listed > 0) message += ")";
    return Error(StatusCode::NotFound, message);
  }
  const Versions& versions = it->second;
  std::shared_ptr<Entry> entry = version.empty() ? versions.back() : nullptr;
  for (const auto& e : versions) {
    if (!entry && e->model.version == version) entry = e;
  }
  if (!entry) {
    // Triton's words, and the versions there are.
    std::string held;
    for (const auto& e : versions) held += (held.empty() ? "" : ", ") + e->model.version;
    return Error(StatusCode::NotFound, "Request for unknown model: '" + name + "' version " +
                                           version + " is not found (versions here: " + held + ")");
  }
  if (which == Loaded::kOnly && !entry->loaded.load()) {
    return Error(StatusCode::Unavailable,
                 "model '" + name + "' is unloaded (RepositoryModelLoad puts it back)");
  }
  if (which == Loaded::kOnly) {
    // Triton's ensembles are ready while every composing model is.
    for (const auto& [step_name, step_version] : entry->model.composing_models) {
      if (depth == kMaxComposingDepth) {
        return Error(StatusCode::Unavailable, "model '" + name + "' composes models more than " +
                                                  std::to_string(kMaxComposingDepth) + " deep");
      }
      auto step = find_locked(step_name, step_version, Loaded::kOnly, depth + 1);
      if (!step) {
        return Error(StatusCode::Unavailable, "model '" + name + "' is not ready: its model '" +
                                                  step_name + "' is not (" +
                                                  step.error().message() + ")");
      }
    }
  }
  return entry;
}

bool ExecutorEngine::version_before(const std::string& a, const std::string& b) {
  auto is_number = [](const std::string& v) {
    return !v.empty() &&
           std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (is_number(a) && is_number(b) && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

void ExecutorEngine::add_version(Versions& versions, std::shared_ptr<Entry> entry) {
  auto at =
      std::upper_bound(versions.begin(), versions.end(), entry, [](const auto& x, const auto& y) {
        return version_before(x->model.version, y->model.version);
      });
  versions.insert(at, std::move(entry));
}

std::shared_ptr<ExecutorEngine::Entry> ExecutorEngine::make_entry(Model model, bool from_source) {
  auto entry = std::make_shared<Entry>();
  entry->model = std::move(model);
  entry->metadata = entry->model.metadata();
  entry->from_source = from_source;
  const Model& m = entry->model;
  if (m.dynamic_batching && m.max_batch_size > 0 && m.compute) {
    std::weak_ptr<Entry> weak = entry;
    entry->batcher = std::make_shared<detail::DynamicBatcher>(
        *m.dynamic_batching, m.max_batch_size, m.instances,
        [this, weak](std::vector<detail::DynamicBatcher::Pending> batch) {
          execute_batch(weak.lock(), std::move(batch));
        },
        [weak](detail::DynamicBatcher::Pending refused, Error error) {
          if (auto alive = weak.lock()) {
            alive->stats.started();
            alive->stats.count_failure(refusal_reason(error), Clock::now() - refused.queued);
          }
          refused.done(std::move(error));
        },
        [this](detail::UniqueFunction<void()> runner) { pool_.post(std::move(runner)); });
    if (m.compute_batch) entry->batcher->batch_bytes();
  }
  if (m.sequence_batching) {
    std::weak_ptr<Entry> weak = entry;
    entry->sequencer = std::make_shared<detail::SequenceBatcher>(
        *m.sequence_batching, m.name, m.max_batch_size,
        [weak](const InferRequest& model_request) -> Result<std::vector<NamedTensor>> {
          auto alive = weak.lock();
          if (!alive) return Error(StatusCode::Unavailable, "the model was unloaded");
          ResponseParametersScope attached(model_request);
          auto computed = compute_guarded(alive->model, model_request);
          hold_step_parameters(attached.take(model_request));  // for sequence_result()
          return computed;
        },
        [this](detail::UniqueFunction<void()> runner) { pool_.post(std::move(runner)); });
  }
  return entry;
}

}  // namespace sonic::detail
