// sonic — a repository watched for changes (Triton's --model-control-mode=poll): models added to
// it are loaded, models whose files changed are loaded again, models taken out are unloaded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "sonic/detail/export.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/repository.hpp"

namespace sonic::repository {

/// What a poll did to one model: loaded (again), or unloaded (`unloaded` true); `outcome` is
/// the load's result.
struct WatchEvent {
  std::string model;
  bool unloaded = false;
  Result<void> outcome;
};

/// Polls `repository` every `period` on a thread of its own, and applies what changed to
/// `executor` (whose source it should be). A model's files are compared by path, size and
/// modification time. Stops, and joins its thread, on destruction.
class SONIC_EXPORT RepositoryWatch {
 public:
  /// `on_event` runs on the watch's thread after each change (for a log). The models present
  /// now are taken as loaded already: the first poll changes nothing that did not change.
  RepositoryWatch(std::shared_ptr<CpuExecutor> executor,
                  std::shared_ptr<const Repository> repository, std::chrono::milliseconds period,
                  std::function<void(const WatchEvent&)> on_event = {});
  ~RepositoryWatch();
  RepositoryWatch(const RepositoryWatch&) = delete;
  RepositoryWatch& operator=(const RepositoryWatch&) = delete;

  /// One poll now, on the calling thread (tests; the thread polls on its own as well).
  void poll();

 private:
  void run();

  std::shared_ptr<CpuExecutor> executor_;
  std::shared_ptr<const Repository> repository_;
  std::chrono::milliseconds period_;
  std::function<void(const WatchEvent&)> on_event_;
  std::mutex poll_mutex_;                    // one poll at a time
  std::map<std::string, std::string> seen_;  // model -> fingerprint of its files
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sonic::repository
