// A loaded Python model: what the executor calls to compute a request. It puts the request into
// the stub's words, takes an instance from the pool for it, and runs the execute's conversation
// on it. A stub that can no longer be trusted fails the model, which is retired (while it is the
// load in service) so that the server says why until a load brings it back.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "instance_pool.hpp"
#include "python_settings.hpp"
#include "sonic/custom_metrics.hpp"
#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "sonic/repository/backend.hpp"
#include "stub_conversation.hpp"

namespace sonic::python_backend {

/// One load of a Python model version and its instances. compute() and compute_decoupled()
/// are thread-safe; add_instance() and set_decoupled() belong to the load, before it serves.
class PythonModel {
 public:
  PythonModel(const repository::LoadContext& context, Settings settings, bool decoupled);

  PythonModel(const PythonModel&) = delete;
  PythonModel& operator=(const PythonModel&) = delete;

  /// Finalizes every stub that still runs, as Triton calls finalize() at unload: blocks up to
  /// finalize_timeout_ms and a second more for each.
  ~PythonModel();

  /// Adds a started and initialized instance. Only while loading.
  void add_instance(Instance instance);
  /// Whether requests are run as decoupled (after auto_complete_config). Only while loading.
  void set_decoupled(bool decoupled);
  /// The metrics this load's stubs made (pb_utils.MetricFamily); they end with it.
  CustomMetricOwner& metrics() { return *metrics_; }

  /// Runs `request` on a free instance: its outputs (the response's parameters attached with
  /// set_response_parameters(), so that the executor's result carries them), or the error (the
  /// request's own, the model's, or UNAVAILABLE when no instance is free within
  /// instance_wait_timeout_ms or the stub broke). Blocks for the wait and the execute (see
  /// StubConversation::execute).
  Result<std::vector<NamedTensor>> compute(const InferRequest& request);

  /// As compute(), for a decoupled model: each response's outputs go to `respond`, on this
  /// thread, before this returns.
  Result<void> compute_decoupled(const InferRequest& request, const ResponseSink& respond);

  /// As compute(), for the requests of one dynamic batch together: one execute() gets them as
  /// a list, as Triton's does, and each gets its own answer.
  std::vector<Result<std::vector<NamedTensor>>> compute_batch(
      const std::vector<const InferRequest*>& requests);

 private:
  Result<void> run(const InferRequest& request, const TakeOutputs& take);
  Result<std::string> describe(const std::vector<const InferRequest*>& requests,
                               std::uint64_t execute, std::vector<ByteRange>& buffers) const;
  Error broke(Instance& instance, const std::string& what);

  const std::string name_;
  const std::string version_;
  const std::shared_ptr<ModelHost> host_;
  const Settings settings_;
  const std::shared_ptr<CustomMetricOwner> metrics_;
  bool decoupled_;
  InstancePool pool_;
  std::atomic<std::uint64_t> executes_{0};  // the number of the last execute sent
};

}  // namespace sonic::python_backend
