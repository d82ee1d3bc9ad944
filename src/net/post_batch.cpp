// sonic networking — work held for the network threads and posted together.
#include "post_batch.hpp"

namespace sonic::net {

namespace {
thread_local PostBatch* open_batch = nullptr;
}  // namespace

PostBatch::Open::Open(PostBatch& batch) : previous_(open_batch) { open_batch = &batch; }

PostBatch::Open::~Open() { open_batch = previous_; }

PostBatch* PostBatch::current() { return open_batch; }

void PostBatch::add(std::shared_ptr<asio::io_context> io, detail::UniqueFunction<void()> work) {
  ++held_;
  for (auto& held : pending_) {
    if (held.io == io) {
      held.work.push_back(std::move(work));
      return;
    }
  }
  pending_.push_back({std::move(io), {}});
  pending_.back().work.push_back(std::move(work));
}

void PostBatch::flush() {
  std::vector<ForContext> posting;
  posting.swap(pending_);
  held_ = 0;
  for (auto& held : posting) {
    asio::io_context& io = *held.io;
    asio::post(io, [work = std::move(held.work)]() mutable {
      for (auto& each : work) each();
    });
  }
}

}  // namespace sonic::net
