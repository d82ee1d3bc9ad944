#include "instance_pool.hpp"

#include <algorithm>

#include "python_settings.hpp"

namespace sonic::python_backend {

thread_local std::vector<const Instance*> InstancePool::held_here;

InstancePool::InstancePool(std::string model_name, std::chrono::milliseconds wait_limit)
    : model_name_(std::move(model_name)), wait_limit_(wait_limit) {}

void InstancePool::add(Instance instance) { instances_.push_back(std::move(instance)); }

Result<void> InstancePool::lend(const std::function<Result<void>(Instance&)>& use) {
  const auto deadline = deadline_after(wait_limit_);
  std::unique_lock<std::mutex> lock(mutex_);
  std::size_t index = 0;
  for (;;) {
    if (!broken_.empty()) return Error(StatusCode::Unavailable, broken_);
    for (index = 0; index < instances_.size() && instances_[index].busy; ++index) {
    }
    if (index < instances_.size()) break;
    for (const auto& instance : instances_) {
      if (std::find(held_here.begin(), held_here.end(), &instance) != held_here.end()) {
        return Error(StatusCode::Unavailable, "every instance of Python model '" + model_name_ +
                                                  "' is busy, and its own call chain holds one (" +
                                                  instance.name +
                                                  "): a BLS call to it would wait for itself");
      }
    }
    if (!deadline) {
      available_.wait(lock);
    } else if (available_.wait_until(lock, *deadline) == std::cv_status::timeout) {
      return Error(StatusCode::Unavailable, "no instance of Python model '" + model_name_ +
                                                "' became free within instance_wait_timeout_ms (" +
                                                std::to_string(wait_limit_.count()) + " ms)");
    }
  }
  Instance& instance = instances_[index];
  instance.busy = true;
  held_here.push_back(&instance);
  lock.unlock();
  // The instance is free again however `use` ends.
  struct Release {
    InstancePool& pool;
    Instance& instance;
    ~Release() {
      held_here.erase(std::find(held_here.begin(), held_here.end(), &instance));
      std::lock_guard<std::mutex> hold(pool.mutex_);
      instance.busy = false;
      pool.available_.notify_one();
    }
  } release{*this, instance};
  return use(instance);
}

void InstancePool::mark_broken(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_.empty()) broken_ = reason;
  }
  available_.notify_all();
}

void InstancePool::for_each(const std::function<void(Instance&)>& visit) {
  for (auto& instance : instances_) visit(instance);
}

}  // namespace sonic::python_backend
