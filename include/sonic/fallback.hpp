// sonic — what a client's CPU fallback must answer (ClientOptions::fallback). CpuExecutor is
// the one sonic ships; the client needs nothing else of it, so a program that sets no fallback
// neither compiles nor links the executor.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic {

/// Runs requests in-process when no server can. Every member is called from any thread, at
/// once.
class Fallback {
 public:
  virtual ~Fallback() = default;

  /// Whether a request for the model can run here: loaded, or loadable on first use. Called
  /// for each request a client starts and each that fails: cheap, and it loads nothing.
  virtual bool serves(const std::string& name, const std::string& version) const = 0;

  /// The model as loaded now (the client validates requests against its inputs and reads its
  /// max_batch_size); NOT_FOUND when it is not loaded. Loads nothing.
  virtual Result<std::shared_ptr<const Model>> model(const std::string& name,
                                                     const std::string& version) const = 0;

  /// Loads a model it serves but does not hold yet. May block for as long as a load takes.
  virtual Result<void> load_model(const std::string& name, const std::string& config_json) = 0;

  /// Runs a request. Contract: `done` runs exactly once, never inside this call; borrowed input
  /// tensors are read until it runs.
  virtual void infer_async(InferRequest request, Callback<InferResult> done) = 0;

  /// As infer_async(), for a client that would rather hear at once than too late: a fallback
  /// that knows what it has under way may refuse a request with a deadline
  /// (InferRequest::caller()) that it cannot answer by then, returning the error (UNAVAILABLE,
  /// reason WOULD_MISS_DEADLINE) without running it or calling `done`. CpuExecutor does, as a
  /// server's admission does (CpuExecutor::admit()); the default runs everything.
  virtual Result<void> infer_async_in_time(InferRequest request, Callback<InferResult> done) {
    infer_async(std::move(request), std::move(done));
    return {};
  }
};

}  // namespace sonic
