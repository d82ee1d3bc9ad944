#include "client_stream.hpp"

#include <utility>

#include "net/tls.hpp"

namespace sonic::tcp {

using protocol::tcp::Frame;
using protocol::tcp::FrameKind;

ClientStream::ClientStream(asio::io_context& io, Endpoint endpoint,
                           net::ConnectionSettings settings, net::ChannelEvents<TcpCall> events)
    : FrameStream(io, settings.max_message_bytes, settings.tls),
      io_(io),
      endpoint_(std::move(endpoint)),
      settings_(settings),
      events_(std::move(events)),
      connector_(io),
      keepalive_(io, settings.keepalive_interval, settings.keepalive_timeout) {
  link().expect_server(endpoint_.host);
}

void ClientStream::connect() {
  auto self = shared_from_this();
  connector_.start(socket(), endpoint_.host, endpoint_.port, settings_.connect_timeout, self,
                   [this, self](std::string failure) {
                     if (failed_) return;
                     if (!failure.empty()) return connect_failed(failure);
                     link().handshake(settings_.connect_timeout, self, [this](std::string why) {
                       if (failed_) return;
                       if (!why.empty()) return connect_failed(why);
                       on_connected();
                     });
                   });
}

void ClientStream::on_connected() {
  connected_ = true;
  std::error_code ignored;
  socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  if (events_.connected) events_.connected(std::string());
  keepalive_.start(weak_from_this(),
                   {[this] { return !pending_.empty() || !parked_.empty(); },
                    [this] { send(protocol::tcp::encode_control(FrameKind::Ping)); },
                    [this](const std::string& why) {
                      shutdown(StatusCode::Unavailable,
                               "connection to " + endpoint_.url + ": " + why);
                    }});
  start_reading();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& call : waiting) {
    if (call->finished()) continue;
    write_call(*call);
  }
  keepalive_.activity();
}

void ClientStream::connect_failed(const std::string& why) {
  // First the backoff, then the calls: a caller that sends again on hearing of the failure must
  // find the backoff in place.
  if (events_.connected) events_.connected(why);
  // Nothing was written: every call still here never left this client.
  shutdown(Error(StatusCode::Unavailable, "cannot connect to " + endpoint_.url + ": " + why)
               .set_never_sent());
}

void ClientStream::submit(std::shared_ptr<TcpCall> call) {
  if (!usable()) {
    return call->deliver(
        Error(StatusCode::Unavailable, "connection to " + endpoint_.url + " is closed")
            .set_never_sent());
  }
  auto self = std::static_pointer_cast<ClientStream>(shared_from_this());
  call->connection = self;
  net::arm_deadline(call, io_, self);
  if (call->finished()) return;
  pending_[call->id] = call;
  if (connected_) {
    write_call(*call);
    keepalive_.activity();
  } else {
    waiting_.push_back(call);
  }
}

void ClientStream::write_call(TcpCall& call) {
  if (call.authorization != sent_authorization_) {
    protocol::tcp::Headers headers;
    if (!call.authorization.empty()) headers.emplace_back("authorization", call.authorization);
    // The transport checked the token's size: a frame of it always fits.
    send(protocol::tcp::encode_metadata(headers).value());
    sent_authorization_ = call.authorization;
  }
  send(std::move(call.frame), call.id);
}

void ClientStream::let_go(const std::shared_ptr<TcpCall>&, const std::string& why) {
  close(why);  // the write ends, and its calls are answered
}

void ClientStream::abandon(const std::shared_ptr<TcpCall>& call, Error why) {
  if (call->finished()) return;
  // Sent: the server may still hold it in a queue. A cancel frame lets it go there, as an
  // HTTP/2 client's RST_STREAM does.
  if (pending_.erase(call->id) > 0 && usable()) send(protocol::tcp::encode_cancel(call->id));
  complete(call, std::move(why));
}

void ClientStream::complete(const std::shared_ptr<TcpCall>& call, Result<Frame> outcome) {
  // A write still reads the caller's tensors: answered once it no longer does.
  if (net::settle(call, std::move(outcome), writing(call->id), io_, *this)) {
    parked_[call->id] = call;
  }
}

void ClientStream::on_released(std::uint64_t id) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return;
  auto call = std::move(it->second);
  parked_.erase(it);
  call->release();
}

void ClientStream::shutdown(const Error& why) {
  failed_ = true;
  connector_.cancel();
  keepalive_.stop();
  fail_all(why);
  close(why.message());
}

void ClientStream::on_frame(Frame frame) {
  answered_ = true;
  switch (frame.kind) {
    case FrameKind::Ping: return send(protocol::tcp::encode_control(FrameKind::Pong));
    case FrameKind::Pong: return keepalive_.pong();
    case FrameKind::Response:
    case FrameKind::Reply:
    case FrameKind::Error: {
      if (frame.kind == FrameKind::Error && frame.id == 0) {
        return shutdown(StatusCode::Unavailable, endpoint_.url + " closed the connection: " +
                                                     protocol::tcp::decode_error(frame).message());
      }
      auto it = pending_.find(frame.id);
      if (it == pending_.end()) return;  // abandoned (deadline, cancel): drop the answer
      auto call = std::move(it->second);
      pending_.erase(it);
      if (frame.refused) return complete(call, std::move(*frame.refused));  // too big to take
      if (frame.kind == FrameKind::Error) return complete(call, protocol::tcp::decode_error(frame));
      return complete(call, std::move(frame));
    }
    default:
      return on_framing_error(
          Error(StatusCode::Internal, "the server sent a frame only clients send"));
  }
}

void ClientStream::on_framing_error(const Error& error) {
  shutdown(StatusCode::Internal, "bad data from " + endpoint_.url + ": " + error.message());
}

void ClientStream::on_lost(const std::string& why) {
  failed_ = true;
  keepalive_.stop();
  connector_.cancel();
  std::string error = "connection to " + endpoint_.url + " lost: " + why;
  if (auto refused = net::client_certificate_refusal(why); !refused.empty()) {
    error = "connection to " + endpoint_.url + ": " + refused;
  } else if (!answered_ && !link().secure()) {
    // A TLS server closes a connection whose first bytes are not a ClientHello, saying nothing.
    error +=
        " before the server answered anything: is it sonic's TCP port, and not a TLS one "
        "(tcp+tls://)?";
  }
  fail_all(Error(StatusCode::Unavailable, error));
}

void ClientStream::fail_all(const Error& error) {
  waiting_.clear();  // each is pending too
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, call] : pending) complete(call, error);
}

}  // namespace sonic::tcp
