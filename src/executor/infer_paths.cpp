// sonic — CpuExecutor's engine, running requests: on the caller's thread, on the pool, in a
// sequence, merged by the dynamic batcher; with each request's statistics and server timing.
#include <utility>

#include "client/batch_rows.hpp"
#include "executor/classification.hpp"
#include "executor/executor_engine.hpp"
#include "executor/request_caller.hpp"
#include "executor/request_checks.hpp"
#include "executor/response_parameters.hpp"

namespace sonic::detail {

namespace {
// Why a stateful model's request failed: the sequence batcher refuses a request that names no
// valid sequence (INVALID_ARGUMENT: OTHER) and one that finds every slot taken
// or the state bytes its limits allow (RESOURCE_EXHAUSTED: refused as a full queue refuses,
// REJECTED); any other error came from the run.
FailureReason sequence_failure(const Error& error) {
  switch (error.code()) {
    case StatusCode::InvalidArgument: return FailureReason::Other;
    case StatusCode::ResourceExhausted: return FailureReason::Rejected;
    case StatusCode::Cancelled:  // its caller, or an earlier one of its sequence, went away
    case StatusCode::DeadlineExceeded: return FailureReason::Canceled;
    default: return FailureReason::Backend;
  }
}
}  // namespace

Result<InferResult> ExecutorEngine::infer(const InferRequest& request,
                                          Clock::time_point queued_since) {
  auto found = find_or_load(request.model_name(), request.model_version());
  if (!found) return found.error();
  return infer_on(*found, request, queued_since);
}

std::optional<Result<InferResult>> ExecutorEngine::infer_if_quick(const InferRequest& request,
                                                                  std::chrono::nanoseconds budget) {
  // A model's time grows with its inputs: a large request is not taken for a quick one on
  // the strength of small ones (nor can a client make a network thread copy megabytes).
  std::size_t input_bytes = 0;
  for (const auto& input : request.inputs()) input_bytes += input.tensor.byte_size();
  if (input_bytes > CpuExecutor::kQuickInputBytes) return std::nullopt;
  auto found = find(request.model_name(), request.model_version());
  if (!found) return std::nullopt;
  Entry& entry = **found;
  const std::int64_t recent = entry.stats.recent_compute_ns();
  if (entry.batcher || entry.sequencer || entry.model.is_decoupled() || recent < 0 ||
      recent >= budget.count()) {
    return std::nullopt;
  }
  return run_counted(entry, request, Clock::now());
}

Result<void> ExecutorEngine::infer_responses(const InferRequest& request,
                                             const std::function<void(InferResult)>& respond,
                                             Clock::time_point queued_since) {
  auto found = find_or_load(request.model_name(), request.model_version());
  if (!found) return found.error();
  Entry& entry = **found;
  if (!entry.model.is_decoupled()) {
    auto result = infer_on(*found, request, queued_since);
    if (!result) return result.error();
    respond(std::move(*result));
    return {};
  }
  const Model& model = entry.model;
  auto started = Clock::now();
  entry.stats.queue.add(started - queued_since);
  if (auto why = unwanted(request, model.name)) {
    count(entry, request, false, FailureReason::Canceled, started - queued_since);
    return *why;
  }
  Result<void> outcome = check_against_model(model, entry.metadata, request);
  FailureReason failure = FailureReason::Other;
  if (outcome) {
    failure = FailureReason::Backend;
    ResponseParametersScope attached(request);
    ResponseSink sink = [&](std::vector<NamedTensor> outputs) {
      // Classification was checked with the request; the model's own outputs are kept if
      // its tensors defy their declared types.
      auto chosen = requested(model, request, outputs);
      respond(InferResult(model.name, model.version, request.request_id(),
                          chosen ? std::move(*chosen) : std::move(outputs),
                          attached.take(request)));
    };
    try {
      CallerScope scope(request.caller());
      outcome = model.decoupled(request, sink);
    } catch (const Error& e) {
      outcome = e;
    } catch (const std::exception& e) {
      outcome = Error(StatusCode::Internal, "model '" + model.name + "' failed: " + e.what());
    }
    if (!outcome && unwanted(request, model.name)) failure = FailureReason::Canceled;
  }
  count(entry, request, outcome.ok(), failure, Clock::now() - queued_since);
  return outcome;
}

void ExecutorEngine::infer_responses_async(InferRequest request,
                                           std::function<void(InferResult)> respond,
                                           Callback<void> done) {
  auto queued = Clock::now();
  pool_.post([this, request = std::move(request), respond = std::move(respond),
              done = std::move(done),
              queued]() mutable { done(infer_responses(request, respond, queued)); });
}

void ExecutorEngine::infer_async(InferRequest request, Callback<InferResult> done) {
  auto queued = Clock::now();
  // The model is looked up once, here; one that is not held yet may load on a pool thread.
  if (auto found = find(request.model_name(), request.model_version()); found) {
    std::shared_ptr<Entry> entry = std::move(*found);
    if (entry->batcher || entry->sequencer) {
      return submit_scheduled(entry, std::move(request), std::move(done), queued);
    }
    entry->stats.queued();
    pool_.post([entry = std::move(entry), request = std::move(request), done = std::move(done),
                queued]() mutable {
      entry->stats.started();
      done(infer_on(entry, request, queued));
    });
    return;
  }
  pool_.post([this, request = std::move(request), done = std::move(done), queued]() mutable {
    auto found = find_or_load(request.model_name(), request.model_version());
    if (!found) return done(found.error());
    if ((*found)->batcher || (*found)->sequencer) {
      return submit_scheduled(*found, std::move(request), std::move(done), queued);
    }
    done(infer_on(*found, request, queued));
  });
}

void ExecutorEngine::count(Entry& entry, const InferRequest& request, bool succeeded,
                           FailureReason if_failed, Clock::duration elapsed) {
  if (succeeded) return entry.stats.count_success(inferences_in(entry.model, request), elapsed);
  entry.stats.count_failure(if_failed, elapsed);
}

// The outputs the request asked for (all of them when it named none), in its order; one
// asked for with "classification" as its top classes (Triton's classification extension).
Result<std::vector<NamedTensor>> ExecutorEngine::requested(const Model& model,
                                                           const InferRequest& request,
                                                           std::vector<NamedTensor> computed) {
  if (request.outputs().empty()) return computed;
  std::vector<NamedTensor> outputs;
  static const std::vector<std::string> kNoLabels;
  for (const auto& wanted : request.outputs()) {
    auto k = detail::requested_class_count(wanted);
    if (!k) return k.error();
    for (auto& out : computed) {
      if (out.name != wanted.name) continue;
      if (*k == 0) {
        outputs.push_back(out);
        continue;
      }
      auto labels = model.labels.find(out.name);
      auto classes = detail::classify(out.tensor, model.max_batch_size > 0, *k,
                                      labels == model.labels.end() ? kNoLabels : labels->second);
      if (!classes) return classes.error();
      outputs.push_back({out.name, std::move(*classes), out.parameters});
    }
  }
  return outputs;
}

Result<InferResult> ExecutorEngine::run(const Model& model, const InferRequest& request,
                                        Entry& entry, FailureReason& failure) {
  auto t0 = Clock::now();
  // Nobody waits for it any more: answered, never run (the last look before the model; the
  // queues before this one looked too).
  if (auto why = unwanted(request, model.name)) {
    failure = FailureReason::Canceled;
    return *why;
  }
  failure = FailureReason::Other;
  if (auto ok = check_against_model(model, entry.metadata, request); !ok) return ok.error();
  auto t1 = Clock::now();
  entry.stats.compute_input.add(t1 - t0);
  ResponseParametersScope attached(request);
  Result<std::vector<NamedTensor>> computed = [&] {
    CallerScope scope(request.caller());  // the model's own calls are made for this caller
    return compute_guarded(model, request);
  }();
  auto t2 = Clock::now();
  entry.stats.compute_infer.add(t2 - t1);
  entry.stats.remember_compute_time(t2 - t1);
  entry.stats.execution_ended(t2);
  if (!computed) {
    // A model that stops because its caller went away (a Python model that asks
    // is_cancelled(), an ensemble whose step was answered unrun) failed for that.
    failure = unwanted(request, model.name) ? FailureReason::Canceled : FailureReason::Backend;
    return computed.error();
  }
  auto outputs = requested(model, request, std::move(*computed));
  entry.stats.compute_output.add(Clock::now() - t2);
  if (!outputs) return outputs.error();
  return InferResult(model.name, model.version, request.request_id(), std::move(*outputs),
                     attached.take(request));
}

// One request run on the calling thread, with its statistics and server timing.
Result<InferResult> ExecutorEngine::run_counted(Entry& entry, const InferRequest& request,
                                                Clock::time_point queued_since) {
  auto started = Clock::now();
  entry.stats.queue.add(started - queued_since);
  FailureReason failure = FailureReason::Other;
  auto result = run(entry.model, request, entry, failure);
  auto finished = Clock::now();
  count(entry, request, result.ok(), failure, finished - queued_since);
  if (result) {
    result->timing().server_queue = started - queued_since;
    result->timing().server_compute = finished - started;
  }
  return result;
}

// infer() of a model found: on this thread (a stateful model's sequence queue included).
Result<InferResult> ExecutorEngine::infer_on(const std::shared_ptr<Entry>& entry,
                                             const InferRequest& request,
                                             Clock::time_point queued) {
  if (entry->model.is_decoupled()) {
    // Triton's code (UNSUPPORTED is UNIMPLEMENTED on gRPC) and words (infer_handler.cc).
    return Error(StatusCode::Unimplemented,
                 "ModelInfer RPC doesn't support models with decoupled transaction policy "
                 "(model '" +
                     entry->model.name + "' answers through a stream)");
  }
  if (entry->sequencer) return run_in_sequence(entry, request, queued);
  return run_counted(*entry, request, queued);
}

// The model's function, its exceptions made errors.
Result<std::vector<NamedTensor>> ExecutorEngine::compute_guarded(const Model& model,
                                                                 const InferRequest& request) {
  try {
    return model.compute(request);
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    return Error(StatusCode::Internal, "model '" + model.name + "' failed: " + e.what());
  }
}

// A request for a batching or stateful model, checked on its own first (a bad one fails
// alone, at once), then queued.
void ExecutorEngine::submit_scheduled(const std::shared_ptr<Entry>& entry, InferRequest request,
                                      Callback<InferResult> done, Clock::time_point queued) {
  if (entry->batcher) return submit_to_batcher(entry, std::move(request), std::move(done), queued);
  if (auto ok = check_against_model(entry->model, entry->metadata, request); !ok) {
    count(*entry, request, false, FailureReason::Other, Clock::now() - queued);
    pool_.post([done = std::move(done), error = ok.error()]() mutable { done(error); });
    return;
  }
  entry->sequencer->submit(std::move(request),
                           [entry, done = std::move(done), queued](
                               const InferRequest& r, Result<std::vector<NamedTensor>> outputs,
                               Clock::time_point started) mutable {
                             done(sequence_result(*entry, r, std::move(outputs), queued, started));
                           });
}

// infer() of a stateful model: its turn in its sequence, on this thread.
Result<InferResult> ExecutorEngine::run_in_sequence(const std::shared_ptr<Entry>& entry,
                                                    const InferRequest& request,
                                                    Clock::time_point queued) {
  if (auto ok = check_against_model(entry->model, entry->metadata, request); !ok) {
    count(*entry, request, false, FailureReason::Other, Clock::now() - queued);
    return ok.error();
  }
  Result<InferResult> result = Error(StatusCode::Internal, "the request did not run");
  entry->sequencer->run_here(
      request, [&](const InferRequest& r, Result<std::vector<NamedTensor>> outputs,
                   Clock::time_point started) {
        result = sequence_result(*entry, r, std::move(outputs), queued, started);
      });
  return result;
}

// A stateful model's request once it ran: its statistics and result.
Result<InferResult> ExecutorEngine::sequence_result(Entry& entry, const InferRequest& request,
                                                    Result<std::vector<NamedTensor>> outputs,
                                                    Clock::time_point queued,
                                                    Clock::time_point started) {
  const auto finished = Clock::now();
  Parameters parameters = take_step_parameters();  // the step's, which just ran on this thread
  if (outputs) {
    // Triton counts each execution in compute input, infer and output alike (perf_analyzer
    // refuses statistics whose counts differ). The sequence batcher's control and state inputs
    // are made inside the step: their time is in compute_infer, and compute_input counts none.
    entry.stats.queue.add(started - queued);
    entry.stats.compute_input.add(Clock::duration::zero());
    entry.stats.compute_infer.add(finished - started);
  }
  count(entry, request, outputs.ok(),
        outputs ? FailureReason::Other : sequence_failure(outputs.error()), finished - queued);
  if (!outputs) return outputs.error();
  const Model& model = entry.model;
  auto chosen = requested(model, request, std::move(*outputs));
  entry.stats.compute_output.add(Clock::now() - finished);
  if (!chosen) return chosen.error();
  InferResult result(model.name, model.version, request.request_id(), std::move(*chosen),
                     std::move(parameters));
  result.timing().server_queue = started - queued;
  result.timing().server_compute = finished - started;
  return result;
}

// A request for a batching model, checked on its own (a bad one fails alone, at once, counted):
// its batch size among the rest (check_against_model).
Result<std::int64_t> ExecutorEngine::check_for_batcher(Entry& entry, const InferRequest& request,
                                                       Clock::time_point queued) {
  Result<void> ok = check_against_model(entry.model, entry.metadata, request);
  const std::int64_t batch = detail::batch_of(request).value_or(-1);
  if (!ok) {
    count(entry, request, false, FailureReason::Other, Clock::now() - queued);
    return ok.error();
  }
  entry.stats.queued();
  return batch;
}

// A request for a batching model: checked, then queued.
void ExecutorEngine::submit_to_batcher(const std::shared_ptr<Entry>& entry, InferRequest request,
                                       Callback<InferResult> done, Clock::time_point queued) {
  auto batch = check_for_batcher(*entry, request, queued);
  if (!batch) {
    pool_.post([done = std::move(done), error = batch.error()]() mutable { done(error); });
    return;
  }
  entry->batcher->submit({std::move(request), std::move(done), queued, *batch});
}

Result<InferResult> ExecutorEngine::infer_scheduled(const InferRequest& request,
                                                    Clock::time_point queued_since) {
  auto found = find_or_load(request.model_name(), request.model_version());
  if (!found) return found.error();
  const std::shared_ptr<Entry>& entry = *found;
  // A model's function that calls its own model runs the call at once: queued, it would wait
  // behind the batch that made it (a Python model's own instance then refuses it at once).
  if (!entry->batcher || entry->batcher->runs_on_this_thread()) {
    return infer_on(entry, request, queued_since);
  }
  auto batch = check_for_batcher(*entry, request, queued_since);
  if (!batch) return batch.error();
  Result<InferResult> result = Error(StatusCode::Internal, "the request did not run");
  entry->batcher->run_here({request,
                            [&result](Result<InferResult> answer) { result = std::move(answer); },
                            queued_since, *batch});
  return result;
}

// Runs a batch the batcher formed, on a pool thread: one request as infer() runs it, several
// merged into one execution and split back. If the merged execution fails, each request runs
// alone, so that one bad request fails alone.
void ExecutorEngine::execute_batch(const std::shared_ptr<Entry>& entry,
                                   std::vector<detail::DynamicBatcher::Pending> batch) {
  if (!entry) {
    for (auto& p : batch) p.done(Error(StatusCode::Unavailable, "the model was unloaded"));
    return;
  }
  entry->stats.started(static_cast<std::int64_t>(batch.size()));
  if (batch.size() == 1) {
    auto& p = batch.front();
    return p.done(run_counted(*entry, p.request, p.queued));
  }
  if (entry->model.compute_batch) return execute_unmerged(*entry, std::move(batch));
  const Model& model = entry->model;
  const auto t0 = Clock::now();
  std::vector<const InferRequest*> parts;
  std::int64_t total = 0;
  for (const auto& p : batch) {
    parts.push_back(&p.request);
    total += p.batch;
    entry->stats.queue.add(t0 - p.queued);
  }
  InferRequest merged = detail::merge_requests(parts);
  const auto t1 = Clock::now();
  // A merged execution that fails, however, is run again request by request below.
  ResponseParametersScope attached(merged);
  Result<std::vector<NamedTensor>> computed = compute_guarded(model, merged);
  const Parameters parameters = attached.take(merged);  // each request's response carries them
  const auto t2 = Clock::now();
  entry->stats.remember_compute_time(t2 - t1);
  entry->stats.execution_ended(t2);
  // Each output's row boundaries (walked once for BYTES), then each request's rows of it.
  std::vector<std::vector<std::size_t>> bounds;
  bool sliced = computed.ok();
  for (std::size_t k = 0; sliced && k < computed->size(); ++k) {
    auto offsets = detail::row_offsets((*computed)[k].tensor, total);
    sliced = offsets.has_value();
    if (sliced) bounds.push_back(std::move(*offsets));
  }
  std::vector<std::vector<NamedTensor>> split(batch.size());
  for (std::size_t r = 0, first = 0; sliced && r < batch.size(); ++r) {
    for (std::size_t k = 0; k < computed->size(); ++k) {
      const NamedTensor& out = (*computed)[k];
      split[r].push_back(
          {out.name,
           detail::rows_of(out.tensor, bounds[k], static_cast<std::int64_t>(first), batch[r].batch),
           out.parameters});
    }
    first += static_cast<std::size_t>(batch[r].batch);
  }
  if (!sliced) {  // each on its own: only a request that fails alone fails
    for (auto& p : batch) p.done(run_counted(*entry, p.request, p.queued));
    return;
  }
  const auto t3 = Clock::now();
  entry->stats.count_batch(static_cast<std::uint64_t>(total), t0, t1, t2, t3);
  for (std::size_t r = 0; r < batch.size(); ++r) {
    auto& p = batch[r];
    entry->stats.success.add(t3 - p.queued);
    auto chosen = requested(model, p.request, std::move(split[r]));
    if (!chosen) {
      p.done(chosen.error());
      continue;
    }
    InferResult result(model.name, model.version, p.request.request_id(), std::move(*chosen),
                       parameters);
    result.timing().server_queue = t0 - p.queued;
    result.timing().server_compute = t3 - t0;
    p.done(std::move(result));
  }
}

// Runs a batch through the model's compute_batch: its requests as they came, in one execution,
// each answered with its own result.
void ExecutorEngine::execute_unmerged(Entry& entry,
                                      std::vector<detail::DynamicBatcher::Pending> batch) {
  const Model& model = entry.model;
  const auto t0 = Clock::now();
  std::vector<const InferRequest*> parts;
  std::int64_t total = 0;
  for (const auto& p : batch) {
    parts.push_back(&p.request);
    total += p.batch;
    entry.stats.queue.add(t0 - p.queued);
  }
  std::vector<Result<std::vector<NamedTensor>>> computed;
  ResponseParametersScope attached(parts);
  try {
    computed = model.compute_batch(parts);
  } catch (const std::exception& e) {
    computed.clear();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      computed.emplace_back(
          Error(StatusCode::Internal, "model '" + model.name + "' failed: " + e.what()));
    }
  }
  const auto t1 = Clock::now();
  entry.stats.remember_compute_time(t1 - t0);
  entry.stats.execution_ended(t1);
  entry.stats.count_batch(static_cast<std::uint64_t>(total), t0, t0, t1, t1);
  for (std::size_t r = 0; r < batch.size(); ++r) {
    auto& p = batch[r];
    if (r >= computed.size()) {
      p.done(Error(StatusCode::Internal, "model '" + model.name + "' gave no answer"));
      continue;
    }
    if (!computed[r]) {
      entry.stats.count_failure(FailureReason::Backend, t1 - p.queued);
      p.done(computed[r].error());
      continue;
    }
    auto chosen = requested(model, p.request, std::move(*computed[r]));
    if (!chosen) {
      entry.stats.count_failure(FailureReason::Other, t1 - p.queued);
      p.done(chosen.error());
      continue;
    }
    entry.stats.success.add(t1 - p.queued);
    InferResult result(model.name, model.version, p.request.request_id(), std::move(*chosen),
                       attached.take(p.request));
    result.timing().server_queue = t0 - p.queued;
    result.timing().server_compute = t1 - t0;
    p.done(std::move(result));
  }
}

}  // namespace sonic::detail
