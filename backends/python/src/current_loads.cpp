#include "current_loads.hpp"

#include <iterator>

namespace sonic::python_backend {

CurrentLoads& CurrentLoads::get() {
  static CurrentLoads* loads = new CurrentLoads;  // never destroyed: used until the end
  return *loads;
}

void CurrentLoads::set(const ModelHost* host, const std::string& name, const std::string& version,
                       const std::shared_ptr<PythonModel>& model) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = loads_.begin(); it != loads_.end();) {  // those unloaded since
    it = it->second.expired() ? loads_.erase(it) : std::next(it);
  }
  loads_[{host, name, version}] = model;
}

bool CurrentLoads::is_current(const ModelHost* host, const std::string& name,
                              const std::string& version, const PythonModel* model) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loads_.find({host, name, version});
  return it != loads_.end() && it->second.lock().get() == model;
}

}  // namespace sonic::python_backend
