// A gRPC connection's ModelStreamInfer calls.
//
// As Triton answers a stream (src/grpc/stream_infer_handler.cc): every request is answered on
// it with ModelStreamInferResponses; a model that is not decoupled answers in the order of
// the requests, a decoupled one as its responses come, each marked triton_final_response; a
// request that fails is answered with error_message, naming its id, and the stream goes on;
// once the client has ended its side and every request is answered, the stream ends with
// grpc-status 0. Nothing here flushes: stream objects stay valid (the callers flush).

#include "grpc_connection.hpp"
#include "protocol/infer_codec.hpp"
#include "request_options.hpp"

namespace sonic::server {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

namespace {

constexpr std::uint64_t kNoSlot = ~std::uint64_t{0};  // a decoupled model's request

// Whether a decoupled model's request asked for an empty last response (Triton's
// triton_enable_empty_final_response).
bool wants_empty_final(const InferRequest& request) {
  auto it = request.parameters().find(protocol::kEnableEmptyFinalResponse);
  return it != request.parameters().end() && std::holds_alternative<bool>(it->second) &&
         std::get<bool>(it->second);
}

// A result as a stream's answer: outputs bound for shared memory written there, the rest
// encoded; `final` is its triton_final_response. An error is answered in error_message.
std::shared_ptr<OutgoingBody> stream_answer(Result<InferResult>&& result, const ShmUse& shm,
                                            const InferRequest& named, ServerContext& context,
                                            bool final = true) {
  if (result && !shm.empty()) {
    if (auto placed = context.shared_memory.complete(shm, *result); !placed) {
      result = placed.error();
    }
  }
  if (result) {
    result->set_parameter(protocol::kFinalResponse, final);
    auto body = protocol::encode_stream_infer_response(*result, context.options.max_message_bytes);
    if (body) return std::move(*body);
    result = body.error();
  }
  return protocol::encode_stream_error(result.error(), named, {{protocol::kFinalResponse, true}});
}

// What ends a decoupled model's request: its error, the empty last response it asked for, or
// nothing.
std::shared_ptr<OutgoingBody> last_answer(const Result<void>& outcome, const InferRequest& named,
                                          bool empty_final) {
  if (!outcome) {
    return protocol::encode_stream_error(outcome.error(), named,
                                         {{protocol::kFinalResponse, true}});
  }
  return empty_final ? protocol::encode_stream_final(named) : nullptr;
}

}  // namespace

bool GrpcConnection::decoupled(const InferRequest& request) const {
  auto model = context_->executor->model(request.model_name(), request.model_version());
  return model && (*model)->is_decoupled();
}

void GrpcConnection::take_stream_messages(std::int32_t id, ServerStream& stream) {
  auto& messages = stream.reader->messages();
  for (auto& message : messages) stream.backlog.push_back(std::move(message));
  messages.clear();
  start_stream_requests(id, stream);
}

// Starts the stream's waiting requests while fewer than kMaxStreamRequests are out. Once none
// wait, the window held back for them goes to its client.
void GrpcConnection::start_stream_requests(std::int32_t id, ServerStream& stream) {
  if (stream.starting) return;  // a request answered inside the loop below: it goes on
  stream.starting = true;
  while (!stream.backlog.empty() && stream.in_flight < kMaxStreamRequests && !stream.answered) {
    ReceivedMessage message = std::move(stream.backlog.front());
    stream.backlog.pop_front();
    ++stream.in_flight;
    stream_infer(id, stream, std::move(message));
  }
  stream.starting = false;
  if (stream.backlog.empty() && stream.unconsumed > 0 && !stream.answered) {
    nghttp2_session_consume_stream(session_, id, stream.unconsumed);
    stream.unconsumed = 0;
  }
}

// One request of a stream; it is out (in_flight) until stream_request_done().
void GrpcConnection::stream_infer(std::int32_t id, ServerStream& stream, ReceivedMessage message) {
  auto request = read_infer_request(std::move(message));
  const bool decoupled_model = request && decoupled(*request);
  const std::uint64_t slot = decoupled_model ? kNoSlot : stream.next_slot++;
  if (!request) {
    return stream_answered(id, slot,
                           protocol::encode_stream_error(request.error(), InferRequest("")));
  }
  ShmUse shm;
  if (SharedMemoryRegistry::uses_shared_memory(*request)) {
    auto bound = context_->shared_memory.bind(shm_client(), *request);
    if (!bound) {
      return stream_answered(id, slot, protocol::encode_stream_error(bound.error(), *request));
    }
    shm = std::move(*bound);
  }
  // The stream's requests share its caller: its grpc-timeout, and its reset cancels them all.
  if (!stream.caller) stream.caller = caller_of(InferRequest(""), stream.started, stream.timeout);
  request->caller(stream.caller);
  // What names the request in an answer that has no result to name it.
  InferRequest named(request->model_name(), request->model_version());
  named.id(request->request_id());
  const bool empty_final = wants_empty_final(*request);
  // Answers are encoded where the model ran, delivered on the connection's thread (and
  // flushed there by the dispatch, or by this call's caller when they came inside it).
  if (!decoupled_model) {
    return models_.infer(
        std::move(*request), weak_from_this(),
        [shm = std::move(shm), named = std::move(named),
         context = context_](Result<InferResult>&& result) {
          return stream_answer(std::move(result), shm, named, *context);
        },
        [this, id, slot](std::shared_ptr<OutgoingBody> body) {
          stream_answered(id, slot, std::move(body));
        });
  }
  // A decoupled model's responses: each copy of the steps below shares what names them.
  auto shared_shm = std::make_shared<const ShmUse>(std::move(shm));
  auto shared_named = std::make_shared<const InferRequest>(std::move(named));
  models_.infer_responses(
      std::move(*request), weak_from_this(),
      [shared_shm, shared_named, context = context_](InferResult result) {
        return stream_answer(std::move(result), *shared_shm, *shared_named, *context, false);
      },
      [this, id](std::shared_ptr<OutgoingBody> body) {
        if (ServerStream* open = find(id)) stream_response(id, *open, std::move(body));
      },
      [shared_named, empty_final](const Result<void>& outcome) {
        return last_answer(outcome, *shared_named, empty_final);
      },
      [this, id](std::shared_ptr<OutgoingBody> body) {
        stream_answered(id, kNoSlot, std::move(body));
      });
}

// A request's last answer (null: none): in its turn when the model is not decoupled (`slot`),
// at once when it is. The request is then done.
void GrpcConnection::stream_answered(std::int32_t id, std::uint64_t slot,
                                     std::shared_ptr<OutgoingBody> body) {
  ServerStream* stream = find(id);
  if (!stream) return;
  if (slot == kNoSlot) {
    if (body) stream_response(id, *stream, std::move(body));
    return stream_request_done(id, *stream, 1);
  }
  stream->early.emplace(slot, std::move(body));
  std::size_t done = 0;
  for (auto it = stream->early.begin();
       it != stream->early.end() && it->first == stream->next_to_send;
       it = stream->early.erase(it), ++stream->next_to_send, ++done) {
    stream_response(id, *stream, std::move(it->second));
  }
  if (done > 0) stream_request_done(id, *stream, done);
}

void GrpcConnection::stream_request_done(std::int32_t id, ServerStream& stream,
                                         std::size_t requests) {
  stream.in_flight -= requests;
  start_stream_requests(id, stream);
  end_stream_if_done(id);
}

// Appends an answer to the stream's response, which begins with the first one. An answer
// held in memory counts in the connection's budget until it was handed to the socket; a
// client that lets answers pile up past the budget loses its stream. Its trailers would wait
// behind the answers it does not take, so the stream is reset at once with ENHANCE_YOUR_CALM
// (which gRPC maps to RESOURCE_EXHAUSTED): the client learns it, stops sending, and the
// answers are freed when the stream closes.
void GrpcConnection::stream_response(std::int32_t id, ServerStream& stream,
                                     std::shared_ptr<OutgoingBody> message) {
  if (stream.answered || lost_) return;
  if (!stream.response) open_stream_response(id, stream);
  if (stream.response->drained()) stream.response_bytes.release();
  if (budget_->held() + message->size() > budget_->limit()) {
    stream.answered = true;
    stream.backlog.clear();
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_ENHANCE_YOUR_CALM);
    return;
  }
  stream.response_bytes.grow(message->size());
  stream.response->append_message(*message);
  resume(id, *stream.response);
}

void GrpcConnection::open_stream_response(std::int32_t id, ServerStream& stream) {
  stream.response = std::make_shared<OutgoingBody>();
  stream.response->open = true;
  stream.response_bytes = BudgetHold(budget_, 0);
  nghttp2_nv headers[] = {net::make_header(":status", "200"),
                          net::make_header("content-type", "application/grpc"),
                          net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding)};
  nghttp2_data_provider provider = body_provider(stream.response.get());
  nghttp2_submit_response(session_, id, headers, 3, &provider);
}

// Ends a stream whose client ended its side, once every request is answered: grpc-status 0
// in the trailers after the last answer. Requests still in compressed bytes not yet inflated
// (deferring: the client's END_STREAM can come before their turn) or in a message waiting for
// memory are not answered yet: dispatch() comes back here once they are read.
void GrpcConnection::end_stream_if_done(std::int32_t id) {
  ServerStream* stream = find(id);
  if (!stream || !stream->streaming() || stream->answered || !stream->request_ended ||
      stream->in_flight > 0 || !stream->backlog.empty() || stream->deferring() || stream->waiting) {
    return;
  }
  if (!stream->response) open_stream_response(id, *stream);
  stream->answered = true;
  stream->response->open = false;
  resume(id, *stream->response);
}

// Ends a call with an error: a unary call, or a stream that has not answered yet, with a
// trailers-only response; a stream that has, in the trailers after what it sent.
void GrpcConnection::end_with_error(std::int32_t id, const Error& error) {
  ServerStream* stream = find(id);
  if (!stream || !stream->streaming() || !stream->response) return respond_error(id, error);
  if (stream->answered) return;
  stream->answered = true;
  stream->final_error = error;
  stream->backlog.clear();
  stream->response->open = false;
  resume(id, *stream->response);
  stream->reset_after_answer = !stream->request_ended;
}

}  // namespace sonic::server
