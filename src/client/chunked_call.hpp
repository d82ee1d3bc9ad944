// sonic — one request with a large batch sent as chunks along its first dimension, a bounded
// number in flight, the answers joined in order into one result (Client::infer_chunked).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/batch_rows.hpp"
#include "client/cancellable.hpp"
#include "client/client_core.hpp"
#include "client/model_config_json.hpp"
#include "sonic/error.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// A request cut into chunks of rows. Its callback runs once, as `delivery` says (a user
/// callback where ClientOptions::callbacks says, never inside start() or cancel()), once no
/// chunk is in flight any more: the caller's borrowed inputs, which the chunks borrow in turn
/// (no copy), are read until then and never after.
class ChunkedCall final : public Cancellable, public std::enable_shared_from_this<ChunkedCall> {
 public:
  ChunkedCall(std::shared_ptr<ClientCore> core, InferRequest request, Deadline deadline,
              ChunkOptions options, Callback<InferResult> done, Delivery delivery)
      : core_(std::move(core)),
        request_(std::move(request)),
        deadline_(deadline),
        options_(options),
        done_(std::move(done)),
        delivery_(delivery) {
    options_.max_in_flight = std::max<std::size_t>(1, options_.max_in_flight);
  }

  /// Starts the call: asks the model's max_batch_size first when the chunk size is automatic.
  void start() {
    core_->expect_outcome();
    starting_ = std::this_thread::get_id();
    auto rows = batch_of(request_);
    if (!rows || *rows < 0) {
      fail(Error(StatusCode::InvalidArgument,
                 "infer_chunked: the inputs of a request for model '" + request_.model_name() +
                     "' must share their first (batch) dimension to be cut into chunks"));
    } else if (names_places()) {
      fail(Error(StatusCode::InvalidArgument,
                 "infer_chunked: a request whose tensors have parameters (shared-memory regions, "
                 "say) cannot be cut into chunks: every chunk would name the same place"));
    } else if (options_.rows > 0) {
      cut(*rows, options_.rows);
    } else {
      ask_max_batch(*rows);
    }
    starting_ = std::thread::id();
  }

  /// Stops the chunks in flight and sends no more; the callback gets CANCELLED.
  bool cancel() override {
    std::vector<std::shared_ptr<ClientCore::Flight>> flights;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_ || delivered_) return false;
      error_ = Error(StatusCode::Cancelled, "the request was cancelled by the caller");
      for (auto& [index, flight] : in_flight_) {
        if (flight) flights.push_back(flight);  // else being submitted: pump() stops it
      }
    }
    cancelling_ = std::this_thread::get_id();
    for (auto& flight : flights) core_->cancel(flight);
    pump();
    cancelling_ = std::thread::id();
    return true;
  }

 private:
  void ask_max_batch(std::int64_t rows) {
    std::shared_ptr<Transport> transport;
    try {
      transport = core_->control_transport();
    } catch (const Error& e) {
      return fail(e);
    }
    transport->model_config_async(
        request_.model_name(), request_.model_version(),
        std::min(deadline_, core_->control_deadline()),
        [self = shared_from_this(), rows](Result<std::string> config) {
          // On the callback threads: the fallback's copy of the model may have to be loaded
          // (seconds), which must not stall the network thread that brought the answer.
          std::optional<std::int64_t> remote;
          if (config) remote = config_max_batch_size(*config);
          self->core_->shared_callback_pool()->post([self, rows, remote] {
            self->cut(rows, self->automatic_rows(rows, remote,
                                                 self->core_->local_max_batch(self->request_)));
          });
        });
  }

  // Rows per chunk for target_chunk_bytes, within the model's max_batch_size: the server's
  // (`remote`), and the fallback's (`local`) since chunks may run there too; none known: the
  // bytes alone decide. A model without a batch dimension (max_batch_size 0) takes the
  // request whole.
  std::int64_t automatic_rows(std::int64_t rows, std::optional<std::int64_t> remote,
                              std::optional<std::int64_t> local) const {
    std::optional<std::int64_t> max_batch = remote ? remote : local;
    if (remote && local && *remote > 0 && *local > 0) max_batch = std::min(*remote, *local);
    if (max_batch && *max_batch == 0) return std::max<std::int64_t>(rows, 1);
    std::size_t bytes = 0;
    for (const auto& input : request_.inputs()) bytes += input.tensor.byte_size();
    const std::size_t row_bytes =
        rows > 0 ? std::max<std::size_t>(1, bytes / static_cast<std::size_t>(rows)) : 1;
    auto chosen = static_cast<std::int64_t>(
        std::max<std::size_t>(1, options_.target_chunk_bytes / row_bytes));
    if (max_batch && *max_batch > 0) chosen = std::min(chosen, *max_batch);
    return chosen;
  }

  void cut(std::int64_t rows, std::int64_t chunk_rows) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Cancelled while the configuration was asked: the outcome is decided (and maybe
      // delivered, the caller's inputs freed); they must not be read.
      if (error_ || delivered_) return;
      rows_ = rows;
      chunk_rows_ = std::clamp<std::int64_t>(chunk_rows, 1, std::max<std::int64_t>(rows, 1));
      chunks_ = rows == 0 ? 1 : static_cast<std::size_t>((rows + chunk_rows_ - 1) / chunk_rows_);
      results_.resize(chunks_);
      for (const auto& input : request_.inputs()) {
        auto bounds = row_offsets(input.tensor, rows);
        if (!bounds) {
          error_ =
              Error(StatusCode::InvalidArgument,
                    "infer_chunked: input '" + input.name + "' does not hold " +
                        std::to_string(rows) + " rows of shape " + to_string(input.tensor.shape()));
          break;
        }
        offsets_.push_back(std::move(*bounds));
      }
      started_ = Clock::now();
    }
    pump();
  }

  std::pair<std::int64_t, std::int64_t> rows_of_chunk(std::size_t index) const {
    const std::int64_t first = static_cast<std::int64_t>(index) * chunk_rows_;
    return {first, std::min(chunk_rows_, rows_ - first)};
  }

  InferRequest chunk(std::size_t index) const {
    const auto [first, count] = rows_of_chunk(index);
    std::vector<NamedTensor> inputs;
    for (std::size_t i = 0; i < request_.inputs().size(); ++i) {
      const auto& input = request_.inputs()[i];
      inputs.push_back(
          {input.name, rows_of(input.tensor, offsets_[i], first, count), input.parameters});
    }
    return request_.with_inputs(std::move(inputs));
  }

  // Sends chunks while the bound allows, and delivers once everything is over. Re-entrant: a
  // chunk that fails inside submit() calls back into it, and the outer call goes on.
  void pump() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (pumping_) {
      pump_again_ = true;
      return;
    }
    pumping_ = true;
    do {
      pump_again_ = false;
      while (!error_ && next_ < chunks_ && in_flight_.size() < options_.max_in_flight) {
        const std::size_t index = next_++;
        InferRequest request = chunk(index);
        in_flight_.emplace(index, nullptr);  // its flight, once submit() returns it
        lock.unlock();
        auto flight = core_->submit(
            std::move(request), deadline_,
            [self = shared_from_this(), index](Result<InferResult> result) {
              self->on_chunk(index, std::move(result));
            },
            Delivery::Direct);
        lock.lock();
        auto it = in_flight_.find(index);
        if (it == in_flight_.end()) continue;  // answered inside submit()
        it->second = flight;
        if (error_) {  // failed or cancelled while it was being submitted: stop it too
          lock.unlock();
          core_->cancel(flight);
          lock.lock();
        }
      }
    } while (pump_again_);
    pumping_ = false;
    const bool over = in_flight_.empty() && (error_ || answered_ == chunks_) && !delivered_;
    if (!over) return;
    delivered_ = true;
    Result<InferResult> outcome = error_ ? Result<InferResult>(*error_) : join();
    lock.unlock();
    const auto me = std::this_thread::get_id();
    core_->hand_over(std::move(done_), std::move(outcome), delivery_,
                     me == starting_.load() || me == cancelling_.load());
  }

  // Whether a tensor of the request names a place of its own (a shared-memory region).
  bool names_places() const {
    for (const auto& input : request_.inputs()) {
      if (!input.parameters.empty()) return true;
    }
    for (const auto& output : request_.outputs()) {
      if (output.parameters.count("shared_memory_region")) return true;
    }
    return false;
  }

  void on_chunk(std::size_t index, Result<InferResult> result) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_.erase(index);
      if (result) {
        results_[index] = std::move(*result);
        ++answered_;
      } else if (!error_) {
        const auto [first, count] = rows_of_chunk(index);
        const Error& e = result.error();
        error_ = Error(e.code(),
                       "chunk " + std::to_string(index + 1) + " of " + std::to_string(chunks_) +
                           " (rows " + std::to_string(first) + " to " +
                           std::to_string(first + count - 1) + "): " + e.message(),
                       e.reason());
        for (auto& [other, flight] : in_flight_) stopping_.push_back(flight);
      }
    }
    // The other chunks are not needed any more.
    std::vector<std::shared_ptr<ClientCore::Flight>> stop;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop.swap(stopping_);
    }
    for (auto& flight : stop) {
      if (flight) core_->cancel(flight);
    }
    pump();
  }

  void fail(Error error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::move(error);
    }
    pump();
  }

  Result<InferResult> join() {
    const InferResult& first = results_.front();
    std::vector<NamedTensor> outputs;
    for (std::size_t o = 0; o < first.outputs().size(); ++o) {
      const auto& name = first.outputs()[o].name;
      std::vector<const Tensor*> pieces;
      for (std::size_t c = 0; c < results_.size(); ++c) {
        const NamedTensor* piece = results_[c].find_output(name);
        const Tensor& model = first.outputs()[o].tensor;
        const std::int64_t rows = rows_of_chunk(c).second;
        if (!piece || piece->tensor.dtype() != model.dtype() || piece->tensor.shape().empty() ||
            piece->tensor.shape().front() != rows ||
            !std::equal(piece->tensor.shape().begin() + 1, piece->tensor.shape().end(),
                        model.shape().begin() + 1, model.shape().end())) {
          return Error(StatusCode::Internal,
                       "infer_chunked: output '" + name + "' of chunk " + std::to_string(c + 1) +
                           " is not " + std::to_string(rows) +
                           " rows like the other chunks' (the model does not answer along the "
                           "batch dimension: send the request whole)");
        }
        pieces.push_back(&piece->tensor);
      }
      outputs.push_back({name, results_.size() == 1 ? *pieces.front() : join_rows(pieces, false),
                         first.outputs()[o].parameters});
    }
    InferResult joined(first.model_name(), first.model_version(), first.request_id(),
                       std::move(outputs), first.parameters());
    joined.set_executed_on(first.executed_on());
    for (const auto& result : results_) {
      if (result.executed_on() == ExecutedOn::Local) joined.set_executed_on(ExecutedOn::Local);
      joined.timing().server_queue += result.timing().server_queue;
      joined.timing().server_compute += result.timing().server_compute;
    }
    joined.timing().total = Clock::now() - started_;
    return joined;
  }

  std::shared_ptr<ClientCore> core_;
  const InferRequest request_;
  const Deadline deadline_;
  ChunkOptions options_;
  Callback<InferResult> done_;
  const Delivery delivery_;
  // The threads inside start() and cancel(), where the callback must not run.
  std::atomic<std::thread::id> starting_{}, cancelling_{};

  std::mutex mutex_;  // guards the members below
  std::int64_t rows_ = 0, chunk_rows_ = 1;
  std::size_t chunks_ = 0, next_ = 0, answered_ = 0;
  std::vector<std::vector<std::size_t>> offsets_;  // each input's row boundaries
  std::vector<InferResult> results_;               // by chunk
  std::map<std::size_t, std::shared_ptr<ClientCore::Flight>> in_flight_;
  std::vector<std::shared_ptr<ClientCore::Flight>> stopping_;
  std::optional<Error> error_;
  Clock::time_point started_;
  bool pumping_ = false, pump_again_ = false, delivered_ = false;
};

}  // namespace sonic::detail
