// A gRPC connection's unary calls: ModelInfer, the control calls and the health check, each
// answered once, with its message or a trailers-only error.
#include "control_service.hpp"
#include "grpc_connection.hpp"
#include "health_service.hpp"
#include "protocol/infer_codec.hpp"
#include "reply_compression.hpp"
#include "request_options.hpp"

namespace sonic::server {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

namespace {

// Writes outputs bound for shared memory into their regions and encodes the rest.
Answer encode_answer(Result<InferResult> result, const ShmUse& shm, ServerContext& context,
                     const std::shared_ptr<ConnectionBudget>& budget,
                     Compression encoding = Compression::None) {
  if (!result) return {result.error(), {}};
  if (!shm.empty()) {
    if (auto placed = context.shared_memory.complete(shm, *result); !placed) {
      return {placed.error(), {}};
    }
  }
  auto body = protocol::encode_infer_response(*result, context.options.max_message_bytes);
  if (!body) return {body.error(), {}};
  if (auto packed = protocol::compress_message(**body, encoding, protocol::kDefaultLevel)) {
    body = std::move(packed);
  } else {
    encoding = Compression::None;  // a message that would not shrink goes as it is
  }
  BudgetHold held(budget, (*body)->size());
  return {std::move(body), std::move(held), encoding};
}

}  // namespace

void GrpcConnection::dispatch(std::int32_t id) {
  ServerStream* stream = find(id);
  if (!stream) return;
  if (stream->error) return respond_error(id, *stream->error);
  if (stream->content_type.rfind("application/grpc", 0) != 0) {
    return respond_error(
        id, Error(StatusCode::InvalidArgument,
                  "content-type must be application/grpc, got '" + stream->content_type + "'"));
  }
  if (!stream->reader) stream->reader.emplace(0, context_->options.max_message_bytes);
  if (stream->streaming()) {
    if (!stream->reader->at_boundary()) {
      return end_with_error(
          id, Error(StatusCode::InvalidArgument, "the stream ended inside a request message"));
    }
    return end_stream_if_done(id);
  }
  auto& messages = stream->reader->messages();
  if (messages.size() != 1 || !stream->reader->at_boundary()) {
    return respond_error(
        id, Error(StatusCode::InvalidArgument, "a unary call needs exactly one request message"));
  }
  ReceivedMessage message = std::move(messages.front());
  messages.clear();
  if (stream->method == protocol::kModelInfer) return infer(id, std::move(message));
  if (stream->path == kHealthCheckPath) return health_check(id, message.envelope);
  control(id, stream->method, message.envelope);
}

void GrpcConnection::infer(std::int32_t id, ReceivedMessage message) {
  auto request = read_infer_request(std::move(message));
  if (!request) return respond_error(id, request.error());
  ServerStream* stream = find(id);
  stream->caller = caller_of(*request, stream->started, stream->timeout);
  request->caller(stream->caller);
  // Inputs in shared memory become views of their regions; outputs bound for regions are
  // written there once the model ran.
  ShmUse shm;
  if (SharedMemoryRegistry::uses_shared_memory(*request)) {
    auto bound = context_->shared_memory.bind(shm_client(), *request);
    if (!bound) return respond_error(id, bound.error());
    shm = std::move(*bound);
  }
  const Compression encoding =
      reply_compression(context_->options.infer_response_compression, find(id)->accept_encoding);
  // Encoded (and compressed) where the model ran; answered on the connection's thread.
  models_.infer(
      std::move(*request), weak_from_this(),
      [shm = std::move(shm), context = context_, budget = budget_,
       encoding](Result<InferResult>&& result) {
        return encode_answer(std::move(result), shm, *context, budget, encoding);
      },
      [this, id](Answer made) { answer(id, std::move(made)); });
}

void GrpcConnection::answer(std::int32_t id, Answer answer) {
  if (!answer.body) return respond_error(id, answer.body.error());
  respond(id, std::move(*answer.body), std::move(answer.held), answer.encoding);
}

void GrpcConnection::control(std::int32_t id, const std::string& name, const std::string& bytes) {
  // Served: refusal() answered every other method when its headers came.
  const auto method = served_control(name, context_->options.shared_memory);
  if (!method) return reply(id, unimplemented(name));
  ControlContext context{*context_->executor,
                         context_->options,
                         context_->options.shared_memory ? &context_->shared_memory : nullptr,
                         [this]() -> const ShmClient& { return shm_client(); },
                         &context_->model_files,
                         &context_->settings};
  reply(id, answer_control(context, *method, bytes));
}

void GrpcConnection::health_check(std::int32_t id, const std::string& bytes) {
  reply(id, answer_health_check(*context_->executor, context_->options.strict_readiness, bytes));
}

// A unary call's answer: its serialized response message, or its error.
void GrpcConnection::reply(std::int32_t id, Result<std::string> message) {
  if (!message) return respond_error(id, message.error());
  auto body = std::make_shared<OutgoingBody>();
  body->append_owned(*message);
  if (auto ok = body->finish(context_->options.max_message_bytes); !ok) {
    return respond_error(id, ok.error());
  }
  respond(id, std::move(body), {});
}

void GrpcConnection::respond(std::int32_t id, std::shared_ptr<OutgoingBody> body, BudgetHold held,
                             Compression encoding) {
  ServerStream* stream = find(id);
  if (!stream || stream->answered || lost_) return;
  if (stream->timeout && Clock::now() - stream->started > *stream->timeout) {
    return respond_error(
        id, Error(StatusCode::DeadlineExceeded, "the request's grpc-timeout passed on the server"));
  }
  stream->answered = true;
  stream->response = std::move(body);
  stream->response_bytes = std::move(held);
  nghttp2_nv headers[] = {net::make_header(":status", "200"),
                          net::make_header("content-type", "application/grpc"),
                          net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding),
                          net::make_header("grpc-encoding", protocol::encoding_name(encoding))};
  nghttp2_data_provider provider = body_provider(stream->response.get());
  // grpc-encoding only with a compressed body.
  nghttp2_submit_response(session_, id, headers, encoding == Compression::None ? 3 : 4, &provider);
  flush();
}

// A trailers-only response: the status travels in the only HEADERS frame, and an error with
// a reason carries it in grpc-status-details-bin (a google.rpc.Status with an ErrorInfo).
void GrpcConnection::respond_error(std::int32_t id, const Error& error) {
  ServerStream* stream = find(id);
  if (!stream || stream->answered || lost_) return;
  stream->answered = true;
  std::string code = std::to_string(static_cast<int>(error.code()));
  std::string message = protocol::percent_encode(error.message());
  std::string details;
  if (!error.reason().empty()) {
    details = protocol::base64_encode(protocol::encode_status_details(error));
  }
  nghttp2_nv headers[] = {net::make_header(":status", "200"),
                          net::make_header("content-type", "application/grpc"),
                          net::make_header("grpc-accept-encoding", protocol::kAcceptEncoding),
                          net::make_header("grpc-status", code),
                          net::make_header("grpc-message", message),
                          net::make_header(protocol::kStatusDetailsHeader, details)};
  nghttp2_submit_response(session_, id, headers, details.empty() ? 5 : 6, nullptr);
  // Answered before the client finished sending: once the answer is out, tell it to stop
  // (on_frame_send).
  stream->reset_after_answer = !stream->request_ended;
  flush();
}

}  // namespace sonic::server
