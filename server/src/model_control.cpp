#include "model_control.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>
#include <vector>

#include "model_files.hpp"
#include "protocol/control_codec.hpp"
#include "protocol/model_config_json.hpp"

namespace sonic::server {

namespace {

namespace pc = protocol;

Error unsupported_repository() {
  // Triton's words and code (UNSUPPORTED, which its gRPC status mapping makes UNIMPLEMENTED).
  return Error(StatusCode::Unimplemented, "'repository_name' specification is not supported");
}

// Triton's ValidateModelName (model_repository_manager.cc), checked before a load.
Result<void> check_name(const std::string& name) {
  const auto first = name.find_first_not_of(" \t\n\v\f\r");
  if (first == std::string::npos) {
    return Error(StatusCode::InvalidArgument,
                 "Model name cannot be empty. Please enter a valid name to deploy.");
  }
  const auto last = name.find_last_not_of(" \t\n\v\f\r");
  const std::string trimmed = name.substr(first, last - first + 1);
  if (trimmed == ".." || trimmed.find('/') != std::string::npos) {
    return Error(
        StatusCode::InvalidArgument,
        "invalid model name '" + name + "', model name must not contain path traversal characters");
  }
  return {};
}

std::string poll_failed(const std::string& name) {
  return "failed to load '" + name + "', failed to poll from model repository";
}

// A load's error as Triton's model_repository_manager.cc words it: a model it cannot find or
// read fails its poll (INTERNAL "failed to load 'NAME', failed to poll from model repository"),
// one whose backend fails "load failed for model 'NAME': why" (INVALID_ARGUMENT). sonic's reason
// follows Triton's words; a load past its time limit, or waiting on one, keeps its code.
Error load_error(const std::string& name, const Error& error) {
  const std::string& message = error.message();
  if (message.rfind("failed to load '", 0) == 0) return error;  // the executor's poll
  if (error.code() == StatusCode::NotFound) {
    return Error(StatusCode::Internal, poll_failed(name) + ": " + message);
  }
  const bool kept =
      error.code() == StatusCode::DeadlineExceeded || error.code() == StatusCode::Unavailable;
  return Error(kept ? error.code() : StatusCode::InvalidArgument,
               "load failed for model '" + name + "': " + message);
}

// The models an ensemble's steps run (its config's ensemble_scheduling), from its serialized
// ModelConfig.
std::vector<std::string> steps_of(const std::string& config) {
  std::vector<std::string> steps;
  auto printed = pc::model_config_to_json(config);
  if (!printed) return steps;
  auto document = nlohmann::json::parse(*printed, nullptr, false);
  if (!document.is_object()) return steps;
  auto scheduling = document.find("ensemble_scheduling");
  if (scheduling == document.end() || !scheduling->is_object()) return steps;
  auto step = scheduling->find("step");
  if (step == scheduling->end() || !step->is_array()) return steps;
  for (const auto& s : *step) {
    if (s.is_object() && s.contains("model_name") && s["model_name"].is_string()) {
      steps.push_back(s["model_name"].get<std::string>());
    }
  }
  return steps;
}

// Each model in service → the models its ensemble steps run (none for other models).
std::map<std::string, std::vector<std::string>> steps_in_service(const CpuExecutor& executor) {
  std::map<std::string, std::vector<std::string>> runs;
  for (const auto& entry : executor.repository_index()) {
    if (entry.state != ModelState::Ready || runs.count(entry.name)) continue;
    auto model = executor.model(entry.name, entry.version);
    if (model) runs[entry.name] = steps_of((*model)->config);
  }
  return runs;
}

// Triton's unload_dependents (TRITONSERVER_ServerUnloadModelAndDependents): with the model, the
// models its ensemble steps run, and theirs, that no other model in service runs. (Triton also
// keeps those a client loaded by name; sonic does not tell them apart.)
// `runs`: each model in service before the unload → the models its steps run.
void unload_dependents(CpuExecutor& executor, const std::string& name,
                       std::map<std::string, std::vector<std::string>> runs) {
  std::set<std::string> gone{name};
  std::vector<std::string> pending = runs[name];
  while (!pending.empty()) {
    const std::string step = pending.back();
    pending.pop_back();
    if (gone.count(step)) continue;
    const bool used = std::any_of(runs.begin(), runs.end(), [&](const auto& other) {
      return gone.count(other.first) == 0 &&
             std::find(other.second.begin(), other.second.end(), step) != other.second.end();
    });
    if (used) continue;
    gone.insert(step);
    (void)executor.unload_model(step);
    pending.insert(pending.end(), runs[step].begin(), runs[step].end());
  }
}

// RepositoryModelUnload as Triton's grpc_server.cc reads it: "unload_dependents" (a bool_param;
// tritonclient.grpc sends it with every unload) and nothing else (others are ignored).
Result<std::string> unload(const ControlContext& context, const pc::RepositoryModelRequest& call) {
  bool dependents = false;
  if (auto it = call.parameters.find("unload_dependents"); it != call.parameters.end()) {
    const auto* flag = std::get_if<bool>(&it->second);
    if (!flag) {
      return Error(StatusCode::InvalidArgument,
                   "invalid value type for 'unload_dependents' parameter, expected bool_param.");
    }
    dependents = *flag;
  }
  std::unique_lock<std::mutex> turn;
  if (context.model_files) turn = context.model_files->turn(call.model);
  CpuExecutor& executor = context.executor;
  std::map<std::string, std::vector<std::string>> runs;
  if (dependents) runs = steps_in_service(executor);
  if (auto done = executor.unload_model(call.model); !done) {
    // Triton's ModelRepositoryManager::LoadUnloadModels reports the errors of loads only: an
    // unload of a model it does not have unloads nothing and succeeds.
    if (done.error().code() != StatusCode::NotFound) return done.error();
    return std::string();
  }
  if (dependents) unload_dependents(executor, call.model, std::move(runs));
  if (context.model_files) context.model_files->settle(call.model, {});
  return std::string();  // RepositoryModelUnloadResponse is empty
}

// RepositoryModelLoad as Triton's grpc_server.cc reads it: "config" (a string_param, a
// ModelConfig as JSON that replaces the model's for this load) and "file:<path>" (bytes_param,
// the model directory's files: the model is read from them, "config" its configuration, until a
// load without files or an unload); any other parameter is refused.
Result<std::string> load(const ControlContext& context, const pc::RepositoryModelRequest& call) {
  std::string config_json;
  bool has_config = false;
  std::map<std::string, std::string> files;
  for (const auto& [key, value] : call.parameters) {
    if (key == "config") {
      const auto* text = std::get_if<std::string>(&value);
      if (!text) {
        return Error(StatusCode::InvalidArgument,
                     "invalid value type for load parameter 'config', expected string_param.");
      }
      config_json = *text;
      has_config = true;
    } else if (key.rfind("file:", 0) == 0) {
      const auto* bytes = std::get_if<pc::RepositoryBytes>(&value);
      if (!bytes) {
        return Error(StatusCode::InvalidArgument,
                     "invalid value type for load parameter '" + key + "', expected bytes_param.");
      }
      files[key] = bytes->value;
    } else {
      return Error(StatusCode::InvalidArgument, "unrecognized load parameter '" + key + "'.");
    }
  }
  if (auto ok = check_name(call.model); !ok) return ok.error();
  CpuExecutor& executor = context.executor;
  std::unique_lock<std::mutex> turn;
  if (context.model_files) turn = context.model_files->turn(call.model);
  if (files.empty()) {
    if (auto done = executor.load_model(call.model, config_json); !done) {
      return load_error(call.model, done.error());
    }
    if (context.model_files) context.model_files->settle(call.model, {});
    return std::string();
  }
  if (!context.model_files) {
    return Error(StatusCode::Unimplemented, "this port takes no model files with a load");
  }
  if (!has_config) {
    // Triton's words (its LocalizeRepoAgent), a failure of the poll.
    return Error(StatusCode::Internal,
                 poll_failed(call.model) +
                     ": Load parameter 'config' must be specified for model file override");
  }
  auto directory = context.model_files->write(call.model, files);
  if (!directory) {
    if (directory.error().code() == StatusCode::ResourceExhausted) return directory.error();
    return Error(StatusCode::Internal,
                 poll_failed(call.model) + ": " + directory.error().message());
  }
  if (auto done = executor.load_model_from(call.model, *directory, config_json); !done) {
    context.model_files->discard(*directory);
    return load_error(call.model, done.error());
  }
  context.model_files->settle(call.model, *directory);
  return std::string();  // RepositoryModelLoadResponse is empty
}

}  // namespace

Result<std::string> load_or_unload(const ControlContext& context, bool load_it,
                                   std::string_view bytes) {
  if (!context.options.model_control) {
    // Triton's code and words when its model control mode is not explicit (its default).
    return Error(StatusCode::Unavailable,
                 "explicit model load / unload is not allowed if polling is enabled (sonic-server: "
                 "start it with --model-control-mode explicit)");
  }
  auto request = pc::decode_repository_model_request(bytes);
  if (!request) return request.error();
  if (!request->repository.empty()) return unsupported_repository();
  return load_it ? load(context, *request) : unload(context, *request);
}

}  // namespace sonic::server
