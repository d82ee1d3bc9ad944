// Which load of each Python model version is in service, per host. A stub of an older load that
// breaks after a reload (its request outlived the reload) must not retire the load that replaced
// it, as ModelHost::retire takes whatever is in service under the name: a model asks here
// whether it is still the current load before it retires itself.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "sonic/model.hpp"

namespace sonic::python_backend {

class PythonModel;

/// The registry of current loads. Thread-safe; each call holds its mutex briefly.
class CurrentLoads {
 public:
  /// The process's one registry, never destroyed: stubs may break until the process ends.
  static CurrentLoads& get();

  /// Records `model` as the load in service of `name` `version` on `host` (held weakly: an
  /// unloaded model is forgotten).
  void set(const ModelHost* host, const std::string& name, const std::string& version,
           const std::shared_ptr<PythonModel>& model);

  /// Whether `model` is the load in service of `name` `version` on `host`.
  bool is_current(const ModelHost* host, const std::string& name, const std::string& version,
                  const PythonModel* model);

 private:
  std::mutex mutex_;
  std::map<std::tuple<const ModelHost*, std::string, std::string>, std::weak_ptr<PythonModel>>
      loads_;
};

}  // namespace sonic::python_backend
