// sonic — requests of a stateful model routed by sequence, as Triton's sequence batcher routes
// them: each sequence's requests run one at a time in the order they came, with the control
// inputs the model asks for (start, end, ready, correlation id) and its implicit state carried
// from one request to the next.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "executor/request_caller.hpp"
#include "sonic/batching.hpp"
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/request.hpp"

namespace sonic::detail {

/// Routes the requests of one stateful model. Thread-safe; held by shared_ptr (its queued work
/// keeps it alive).
class SequenceBatcher : public std::enable_shared_from_this<SequenceBatcher> {
 public:
  using Clock = std::chrono::steady_clock;
  /// Runs the model on a request with its control and state inputs added; its outputs include
  /// the state outputs. Called on the thread that runs the sequence, never for two requests of
  /// one sequence at once.
  using Compute = std::function<Result<std::vector<NamedTensor>>(const InferRequest&)>;
  /// Hands a function to the executor's threads.
  using Post = std::function<void(UniqueFunction<void()>)>;
  /// A request's end: its own request, the model's outputs without the state outputs (or why
  /// it failed), and when it began to run.
  using Done = UniqueFunction<void(const InferRequest& request,
                                   Result<std::vector<NamedTensor>> outputs, Clock::time_point)>;

  SequenceBatcher(SequenceBatching config, std::string model_name, int max_batch_size,
                  Compute compute, Post post)
      : config_(std::move(config)),
        model_name_(std::move(model_name)),
        batched_(max_batch_size > 0),
        compute_(std::move(compute)),
        post_(std::move(post)) {}

  /// Queues a request behind the earlier requests of its sequence. `done` runs exactly once, on
  /// an executor thread, never inside this call: once the request ran, or with an Error when it
  /// cannot belong to a sequence: no id, an id too long, a batch other than 1, a sequence that
  /// was not started (or was dropped as idle), or no room for another sequence (Triton's codes
  /// and words for those it also refuses). A request whose caller went away (sonic::Caller)
  /// by its turn is not run, and ends its sequence, as Triton's sequence batcher cancels a
  /// sequence whose next request was cancelled: it and the requests queued behind it are
  /// answered CANCELLED (each with its own caller's error when that one went away too), and
  /// the id needs a new START.
  void submit(InferRequest request, Done done) {
    auto sequence = route(request);
    if (!sequence) {
      post_([request = std::move(request), done = std::move(done),
             error = sequence.error()]() mutable { done(request, error, Clock::now()); });
      return;
    }
    std::shared_ptr<Sequence> s = std::move(*sequence);
    bool post_runner = false;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->queue.push_back({std::move(request), std::move(done)});
      if (s->runner == Runner::None) {
        s->runner = Runner::Posted;
        post_runner = true;
      }
    }
    if (post_runner) {
      post_([self = shared_from_this(), s] {
        {
          std::lock_guard<std::mutex> lock(s->mutex);
          if (s->runner != Runner::Posted) return;  // a caller of run_here() took the queue
          s->runner = Runner::Running;
        }
        self->drain(*s);
      });
    }
  }

  /// submit(), but waits for the request's end on the calling thread, running its sequence's
  /// queue here when no thread runs it yet (so that waiting never needs a free executor
  /// thread). `done` runs exactly once before this returns, on this thread or on the one
  /// running the sequence.
  void run_here(InferRequest request, Done done) {
    auto sequence = route(request);
    if (!sequence) return done(request, sequence.error(), Clock::now());
    std::shared_ptr<Sequence> s = std::move(*sequence);
    struct Finished {
      std::mutex mutex;
      std::condition_variable cv;
      bool done = false;
    };
    auto finished = std::make_shared<Finished>();
    bool run = false;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->queue.push_back(
          {std::move(request), [finished, done = std::move(done)](
                                   const InferRequest& r, Result<std::vector<NamedTensor>> outputs,
                                   Clock::time_point started) mutable {
             done(r, std::move(outputs), started);
             std::lock_guard<std::mutex> finished_lock(finished->mutex);
             finished->done = true;
             finished->cv.notify_all();
           }});
      // A runner posted but not started may wait behind this very thread: take its place.
      if (s->runner != Runner::Running) {
        s->runner = Runner::Running;
        run = true;
      }
    }
    if (run) drain(*s);
    std::unique_lock<std::mutex> lock(finished->mutex);
    finished->cv.wait(lock, [&] { return finished->done; });
  }

  /// Sequences in progress (started, not ended, not dropped).
  std::size_t sequences() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sequences_.size();
  }

  /// Bytes of implicit state held now.
  std::size_t state_bytes() const {
    std::lock_guard<std::mutex> lock(account_->mutex);
    return account_->bytes;
  }

 private:
  struct Queued {
    InferRequest request;
    Done done;
  };
  enum class Runner { None, Posted, Running };
  // The state bytes of all sequences: each gives its share back when it ends, is dropped, or
  // is restarted, whichever thread lets go of it last.
  struct StateAccount {
    std::mutex mutex;
    std::size_t bytes = 0;
  };
  struct Sequence {
    explicit Sequence(std::shared_ptr<StateAccount> shared) : account(std::move(shared)) {}
    ~Sequence() {
      std::lock_guard<std::mutex> lock(account->mutex);
      account->bytes -= state_bytes;
    }
    Sequence(const Sequence&) = delete;
    Sequence& operator=(const Sequence&) = delete;

    const std::shared_ptr<StateAccount> account;
    std::mutex mutex;  // guards queue, runner, idle_since and cancelled
    std::deque<Queued> queue;
    Runner runner = Runner::None;
    bool cancelled = false;  // a request's caller went away by its turn: the sequence is over
    Clock::time_point idle_since{};  // when its last request ended
    // Read and written by the one thread running the sequence (state_bytes also under
    // account->mutex).
    std::vector<Tensor> state;
    std::size_t state_bytes = 0;
    std::int64_t numeric_id = 0;
    std::string string_id;
    bool string_keyed = false;
  };
  struct Tracked {
    std::shared_ptr<Sequence> sequence;
    Clock::time_point last;  // the last request's arrival
  };

  static bool flag(const InferRequest& request, const char* name) {
    auto it = request.parameters().find(name);
    return it != request.parameters().end() && std::holds_alternative<bool>(it->second) &&
           std::get<bool>(it->second);
  }

  Error invalid(const std::string& what) const { return Error(StatusCode::InvalidArgument, what); }

  // The sequence a request belongs to, started when it says START; the checks submit() names.
  Result<std::shared_ptr<Sequence>> route(const InferRequest& request) {
    std::string key;
    std::int64_t numeric_id = 0;
    bool string_keyed = false;
    if (auto it = request.parameters().find("sequence_id"); it != request.parameters().end()) {
      if (const auto* number = std::get_if<std::int64_t>(&it->second); number && *number != 0) {
        numeric_id = *number;
      } else if (const auto* unsigned_number = std::get_if<std::uint64_t>(&it->second);
                 unsigned_number && *unsigned_number != 0) {
        numeric_id = static_cast<std::int64_t>(*unsigned_number);
      } else if (const auto* text = std::get_if<std::string>(&it->second); text && !text->empty()) {
        if (text->size() > config_.limits.max_id_bytes) {
          return invalid("model '" + model_name_ + "' takes string sequence ids of at most " +
                         std::to_string(config_.limits.max_id_bytes) + " bytes, got " +
                         std::to_string(text->size()));
        }
        key = "s" + *text;
        string_keyed = true;
      }
      if (numeric_id != 0) key = "i" + std::to_string(numeric_id);
    }
    if (key.empty()) {  // Triton's words (its sequence batcher's)
      return invalid("inference request to model '" + model_name_ +
                     "' must specify a non-zero or non-empty correlation ID");
    }
    if (batched_) {
      for (const auto& input : request.inputs()) {
        if (input.tensor.shape().empty() || input.tensor.shape().front() != 1) {
          return invalid("inference request to model '" + model_name_ +
                         "' must specify batch-size 1 due to requirements of sequence batcher");
        }
      }
    }
    const bool start = flag(request, "sequence_start");
    const bool end = flag(request, "sequence_end");
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    drop_idle(now, false);
    auto it = sequences_.find(key);
    if (it == sequences_.end()) {
      if (!start) {
        return invalid("inference request for sequence " + key.substr(1) + " to model '" +
                       model_name_ + "' must specify the START flag on the first request of " +
                       "the sequence");
      }
      if (sequences_.size() >= config_.limits.max_sequences) drop_idle(now, true);
      if (sequences_.size() >= config_.limits.max_sequences) {
        return Error(StatusCode::ResourceExhausted,
                     "model '" + model_name_ + "' has " +
                         std::to_string(config_.limits.max_sequences) +
                         " sequences in progress; end one first");
      }
      auto sequence = std::make_shared<Sequence>(account_);
      sequence->numeric_id = numeric_id;
      sequence->string_keyed = string_keyed;
      if (string_keyed) sequence->string_id = key.substr(1);
      it = sequences_.emplace(std::move(key), Tracked{std::move(sequence), now}).first;
    }
    // A START of a sequence in progress restarts it in place, behind its queued requests, as
    // Triton continues such a sequence in its slot.
    it->second.last = now;
    std::shared_ptr<Sequence> sequence = it->second.sequence;
    // Once its END is queued, the id is free: a later request needs a new START.
    if (end) sequences_.erase(it);
    return sequence;
  }

  // Forgets the sequences idle for longer than the limit (none of their requests came, queued
  // or ran in that time): with `now_or_never`, at once; else at most a few times per idle period,
  // so that each request does not walk every sequence. Called with mutex_ held.
  void drop_idle(Clock::time_point now, bool now_or_never) {
    const auto period =
        std::max<Clock::duration>(config_.limits.idle / 4, std::chrono::milliseconds(1));
    if (!now_or_never && now - last_sweep_ < period) return;
    last_sweep_ = now;
    for (auto it = sequences_.begin(); it != sequences_.end();) {
      bool idle = now - it->second.last > config_.limits.idle;
      if (idle) {
        Sequence& s = *it->second.sequence;
        std::lock_guard<std::mutex> lock(s.mutex);
        idle = s.runner == Runner::None && now - s.idle_since > config_.limits.idle;
      }
      it = idle ? sequences_.erase(it) : std::next(it);
    }
  }

  // Runs a sequence's queue until it is empty, one request at a time, on this thread.
  void drain(Sequence& s) {
    for (;;) {
      std::optional<Queued> taken;
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.queue.empty()) {
          s.runner = Runner::None;
          s.idle_since = Clock::now();
          return;
        }
        taken.emplace(std::move(s.queue.front()));
        s.queue.pop_front();
      }
      Queued& next = *taken;
      const auto started = Clock::now();
      if (auto why = cancelled_by(s, next.request)) {
        next.done(next.request, std::move(*why), started);
        continue;
      }
      auto outputs = step(s, next.request);
      // An ended sequence's state is of no more use (a new START makes a new sequence).
      if (flag(next.request, "sequence_end")) (void)replace_state(s, {});
      next.done(next.request, std::move(outputs), started);
    }
  }

  // Why a sequence's next request must not run: its caller went away, which ends the sequence
  // (its id is forgotten and its state let go of), or an earlier request's did.
  std::optional<Error> cancelled_by(Sequence& s, const InferRequest& request) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.cancelled) {
        if (auto own = unwanted(request, model_name_)) return own;
        return Error(StatusCode::Cancelled, "the sequence of model '" + model_name_ +
                                                "' was cancelled: an earlier request's caller "
                                                "went away");
      }
    }
    auto why = unwanted(request, model_name_);
    if (!why) return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.cancelled = true;
    }
    (void)replace_state(s, {});
    std::lock_guard<std::mutex> lock(mutex_);
    auto it =
        sequences_.find(s.string_keyed ? "s" + s.string_id : "i" + std::to_string(s.numeric_id));
    if (it != sequences_.end() && it->second.sequence.get() == &s) sequences_.erase(it);
    return why;
  }

  // One request of a sequence: its control and state inputs added, the model run, the state
  // outputs kept for the next request.
  Result<std::vector<NamedTensor>> step(Sequence& s, const InferRequest& request) {
    const bool start = flag(request, "sequence_start");
    const bool end = flag(request, "sequence_end");
    if (start || s.state.size() != config_.states.size()) {
      auto initial = initial_state();
      if (!initial) return initial.error();
      if (auto ok = replace_state(s, std::move(*initial)); !ok) return ok.error();
    }
    InferRequest model_request(request.model_name(), request.model_version());
    model_request.id(request.request_id());
    model_request.caller(request.caller());
    for (const auto& [name, value] : request.parameters()) model_request.parameter(name, value);
    for (const auto& input : request.inputs()) {
      model_request.input(input.name, input.tensor, input.parameters);
    }
    for (const auto& control : config_.controls) {
      auto tensor = control_tensor(control, s, start, end);
      if (!tensor) return tensor.error();
      model_request.input(control.input, std::move(*tensor));
    }
    for (std::size_t i = 0; i < config_.states.size(); ++i) {
      model_request.input(config_.states[i].input, s.state[i]);
    }
    auto computed = compute_(model_request);
    if (!computed || config_.states.empty()) return computed;
    std::vector<Tensor> next(config_.states.size());
    std::vector<NamedTensor> outputs;
    for (auto& out : *computed) {
      std::size_t i = 0;
      while (i < config_.states.size() && config_.states[i].output != out.name) ++i;
      if (i == config_.states.size()) {
        outputs.push_back(std::move(out));
      } else {
        next[i] = out.tensor.borrowed() ? out.tensor.to_owned() : std::move(out.tensor);
      }
    }
    for (std::size_t i = 0; i < next.size(); ++i) {
      const SequenceState& state = config_.states[i];
      if (next[i].dtype() != state.type || next[i].shape().empty()) {
        return Error(StatusCode::Internal, "model '" + model_name_ +
                                               "' did not give its state output '" + state.output +
                                               "' as " + to_string(state.type));
      }
    }
    if (auto ok = replace_state(s, std::move(next)); !ok) return ok.error();
    return outputs;
  }

  // The state a sequence starts with.
  Result<std::vector<Tensor>> initial_state() const {
    std::vector<Tensor> state;
    for (const auto& spec : config_.states) {
      Shape shape;
      if (batched_) shape.push_back(1);
      for (auto d : spec.initial_dims.empty() ? spec.dims : spec.initial_dims) {
        shape.push_back(d < 0 ? 1 : d);
      }
      std::vector<std::uint8_t> bytes(element_count(shape).value_or(0) * element_size(spec.type));
      if (!spec.initial.empty()) {
        if (spec.initial.size() != bytes.size()) {
          return Error(StatusCode::Internal, "the initial state of '" + spec.input + "' has " +
                                                 std::to_string(spec.initial.size()) +
                                                 " bytes, not " + std::to_string(bytes.size()));
        }
        bytes = spec.initial;
      }
      state.push_back(Tensor::copy_bytes(spec.type, std::move(shape), bytes.data(), bytes.size()));
    }
    return state;
  }

  // Makes `next` the sequence's state if all states together stay within the limit.
  Result<void> replace_state(Sequence& s, std::vector<Tensor> next) {
    std::size_t bytes = 0;
    for (const auto& t : next) bytes += t.byte_size();
    {
      std::lock_guard<std::mutex> lock(account_->mutex);
      const std::size_t others = account_->bytes - s.state_bytes;
      const std::size_t limit = config_.limits.max_state_bytes;
      if (bytes > limit - std::min(others, limit)) {
        return Error(StatusCode::ResourceExhausted, "model '" + model_name_ +
                                                        "': the sequences' state would pass " +
                                                        std::to_string(limit) + " bytes");
      }
      account_->bytes = others + bytes;
      s.state_bytes = bytes;
    }
    s.state = std::move(next);
    return {};
  }

  // A control input's tensor for one request.
  Result<Tensor> control_tensor(const SequenceControl& control, const Sequence& s, bool start,
                                bool end) const {
    Shape shape = batched_ ? Shape{1, 1} : Shape{1};
    if (control.kind == SequenceControl::Kind::CorrelationId) {
      if (control.type == DataType::Bytes) {
        const std::string id = s.string_keyed ? s.string_id : std::to_string(s.numeric_id);
        return Tensor::from_strings(std::vector<std::string>{id}, std::move(shape));
      }
      if (s.string_keyed) {
        return invalid("model '" + model_name_ + "' takes numeric sequence ids, got the string '" +
                       s.string_id + "'");
      }
      const std::uint64_t id = static_cast<std::uint64_t>(s.numeric_id);
      switch (control.type) {
        case DataType::UInt64: return Tensor::from_vector(std::vector<std::uint64_t>{id}, shape);
        case DataType::Int64:
          return Tensor::from_vector(std::vector<std::int64_t>{s.numeric_id}, shape);
        case DataType::UInt32:
          return Tensor::from_vector(std::vector<std::uint32_t>{static_cast<std::uint32_t>(id)},
                                     shape);
        default:
          return Tensor::from_vector(std::vector<std::int32_t>{static_cast<std::int32_t>(id)},
                                     shape);
      }
    }
    const bool on = control.kind == SequenceControl::Kind::Start ? start
                    : control.kind == SequenceControl::Kind::End ? end
                                                                 : true;
    const double value = on ? control.true_value : control.false_value;
    switch (control.type) {
      case DataType::Fp32:
        return Tensor::from_vector(std::vector<float>{static_cast<float>(value)}, shape);
      case DataType::Bool: {
        const std::uint8_t byte = value != 0;
        return Tensor::copy_bytes(DataType::Bool, std::move(shape), &byte, 1);
      }
      default:
        return Tensor::from_vector(std::vector<std::int32_t>{static_cast<std::int32_t>(value)},
                                   shape);
    }
  }

  const SequenceBatching config_;
  const std::string model_name_;
  const bool batched_;
  const Compute compute_;
  const Post post_;
  const std::shared_ptr<StateAccount> account_ = std::make_shared<StateAccount>();
  mutable std::mutex mutex_;                  // guards sequences_ and last_sweep_
  std::map<std::string, Tracked> sequences_;  // key: "i<number>" or "s<string>"
  Clock::time_point last_sweep_{};
};

}  // namespace sonic::detail
