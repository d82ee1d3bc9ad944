// sonic — the ModelHost an executor lends the models it loads (ensembles, Python models' BLS
// calls): each call reaches the executor's engine while it lives, and answers UNAVAILABLE once
// the engine is going.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "sonic/model.hpp"

namespace sonic::detail {

class ExecutorEngine;

/// Forwards ModelHost's calls to an engine. Thread-safe.
class EngineHost final : public ModelHost {
 public:
  explicit EngineHost(ExecutorEngine& engine) : engine_(&engine) {}

  /// Ends the host's use of the engine: calls that start from now on answer UNAVAILABLE, and
  /// this waits for those under way to return. The engine calls it as it is destroyed, before
  /// its pool is joined, so that calls waiting on work of the pool can still finish.
  void detach();

  Result<InferResult> infer(const InferRequest& request) override;
  Result<void> infer_responses(const InferRequest& request,
                               const std::function<void(InferResult)>& respond) override;
  Result<std::shared_ptr<const Model>> load(const std::string& name,
                                            const std::string& version) override;
  void run_async(UniqueFunction<void()> work) override;
  void retire(const std::string& name, const std::string& reason) override;
  bool ready(const std::string& name, const std::string& version) override;

 private:
  // The engine for the length of one call: null when it is going.
  class Use;

  std::mutex mutex_;
  std::condition_variable idle_;
  ExecutorEngine* engine_;
  bool detaching_ = false;
  std::size_t calls_ = 0;
};

}  // namespace sonic::detail
