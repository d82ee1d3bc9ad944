// Test support: an identity model that records which threads ran it.
#pragma once

#include <sonic/builtin_models.hpp>
#include <sonic/sonic.hpp>

#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace sonic::test {

/// Hands out identity models that note the thread of every call; must outlive the models.
class ThreadProbe {
 public:
  Model model(std::string name, DataType type) {
    Model probe = models::identity(std::move(name), type);
    probe.compute = [this, identity = probe.compute](const InferRequest& request) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        threads_.insert(std::this_thread::get_id());
      }
      return identity(request);
    };
    return probe;
  }

  /// How many distinct threads ran the models so far.
  std::size_t threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::thread::id> threads_;
};

}  // namespace sonic::test
