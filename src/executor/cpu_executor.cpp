// sonic — CpuExecutor: the public face of the executor's engine (executor_engine.hpp).
#include "sonic/executor.hpp"

#include <utility>

#include "executor/executor_engine.hpp"

namespace sonic {

CpuExecutor::CpuExecutor(std::size_t threads) : CpuExecutor(CpuExecutorOptions{threads, {}}) {}

CpuExecutor::CpuExecutor(CpuExecutorOptions options)
    : engine_(std::make_unique<detail::ExecutorEngine>(std::move(options))) {}

CpuExecutor::~CpuExecutor() = default;

std::shared_ptr<CpuExecutor> CpuExecutor::with_models(std::vector<Model> models,
                                                      std::size_t threads) {
  return with_models(std::move(models), CpuExecutorOptions{threads, {}});
}

std::shared_ptr<CpuExecutor> CpuExecutor::with_models(std::vector<Model> models,
                                                      CpuExecutorOptions options) {
  auto executor = std::make_shared<CpuExecutor>(std::move(options));
  for (auto& model : models) executor->add_model(std::move(model));
  return executor;
}

void CpuExecutor::add_model(Model model) { engine_->add_model(std::move(model)); }

bool CpuExecutor::has_model(const std::string& name, const std::string& version) const {
  return engine_->has_model(name, version);
}

Result<void> CpuExecutor::unload_model(const std::string& name) {
  return engine_->unload_model(name);
}

Result<void> CpuExecutor::load_model(const std::string& name, const std::string& config_json) {
  return engine_->load_model(name, config_json);
}

Result<void> CpuExecutor::load_model_from(const std::string& name, const std::string& directory,
                                          const std::string& config_json) {
  return engine_->load_model(name, config_json, directory);
}

void CpuExecutor::set_load_timeout(std::chrono::milliseconds timeout) {
  engine_->set_load_timeout(timeout);
}

void CpuExecutor::set_source(std::shared_ptr<const ModelSource> source, bool on_demand) {
  engine_->set_source(std::move(source), on_demand);
}

std::vector<ModelIndex> CpuExecutor::repository_index() const {
  return engine_->repository_index();
}

std::vector<std::string> CpuExecutor::model_names() const { return engine_->model_names(); }

bool CpuExecutor::serves(const std::string& name, const std::string& version) const {
  return engine_->serves(name, version);
}

bool CpuExecutor::batches(const std::string& name, const std::string& version) const {
  return engine_->batches(name, version);
}

Result<ModelMetadata> CpuExecutor::metadata(const std::string& name,
                                            const std::string& version) const {
  return engine_->metadata(name, version);
}

Result<std::shared_ptr<const Model>> CpuExecutor::model(const std::string& name,
                                                        const std::string& version) const {
  return engine_->model(name, version);
}

Result<Admission> CpuExecutor::admit(const InferRequest& request, bool shed) {
  return engine_->admit(request, shed);
}

Result<InferResult> CpuExecutor::infer(const InferRequest& request,
                                       Clock::time_point queued_since) {
  return engine_->infer(request, queued_since);
}

std::optional<Result<InferResult>> CpuExecutor::infer_if_quick(const InferRequest& request,
                                                               std::chrono::nanoseconds budget) {
  return engine_->infer_if_quick(request, budget);
}

Result<void> CpuExecutor::infer_responses(const InferRequest& request,
                                          const std::function<void(InferResult)>& respond,
                                          Clock::time_point queued_since) {
  return engine_->infer_responses(request, respond, queued_since);
}

void CpuExecutor::infer_responses_async(InferRequest request,
                                        std::function<void(InferResult)> respond,
                                        Callback<void> done) {
  engine_->infer_responses_async(std::move(request), std::move(respond), std::move(done));
}

void CpuExecutor::infer_async(InferRequest request, Callback<InferResult> done) {
  engine_->infer_async(std::move(request), std::move(done));
}

Result<void> CpuExecutor::infer_async_in_time(InferRequest request, Callback<InferResult> done) {
  auto admitted = admit(request, /*shed=*/true);
  if (!admitted) return admitted.error();
  // The admission counts the request until its answer has been handed over.
  engine_->infer_async(std::move(request),
                       [held = std::move(*admitted), done = std::move(done)](
                           Result<InferResult> result) mutable { done(std::move(result)); });
  return {};
}

void CpuExecutor::run_async(detail::UniqueFunction<void()> work) {
  engine_->run_async(std::move(work));
}

std::size_t CpuExecutor::threads() const { return engine_->threads(); }

Result<ModelStatistics> CpuExecutor::statistics(const std::string& name,
                                                const std::string& version) const {
  return engine_->statistics(name, version);
}

std::vector<ModelStatistics> CpuExecutor::all_statistics() const {
  return engine_->all_statistics();
}

}  // namespace sonic
