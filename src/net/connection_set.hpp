// The live connections of a server, so that stopping it can close them. A connection leaves
// the set when it ends: a server that has seen a million connections holds only those open.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace sonic::net {

/// Thread-safe.
template <typename Connection>
class ConnectionSet {
 public:
  /// Adds a connection; false when the set is closed (the server stops): drop it then.
  bool add(const std::shared_ptr<Connection>& connection) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
    live_.emplace(connection.get(), connection);
    return true;
  }
  /// Removes a connection that ended.
  void remove(const Connection* connection) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(connection);
  }
  /// Closes the set and returns the connections still alive, to be shut down.
  std::vector<std::shared_ptr<Connection>> close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    std::vector<std::shared_ptr<Connection>> alive;
    for (auto& [raw, weak] : live_) {
      if (auto connection = weak.lock()) alive.push_back(std::move(connection));
    }
    live_.clear();
    return alive;
  }
  /// Calls `visit(const std::shared_ptr<Connection>&)` for each live connection, under the
  /// set's lock: `visit` must not add or remove connections.
  template <typename Visit>
  void for_each(Visit visit) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [raw, weak] : live_) {
      if (auto connection = weak.lock()) visit(connection);
    }
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }

 private:
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> live_;
};

}  // namespace sonic::net
