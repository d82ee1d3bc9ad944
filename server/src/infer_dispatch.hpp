// Where a connection's inference requests run, decided in one place for gRPC calls, gRPC
// streams and TCP frames: on the connection's thread (every model with inline_models, a quick
// model's request otherwise), or on the executor's threads, through the connection's share of
// them (ModelQueue) unless the model batches, whose requests all go to its batcher at once.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "model_queue.hpp"
#include "server_context.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::server {

/// One per connection, a member of it; used on the connection's thread only. Every answer is
/// made by an `encode` step that runs where the model ran (so that encoding and compressing
/// stay off the network thread) and handed over by a `deliver` step that runs on the
/// connection's thread, exactly once, unless the connection (`owner`) is gone by then.
/// Delivery may happen inside the dispatching call: when the model ran there.
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

  InferDispatch(const InferDispatch&) = delete;
  InferDispatch& operator=(const InferDispatch&) = delete;

  /// Runs `request` and delivers its answer: `encode(Result<InferResult>)` makes it,
  /// `deliver(answer)` hands it to the connection.
  template <class Encode, class Deliver>
  void infer(InferRequest request, std::weak_ptr<void> owner, Encode encode, Deliver deliver) {
    ServerContext& context = *context_;
    if (context.options.inline_models) return deliver(encode(context.executor->infer(request)));
    if (auto quick =
            context.executor->infer_if_quick(request, context.options.quick_model_budget)) {
      return deliver(encode(std::move(*quick)));
    }
    const bool held = holds(request);
    ++outstanding_;
    start(held, [this, owner = std::move(owner), held, request = std::move(request),
                 encode = std::move(encode), deliver = std::move(deliver)]() mutable {
      context_->executor->infer_async(
          std::move(request), [back = way_back(std::move(owner), held), encode = std::move(encode),
                               deliver = std::move(deliver)](Result<InferResult> result) mutable {
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
    const bool held = holds(request);
    ++outstanding_;
    start(held, [this, owner = std::move(owner), held, request = std::move(request),
                 encode_response = std::move(encode_response),
                 deliver_response = std::move(deliver_response), encode_end = std::move(encode_end),
                 deliver_end = std::move(deliver_end)]() mutable {
      auto respond = [back = way_back(owner, held), encode_response,
                      deliver_response](InferResult result) {
        back.hand_over_response(encode_response(std::move(result)), deliver_response);
      };
      context_->executor->infer_responses_async(
          std::move(request), std::move(respond),
          [back = way_back(std::move(owner), held), encode_end = std::move(encode_end),
           deliver_end = std::move(deliver_end)](Result<void> outcome) mutable {
            back.hand_over(encode_end(outcome), std::move(deliver_end));
          });
    });
  }

  /// Runs `work()`, a request's whole way from its bytes to its answer, on an executor thread
  /// (here with inline_models), held like a request: for a request whose decoding is heavy
  /// work (TCP's compressed tensors). `deliver(answer)` as for infer().
  template <class Work, class Deliver>
  void run(std::weak_ptr<void> owner, Work work, Deliver deliver) {
    if (context_->options.inline_models) return deliver(work());
    ++outstanding_;
    start(true, [this, owner = std::move(owner), work = std::move(work),
                 deliver = std::move(deliver)]() mutable {
      context_->executor->run_async(
          [back = way_back(std::move(owner), true), work = std::move(work),
           deliver = std::move(deliver)]() mutable { back.hand_over(work(), std::move(deliver)); });
    });
  }

  /// Requests dispatched to the executor whose answer was not delivered yet.
  std::size_t outstanding() const noexcept { return outstanding_; }

 private:
  // Whether a request waits its turn in the connection's share of the executor. A batching
  // model's requests do not: holding them back per connection would only shrink its batches
  // (the memory budget still bounds them).
  bool holds(const InferRequest& request) const {
    return !context_->executor->batches(request.model_name(), request.model_version());
  }

  template <class Job>
  void start(bool held, Job job) {
    if (held) return models_.submit(std::move(job));
    job();
  }

  // How an answer made on an executor thread reaches the connection's thread. It holds the
  // io_context, not the connection, and touches `dispatch` only there, once `owner` proves the
  // connection (and so this object) alive.
  struct WayBack {
    std::shared_ptr<asio::io_context> io;
    std::weak_ptr<void> owner;
    InferDispatch* dispatch;
    bool held;

    // The request's last answer: the request is then done.
    template <class Answer, class Deliver>
    void hand_over(Answer answer, Deliver deliver) const {
      asio::post(*io, [owner = owner, dispatch = dispatch, held = held, answer = std::move(answer),
                       deliver = std::move(deliver)]() mutable {
        auto alive = owner.lock();
        if (!alive) return;
        --dispatch->outstanding_;
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

  WayBack way_back(std::weak_ptr<void> owner, bool held) {
    return WayBack{io_, std::move(owner), this, held};
  }

  void settle() {
    if (after_async_delivery_) after_async_delivery_();
  }

  std::shared_ptr<ServerContext> context_;
  std::shared_ptr<asio::io_context> io_;
  ModelQueue models_;  // this connection's share of the executor's threads
  std::size_t outstanding_ = 0;
  detail::UniqueFunction<void()> after_async_delivery_;
};

}  // namespace sonic::server
