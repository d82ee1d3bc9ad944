// Handing a burst of work to the network threads with one wake-up per thread: while a
// PostBatch is open on a thread, the work that thread hands over is held and posted together
// when the batch is flushed. Posting wakes a network thread that waits in epoll (an eventfd
// write, and an inter-processor interrupt under a hypervisor); an event loop that sends the
// requests of many coroutines in one turn pays that once, not once per request.
#pragma once

#include <asio.hpp>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::net {

/// Work held for the network threads. Not thread-safe: one thread opens it (PostBatch::Open)
/// and flushes it. What it holds runs only once flushed: the owner must flush it before
/// anything waits for that work (and before it is destroyed, which flushes).
class SONIC_EXPORT PostBatch {
 public:
  PostBatch() = default;
  PostBatch(const PostBatch&) = delete;
  PostBatch& operator=(const PostBatch&) = delete;
  ~PostBatch() { flush(); }

  /// While alive, net::post() on this thread adds to `batch` instead of posting. Nests: the
  /// innermost is used.
  class SONIC_EXPORT Open {
   public:
    explicit Open(PostBatch& batch);
    ~Open();
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

   private:
    PostBatch* previous_;
  };

  /// Posts what was added: one asio::post per io_context, whose handler runs that context's
  /// work in the order added.
  void flush();

  bool empty() const { return held_ == 0; }
  /// How many pieces of work are held.
  std::size_t size() const { return held_; }

  /// The batch open on this thread, or null.
  static PostBatch* current();

  /// Adds `work` for `io`, kept alive until posted.
  void add(std::shared_ptr<asio::io_context> io, detail::UniqueFunction<void()> work);

 private:
  struct ForContext {
    std::shared_ptr<asio::io_context> io;
    std::vector<detail::UniqueFunction<void()>> work;
  };
  std::vector<ForContext> pending_;  // a burst rarely spans more than a few contexts
  std::size_t held_ = 0;
};

/// Runs `work` on `io`'s thread, never inside this call: posted now, or, while a PostBatch is
/// open on this thread, when that batch is flushed.
template <typename Work>
void post(const std::shared_ptr<asio::io_context>& io, Work&& work) {
  if (PostBatch* batch = PostBatch::current()) {
    batch->add(io, detail::UniqueFunction<void()>(std::forward<Work>(work)));
    return;
  }
  asio::post(*io, std::forward<Work>(work));
}

}  // namespace sonic::net
