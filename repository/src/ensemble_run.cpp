// sonic — running one request through an ensemble: Triton's ensemble scheduler (core
// src/ensemble_scheduler/ensemble_scheduler.cc) starts each step once every tensor it takes is
// there, runs only the steps the requested outputs need ("pruned" steps), and gives the
// composing models the request's id and parameters (its priority, timeout and sequence among
// them). Here a run is a loop on the calling thread rather than callbacks: the step models
// run on this executor, so the thread that waits can do the waited-for work itself.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "ensemble_plan.hpp"

namespace sonic::repository::ensemble {

namespace {

// The tensors a run has so far, and the steps it has run. An optional input of the ensemble the
// request left out is `absent`: known, and empty.
struct State {
  std::vector<std::optional<Tensor>> values;
  std::vector<bool> absent;
  std::vector<bool> done;
};

Error step_error(const Plan& plan, const StepPlan& step, const Error& error) {
  return Error(error.code(), "in ensemble '" + plan.name + "', step " +
                                 std::to_string(step.number) + " (model '" + step.model +
                                 "'): " + error.message());
}

// Steps that run at once: the calling thread posts all but the first to the pool, runs the
// first, then runs each posted one that no pool thread has claimed yet. A pool busy with other
// work never leaves the run waiting, and a pool thread that claims a step runs it to the end.
class Siblings {
 public:
  explicit Siblings(std::vector<InferRequest> requests)
      : requests_(std::move(requests)), claimed_(requests_.size()), results_(requests_.size()) {}

  static std::vector<Result<InferResult>> run_all(std::vector<InferRequest> requests,
                                                  const std::shared_ptr<ModelHost>& host) {
    auto siblings = std::make_shared<Siblings>(std::move(requests));
    const std::size_t count = siblings->requests_.size();
    for (std::size_t i = 1; i < count; ++i) {
      host->run_async([siblings, host, i] { siblings->run_unclaimed(*host, i); });
    }
    for (std::size_t i = 0; i < count; ++i) siblings->run_unclaimed(*host, i);
    std::unique_lock<std::mutex> lock(siblings->mutex_);
    siblings->finished_.wait(lock, [&] { return siblings->finished_count_ == count; });
    std::vector<Result<InferResult>> results;
    for (auto& result : siblings->results_) results.push_back(std::move(*result));
    return results;
  }

 private:
  void run_unclaimed(ModelHost& host, std::size_t i) {
    if (claimed_[i].exchange(true)) return;
    auto result = host.infer(requests_[i]);
    std::lock_guard<std::mutex> lock(mutex_);
    results_[i] = std::move(result);
    if (++finished_count_ == requests_.size()) finished_.notify_all();
  }

  const std::vector<InferRequest> requests_;
  std::vector<std::atomic<bool>> claimed_;
  std::mutex mutex_;
  std::condition_variable finished_;
  std::vector<std::optional<Result<InferResult>>> results_;  // guarded by mutex_
  std::size_t finished_count_ = 0;                           // guarded by mutex_
};

class Run {
 public:
  Run(const Plan& plan, const std::shared_ptr<ModelHost>& host, const InferRequest& request,
      const ResponseSink& respond)
      : plan_(plan), host_(host), request_(request), respond_(respond) {
    mark_needed();
  }

  Result<void> start() {
    State state;
    state.values.resize(plan_.tensors.size());
    state.absent.assign(plan_.tensors.size(), false);
    state.done.assign(plan_.steps.size(), false);
    for (const auto& [name, slot] : plan_.inputs) {
      if (const NamedTensor* input = request_.find_input(name)) {
        state.values[slot] = input->tensor;
      } else {
        state.absent[slot] = true;  // optional: the executor refused a request without another
      }
    }
    return proceed(std::move(state));
  }

 private:
  // The steps the requested outputs need (every output's when the request names none).
  void mark_needed() {
    needed_.assign(plan_.steps.size(), false);
    std::vector<Slot> wanted;
    for (const auto& [name, slot] : plan_.outputs) {
      bool asked = request_.outputs().empty();
      for (const auto& output : request_.outputs()) asked = asked || output.name == name;
      if (asked) wanted.push_back(slot);
    }
    while (!wanted.empty()) {
      const long step = plan_.producer[wanted.back()];
      wanted.pop_back();
      if (step < 0 || needed_[static_cast<std::size_t>(step)]) continue;
      needed_[static_cast<std::size_t>(step)] = true;
      for (const auto& input : plan_.steps[static_cast<std::size_t>(step)].inputs) {
        wanted.push_back(input.second);
      }
    }
  }

  bool ready(const State& state, std::size_t step) const {
    if (!needed_[step] || state.done[step]) return false;
    for (const auto& input : plan_.steps[step].inputs) {
      if (!state.values[input.second] && !state.absent[input.second]) return false;
    }
    return true;
  }

  // The step's request: the tensors it takes, those absent left out (an error for an input its
  // model needs).
  Result<InferRequest> step_request(const StepPlan& step, const State& state) const {
    InferRequest request(step.model, step.version);
    request.id(request_.request_id());
    // Each step is made for the ensemble's caller: once it went away, the next step is answered
    // unrun and the run stops, as Triton checks for cancellation between an ensemble's steps.
    request.caller(request_.caller());
    for (const auto& [name, value] : request_.parameters()) request.parameter(name, value);
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      const auto& [name, slot] = step.inputs[i];
      if (state.values[slot]) {
        request.input(name, *state.values[slot]);
      } else if (!step.optional_inputs[i]) {
        return step_error(plan_, step,
                          Error(StatusCode::InvalidArgument,
                                "its input '" + name + "' takes tensor '" + plan_.tensors[slot] +
                                    "', an optional input of the ensemble the request lacks"));
      }
    }
    for (const auto& output : step.outputs) request.output(output.first);
    return request;
  }

  // The step's outputs into `state`.
  Result<void> take_outputs(const StepPlan& step, const InferResult& result, State& state) const {
    for (const auto& [name, slot] : step.outputs) {
      const NamedTensor* output = result.find_output(name);
      if (!output) {
        return step_error(plan_, step,
                          Error(StatusCode::Internal, "the model gave no output '" + name + "'"));
      }
      state.values[slot] = output->tensor;
    }
    state.done[step.number] = true;
    return {};
  }

  Result<void> proceed(State state) {
    for (;;) {
      std::vector<std::size_t> plain;
      std::optional<std::size_t> decoupled;
      for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
        if (!ready(state, i)) continue;
        if (plan_.steps[i].decoupled) {
          if (!decoupled) decoupled = i;
        } else {
          plain.push_back(i);
        }
      }
      if (!plain.empty()) {
        if (auto ok = run_plain(plain, state); !ok) return ok;
        continue;
      }
      if (decoupled) return branch(plan_.steps[*decoupled], state);
      return finish(state);
    }
  }

  Result<void> run_plain(const std::vector<std::size_t>& steps, State& state) {
    std::vector<InferRequest> requests;
    for (auto i : steps) {
      auto request = step_request(plan_.steps[i], state);
      if (!request) return request.error();
      requests.push_back(std::move(*request));
    }
    std::vector<Result<InferResult>> results;
    if (requests.size() == 1) {
      results.push_back(host_->infer(requests.front()));
    } else {
      results = Siblings::run_all(std::move(requests), host_);
    }
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const StepPlan& step = plan_.steps[steps[k]];
      if (!results[k]) return step_error(plan_, step, results[k].error());
      if (auto ok = take_outputs(step, *results[k], state); !ok) return ok;
    }
    return {};
  }

  // A decoupled step: each of its responses goes on through the steps after it, as a run of
  // its own (Triton's ensemble carries each response downstream the same way). A step that
  // streams carries each on as it comes, inside its model's call: the model waits meanwhile, so
  // a run holds one response of it at a time. Otherwise they go on once the call has returned
  // (another step runs the same model, and would wait on what this call holds), and the run
  // holds them all until then, up to the plan's limit.
  Result<void> branch(const StepPlan& step, const State& state) {
    auto request = step_request(step, state);
    if (!request) return request.error();
    std::optional<Error> failed;  // a later step's, or the limit's: later responses are dropped
    std::vector<InferResult> held;
    auto outcome = host_->infer_responses(*request, [&](InferResult response) {
      if (failed) return;
      if (step.streams) {
        if (auto ok = carry_on(step, response, state); !ok) failed = ok.error();
      } else if (plan_.max_held_responses != 0 && held.size() == plan_.max_held_responses) {
        failed = step_error(plan_, step, too_many_held());
      } else {
        held.push_back(std::move(response));
      }
    });
    if (!outcome) return step_error(plan_, step, outcome.error());
    if (failed) return *failed;
    for (const auto& response : held) {
      if (auto ok = carry_on(step, response, state); !ok) return ok;
    }
    return {};
  }

  // One response of a decoupled step through the steps after it.
  Result<void> carry_on(const StepPlan& step, const InferResult& response, const State& state) {
    State next = state;
    if (auto ok = take_outputs(step, response, next); !ok) return ok;
    return proceed(std::move(next));
  }

  Error too_many_held() const {
    return Error(StatusCode::ResourceExhausted,
                 "it gave more than max_inflight_requests (" +
                     std::to_string(plan_.max_held_responses) +
                     ") responses, which wait for it to return: another step runs its model");
  }

  Result<void> finish(const State& state) {
    std::vector<NamedTensor> outputs;
    for (const auto& [name, slot] : plan_.outputs) {
      if (state.values[slot]) outputs.push_back({name, *state.values[slot], {}});
    }
    respond_(std::move(outputs));
    return {};
  }

  const Plan& plan_;
  const std::shared_ptr<ModelHost>& host_;
  const InferRequest& request_;
  const ResponseSink& respond_;
  std::vector<bool> needed_;
};

}  // namespace

Result<void> run(const Plan& plan, const std::shared_ptr<ModelHost>& host,
                 const InferRequest& request, const ResponseSink& respond) {
  return Run(plan, host, request, respond).start();
}

}  // namespace sonic::repository::ensemble
