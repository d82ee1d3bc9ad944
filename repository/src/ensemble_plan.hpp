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
  /// Decoupled: each response goes on through the later steps as it comes, inside the step's
  /// call. False where another step runs the same model (itself, or inside an ensemble): that
  /// step could wait on what this one holds while it runs, so its responses go on once it has
  /// returned.
  bool streams = false;
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
  /// The most responses of a decoupled step that does not stream a run may hold
  /// (`max_inflight_requests`); 0: no limit.
  std::size_t max_held_responses = 0;
};

/// Runs `request` (checked against the ensemble's inputs) through `plan`, each step's model on
/// `host`, on the calling thread; steps that may run at once go to the host's pool too, and the
/// calling thread runs any that no pool thread has started. Each response of the ensemble goes
/// to `respond`: one, unless a step is decoupled; then one per response of that step that
/// reaches the end, as it comes when the step streams (StepPlan::streams), else once the step
/// has returned. A step's error is the request's error, naming the step; the responses of a
/// decoupled step that come after it are dropped. An optional input of the ensemble that the
/// request leaves out is left out of the steps that take it, as Triton does; a step that needs
/// it fails, named.
Result<void> run(const Plan& plan, const std::shared_ptr<ModelHost>& host,
                 const InferRequest& request, const ResponseSink& respond);

}  // namespace sonic::repository::ensemble
