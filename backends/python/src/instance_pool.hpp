// The instances of one Python model, each a stub process, and who may use which: a request
// takes a free instance for the whole of its execute, or waits for one. The wait is bounded
// (instance_wait_timeout_ms), and a wait that could never end, for an instance the waiting
// thread's own call chain holds, fails at once instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sonic/error.hpp"
#include "stub_process.hpp"

namespace sonic::python_backend {

/// One model instance: its stub, and whether a request holds it.
struct Instance {
  std::string name;  ///< Triton's model_instance_name: <group>_<index>
  StubProcess process;
  bool busy = false;  ///< guarded by the pool's mutex
};

/// The instances of one model. Thread-safe once loaded: add() belongs to the load alone, before
/// the model serves; lend() and mark_broken() are called from any thread.
class InstancePool {
 public:
  /// `model_name` names the model in errors; `wait_limit` bounds lend()'s wait (0: none).
  InstancePool(std::string model_name, std::chrono::milliseconds wait_limit);

  InstancePool(const InstancePool&) = delete;
  InstancePool& operator=(const InstancePool&) = delete;

  /// Adds a started instance. Only while loading: no instance may be lent yet, as lent
  /// instances are held by address.
  void add(Instance instance);

  /// Lends a free instance to `use`, on this thread, for as long as `use` runs, and takes it
  /// back however `use` ends (a throw included). Blocks for a free instance up to the wait
  /// limit, then UNAVAILABLE naming instance_wait_timeout_ms; UNAVAILABLE at once once the
  /// model is broken (mark_broken), or when every instance is busy and this thread holds one
  /// of them: a BLS call runs on the thread of the execute that made it, so the call would wait
  /// for its own caller (a model calling itself, or A -> B -> A), for ever.
  Result<void> lend(const std::function<Result<void>(Instance&)>& use);

  /// Fails every later lend() with `reason` (the first reason given stays), and wakes those
  /// that wait. Never blocks beyond the pool's mutex.
  void mark_broken(const std::string& reason);

  /// Calls `visit` on every instance. Only when none is lent (at unload), as it takes no lock.
  void for_each(const std::function<void(Instance&)>& visit);

 private:
  // The instances, of every model's pool, that this thread holds (see lend()).
  static thread_local std::vector<const Instance*> held_here;

  const std::string model_name_;
  const std::chrono::milliseconds wait_limit_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Instance> instances_;
  std::string broken_;  // why the model can no longer run, once it cannot
};

}  // namespace sonic::python_backend
