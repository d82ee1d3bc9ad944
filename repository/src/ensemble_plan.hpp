// sonic — an ensemble as it runs: its tensors numbered, each step's inputs and outputs bound to
// them. Made and checked once, as the ensemble loads (ensemble.cpp); run for each request
// (ensemble_run.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"

namespace sonic::repository::ensemble {

/// A tensor of the ensemble: its slot in a run's values.
using Slot = std::size_t;

/// One step: the model it runs and which tensors it takes and gives.
struct StepPlan {
  std::size_t number = 0;  ///< its place in the config, from 0, for errors
  std::string model;
  std::string version;  ///< empty: the model's default version
  bool decoupled = false;
  std::vector<std::pair<std::string, Slot>> inputs;  ///< the model's input, the tensor it takes
  std::vector<bool> optional_inputs;  ///< by position in `inputs`: the model may go without it
  std::vector<std::pair<std::string, Slot>> outputs;  ///< the model's output, the tensor it gives
};

/// The whole ensemble.
struct Plan {
  std::string name;
  std::vector<std::string> tensors;                   ///< a slot's name
  std::vector<std::pair<std::string, Slot>> inputs;   ///< the ensemble's inputs
  std::vector<std::pair<std::string, Slot>> outputs;  ///< the ensemble's outputs
  std::vector<StepPlan> steps;
  /// Which step gives a slot (-1: an input of the ensemble, or none).
  std::vector<long> producer;
};

/// Runs `request` (checked against the ensemble's inputs) through `plan`, each step's model on
/// `host`, on the calling thread; steps that may run at once go to the host's pool too, and the
/// calling thread runs any that no pool thread has started. Each response of the ensemble goes
/// to `respond` (one, unless a step is decoupled: then one per response that reaches the end,
/// once that step has given its last: the later steps run after its call returns, so that none
/// waits on what the decoupled step's model still holds). A step's error is the request's error,
/// naming the step. An optional input of the ensemble that the request leaves out is left out of
/// the steps that take it, as Triton does; a step that needs it fails, named.
Result<void> run(const Plan& plan, const std::shared_ptr<ModelHost>& host,
                 const InferRequest& request, const ResponseSink& respond);

}  // namespace sonic::repository::ensemble
