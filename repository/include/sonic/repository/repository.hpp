// sonic — a Triton model repository: <root>/<model>/config.pbtxt and <root>/<model>/<version>/
// holding the model file. sonic-server serves one, and a client's fallback runs the same
// directory in-process, so a job gets the same answers with or without its servers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/backend.hpp"
#include "sonic/repository/model_config.hpp"

namespace sonic::repository {

/// The models of one or more repository roots, loaded with the registered backends. A model is
/// read when loaded, not before: a broken model fails alone, with an error that names its file.
/// Thread-safe.
class SONIC_EXPORT Repository final : public ModelSource {
 public:
  /// `roots`: directories of model directories (Triton's --model-repository, repeatable).
  explicit Repository(std::vector<std::string> roots);

  /// Model directories in all roots, and models read from directories of their own
  /// (set_model_directory()), sorted (Triton skips files and hidden directories).
  std::vector<std::string> model_names() const override;

  /// Finds the model and reads its configuration (`config_json` when given), as load() does,
  /// without loading it: Triton's poll of the repository before a load.
  Result<void> poll(const std::string& name, const std::string& config_json) const override;

  /// Reads `name` from `directory.path` (which need not be in a root, nor the model in one),
  /// `directory.config_json` its configuration when a load gives none, until it is set back to
  /// an empty path. Thread-safe.
  Result<ModelDirectory> set_model_directory(const std::string& name,
                                             ModelDirectory directory) const override;

  /// Reads the model's config.pbtxt (Triton's defaults where there is none: a model file
  /// alone) or, when given, `config_json` instead (a ModelConfig as JSON), and loads the
  /// highest version its policy selects with its backend. NOT_FOUND for a name in no root;
  /// INVALID_ARGUMENT for a config or model to fix, naming the file; a name in two roots is an
  /// error, as in Triton.
  Result<Model> load(const std::string& name, const std::string& config_json = {}) const override;

  /// As load(), every version its policy selects (`latest { num_versions: N }`, `all`,
  /// `specific`), ascending: what a server serves at once. One that fails fails them all.
  Result<std::vector<Model>> load_versions(const std::string& name,
                                           const std::string& config_json = {}) const override;

  /// As load_versions(), lending the models `host`: an ensemble's steps and a Python model's
  /// BLS calls run there. Without a host (load(), load_versions()) such models fail to load.
  Result<std::vector<Model>> load_versions_hosted(
      const std::string& name, const std::string& config_json,
      const std::shared_ptr<ModelHost>& host) const override;

  /// The model's config as its config.pbtxt (or `config_json`) gives it, not yet completed by
  /// its backend.
  Result<ModelConfig> config(const std::string& name, const std::string& config_json = {}) const;

  /// The model's directory (its own, when set_model_directory() gave one); NOT_FOUND when no
  /// root has it, INVALID_ARGUMENT when two do.
  Result<std::string> model_directory(const std::string& name) const;

 private:
  Result<std::vector<Model>> load_selected(const std::string& name, const std::string& config_json,
                                           bool every_version,
                                           const std::shared_ptr<ModelHost>& host) const;

  std::vector<std::string> roots_;
  mutable std::mutex mutex_;                                       // guards own_directories_
  mutable std::map<std::string, ModelDirectory> own_directories_;  // set_model_directory()
};

/// An executor whose models come from the repositories at `roots`, each loaded on its first
/// request: the client's fallback (`ClientOptions::fallback`), which then runs the very models
/// a server of that repository serves. `threads` 0: the cores this process may use
/// (usable_cores()).
SONIC_EXPORT std::shared_ptr<CpuExecutor> executor_from_repository(std::vector<std::string> roots,
                                                                   std::size_t threads = 0);
/// The same, running its work as `options` say: a framework's scheduler, say
/// (CpuExecutorOptions::scheduler), so that the fallback shares the job's threads.
SONIC_EXPORT std::shared_ptr<CpuExecutor> executor_from_repository(std::vector<std::string> roots,
                                                                   CpuExecutorOptions options);

}  // namespace sonic::repository
