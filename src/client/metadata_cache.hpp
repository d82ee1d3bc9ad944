// A client's cache of model metadata, by model and version: requests are validated against it
// without a round trip, and only one request at a time fetches what is missing.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "client/model_ref.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"

namespace sonic::detail {

/// Thread-safe.
class MetadataCache {
 public:
  struct Lookup {
    std::shared_ptr<const ModelMetadata> known;  ///< cached; null when not
    bool fetch = false;  ///< not cached, and nobody fetches it: this caller does
  };

  /// What is known of `model`. While nothing is, exactly one caller is told to fetch it, until
  /// remember() or forget(); the others go on without waiting (waiting for another request's
  /// fetch could outlast their own deadline).
  Lookup lookup(const ModelRef& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = entries_[model];
    Lookup found{entry.metadata, false};
    if (!found.known && !entry.fetching) found.fetch = entry.fetching = true;
    return found;
  }

  /// Ends the fetch of `model` with its outcome: metadata is cached; a failure is not (the
  /// model may appear later), and the next lookup fetches again.
  Result<std::shared_ptr<const ModelMetadata>> remember(const ModelRef& model,
                                                        Result<ModelMetadata> metadata) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!metadata) {
      entries_.erase(model);
      return metadata.error();
    }
    auto& entry = entries_[model];
    entry.metadata = std::make_shared<const ModelMetadata>(std::move(*metadata));
    entry.fetching = false;
    return entry.metadata;
  }

  /// Ends a fetch that could not start: the next lookup fetches.
  void forget(const ModelRef& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.erase(model);
  }

 private:
  struct Entry {
    std::shared_ptr<const ModelMetadata> metadata;
    bool fetching = false;
  };

  std::mutex mutex_;
  std::map<ModelRef, Entry> entries_;
};

}  // namespace sonic::detail
