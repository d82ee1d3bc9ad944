// sonic — client-side batching: concurrent requests of one model merged into one wire request
// along the batch dimension, the answer split back, each caller answered on its own.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/batch_rows.hpp"
#include "client/cancellable.hpp"
#include "client/client_core.hpp"
#include "client/model_config_json.hpp"
#include "client/timer_queue.hpp"
#include "sonic/error.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

class ModelBatcher;

/// A caller's request inside client-side batching, from infer_async to its callback.
struct BatchedPart final : Cancellable, std::enable_shared_from_this<BatchedPart> {
  BatchedPart(std::weak_ptr<ModelBatcher> b, InferRequest r, Deadline d, Callback<InferResult> cb,
              Delivery how, std::int64_t n)
      : batcher(std::move(b)),
        request(std::move(r)),
        deadline(d),
        done(std::move(cb)),
        delivery(how),
        rows(n) {}
  inline bool cancel() override;  // RequestHandle::cancel()

  std::weak_ptr<ModelBatcher> batcher;
  InferRequest request;
  Deadline deadline;
  Callback<InferResult> done;
  Delivery delivery;                   // as the caller's call asked (a future: Direct)
  std::int64_t rows;                   // of the merged request: its batch, or 1 when ragged
  std::atomic<bool> completed{false};  // its outcome is decided
  std::mutex mutex;                    // orders a cancel() against send_alone(); guards `alone`
  std::shared_ptr<ClientCore::Flight> alone;  // sent again by itself after a merged failure
};

/// The batching of one model's requests. Every part's callback runs once, as its delivery says
/// (a user callback where ClientOptions::callbacks says, never inside the caller's add() or
/// cancel()); a part's borrowed inputs are read until it is merged (copied) or, when it is
/// sent alone, until that request completes. Thread-safe.
class ModelBatcher : public std::enable_shared_from_this<ModelBatcher> {
 public:
  ModelBatcher(std::shared_ptr<ClientCore> core, std::string model, BatchingOptions options)
      : core_(std::move(core)), model_(std::move(model)), options_(std::move(options)) {
    if (options_.max_batch > 0) max_batch_ = options_.max_batch;
  }

  /// The rows a request would take in a merged batch, or none when it must go alone: the model
  /// cannot batch (yet: its configuration is being asked for), the request carries parameters
  /// or shared-memory inputs, or its batch fills a merged request by itself.
  std::optional<std::int64_t> rows_for(const InferRequest& request) {
    const std::int64_t max_batch = known_max_batch();
    if (max_batch <= 1 || request.inputs().empty() || !request.parameters().empty()) {
      return std::nullopt;
    }
    // Tensor parameters (shared-memory regions above all) name places each request has alone.
    for (const auto& input : request.inputs()) {
      if (!input.parameters.empty() || input.tensor.shape().empty()) return std::nullopt;
    }
    for (const auto& output : request.outputs()) {
      if (!output.parameters.empty()) return std::nullopt;
    }
    if (options_.ragged) {
      if (!source_of(request)) return std::nullopt;
      return 1;
    }
    auto batch = batch_of(request);
    if (!batch || *batch < 1 || *batch >= max_batch) return std::nullopt;
    return batch;
  }

  /// Queues a request that rows_for() accepted; `done` runs once, as `delivery` says.
  std::shared_ptr<BatchedPart> add(InferRequest request, Deadline deadline,
                                   Callback<InferResult> done, Delivery delivery,
                                   std::int64_t rows) {
    ScopedCount inside(callers_calls());
    core_->expect_outcome();
    auto part = std::make_shared<BatchedPart>(weak_from_this(), std::move(request), deadline,
                                              std::move(done), delivery, rows);
    std::vector<Merged> ready;
    bool closed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed = closed_;
      if (!closed) {
        if (!open_.empty() &&
            (!compatible(*open_.front(), *part) || open_rows_ + rows > max_batch_)) {
          ready.push_back(merge_open());
        }
        open_.push_back(part);
        open_rows_ += rows;
        if (open_rows_ >= max_batch_) {
          ready.push_back(merge_open());
        } else if (open_.size() == 1) {
          timers_->schedule(this, Clock::now() + options_.max_delay,
                            [weak = weak_from_this(), generation = generation_] {
                              if (auto self = weak.lock()) self->flush(generation);
                            });
        }
      }
    }
    if (closed) {
      complete(*part, Error(StatusCode::Cancelled, "the client was destroyed"));
      return part;
    }
    for (auto& merged : ready) send(std::move(merged));
    return part;
  }

  /// Cancels a part (RequestHandle::cancel).
  bool cancel(const std::shared_ptr<BatchedPart>& part) {
    ScopedCount inside(callers_calls());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = std::find(open_.begin(), open_.end(), part);
      if (it != open_.end()) {
        open_rows_ -= part->rows;
        open_.erase(it);
      }
    }
    // Queued (now removed) or merged (its bytes copied): nothing reads its inputs any more,
    // unless it was sent alone. Decided under the part's mutex, which send_alone() takes too:
    // either that request exists and is stopped, or it is never sent.
    std::shared_ptr<ClientCore::Flight> alone;
    bool decided = false;
    {
      std::lock_guard<std::mutex> lock(part->mutex);
      alone = part->alone;
      if (!alone) decided = !part->completed.exchange(true);
    }
    if (alone) return core_->cancel(alone);
    if (decided) {
      deliver(*part, Error(StatusCode::Cancelled, "the request was cancelled by the caller"));
    }
    return decided;
  }

  /// Adds this model's counters to a client's.
  void add_counters(ClientStats& stats) const {
    stats.batched_requests += batched_.load(std::memory_order_relaxed);
    stats.merged_requests += merged_.load(std::memory_order_relaxed);
  }

  /// Fails the queued requests with CANCELLED and takes no more; merged ones end with the
  /// core's requests.
  void close() {
    std::vector<std::shared_ptr<BatchedPart>> queued;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
      queued.swap(open_);
      open_rows_ = 0;
      ++generation_;
    }
    timers_->run_now(this);
    for (auto& part : queued)
      complete(*part, Error(StatusCode::Cancelled, "the client was destroyed"));
  }

 private:
  // A merged request and the parts it answers, in order.
  struct Merged {
    InferRequest request{""};
    Deadline deadline;
    std::vector<std::shared_ptr<BatchedPart>> parts;
    std::int64_t rows = 0;
  };

  std::int64_t known_max_batch() {
    std::int64_t known = max_batch_.load(std::memory_order_acquire);
    if (known >= 0) return known;
    const auto now = Clock::now().time_since_epoch().count();
    auto last = last_ask_ns_.load(std::memory_order_relaxed);
    if (now - last >= kAskAgain.count() &&
        last_ask_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
      ask_max_batch();
    }
    return -1;
  }

  // Asks the model's configuration for its max_batch_size; requests go one by one meanwhile.
  void ask_max_batch() {
    std::shared_ptr<Transport> transport;
    try {
      transport = core_->control_transport();
    } catch (const Error&) {
      return;  // the client is closing
    }
    transport->model_config_async(model_, {}, core_->control_deadline(),
                                  [weak = weak_from_this()](Result<std::string> config) {
                                    auto self = weak.lock();
                                    if (!self || !config) return;  // asked again after kAskAgain
                                    if (auto max_batch = config_max_batch_size(*config))
                                      self->max_batch_ = *max_batch;
                                  });
  }

  const std::string* source_of(const InferRequest& request) const {
    const std::string& wanted = options_.ragged->source_input;
    if (wanted.empty()) return &request.inputs().front().name;
    return request.find_input(wanted) ? &wanted : nullptr;
  }

  // Whether two requests can share a merged request.
  bool compatible(const BatchedPart& a, const BatchedPart& b) const {
    const InferRequest& x = a.request;
    const InferRequest& y = b.request;
    if (x.model_version() != y.model_version() || x.inputs().size() != y.inputs().size() ||
        x.headers() != y.headers() || x.compression() != y.compression() ||
        x.outputs().size() != y.outputs().size()) {
      return false;
    }
    for (std::size_t i = 0; i < x.outputs().size(); ++i) {
      if (x.outputs()[i].name != y.outputs()[i].name ||
          x.outputs()[i].parameters != y.outputs()[i].parameters) {
        return false;
      }
    }
    for (std::size_t i = 0; i < x.inputs().size(); ++i) {
      const Tensor& s = x.inputs()[i].tensor;
      const Tensor& t = y.inputs()[i].tensor;
      if (x.inputs()[i].name != y.inputs()[i].name || s.dtype() != t.dtype()) return false;
      if (!options_.ragged && !std::equal(s.shape().begin() + 1, s.shape().end(),
                                          t.shape().begin() + 1, t.shape().end())) {
        return false;
      }
    }
    return true;
  }

  void flush(std::uint64_t generation) {
    std::optional<Merged> ready;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (generation != generation_ || open_.empty()) return;  // sent full, or closed
      ready = merge_open();
    }
    send(std::move(*ready));
  }

  // The open batch as one request (its parts' inputs copied: nothing reads theirs after this),
  // and a fresh open batch. Called under mutex_, so that a cancel() finds a part either queued
  // or copied.
  Merged merge_open() {
    Merged merged;
    merged.parts.swap(open_);
    merged.rows = open_rows_;
    open_rows_ = 0;
    ++generation_;
    if (merged.parts.size() == 1) return merged;  // sent as it is: nothing to merge
    const InferRequest& first = merged.parts.front()->request;
    std::vector<NamedTensor> inputs;
    std::vector<const Tensor*> pieces(merged.parts.size());
    for (std::size_t i = 0; i < first.inputs().size(); ++i) {
      for (std::size_t p = 0; p < merged.parts.size(); ++p) {
        pieces[p] = &merged.parts[p]->request.inputs()[i].tensor;
      }
      inputs.push_back(
          {first.inputs()[i].name, join_rows(pieces, options_.ragged.has_value()), {}});
    }
    if (options_.ragged) {
      std::vector<std::int32_t> accumulated;
      std::int64_t sum = 0;
      for (const auto& part : merged.parts) {
        const Tensor& source = part->request.find_input(*source_of(part->request))->tensor;
        sum += static_cast<std::int64_t>(element_count(source.shape()).value_or(0));
        accumulated.push_back(static_cast<std::int32_t>(sum));
      }
      const auto count = static_cast<std::int64_t>(accumulated.size());
      inputs.push_back({options_.ragged->accumulated_count_input,
                        Tensor::from_vector(std::move(accumulated), {count}),
                        {}});
    }
    merged.request = first.with_inputs(std::move(inputs)).id({});
    merged.deadline = Deadline::max();
    for (const auto& part : merged.parts)
      merged.deadline = std::min(merged.deadline, part->deadline);
    return merged;
  }

  void send(Merged merged) {
    if (merged.parts.size() == 1) return send_alone(merged.parts.front());
    batched_.fetch_add(merged.parts.size(), std::memory_order_relaxed);
    merged_.fetch_add(1, std::memory_order_relaxed);
    auto parts =
        std::make_shared<std::vector<std::shared_ptr<BatchedPart>>>(std::move(merged.parts));
    const std::int64_t rows = merged.rows;
    core_->submit(
        std::move(merged.request), merged.deadline,
        [self = shared_from_this(), parts, rows](Result<InferResult> result) {
          self->answer(*parts, rows, std::move(result));
        },
        Delivery::Direct);
  }

  // The merged request's outcome, handed to each part; runs wherever it was decided.
  void answer(std::vector<std::shared_ptr<BatchedPart>>& parts, std::int64_t rows,
              Result<InferResult> result) {
    if (!result) return answer_error(parts, result.error());
    const InferResult& merged = *result;
    // Each output's row boundaries; ragged outputs have one row per request.
    const std::int64_t expected = options_.ragged ? static_cast<std::int64_t>(parts.size()) : rows;
    std::vector<std::vector<std::size_t>> offsets;
    for (const auto& output : merged.outputs()) {
      auto bounds = row_offsets(output.tensor, expected);
      if (!bounds) {
        return answer_error(
            parts,
            Error(StatusCode::Internal,
                  "client-side batching of model '" + model_ + "': output '" + output.name +
                      "' of the merged request has shape " + to_string(output.tensor.shape()) +
                      ", not " + std::to_string(expected) +
                      " rows: the model does not answer along the batch dimension; "
                      "turn batching off for it (ClientOptions::batching)"),
            false);
      }
      offsets.push_back(std::move(*bounds));
    }
    // The callbacks of every part go over together: one hop to where callbacks run.
    std::vector<ClientCore::Handoff> handoffs;
    handoffs.reserve(parts.size());
    std::int64_t first_row = 0;
    for (auto& part : parts) {
      const std::int64_t count = options_.ragged ? 1 : part->rows;
      std::vector<NamedTensor> outputs;
      for (std::size_t o = 0; o < merged.outputs().size(); ++o) {
        const auto& output = merged.outputs()[o];
        outputs.push_back({output.name,
                           detail::rows_of(output.tensor, offsets[o], first_row, count),
                           output.parameters});
      }
      first_row += count;
      InferResult own(merged.model_name(), merged.model_version(), part->request.request_id(),
                      std::move(outputs), merged.parameters());
      own.set_executed_on(merged.executed_on());
      own.timing() = merged.timing();
      if (part->completed.exchange(true)) continue;  // cancelled meanwhile
      if (part->delivery == Delivery::Direct) {
        deliver(*part, std::move(own));
      } else {
        handoffs.push_back({std::move(part->done), std::move(own)});
      }
    }
    core_->hand_over_all(std::move(handoffs), CallbackContext::in_callers_call());
  }

  // A failure of the merged request. One that a single part may have caused (an invalid input,
  // an error of the model) is asked again of each part alone, so that each gets its own
  // verdict; a deadline, the earliest of the parts', is asked again of the parts whose own
  // deadline is still ahead; any other failure (the server, the path to it) is everyone's.
  void answer_error(std::vector<std::shared_ptr<BatchedPart>>& parts, const Error& error,
                    bool retry_alone = true) {
    const StatusCode code = error.code();
    const bool one_part_may_cause = code == StatusCode::InvalidArgument ||
                                    code == StatusCode::Internal || code == StatusCode::Unknown ||
                                    code == StatusCode::OutOfRange || code == StatusCode::DataLoss;
    const auto now = Clock::now();
    for (auto& part : parts) {
      const bool again =
          parts.size() > 1 && retry_alone &&
          (one_part_may_cause || (code == StatusCode::DeadlineExceeded && part->deadline > now));
      if (again) {
        send_alone(part);
      } else {
        complete(*part, Error(error));
      }
    }
  }

  // Sends a part as the caller gave it (its borrowed inputs read until this request is over).
  void send_alone(const std::shared_ptr<BatchedPart>& part) {
    // Under the part's mutex, so that a cancel() either finds the request to stop or decides
    // the part first, and it is not sent. A request that fails inside submit() completes the
    // part there: its outcome never runs a user callback here (callers_calls()), which might
    // cancel and take the mutex again.
    ScopedCount inside(callers_calls());
    std::lock_guard<std::mutex> lock(part->mutex);
    if (part->completed) return;  // cancelled meanwhile
    part->alone = core_->submit(
        part->request, part->deadline,
        [self = shared_from_this(), part](Result<InferResult> result) {
          self->complete(*part, std::move(result));
        },
        Delivery::Direct);
  }

  // Decides a part's outcome unless it was decided; true when this call did.
  bool complete(BatchedPart& part, Result<InferResult>&& result) {
    if (part.completed.exchange(true)) return false;
    deliver(part, std::move(result));
    return true;
  }

  // Hands a decided part's outcome to its caller: a promise at once, a user callback where
  // ClientOptions::callbacks says and never inside a call of the caller's on this thread.
  void deliver(BatchedPart& part, Result<InferResult>&& result) {
    core_->hand_over(std::move(part.done), std::move(result), part.delivery,
                     CallbackContext::in_callers_call());
  }

  // This thread's calls into batchers that a caller's user callback must not run inside.
  static int& callers_calls() { return CallbackContext::callers_calls(); }

  static constexpr std::chrono::nanoseconds kAskAgain = std::chrono::seconds(5);

  std::shared_ptr<ClientCore> core_;
  const std::string model_;
  const BatchingOptions options_;
  std::shared_ptr<TimerQueue> timers_ = TimerQueue::shared();
  // The most rows per merged request: options' or the model configuration's; -1 until known.
  std::atomic<std::int64_t> max_batch_{-1};
  std::atomic<std::int64_t> last_ask_ns_{std::numeric_limits<std::int64_t>::min() / 2};
  std::atomic<std::uint64_t> batched_{0}, merged_{0};  // ClientStats
  std::mutex mutex_;                                   // guards the members below
  std::vector<std::shared_ptr<BatchedPart>> open_;     // waiting to be merged, in order
  std::int64_t open_rows_ = 0;
  std::uint64_t generation_ = 0;  // of the open batch, for its delay timer
  bool closed_ = false;
};

bool BatchedPart::cancel() {
  auto owner = batcher.lock();
  return owner && owner->cancel(shared_from_this());
}

/// The batchers of a client's models, made as ClientOptions::batching names them.
class ClientBatching {
 public:
  ClientBatching(const std::shared_ptr<ClientCore>& core, const ClientOptions& options) {
    for (const auto& [model, batching] : options.batching) {
      if (batching.ragged && batching.max_batch <= 0) {
        throw Error(StatusCode::InvalidArgument,
                    "ragged batching of model '" + model +
                        "' needs max_batch: a model that takes ragged inputs has no batch "
                        "dimension in its configuration to ask");
      }
      if (batching.ragged && batching.ragged->accumulated_count_input.empty()) {
        throw Error(StatusCode::InvalidArgument,
                    "ragged batching of model '" + model +
                        "' needs accumulated_count_input: the input that tells the model where "
                        "each request's elements end");
      }
      models_.emplace(model, std::make_shared<ModelBatcher>(core, model, batching));
    }
  }

  /// The batcher of a request's model, or nullptr when it is not batched.
  ModelBatcher* find(const InferRequest& request) const {
    auto it = models_.find(request.model_name());
    return it == models_.end() ? nullptr : it->second.get();
  }

  void close() {
    for (auto& [model, batcher] : models_) batcher->close();
  }

  void add_counters(ClientStats& stats) const {
    for (const auto& [model, batcher] : models_) batcher->add_counters(stats);
  }

 private:
  std::map<std::string, std::shared_ptr<ModelBatcher>, std::less<>> models_;
};

}  // namespace sonic::detail
