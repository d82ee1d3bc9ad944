// sonic — requests of one model merged into executions, as Triton's dynamic batcher merges them:
// the inputs of concurrent requests are joined along the batch dimension, the model runs once,
// and each request gets its rows of the outputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "sonic/detail/unique_function.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic {

/// When to merge a model's requests (Triton's ModelDynamicBatching): a batch runs as soon as it
/// reaches the model's max_batch_size or one of the preferred sizes, or once its oldest request
/// has waited max_queue_delay (0: at once, merging only what arrived while the model was busy).
struct DynamicBatching {
  std::vector<std::int64_t> preferred_batch_sizes;
  std::chrono::microseconds max_queue_delay{0};
};

namespace detail {

/// The first dimension of a request's inputs: its batch, or -1 when the inputs have none or
/// disagree (such a request runs alone).
inline std::int64_t request_batch(const InferRequest& request) {
  std::int64_t batch = -1;
  for (const auto& input : request.inputs()) {
    const Shape& shape = input.tensor.shape();
    if (shape.empty() || (batch >= 0 && shape.front() != batch)) return -1;
    batch = shape.front();
  }
  return batch;
}

/// Whether two requests can share an execution: the same inputs (names, types, and shapes past
/// the batch dimension).
inline bool mergeable(const InferRequest& a, const InferRequest& b) {
  if (a.inputs().size() != b.inputs().size()) return false;
  for (std::size_t i = 0; i < a.inputs().size(); ++i) {
    const auto& x = a.inputs()[i];
    const auto& y = b.inputs()[i];
    if (x.name != y.name || x.tensor.dtype() != y.tensor.dtype() ||
        x.tensor.dtype() == DataType::Bytes ||
        !std::equal(x.tensor.shape().begin() + 1, x.tensor.shape().end(),
                    y.tensor.shape().begin() + 1, y.tensor.shape().end())) {
      return false;
    }
  }
  return true;
}

/// One request joined from `parts` (mergeable, in order): each input's bytes one after the
/// other, its first dimension the sum of theirs. Asks for every output.
inline InferRequest merge_requests(const std::vector<const InferRequest*>& parts) {
  const InferRequest& first = *parts.front();
  InferRequest merged(first.model_name(), first.model_version());
  std::int64_t total = 0;
  for (const auto* part : parts) total += request_batch(*part);
  for (std::size_t i = 0; i < first.inputs().size(); ++i) {
    const Tensor& model_input = first.inputs()[i].tensor;
    std::size_t bytes = 0;
    for (const auto* part : parts) bytes += part->inputs()[i].tensor.byte_size();
    std::vector<std::uint8_t> joined(bytes);
    std::size_t at = 0;
    for (const auto* part : parts) {
      const Tensor& t = part->inputs()[i].tensor;
      if (t.byte_size()) std::memcpy(joined.data() + at, t.data(), t.byte_size());
      at += t.byte_size();
    }
    Shape shape = model_input.shape();
    shape.front() = total;
    auto owner = std::make_shared<std::vector<std::uint8_t>>(std::move(joined));
    const void* data = owner->data();
    merged.input(first.inputs()[i].name,
                 Tensor::from_shared(model_input.dtype(), std::move(shape), owner, data, bytes));
  }
  return merged;
}

/// Rows [offset, offset + rows) of a batched output, sharing its bytes (kept alive by the
/// slice); none when the output is not batched as `total` rows.
inline std::optional<Tensor> output_rows(const Tensor& output, std::int64_t total,
                                         std::int64_t offset, std::int64_t rows) {
  const Shape& shape = output.shape();
  if (shape.empty() || shape.front() != total || output.dtype() == DataType::Bytes || total == 0) {
    return std::nullopt;
  }
  const std::size_t row_bytes = output.byte_size() / static_cast<std::size_t>(total);
  Shape slice_shape = shape;
  slice_shape.front() = rows;
  auto keep = std::make_shared<Tensor>(output);
  const std::uint8_t* data = keep->data() + static_cast<std::size_t>(offset) * row_bytes;
  return Tensor::from_shared(output.dtype(), std::move(slice_shape), std::move(keep), data,
                             static_cast<std::size_t>(rows) * row_bytes);
}

/// The queue of one model's requests and the runners that empty it. `execute` runs one batch
/// (one request or several to merge) on the runner's thread; `post` puts a runner on the
/// executor's pool. At most `instances` runners at once, each running one batch at a time.
/// Runners keep the batcher alive (make it with std::make_shared). Thread-safe.
class DynamicBatcher : public std::enable_shared_from_this<DynamicBatcher> {
 public:
  struct Pending {
    InferRequest request;
    Callback<InferResult> done;
    Clock::time_point queued;
    std::int64_t batch = 1;
  };
  using Execute = std::function<void(std::vector<Pending>)>;
  using Post = std::function<void(UniqueFunction<void()>)>;

  DynamicBatcher(DynamicBatching policy, std::int64_t max_batch_size, int instances,
                 Execute execute, Post post)
      : policy_(std::move(policy)),
        max_batch_size_(std::max<std::int64_t>(1, max_batch_size)),
        instances_(std::max(1, instances)),
        execute_(std::move(execute)),
        post_(std::move(post)) {
    std::sort(policy_.preferred_batch_sizes.begin(), policy_.preferred_batch_sizes.end());
  }

  /// Queues a request (its batch within max_batch_size, checked by the caller). `done` runs
  /// once, on a pool thread, never inside this call.
  void submit(Pending pending) {
    std::unique_lock<std::mutex> lock(state_.mutex);
    state_.queue.push_back(std::move(pending));
    if (state_.waiting > 0) {
      lock.unlock();
      state_.changed.notify_one();
      return;
    }
    if (state_.runners >= instances_) return;  // a busy runner takes it when it is done
    ++state_.runners;
    lock.unlock();
    post_([self = shared_from_this()] { self->run(); });
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Pending> queue;
    int runners = 0;  // posted or running
    int waiting = 0;  // runners waiting for a batch to fill
  };

  // How many requests at the queue's head form the next batch now; 0 to wait for more.
  std::size_t ready(Clock::time_point now) const {
    const auto& queue = state_.queue;
    std::int64_t total = 0;
    std::size_t count = 0;
    std::size_t preferred_count = 0;
    for (const auto& p : queue) {
      if (p.batch < 0) {  // runs alone, after those before it
        if (count == 0) return 1;
        break;
      }
      if (count > 0 &&
          (!mergeable(queue.front().request, p.request) || total + p.batch > max_batch_size_)) {
        break;
      }
      total += p.batch;
      ++count;
      if (std::binary_search(policy_.preferred_batch_sizes.begin(),
                             policy_.preferred_batch_sizes.end(), total)) {
        preferred_count = count;
      }
    }
    const bool full = total >= max_batch_size_ || count < queue.size();
    if (full || policy_.max_queue_delay.count() == 0 ||
        now >= queue.front().queued + policy_.max_queue_delay) {
      return count;
    }
    return preferred_count;  // a preferred size runs at once; else wait for the delay
  }

  void run() {
    std::unique_lock<std::mutex> lock(state_.mutex);
    for (;;) {
      if (state_.queue.empty()) {
        --state_.runners;
        return;
      }
      const auto now = Clock::now();
      std::size_t take = ready(now);
      if (take == 0) {
        ++state_.waiting;
        state_.changed.wait_until(lock, state_.queue.front().queued + policy_.max_queue_delay);
        --state_.waiting;
        continue;
      }
      std::vector<Pending> batch;
      for (std::size_t i = 0; i < take; ++i) {
        batch.push_back(std::move(state_.queue.front()));
        state_.queue.pop_front();
      }
      lock.unlock();
      execute_(std::move(batch));
      lock.lock();
    }
  }

  DynamicBatching policy_;
  const std::int64_t max_batch_size_;
  const int instances_;
  Execute execute_;
  Post post_;
  State state_;
};

}  // namespace detail
}  // namespace sonic
