// Triton's Python backend (backend: "python", a model.py defining TritonPythonModel), run as
// Triton runs it: every model instance in a process of its own, a "stub" (Triton's
// python_backend README: "each model instance ... a separate process"), so that
//   - models do not share one interpreter's GIL, and instances of one model run at once;
//   - a model that crashes, leaks or breaks the protocol costs its own process, not the
//     server's memory: a stub that dies is reaped, one that breaks the protocol is killed, its
//     request fails UNAVAILABLE with the reason, and the model is retired (ModelHost::retire)
//     until a load brings it back.
// A model that hangs holds a server thread for as long as its limits allow, each set in its
// config.pbtxt (python_settings.hpp): execute_timeout_ms bounds each read from and each write
// to the stub during an execute (past it the stub is killed and the model retired, as above);
// instance_wait_timeout_ms bounds a request's wait for a free instance (it then fails
// UNAVAILABLE); a BLS call that would wait for an instance its own call chain holds fails at
// once. A limit of 0 bounds nothing, and the time a BLS call spends in the model it calls is
// bounded only by that model.
// The stub is sonic_python_stub.py (embedded, written to a private directory at load), spoken
// to in frames over a socketpair (stub_frame.hpp). Requests go to a free instance, or wait for
// one. A model calls the server's other models (BLS) through the same socket: the thread that
// waits for its execute runs the call through LoadContext::host and answers.
//
// This file loads a model (starts its stubs, auto_complete_config, initialize) and registers
// the backend; python_model.hpp serves it.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "current_loads.hpp"
#include "protocol/model_config_json.hpp"
#include "python_model.hpp"
#include "python_settings.hpp"
#include "script_directory.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/repository/backend.hpp"
#include "stub_frame.hpp"
#include "stub_messages.hpp"
#include "stub_metrics.hpp"
#include "stub_process.hpp"

namespace sonic::python_backend {

using json = nlohmann::json;

namespace {

using repository::LoadContext;
using repository::LoadedModel;
using repository::ModelConfig;

// Waits for the stub's answer to a load step: `expected`, or its error.
// The model's metrics calls on the way (initialize() may make its metrics) are answered.
Result<json> expect(Instance& instance, const std::string& expected, const Settings& settings,
                    const std::string& model_file, CustomMetricOwner& metrics) {
  const auto deadline = deadline_after(settings.initialize_timeout);
  auto frame =
      read_frame(instance.process.fd(), deadline, settings.limits, instance.process.watch());
  while (frame) {
    auto header = header_of(*frame);
    if (!header || (*header)["type"] != "metric") break;
    if (auto sent = write_frame(instance.process.fd(), dump_header(answer_metric(metrics, *header)),
                                {}, deadline, instance.process.watch());
        !sent) {
      return sent.error();
    }
    frame = read_frame(instance.process.fd(), deadline, settings.limits, instance.process.watch());
  }
  if (!frame) {
    std::string what = frame.error().message();
    if (frame.error().code() == StatusCode::DeadlineExceeded) {
      what = "no answer within initialize_timeout_ms (" +
             std::to_string(settings.initialize_timeout.count()) + " ms)";
    }
    const std::string ended = instance.process.wait_or_kill(1000);
    return Error(StatusCode::Unavailable, "the Python stub running " + model_file + " failed (" +
                                              what + (ended.empty() ? "" : "; it " + ended) + ")");
  }
  auto header = header_of(*frame);
  if (!header) return header.error();
  const std::string type = (*header)["type"].get<std::string>();
  if (type == "error") {
    std::string message = message_of(*header);
    if (header->contains("traceback") && (*header)["traceback"].is_string()) {
      message += "\n" + (*header)["traceback"].get<std::string>();
    }
    return Error(StatusCode::InvalidArgument, message);
  }
  if (type != expected) {
    return Error(StatusCode::Internal,
                 "the Python stub answered " + type + " where " + expected + " was due");
  }
  return std::move(*header);
}

std::string instance_name(const ModelConfig& config, std::size_t group, std::int32_t index) {
  const auto& groups = config.instance_groups;
  std::string group_name = group < groups.size() && !groups[group].name.empty()
                               ? groups[group].name
                               : config.name + "_" + std::to_string(group);
  return group_name + "_" + std::to_string(index);
}

Result<std::string> config_json(const ModelConfig& config) {
  return protocol::model_config_to_json(repository::serialize_model_config(config));
}

Result<LoadedModel> load(const ModelConfig& given, const std::string& model_file,
                         const LoadContext& context) {
  auto python = find_python();
  if (!python) return python.error();
  auto settings = settings_of(given);
  if (!settings) return settings.error();
  auto scripts = ScriptDirectory::make();
  if (!scripts) return scripts.error();

  ModelConfig config = given;
  auto model = std::make_shared<PythonModel>(context, *settings, given.decoupled);
  // Triton's instance names: <group name, by default <model>_<group index>>_<index>.
  std::vector<std::string> names;
  for (std::size_t g = 0; g < config.instance_groups.size(); ++g) {
    for (std::int32_t i = 0; i < config.instance_groups[g].count; ++i) {
      names.push_back(instance_name(config, g, i));
    }
  }
  if (names.empty()) names.push_back(instance_name(config, 0, 0));

  for (std::size_t i = 0; i < names.size(); ++i) {
    auto process = StubProcess::spawn(*python, {"-u", "-B", scripts->stub(), model_file, names[i]});
    if (!process) return process.error();
    Instance instance{names[i], std::move(*process), false};
    if (auto hello = expect(instance, "hello", *settings, model_file, model->metrics()); !hello) {
      return hello.error();
    }
    if (i == 0) {
      // auto_complete_config(auto_complete_model_config), when model.py has it, completes the
      // config once; every instance is then initialized with the completed one.
      auto printed = config_json(config);
      if (!printed) return printed.error();
      if (auto sent = write_frame(instance.process.fd(),
                                  json{{"type", "auto_complete"}, {"config", *printed}}.dump(), {},
                                  deadline_after(settings->initialize_timeout));
          !sent) {
        return sent.error();
      }
      auto completed = expect(instance, "config", *settings, model_file, model->metrics());
      if (!completed) {
        return Error(completed.error().code(),
                     "auto_complete_config failed: " + completed.error().message());
      }
      if (!(*completed)["config"].is_string()) {
        return Error(StatusCode::Internal, "auto_complete_config gave no config");
      }
      auto parsed = repository::parse_model_config_json((*completed)["config"].get<std::string>(),
                                                        "the config auto_complete_config gave");
      if (!parsed) return parsed.error();
      if (parsed->name != config.name) {
        return Error(StatusCode::InvalidArgument,
                     "auto_complete_config changed the model's name to '" + parsed->name + "'");
      }
      config = std::move(*parsed);
      model->set_decoupled(config.decoupled);
    }
    auto printed = config_json(config);
    if (!printed) return printed.error();
    // Triton's initialize(args): every value a string.
    json args{{"model_config", *printed},
              {"model_instance_kind", "CPU"},
              {"model_instance_name", names[i]},
              {"model_instance_device_id", "0"},
              {"model_repository", context.model_directory},
              {"model_version", context.version},
              {"model_name", context.model_name}};
    if (auto sent = write_frame(
            instance.process.fd(),
            json{{"type", "initialize"}, {"args", args}, {"decoupled", config.decoupled}}.dump(),
            {}, deadline_after(settings->initialize_timeout));
        !sent) {
      return sent.error();
    }
    if (auto ready = expect(instance, "initialized", *settings, model_file, model->metrics());
        !ready) {
      return Error(ready.error().code(), "initialize failed: " + ready.error().message());
    }
    model->add_instance(std::move(instance));
  }

  LoadedModel loaded;
  if (context.host)
    CurrentLoads::get().set(context.host.get(), context.model_name, context.version, model);
  loaded.config = std::move(config);
  if (loaded.config.decoupled) {
    loaded.decoupled = [model](const InferRequest& request, const ResponseSink& respond) {
      return model->compute_decoupled(request, respond);
    };
    // A program whose repository does not take decoupled functions still gets an answer.
    loaded.compute =
        [name = context.model_name](const InferRequest&) -> Result<std::vector<NamedTensor>> {
      return Error(StatusCode::Unimplemented,
                   "model '" + name + "' is decoupled: its responses come through a stream");
    };
  } else {
    loaded.compute = [model](const InferRequest& request) { return model->compute(request); };
    // A dynamic batch reaches execute() as its requests, as in Triton.
    loaded.compute_batch = [model](const std::vector<const InferRequest*>& requests) {
      return model->compute_batch(requests);
    };
  }
  return loaded;
}

// Registers the backend when the library is loaded. Triton's Python backend has no platform.
const bool registered = [] {
  repository::register_backend({"python", {}, "model.py", repository::LoadFunction(load)});
  return true;
}();

}  // namespace

}  // namespace sonic::python_backend

// Referenced by the anchor object linked into every program that uses sonic::python_backend,
// so that the linker keeps the library (and its registration) even under --as-needed.
extern "C" {
SONIC_EXPORT int sonic_python_backend_registration_anchor = 1;
}
