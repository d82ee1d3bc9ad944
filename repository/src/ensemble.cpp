// sonic — loading an ensemble: its steps' models loaded through the executor, and Triton's
// checks of the steps against them (core src/ensemble_scheduler/ensemble_utils.cc,
// ValidateEnsembleConfig; the messages in its words where it has some).
#include "ensemble.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ensemble_plan.hpp"
#include "protocol/invalid.hpp"

namespace sonic::repository {

namespace {

using protocol::invalid;

const TensorMetadata* find_tensor(const std::vector<TensorMetadata>& tensors,
                                  const std::string& name) {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// What each ensemble tensor is, from where it was first seen: type checks name both models.
struct TensorOrigin {
  DataType dtype;
  std::string model;
};

class PlanBuilder {
 public:
  explicit PlanBuilder(const ModelConfig& config) : config_(config) { plan_.name = config.name; }

  Result<void> add_ensemble_tensors() {
    for (const auto& input : config_.inputs) {
      plan_.inputs.emplace_back(input.name, slot(input.name, *input.data_type, config_.name));
    }
    for (const auto& output : config_.outputs) {
      plan_.outputs.emplace_back(output.name, slot(output.name, *output.data_type, config_.name));
    }
    for (const auto& input : plan_.inputs) plan_.producer[input.second] = -1;
    return {};
  }

  // ValidateTensorMapping: every input of the step's model mapped once (unless optional), no
  // mapping to a tensor the model lacks, types that agree with the tensor's other users.
  Result<void> add_step(std::size_t number, const EnsembleStep& step, const Model& model) {
    const std::string in = "in ensemble " + config_.name + ", ";
    if (model.max_batch_size != 0 && model.max_batch_size < config_.max_batch_size) {
      return invalid("ensemble " + config_.name + " allows maximum batch size " +
                     std::to_string(config_.max_batch_size) + ", but it contains model " +
                     step.model_name + " which only allows maximum batch size to be " +
                     std::to_string(model.max_batch_size));
    }
    ensemble::StepPlan plan;
    plan.number = number;
    plan.model = step.model_name;
    plan.version = step.model_version < 0 ? std::string() : std::to_string(step.model_version);
    plan.decoupled = model.is_decoupled();
    for (const auto& [input, tensor] : step.input_map) {
      const TensorMetadata* declared = find_tensor(model.inputs, input);
      if (!declared) {
        return invalid(in + "ensemble tensor " + tensor + " is mapping to non-existing input " +
                       input + " in model " + step.model_name);
      }
      auto taken = typed_slot(tensor, declared->dtype, step.model_name);
      if (!taken) return taken.error();
      plan.inputs.emplace_back(input, *taken);
      plan.optional_inputs.push_back(model.is_optional_input(input));
    }
    for (const auto& input : model.inputs) {
      if (step.input_map.count(input.name) || model.is_optional_input(input.name)) continue;
      return invalid(in + "input " + input.name + " in model " + step.model_name +
                     " is not mapped to any ensemble tensors");
    }
    for (const auto& [output, tensor] : step.output_map) {
      const TensorMetadata* declared = find_tensor(model.outputs, output);
      if (!declared) {
        return invalid(in + "ensemble tensor " + tensor + " is mapped from non-existing output " +
                       output + " in model " + step.model_name);
      }
      auto given = typed_slot(tensor, declared->dtype, step.model_name);
      if (!given) return given.error();
      if (plan_.producer[*given] != kNone) {
        return invalid(in + "ensemble tensor " + tensor + " is given by two steps (" +
                       describe(plan_.producer[*given]) + " and step " + std::to_string(number) +
                       "): each tensor must come from one place");
      }
      plan_.producer[*given] = static_cast<long>(number);
      plan.outputs.emplace_back(output, *given);
    }
    plan_.steps.push_back(std::move(plan));
    return {};
  }

  // Every tensor a step takes or the ensemble gives has a source, the steps can run in some
  // order, and no step takes tensors of two different decoupled steps (Triton's check: their
  // responses could not be paired).
  Result<ensemble::Plan> finish() {
    const std::string in = "in ensemble " + config_.name + ", ";
    for (const auto& step : plan_.steps) {
      for (const auto& [input, slot] : step.inputs) {
        if (plan_.producer[slot] == kNone) {
          return invalid(in + "step " + std::to_string(step.number) + " (model " + step.model +
                         ") takes ensemble tensor " + plan_.tensors[slot] +
                         ", which is neither an input of the ensemble nor an output of a step");
        }
      }
    }
    for (const auto& [name, slot] : plan_.outputs) {
      if (plan_.producer[slot] == kNone) {
        return invalid(in + "output " + name + " is not an output of any step");
      }
    }
    // Decoupled origin of each tensor: 0 for none, else the decoupled step's number + 1.
    std::vector<long> origin(plan_.tensors.size(), 0);
    std::vector<bool> placed(plan_.steps.size(), false);
    std::vector<bool> known(plan_.tensors.size(), false);
    for (const auto& input : plan_.inputs) known[input.second] = true;
    for (std::size_t round = 0; round < plan_.steps.size(); ++round) {
      bool progress = false;
      for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
        const auto& step = plan_.steps[i];
        if (placed[i]) continue;
        bool inputs_known = true;
        std::optional<long> from;
        for (const auto& input : step.inputs) inputs_known = inputs_known && known[input.second];
        if (!inputs_known) continue;
        for (const auto& input : step.inputs) {
          if (from && *from != origin[input.second]) {
            return invalid(in + "step of model '" + step.model +
                           "' receives inputs originated from different decoupled models");
          }
          from = origin[input.second];
        }
        const long given = step.decoupled ? static_cast<long>(i) + 1 : from.value_or(0);
        for (const auto& output : step.outputs) {
          origin[output.second] = given;
          known[output.second] = true;
        }
        placed[i] = true;
        progress = true;
      }
      if (!progress) break;
    }
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      if (!placed[i]) {
        return invalid(in + "step " + std::to_string(i) + " (model " + plan_.steps[i].model +
                       ") waits on tensors of steps that wait on it: the steps form a loop");
      }
    }
    return std::move(plan_);
  }

 private:
  static constexpr long kNone = -2;

  ensemble::Slot slot(const std::string& name, DataType dtype, const std::string& model) {
    auto [it, added] = slots_.emplace(name, plan_.tensors.size());
    if (added) {
      plan_.tensors.push_back(name);
      plan_.producer.push_back(kNone);
      origins_.push_back({dtype, model});
    }
    return it->second;
  }

  Result<ensemble::Slot> typed_slot(const std::string& name, DataType dtype,
                                    const std::string& model) {
    const ensemble::Slot s = slot(name, dtype, model);
    const TensorOrigin& first = origins_[s];
    if (first.dtype != dtype) {
      return invalid("in ensemble " + config_.name + ", ensemble tensor " + name +
                     ": inconsistent data type: " + to_string(first.dtype) +
                     " is inferred from model " + first.model + " while " + to_string(dtype) +
                     " is inferred from model " + model);
    }
    return s;
  }

  std::string describe(long producer) const {
    return producer == -1 ? "the ensemble's input" : "step " + std::to_string(producer);
  }

  const ModelConfig& config_;
  ensemble::Plan plan_;
  std::map<std::string, ensemble::Slot> slots_;
  std::vector<TensorOrigin> origins_;
};

Shape full_shape(const TensorConfig& t, bool batched) {
  Shape shape;
  if (batched) shape.push_back(-1);
  shape.insert(shape.end(), t.dims.begin(), t.dims.end());
  return shape;
}

}  // namespace

Result<void> check_no_ensemble_cycle(const ModelConfig& config, const ConfigLookup& config_of) {
  // Depth-first over the steps' ensembles, the path so far kept to name the loop.
  std::vector<std::string> path{config.name};
  std::set<std::string> cleared;
  std::function<Result<void>(const ModelConfig&)> visit = [&](const ModelConfig& at) {
    if (!at.ensemble_steps) return Result<void>{};
    for (const auto& step : *at.ensemble_steps) {
      const std::string& next = step.model_name;
      if (std::find(path.begin(), path.end(), next) != path.end()) {
        std::string loop;
        for (const auto& name : path) loop += name + " -> ";
        return Result<void>(
            invalid("circular dependency between ensembles: " + loop + next +
                    " (an ensemble cannot run itself, directly or through another)"));
      }
      if (cleared.count(next)) continue;
      auto next_config = config_of(next);
      if (!next_config) continue;  // a step model that is not there fails its own load
      if (next_config->platform == "ensemble") {
        path.push_back(next);
        if (auto ok = visit(*next_config); !ok) return ok;
        path.pop_back();
      }
      cleared.insert(next);
    }
    return Result<void>{};
  };
  return visit(config);
}

namespace {

// The models running `model` may run: itself, and for an ensemble every model of its steps, down
// through the ensembles among them (loaded already: an ensemble loads its steps first).
void add_models_run_by(const Model& model, ModelHost& host, std::set<std::string>& models) {
  if (!models.insert(model.name).second) return;
  for (const auto& [name, version] : model.composing_models) {
    if (auto composing = host.load(name, version)) add_models_run_by(**composing, host, models);
  }
}

// A decoupled step streams its responses unless another step may run one of the models it
// runs: run inside its call, that step could wait on what the call holds (a Python model's only
// instance), so its responses wait for the call to return instead.
void choose_streaming(ensemble::Plan& plan, const std::vector<std::set<std::string>>& runs) {
  for (auto& step : plan.steps) {
    if (!step.decoupled) continue;
    step.streams = true;
    for (std::size_t other = 0; other < plan.steps.size() && step.streams; ++other) {
      if (other == step.number) continue;
      for (const auto& name : runs[step.number]) step.streams &= runs[other].count(name) == 0;
    }
  }
}

}  // namespace

Result<Model> load_ensemble(const ModelConfig& config, const std::string& version,
                            const std::shared_ptr<ModelHost>& host) {
  if (!host) {
    return invalid("ensemble '" + config.name +
                   "' runs other models: load it in an executor (a server, or a client's "
                   "fallback), not alone");
  }
  if (!config.ensemble_steps || config.ensemble_steps->empty()) {
    return invalid("ensemble '" + config.name +
                   "' must have ensemble_scheduling with at least one step");
  }
  PlanBuilder builder(config);
  if (auto ok = builder.add_ensemble_tensors(); !ok) return ok.error();
  Model model;
  std::vector<std::set<std::string>> runs;  // by step: the models it may run
  for (std::size_t i = 0; i < config.ensemble_steps->size(); ++i) {
    const EnsembleStep& step = (*config.ensemble_steps)[i];
    if (step.model_name.empty()) {
      return invalid("ensemble '" + config.name + "': step " + std::to_string(i) +
                     " must name its model (model_name)");
    }
    const std::string step_version =
        step.model_version < 0 ? std::string() : std::to_string(step.model_version);
    auto step_model = host->load(step.model_name, step_version);
    if (!step_model) {
      return Error(step_model.error().code(),
                   "in ensemble " + config.name + ", step " + std::to_string(i) + " (model " +
                       step.model_name + ") cannot be served: " + step_model.error().message());
    }
    if (auto ok = builder.add_step(i, step, **step_model); !ok) return ok.error();
    add_models_run_by(**step_model, *host, runs.emplace_back());
    model.composing_models.emplace_back(step.model_name, step_version);
  }
  auto plan = builder.finish();
  if (!plan) return plan.error();
  choose_streaming(*plan, runs);
  plan->max_held_responses = config.ensemble_max_inflight_requests;

  model.name = config.name;
  model.version = version;
  model.platform = "ensemble";
  model.max_batch_size = config.max_batch_size;
  const bool batched = config.max_batch_size > 0;
  for (const auto& t : config.inputs) {
    model.inputs.push_back({t.name, *t.data_type, full_shape(t, batched)});
    if (t.optional) model.optional_inputs.push_back(t.name);
  }
  for (const auto& t : config.outputs) {
    model.outputs.push_back({t.name, *t.data_type, full_shape(t, batched)});
  }
  bool decoupled = false;
  for (const auto& step : plan->steps) decoupled = decoupled || step.decoupled;
  auto shared_plan = std::make_shared<const ensemble::Plan>(std::move(*plan));
  if (decoupled) {
    // Triton makes an ensemble with a decoupled step decoupled itself (ValidateEnsembleConfig).
    model.decoupled = [shared_plan, host](const InferRequest& request,
                                          const ResponseSink& respond) {
      return ensemble::run(*shared_plan, host, request, respond);
    };
  } else {
    model.compute = [shared_plan,
                     host](const InferRequest& request) -> Result<std::vector<NamedTensor>> {
      std::vector<NamedTensor> outputs;
      auto ran = ensemble::run(*shared_plan, host, request,
                               [&](std::vector<NamedTensor> given) { outputs = std::move(given); });
      if (!ran) return ran.error();
      return outputs;
    };
  }
  return model;
}

}  // namespace sonic::repository
