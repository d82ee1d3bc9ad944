// sonic — the ModelHost an executor lends the models it loads.
#include "executor/engine_host.hpp"

#include <utility>

#include "executor/executor_engine.hpp"
#include "executor/request_caller.hpp"

namespace sonic::detail {

class EngineHost::Use {
 public:
  explicit Use(EngineHost& host) : host_(host) {
    std::lock_guard<std::mutex> lock(host_.mutex_);
    if (host_.detaching_) return;
    engine_ = host_.engine_;
    ++host_.calls_;
  }
  ~Use() {
    if (!engine_) return;
    std::lock_guard<std::mutex> lock(host_.mutex_);
    if (--host_.calls_ == 0) host_.idle_.notify_all();
  }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;

  ExecutorEngine* engine() const { return engine_; }

  static Error gone() {
    return Error(StatusCode::Unavailable, "the executor that loaded this model is shutting down");
  }

 private:
  EngineHost& host_;
  ExecutorEngine* engine_ = nullptr;
};

void EngineHost::detach() {
  std::unique_lock<std::mutex> lock(mutex_);
  detaching_ = true;
  idle_.wait(lock, [this] { return calls_ == 0; });
  engine_ = nullptr;
}

// A model's calls run on the thread of the execution that makes them: a call that names no
// caller is made for that execution's (for_caller_here), so that an ensemble's steps and a
// Python model's BLS calls stop once their request's caller went away.

Result<InferResult> EngineHost::infer(const InferRequest& request) {
  Use use(*this);
  if (!use.engine()) return Use::gone();
  std::optional<InferRequest> adopted;
  return use.engine()->infer_scheduled(for_caller_here(request, adopted));
}

Result<void> EngineHost::infer_responses(const InferRequest& request,
                                         const std::function<void(InferResult)>& respond) {
  Use use(*this);
  if (!use.engine()) return Use::gone();
  std::optional<InferRequest> adopted;
  return use.engine()->infer_responses(for_caller_here(request, adopted), respond);
}

Result<std::shared_ptr<const Model>> EngineHost::load(const std::string& name,
                                                      const std::string& version) {
  Use use(*this);
  if (!use.engine()) return Use::gone();
  return use.engine()->load_for_host(name, version);
}

bool EngineHost::ready(const std::string& name, const std::string& version) {
  Use use(*this);
  // The metadata of a model held and in service: what the server's ModelReady answers from.
  return use.engine() && use.engine()->metadata(name, version).ok();
}

void EngineHost::run_async(UniqueFunction<void()> work) {
  Use use(*this);
  if (!use.engine()) {
    // The pool is going too: the work runs here, and its own calls answer UNAVAILABLE.
    work();
    return;
  }
  use.engine()->run_async(std::move(work));
}

void EngineHost::retire(const std::string& name, const std::string& reason) {
  Use use(*this);
  if (use.engine()) use.engine()->retire(name, reason);
}

}  // namespace sonic::detail
