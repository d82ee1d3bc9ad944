// sonic-perf — sequences, for a model whose configuration has sequence_batching (a stateful
// model: perf_analyzer's model_parser takes any such model as a sequence model). As
// perf_analyzer's sequence manager does: each sequence in progress has a slot (one per request in
// flight, or --num-of-sequences with --rate); a slot's next request continues its sequence, or
// starts a new one with START when the last ended; a sequence's last request says END. Lengths
// are --sequence-length within +/- --sequence-length-variation percent, or the steps of an
// --input-data file (a sequence sends them in order). Ids run from the start of
// --sequence-id-range, wrapping within it; an id still in use by another slot is not taken (the
// slot keeps the id it had). A sequence has one request in flight at a time, so its order on
// the wire is its order of sending: as perf_analyzer's concurrency mode (a sequence per request
// in flight), and with --rate as its --serial-sequences (by default it sends a request of a
// random sequence, whether or not one of it is out). A request due at --rate while every
// sequence has one out waits for one, and the wait counts in its latency.
#pragma once

#include <sonic/sonic.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command_line.hpp"
#include "number_option.hpp"

namespace sonic::perf {

/// The sequence options, with perf_analyzer's defaults.
struct SequenceOptions {
  int length = 20;  ///< --sequence-length
  bool length_given = false;
  double variation = 20;                 ///< --sequence-length-variation, percent of `length`
  std::uint64_t start_id = 1;            ///< the START of --sequence-id-range
  std::uint64_t id_range = 4294967295u;  ///< END - START (perf_analyzer's default: UINT32_MAX)
  int rate_sequences = 4;                ///< --num-of-sequences: sequences in progress with --rate
};

/// --sequence-id-range START[:END] (END excluded) into `o`. A START of 0 is taken as 1, as
/// perf_analyzer does (its ids start at 1: 0 is no sequence).
inline void parse_sequence_id_range(const std::string& text, SequenceOptions& o) {
  auto bad = [&](const std::string& why) {
    throw tools::UsageError("--sequence-id-range takes START[:END] (END excluded), " + why +
                            ", not '" + text + "'");
  };
  const auto colon = text.find(':');
  auto start = tools::whole_number(text.substr(0, colon));
  if (!start || *start < 0) bad("whole numbers of at least 0");
  o.start_id = *start == 0 ? 1 : static_cast<std::uint64_t>(*start);
  if (colon == std::string::npos) return;
  auto end = tools::whole_number(text.substr(colon + 1));
  if (!end || *end < 0) bad("whole numbers of at least 0");
  if (static_cast<std::uint64_t>(*end) <= o.start_id) bad("END above START");
  o.id_range = static_cast<std::uint64_t>(*end) - o.start_id;
}

/// Whether the model keeps sequences: its configuration has sequence_batching. A server
/// without ModelConfig serves no sequence model sonic-perf can drive.
inline bool is_sequence_model(Client& client, const std::string& model) {
  try {
    auto config = nlohmann::json::parse(client.model_config(model), nullptr, false);
    return config.is_object() && config.contains("sequence_batching");
  } catch (const Error&) {
    return false;
  }
}

/// The sequences of one load point. Thread-safe.
class Sequences {
 public:
  /// One request's place in its sequence.
  struct Turn {
    std::size_t slot = 0;
    std::uint64_t id = 0;
    bool start = false, end = false;
    std::size_t position = 0;  ///< 0 for the first request of the sequence
  };

  /// `slots` sequences at once; `data_steps` > 0: an --input-data file's steps, which make a
  /// sequence's length unless --sequence-length was given.
  Sequences(const SequenceOptions& options, std::size_t slots, std::size_t data_steps)
      : options_(options), data_steps_(data_steps), slots_(slots) {
    for (std::size_t i = 0; i < slots; ++i) free_.push_back(i);
  }

  /// The next request of a free slot's sequence (the one free longest), which is then busy
  /// until release(). Waits for a slot when every one has a request in flight (with --rate).
  Turn next() {
    std::unique_lock<std::mutex> lock(mutex_);
    freed_.wait(lock, [this] { return !free_.empty(); });
    auto it = free_.begin();
    if (ending_) {
      it = std::find_if(free_.begin(), free_.end(),
                        [this](std::size_t s) { return slots_[s].remaining > 0; });
      if (it == free_.end()) it = free_.begin();
    }
    Slot& slot = slots_[*it];
    Turn turn;
    turn.slot = *it;
    free_.erase(it);
    if (slot.remaining == 0) {
      slot.id = next_id(slot.id);
      slot.remaining = new_length();
      slot.sent = 0;
      turn.start = true;
    }
    if (ending_) slot.remaining = 1;
    turn.id = slot.id;
    turn.position = slot.sent++;
    turn.end = --slot.remaining == 0;
    return turn;
  }

  /// The slot's request completed: its sequence may go on.
  void release(std::size_t slot) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(slot);
    }
    freed_.notify_one();
  }

  /// Ends every sequence in progress (as perf_analyzer does once a load is measured: the
  /// server would otherwise hold them until they idle out): with nothing in flight, sends one
  /// last request with END for each through `send`, and waits for their answers.
  void end_all(const std::function<void(InferRequest, Callback<InferResult>)>& send,
               const std::function<InferRequest()>& make) {
    std::size_t open = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ending_ = true;
      for (const auto& s : slots_) open += s.remaining > 0 ? 1 : 0;
    }
    std::mutex mutex;
    std::condition_variable answered;
    std::size_t waiting = open;
    for (std::size_t i = 0; i < open; ++i) {
      send(make(), [&](Result<InferResult>) {
        std::lock_guard<std::mutex> lock(mutex);
        if (--waiting == 0) answered.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mutex);
    answered.wait(lock, [&] { return waiting == 0; });
  }

 private:
  struct Slot {
    std::uint64_t id = 0;       ///< 0: none yet
    std::size_t remaining = 0;  ///< requests of its sequence still to send; 0: ended
    std::size_t sent = 0;
  };

  // The next id of the range; one another slot's sequence holds stays with it, so this slot
  // keeps its own previous id instead.
  std::uint64_t next_id(std::uint64_t previous) {
    const std::uint64_t id = counter_++ % options_.id_range + options_.start_id;
    for (const auto& s : slots_) {
      if (s.id == id) return previous == 0 ? id : previous;
    }
    return id;
  }

  std::size_t new_length() {
    if (data_steps_ > 0 && !options_.length_given) return data_steps_;
    std::uniform_real_distribution<double> offset(-1.0, 1.0);
    const double length = options_.length;
    const auto varied =
        static_cast<long long>(length + offset(random_) * options_.variation / 100.0 * length);
    return varied < 1 ? 1 : static_cast<std::size_t>(varied);
  }

  const SequenceOptions options_;
  const std::size_t data_steps_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<Slot> slots_;
  std::deque<std::size_t> free_;
  std::uint64_t counter_ = 0;
  bool ending_ = false;
  std::mt19937 random_{11};
};

/// `send` for the requests of a sequence model: each request (made bare, without inputs) takes
/// its sequence's next turn, the inputs of the plan's step (a PlannedRequest) at its position in
/// the sequence (an
/// --input-data file's steps in order, as perf_analyzer sends a stream), and sequence_id,
/// sequence_start and sequence_end as perf_analyzer sets them; its slot is free again before
/// `done` runs, so that a request chained from `done` may continue the sequence.
template <typename Send, typename Plan>
Send in_sequences(Send inner, Sequences& sequences, const Plan& plan) {
  return [inner = std::move(inner), &sequences, &plan](InferRequest request,
                                                       Callback<InferResult> done) {
    const Sequences::Turn turn = sequences.next();
    for (const auto& in : plan[turn.position % plan.size()].inputs) {
      request.input(in.name, in.tensor);
    }
    request.sequence(turn.id, turn.start, turn.end);
    inner(std::move(request),
          [&sequences, slot = turn.slot, done = std::move(done)](Result<InferResult> r) mutable {
            sequences.release(slot);
            done(std::move(r));
          });
  };
}

}  // namespace sonic::perf
