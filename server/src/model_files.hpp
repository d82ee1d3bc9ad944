// The files a client sends with a model load (Triton's model repository extension:
// RepositoryModelLoad's "file:<path>" parameters, the model's directory sent with the request),
// kept in a directory private to the server for as long as the model is read from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sonic/error.hpp"

namespace sonic::server {

/// Writes a load's files into a model directory of their own, under one directory private to
/// the server (made on first need in the system's temporary directory, mode 0700), and removes
/// them when the model no longer reads them, and all of them when the server ends.
/// Thread-safe.
class ModelFiles {
 public:
  /// `max_bytes`: the most a load's files may hold together (the server's message limit).
  explicit ModelFiles(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  /// Removes every directory it made.
  ~ModelFiles();
  ModelFiles(const ModelFiles&) = delete;
  ModelFiles& operator=(const ModelFiles&) = delete;

  /// The turn of `model`'s loads and unloads through the control service: held from the files'
  /// writing to the moment the directory the model reads is settled().
  std::unique_lock<std::mutex> turn(const std::string& model);

  /// A new model directory for `model` holding `files` (Triton's parameter name, "file:" and a
  /// path within the directory, each component at most NAME_MAX bytes → the bytes): its path. An
  /// Error in Triton's words for a path that would leave the directory (absolute, "..", through a
  /// file or a link), or one the file system refuses; RESOURCE_EXHAUSTED past `max_bytes`
  /// or 4096 files. Nothing stays behind when it fails.
  Result<std::string> write(const std::string& model,
                            const std::map<std::string, std::string>& files);

  /// After a load or unload of `model`: it reads `directory` now (empty: none of these), and
  /// the directory it read before, when it was one of these, is removed.
  void settle(const std::string& model, const std::string& directory);

  /// Removes a directory write() made that no model reads (its load failed).
  void discard(const std::string& directory);

 private:
  Result<std::string> new_directory();

  const std::size_t max_bytes_;
  std::mutex mutex_;                                          // guards what follows
  std::string root_;                                          // empty until the first write
  std::uint64_t made_ = 0;                                    // directories made, for names
  std::map<std::string, std::string> in_use_;                 // model → directory it reads
  std::map<std::string, std::shared_ptr<std::mutex>> turns_;  // one per model name loaded
};

}  // namespace sonic::server
