#include "sonic/repository/watch.hpp"

#include <algorithm>
#include <filesystem>

namespace sonic::repository {

namespace fs = std::filesystem;

namespace {

// Every file under the model's directory with its size and modification time, in path order:
// equal strings mean nothing a load reads has changed.
std::string fingerprint(const std::string& directory) {
  std::vector<std::string> lines;
  std::error_code error;
  for (fs::recursive_directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    auto size = it->file_size(error);
    auto time = it->last_write_time(error).time_since_epoch().count();
    lines.push_back(it->path().string() + " " + std::to_string(size) + " " + std::to_string(time));
  }
  std::sort(lines.begin(), lines.end());
  std::string all;
  for (const auto& line : lines) all += line + "\n";
  return all;
}

}  // namespace

RepositoryWatch::RepositoryWatch(std::shared_ptr<CpuExecutor> executor,
                                 std::shared_ptr<const Repository> repository,
                                 std::chrono::milliseconds period,
                                 std::function<void(const WatchEvent&)> on_event)
    : executor_(std::move(executor)),
      repository_(std::move(repository)),
      period_(period),
      on_event_(std::move(on_event)) {
  for (const auto& name : repository_->model_names()) {
    if (auto directory = repository_->model_directory(name)) seen_[name] = fingerprint(*directory);
  }
  thread_ = std::thread([this] { run(); });
}

RepositoryWatch::~RepositoryWatch() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
}

void RepositoryWatch::run() {
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stop_signal_.wait_for(lock, period_, [this] { return stopping_; })) {
    lock.unlock();
    poll();
    lock.lock();
  }
}

void RepositoryWatch::poll() {
  std::lock_guard<std::mutex> one_poll(poll_mutex_);
  std::map<std::string, std::string> now;
  for (const auto& name : repository_->model_names()) {
    if (auto directory = repository_->model_directory(name)) now[name] = fingerprint(*directory);
  }
  for (const auto& [name, print] : now) {
    auto before = seen_.find(name);
    if (before != seen_.end() && before->second == print) continue;
    WatchEvent event{name, false, executor_->load_model(name)};
    if (on_event_) on_event_(event);
  }
  for (const auto& [name, print] : seen_) {
    if (now.count(name)) continue;
    WatchEvent event{name, true, executor_->unload_model(name)};
    if (on_event_) on_event_(event);
  }
  seen_ = std::move(now);
}

}  // namespace sonic::repository
