// Where a connection's inference requests run, decided in one place for gRPC calls, gRPC
// streams and TCP frames: on the connection's thread (every model with inline_models, a quick
// model's request otherwise), or on the executor's threads, through the connection's share of
// them (ModelQueue) unless the model batches, whose requests all go to its batcher at once.
// Every request is admitted first (CpuExecutor::admit(): counted on its model, and refused at
// once when it would miss its deadline), and the callers of the requests under way are known
// here, so that a closed connection cancels them all.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "model_queue.hpp"
#include "server_context.hpp"
#include "sonic/caller.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::server {

/// One per connection, a member of it; used on the connection's thread only. Every answer is
/// made by an `encode` step that runs where the model ran (so that encoding and compressing
/// stay off the network thread) and handed over by a `deliver` step that runs on the
/// connection's thread, exactly once, unless the connection (`owner`) is gone by then.
/// Delivery may happen inside the dispatching call: when the model ran there, or the request
/// was refused there. A request whose caller (InferRequest::caller()) goes away before it runs
/// is answered unrun with the caller's error: by the executor, or here while it waits in the
/// connection's share (at once when cancelled: see withdraw_cancelled()).
class InferDispatch {
 public:
  /// `after_async_delivery` runs on the connection's thread after each delivery that did not
  /// happen inside a dispatching call (a gRPC connection flushes there; inside a call its
  /// caller does, once its own state is settled).
  InferDispatch(std::shared_ptr<ServerContext> context, std::shared_ptr<asio::io_context> io,
                detail::UniqueFunction<void()> after_async_delivery = {})
      : context_(std::move(context)),
        io_(std::move(io)),
        models_(context_->executor->threads()),
        after_async_delivery_(std::move(after_async_delivery)) {}

  /// The connection is gone: the callers of the requests under way are told, so that the
  /// executor's queues let their requests go; those waiting here are discarded unanswered.
  ~InferDispatch() {
    for (auto& [key, tracked] : callers_) tracked.first->cancel();
  }

  InferDispatch(const InferDispatch&) = delete;
  InferDispatch& operator=(const InferDispatch&) = delete;

  /// Runs `request` and delivers its answer: `encode(Result<InferResult>)` makes it,
  /// `deliver(answer)` hands it to the connection.
  template <class Encode, class Deliver>
  void infer(InferRequest request, std::weak_ptr<void> owner, Encode encode, Deliver deliver) {
    ServerContext& context = *context_;
    auto admitted = context.executor->admit(request, context.options.shed_early);
    if (!admitted) return deliver(encode(admitted.error()));
    if (context.options.inline_models) return deliver(encode(context.executor->infer(request)));
    if (auto quick =
            context.executor->infer_if_quick(request, context.options.quick_model_budget)) {
      return deliver(encode(std::move(*quick)));
    }
    const bool held = holds(request);
    auto caller = request.caller();
    start(held, caller,
          [this, owner = std::move(owner), held, caller, request = std::move(request),
           admission = std::move(*admitted), encode = std::move(encode),
           deliver = std::move(deliver), arrived = Clock::now()](Fate fate) mutable {
            if (fate == Fate::Drop) {
              return drop(request, caller, admission, arrived, encode, deliver);
            }
            context_->executor->infer_async(
                std::move(request),
                [back = way_back(std::move(owner), held, caller), admission = std::move(admission),
                 encode = std::move(encode),
                 deliver = std::move(deliver)](Result<InferResult> result) mutable {
                  Admission answered = std::move(admission);  // off the model's count now
                  back.hand_over(encode(std::move(result)), std::move(deliver));
                });
          });
  }

  /// Runs a request of a decoupled model, whose answers are any number of responses and then
  /// its outcome: `encode_response(InferResult)` and `deliver_response(answer)` for each
  /// response, in order, then `encode_end(Result<void>)` and `deliver_end(answer)` once. The
  /// response steps are copied (the executor takes a std::function).
  template <class EncodeResponse, class DeliverResponse, class EncodeEnd, class DeliverEnd>
  void infer_responses(InferRequest request, std::weak_ptr<void> owner,
                       EncodeResponse encode_response, DeliverResponse deliver_response,
                       EncodeEnd encode_end, DeliverEnd deliver_end) {
    ServerContext& context = *context_;
    if (context.options.inline_models) {
      auto outcome = context.executor->infer_responses(request, [&](InferResult result) {
        deliver_response(encode_response(std::move(result)));
      });
      return deliver_end(encode_end(outcome));
    }
    auto admitted = context.executor->admit(request, false);  // a stream is never shed
    if (!admitted) return deliver_end(encode_end(admitted.error()));
    const bool held = holds(request);
    auto caller = request.caller();
    start(held, caller,
          [this, owner = std::move(owner), held, caller, request = std::move(request),
           admission = std::move(*admitted), encode_response = std::move(encode_response),
           deliver_response = std::move(deliver_response), encode_end = std::move(encode_end),
           deliver_end = std::move(deliver_end), arrived = Clock::now()](Fate fate) mutable {
            if (fate == Fate::Drop) {
              return drop(request, caller, admission, arrived, encode_end, deliver_end);
            }
            auto respond = [back = way_back(owner, held, caller), encode_response,
                            deliver_response](InferResult result) {
              back.hand_over_response(encode_response(std::move(result)), deliver_response);
            };
            context_->executor->infer_responses_async(
                std::move(request), std::move(respond),
                [back = way_back(std::move(owner), held, caller), admission = std::move(admission),
                 encode_end = std::move(encode_end),
                 deliver_end = std::move(deliver_end)](Result<void> outcome) mutable {
                  Admission answered = std::move(admission);
                  back.hand_over(encode_end(outcome), std::move(deliver_end));
                });
          });
  }

  /// Runs `work()`, a request's whole way from its bytes to its answer, on an executor thread
  /// (here with inline_models), held like a request: for a request whose decoding is heavy
  /// work (TCP's compressed tensors). `deliver(answer)` as for infer(); `caller` waits for it
  /// (cancelled with the connection), and `unrun(error)` makes the answer when it went away
  /// before the work started. The work itself admits the request once it is decoded.
  template <class Work, class Unrun, class Deliver>
  void run(std::weak_ptr<void> owner, std::shared_ptr<Caller> caller, Work work, Unrun unrun,
           Deliver deliver) {
    if (context_->options.inline_models) return deliver(work());
    start(true, caller,
          [this, owner = std::move(owner), caller, work = std::move(work), unrun = std::move(unrun),
           deliver = std::move(deliver)](Fate fate) mutable {
            if (fate == Fate::Drop) {
              auto why = caller->gone(Clock::now(), "its turn").value_or(cancelled());
              return deliver_unrun(caller, unrun(std::move(why)), deliver);
            }
            context_->executor->run_async([back = way_back(std::move(owner), true, caller),
                                           work = std::move(work),
                                           deliver = std::move(deliver)]() mutable {
              back.hand_over(work(), std::move(deliver));
            });
          });
  }

  /// Drops the requests waiting in the connection's share whose caller was cancelled (call it
  /// once a stream was reset): they are answered unrun at once, so that a client that opens and
  /// resets streams makes the server hold nothing for them.
  void withdraw_cancelled() { models_.withdraw_cancelled(); }

  /// Cancels the caller of every request under way (call it when the connection is lost, while
  /// the connection's delivery steps may still be called: they find nothing to answer), and
  /// drops those waiting here, counted as cancelled on their models.
  void cancel_all() {
    std::vector<std::shared_ptr<Caller>> callers;
    for (auto& [key, tracked] : callers_) callers.push_back(tracked.first);
    for (auto& caller : callers) caller->cancel();
    models_.withdraw_cancelled();
  }

  /// Requests dispatched to the executor whose answer was not delivered yet.
  std::size_t outstanding() const noexcept { return outstanding_; }

 private:
  enum class Fate { Run, Drop };

  static Error cancelled() { return Error(StatusCode::Cancelled, "the request was cancelled"); }

  // Whether a request waits its turn in the connection's share of the executor. A batching
  // model's requests do not: holding them back per connection would only shrink its batches
  // (the memory budget still bounds them).
  bool holds(const InferRequest& request) const {
    return !context_->executor->batches(request.model_name(), request.model_version());
  }

  // Starts a request's job: through the connection's share when `held`, else at once. It is
  // under way (outstanding, its caller known) until its answer is delivered.
  template <class Job>
  void start(bool held, const std::shared_ptr<Caller>& caller, Job job) {
    ++outstanding_;
    track(caller);
    if (!held) return job(Fate::Run);
    auto shared = std::make_shared<Job>(std::move(job));
    models_.submit(
        {caller, [shared] { (*shared)(Fate::Run); }, [shared] { (*shared)(Fate::Drop); }});
  }

  // A request whose caller went away while it waited in the connection's share: counted on its
  // model (CANCELED), answered unrun here.
  template <class Request, class Encode, class Deliver>
  void drop(const Request& request, const std::shared_ptr<Caller>& caller, Admission& admission,
            Clock::time_point arrived, Encode& encode, Deliver& deliver) {
    Error why = caller ? caller->gone(Clock::now(), "model '" + request.model_name() + "'")
                             .value_or(cancelled())
                       : cancelled();
    admission.abandon(why, Clock::now() - arrived);
    deliver_unrun(caller, encode(std::move(why)), deliver);
  }

  // The answer of a request that never left the waiting jobs (no slot to give back).
  template <class Answer, class Deliver>
  void deliver_unrun(const std::shared_ptr<Caller>& caller, Answer answer, Deliver& deliver) {
    --outstanding_;
    untrack(caller.get());
    deliver(std::move(answer));
  }

  void track(const std::shared_ptr<Caller>& caller) {
    if (!caller) return;
    auto& tracked = callers_[caller.get()];
    if (tracked.second++ == 0) tracked.first = caller;
  }

  void untrack(const Caller* caller) {
    if (!caller) return;
    auto it = callers_.find(caller);
    if (it != callers_.end() && --it->second.second == 0) callers_.erase(it);
  }

  // How an answer made on an executor thread reaches the connection's thread. It holds the
  // io_context, not the connection, and touches `dispatch` only there, once `owner` proves the
  // connection (and so this object) alive.
  struct WayBack {
    std::shared_ptr<asio::io_context> io;
    std::weak_ptr<void> owner;
    InferDispatch* dispatch;
    bool held;
    const Caller* caller;  // only compared, on the connection's thread

    // The request's last answer: the request is then done.
    template <class Answer, class Deliver>
    void hand_over(Answer answer, Deliver deliver) const {
      asio::post(*io, [owner = owner, dispatch = dispatch, held = held, caller = caller,
                       answer = std::move(answer), deliver = std::move(deliver)]() mutable {
        auto alive = owner.lock();
        if (!alive) return;
        --dispatch->outstanding_;
        dispatch->untrack(caller);
        if (held) dispatch->models_.finished();
        deliver(std::move(answer));
        dispatch->settle();
      });
    }

    // One of a decoupled model's responses, ahead of the request's end.
    template <class Answer, class Deliver>
    void hand_over_response(Answer answer, Deliver deliver) const {
      asio::post(*io, [owner = owner, dispatch = dispatch, answer = std::move(answer),
                       deliver = std::move(deliver)]() mutable {
        auto alive = owner.lock();
        if (!alive) return;
        deliver(std::move(answer));
        dispatch->settle();
      });
    }
  };

  WayBack way_back(std::weak_ptr<void> owner, bool held, const std::shared_ptr<Caller>& caller) {
    return WayBack{io_, std::move(owner), this, held, caller.get()};
  }

  void settle() {
    if (after_async_delivery_) after_async_delivery_();
  }

  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<asio::io_context> io_;
  ModelQueue models_;  // this connection's share of the executor's threads
  std::size_t outstanding_ = 0;
  // The callers of the requests under way (a stream's requests share one), with their count.
  std::unordered_map<const Caller*, std::pair<std::shared_ptr<Caller>, std::size_t>> callers_;
  detail::UniqueFunction<void()> after_async_delivery_;
};

}  // namespace sonic::server
