// sonic — CpuExecutor's engine, models of a source: loads and unloads (KServe's repository
// calls), their time limit, one load at a time per model, and loads on a model's first request.
#include <algorithm>
#include <condition_variable>
#include <thread>
#include <utility>

#include "executor/executor_engine.hpp"
#include "executor/request_checks.hpp"
#include "protocol/names.hpp"

namespace sonic::detail {

// What a load of the source gives, shared by the thread that runs it and the caller that
// waits for it (which may stop waiting: the thread then finishes alone).
struct ExecutorEngine::LoadCall {
  std::mutex mutex;
  std::condition_variable finished;
  std::optional<Result<std::vector<Model>>> models;

  bool has_returned() {
    std::lock_guard<std::mutex> lock(mutex);
    return models.has_value();
  }
};

ExecutorEngine::Versions ExecutorEngine::take_out_locked(const std::string& name,
                                                         const std::string& state) {
  Versions taken;
  if (auto it = models_.find(name); it != models_.end()) {
    taken = std::move(it->second);
    models_.erase(it);
  }
  states_[name] = state;
  return taken;
}

Result<void> ExecutorEngine::unload_model(const std::string& name) {
  if (in_source(name)) {
    std::shared_ptr<const ModelSource> source;
    Versions ending;  // ends after the lock: a model's end (a Python model's finalize) may be slow
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ending = take_out_locked(name, std::string(protocol::reason::kUnloaded));
      source = source_;
    }
    // Files sent with a load are let go with the model (Triton deletes its copy on unload).
    if (source) (void)source->set_model_directory(name, {});
    return {};
  }
  return set_loaded(name, false);
}

void ExecutorEngine::retire(const std::string& name, const std::string& reason) {
  if (!in_source(name)) return;
  Versions ending;  // declared before the lock: destroyed after it is released
  std::lock_guard<std::mutex> lock(mutex_);
  ending = take_out_locked(name, reason);
}

Result<void> ExecutorEngine::load_model(const std::string& name, const std::string& config_json,
                                        const std::string& directory) {
  std::shared_ptr<const ModelSource> source;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source = source_;
  }
  if (directory.empty() && !in_source(name)) {
    if (!config_json.empty()) {
      return Error(StatusCode::InvalidArgument,
                   "model '" + name + "' is built into this program: it takes no configuration");
    }
    return set_loaded(name, true);
  }
  if (!source) {
    return Error(StatusCode::InvalidArgument,
                 "model '" + name + "' cannot load from files: this executor has no model source");
  }
  auto one_load = lock_loads_of(name);
  auto before = source->set_model_directory(
      name, {directory, directory.empty() ? std::string() : config_json});
  if (!before) return Error(StatusCode::InvalidArgument, before.error().message());
  // Triton's model_repository_manager.cc: a model that does not poll (not in the repository, its
  // config override not a ModelConfig, its override files not written) fails with INTERNAL
  // "failed to load 'NAME', failed to poll from model repository", and what was served stays.
  if (auto polled = source->poll(name, config_json); !polled) {
    (void)source->set_model_directory(name, *before);
    std::lock_guard<std::mutex> lock(mutex_);
    // A model not in service keeps why it is not, for the repository index and readiness.
    if (!models_.count(name)) take_out_locked(name, polled.error().message());
    return Error(StatusCode::Internal,
                 "failed to load '" + name +
                     "', failed to poll from model repository: " + polled.error().message());
  }
  auto loaded = load_from_source(name, config_json);
  if (!loaded) (void)source->set_model_directory(name, *before);
  return loaded;
}

void ExecutorEngine::set_load_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  load_timeout_ = timeout;
}

void ExecutorEngine::set_source(std::shared_ptr<const ModelSource> source, bool on_demand) {
  std::lock_guard<std::mutex> lock(mutex_);
  source_ = std::move(source);
  load_on_demand_ = on_demand;
}

bool ExecutorEngine::serves(const std::string& name, const std::string& version) const {
  if (find(name, version)) return true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!source_ || !load_on_demand_ || states_.count(name) || models_.count(name)) return false;
  }
  return in_source(name);
}

std::vector<std::string> ExecutorEngine::source_names() const {
  std::shared_ptr<const ModelSource> source;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source = source_;
  }
  return source ? source->model_names() : std::vector<std::string>{};
}

bool ExecutorEngine::in_source(const std::string& name) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.find(name);
    if (it != models_.end()) return it->second.back()->from_source;
    if (states_.count(name)) return true;
  }
  auto names = source_names();
  return std::binary_search(names.begin(), names.end(), name);
}

std::unique_lock<std::mutex> ExecutorEngine::lock_loads_of(const std::string& name) {
  std::shared_ptr<std::mutex> turn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = load_turns_[name];
    if (!slot) slot = std::make_shared<std::mutex>();
    turn = slot;
  }
  // The map keeps the mutex for as long as the executor lives: one per model name loaded.
  return std::unique_lock<std::mutex>(*turn);
}

Result<std::vector<Model>> ExecutorEngine::read_from_source(
    const std::shared_ptr<const ModelSource>& source, const std::string& name,
    const std::string& config_json, std::chrono::milliseconds timeout) {
  std::shared_ptr<ModelHost> host = host_;
  if (timeout.count() == 0) return source->load_versions_hosted(name, config_json, host);
  auto call = std::make_shared<LoadCall>();
  // The thread holds only the source, the host and the call: it may outlive this executor
  // (the host then answers UNAVAILABLE).
  std::thread([call, source, host, name, config_json] {
    Result<std::vector<Model>> models = Error(StatusCode::Internal, "the load did not run");
    try {
      models = source->load_versions_hosted(name, config_json, host);
    } catch (const std::exception& e) {
      models = Error(StatusCode::Internal, "loading '" + name + "' threw: " + e.what());
    } catch (...) {
      models = Error(StatusCode::Internal, "loading '" + name + "' threw");
    }
    std::lock_guard<std::mutex> lock(call->mutex);
    call->models = std::move(models);
    call->finished.notify_all();
  }).detach();
  {
    std::unique_lock<std::mutex> wait(call->mutex);
    call->finished.wait_for(wait, timeout, [&] { return call->models.has_value(); });
    if (call->models) return std::move(*call->models);
  }
  // Not with call->mutex held: load_from_source() takes mutex_, then a stuck call's mutex.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stuck_loads_[name] = call;
  }
  return Error(StatusCode::DeadlineExceeded,
               "loading model '" + name + "' took longer than its limit of " +
                   std::to_string(timeout.count()) +
                   " ms (the load goes on in the background; its result will not be used)");
}

Result<void> ExecutorEngine::load_from_source(const std::string& name,
                                              const std::string& config_json) {
  std::shared_ptr<const ModelSource> source;
  std::chrono::milliseconds timeout;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source = source_;
    timeout = load_timeout_;
    if (auto stuck = stuck_loads_.find(name); stuck != stuck_loads_.end()) {
      if (!stuck->second->has_returned()) {
        return Error(StatusCode::Unavailable,
                     "model '" + name +
                         "' cannot load now: its previous load, which passed its time limit, "
                         "has not returned yet");
      }
      stuck_loads_.erase(stuck);  // the thread keeps its own reference until it ends
    }
    loading_.insert(name);
  }
  auto models = read_from_source(source, name, config_json, timeout);
  if (models) {
    for (const auto& model : *models) {
      if (auto ok = check_functions(model); !ok) models = ok.error();
      if (!models) break;
    }
  }
  if (models && models->empty()) {
    models = Error(StatusCode::Internal, "the model source gave no version of '" + name + "'");
  }
  // Every version is made before any is served: a model is in service whole or not at all.
  Versions versions;
  if (models) {
    for (auto& model : *models) add_version(versions, make_entry(std::move(model), true));
  }
  Versions ending;  // the versions replaced: they end after the lock is released
  std::lock_guard<std::mutex> lock(mutex_);
  loading_.erase(name);
  if (!models) {
    ending = take_out_locked(name, models.error().message());
    return models.error();
  }
  ending = std::exchange(models_[name], std::move(versions));
  states_.erase(name);
  return {};
}

Result<std::shared_ptr<const Model>> ExecutorEngine::load_for_host(const std::string& name,
                                                                   const std::string& version) {
  // Triton loads an ensemble's composing models with it, whatever its control mode: a model of
  // the source not in service is loaded here, on demand or not (once: a load under way is
  // waited for).
  auto entry = find(name, version);
  if (!entry && in_source(name)) {
    auto one_load = lock_loads_of(name);
    entry = find(name, version);
    if (!entry) {
      if (auto loaded = load_from_source(name); !loaded) return loaded.error();
      entry = find(name, version);
    }
  }
  if (!entry) return entry.error();
  return std::shared_ptr<const Model>(*entry, &(*entry)->model);
}

Result<std::shared_ptr<ExecutorEngine::Entry>> ExecutorEngine::find_or_load(
    const std::string& name, const std::string& version) {
  auto found = find(name, version);
  if (found || found.error().code() != StatusCode::NotFound) return found;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!source_ || !load_on_demand_ || states_.count(name)) return found;
  }
  if (!in_source(name)) return found;
  auto one_load = lock_loads_of(name);
  if (auto loaded_meanwhile = find(name, version);
      loaded_meanwhile || loaded_meanwhile.error().code() != StatusCode::NotFound) {
    return loaded_meanwhile;
  }
  if (auto loaded = load_from_source(name); !loaded) return loaded.error();
  return find(name, version);
}

}  // namespace sonic::detail
