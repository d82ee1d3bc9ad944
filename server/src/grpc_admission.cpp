// A gRPC connection's memory and time: request messages wait for the memory budget before
// they are read on, stream windows widen once a message is admitted, and stalled streams and
// idle or stuck connections end.
#include <algorithm>
#include <asio/post.hpp>
#include <vector>

#include "grpc_connection.hpp"

namespace sonic::server {

using protocol::OutgoingBody;
using protocol::ReceivedMessage;

namespace {

// How often a connection whose calls wait for memory looks again.
constexpr std::chrono::milliseconds kAdmissionPoll{5};
// Compressed bytes fed to a reader at once: they inflate to at most 1032 times as many, the
// most a connection's turn can overshoot its budget by.
constexpr std::size_t kInflatePieceBytes = 1024;

}  // namespace

void GrpcConnection::watch() {
  auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
  watch_timer_.expires_after(watch_interval(limits_));
  watch_timer_.async_wait([self](std::error_code ec) {
    if (ec || self->lost_) return;
    const auto now = WatchClock::now();
    self->reset_stalled_streams(now);
    ConnectionState state;
    state.busy = !self->streams_.empty();
    state.unwritten = self->unwritten_bytes();
    state.last_write = self->last_write_progress();
    if (state.busy) self->activity_.last_busy = now;
    if (auto end = overdue(self->activity_, state, self->limits_, now)) {
      if (end->idle) return self->shutdown();  // GOAWAY first, as gRPC servers do
      return self->fail(end->why);
    }
    self->watch();
  });
}

// Admitted messages whose client stopped sending in the middle: reset, so that what they
// hold and were promised goes back to the budget. (Messages waiting for memory wait for us.)
void GrpcConnection::reset_stalled_streams(WatchClock::time_point now) {
  if (limits_.stall_timeout.count() == 0) return;
  bool reset = false;
  for (auto& [id, stream] : streams_) {
    if (!stream->reader || stream->answered || !stream->reader->mid_message() ||
        stream->reader->waiting_admission() || now - stream->last_data <= limits_.stall_timeout) {
      continue;
    }
    stream->reader->abandon();
    stream->answered = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    reset = true;
  }
  if (reset) flush();
}

// After `stream` took `len` bytes, `kept` of them held for admission. A message admitted now
// gets a larger window if it needs one; the window gets back what was consumed, where the
// client may still need it; a message that waits joins the queue.
//
// A unary call's single message that fits its first window needs neither: its stream gets
// no WINDOW_UPDATE, which would cost the server a socket write per request for nothing.
void GrpcConnection::account_window(std::int32_t id, ServerStream& stream, std::size_t len,
                                    std::size_t kept) {
  protocol::MessageReader& reader = *stream.reader;
  if (!reader.waiting_admission() && reader.mid_message() && !stream.window_opened &&
      (stream.streaming() || reader.bytes_to_come() > window_left(id))) {
    stream.window_opened = true;
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, id, kAdmittedStreamWindow);
  }
  const bool client_needs_window = stream.streaming() || stream.window_opened;
  if (len > kept && client_needs_window && !stream.backlog.empty()) {
    stream.unconsumed += len - kept;  // its requests wait: so does its client
  } else if (len > kept && client_needs_window) {
    nghttp2_session_consume_stream(session_, id, len - kept);
  }
  if (reader.waiting_admission() && !stream.waiting) {
    stream.waiting = true;
    waiting_.push_back(id);
    context_->memory->waiting_begins();
    if (waiting_.size() == 1) poll_admission();
  }
}

// What the client of stream `id` may still send before it needs a WINDOW_UPDATE.
std::size_t GrpcConnection::window_left(std::int32_t id) const {
  return static_cast<std::size_t>(
      std::max(0, nghttp2_session_get_stream_local_window_size(session_, id)));
}

void GrpcConnection::poll_admission() {
  auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
  admission_timer_.expires_after(kAdmissionPoll);
  admission_timer_.async_wait([self](std::error_code ec) {
    if (ec || self->lost_) return;
    self->admit_waiting();
    self->flush();
    if (!self->waiting_.empty()) self->poll_admission();
  });
}

// Waiting streams, oldest first, until one is still refused (later ones wait behind it, so
// that a large message is not overtaken forever by small ones).
void GrpcConnection::admit_waiting() {
  while (!waiting_.empty()) {
    const std::int32_t id = waiting_.front();
    ServerStream* stream = find(id);
    if (!stream || !stream->reader || stream->answered || !stream->reader->waiting_admission()) {
      waiting_.pop_front();
      context_->memory->waiting_ends();
      if (stream) {
        stream->waiting = false;
        end_stream_if_done(id);  // a stream's end may have waited for this message
      }
      continue;
    }
    const std::size_t kept = stream->reader->kept_bytes();
    auto admitted = stream->reader->retry_admission();
    if (admitted && !*admitted) return;
    waiting_.pop_front();
    context_->memory->waiting_ends();
    stream->waiting = false;
    if (!admitted) {
      stream->error = admitted.error();
      end_with_error(id, *stream->error);
      nghttp2_session_consume_stream(session_, id, kept);
      continue;
    }
    if (stream->streaming()) take_stream_messages(id, *stream);
    account_window(id, *stream, kept, stream->reader->kept_bytes());
    // The rest of a compressed message's bytes go on in turns (dispatched at their end).
    if (stream->deferring()) {
      take_deferred(id);
      continue;
    }
    if (stream->request_ended) dispatch(id);
  }
}

// Inflating is work its sender does not pay for: 1.3 MB of gzip bombs made seconds of it. So a
// connection inflates at most kInflateTurnBytes, then lets the handlers queued on its network
// thread meanwhile (other connections' reads and answers) run before it goes on: the io_context
// runs handlers first in, first out, so N connections inflating at once take turns, and a
// request of another connection waits for at most one turn of each (a few hundred
// microseconds), not for their bombs. Over time, a connection inflates at most a quarter of its
// thread's time (kInflateShare): the thread is left idle between its turns. A stream's compressed
// bytes wait in `deferred` meanwhile, their window not given back, so its client can send no more
// than its window ahead.
void GrpcConnection::take_deferred(std::int32_t id) {
  ServerStream* stream = find(id);
  while (stream && stream->deferring()) {
    const std::size_t left = stream->deferred.size() - stream->deferred_from;
    if (stream->error || stream->answered) {  // the rest is ignored, as on_data ignores it
      nghttp2_session_consume_stream(session_, id, left);
      stream->deferred_from = stream->deferred.size();
      break;
    }
    // A message waiting for memory keeps its bytes here rather than in its reader, which would
    // inflate them all at once when admitted: admit_waiting() goes on with them.
    if (stream->reader->waiting_admission()) return;
    if (inflate_left_ == 0 || !inflate_share_left()) {
      if (stream->deferred_from > kInflatePieceBytes * 64) {
        stream->deferred.erase(0, stream->deferred_from);
        stream->deferred_from = 0;
      }
      return next_inflate_turn();
    }
    const std::size_t piece = std::min(kInflatePieceBytes, left);
    const auto* data =
        reinterpret_cast<const std::uint8_t*>(stream->deferred.data()) + stream->deferred_from;
    stream->deferred_from += piece;
    const std::uint64_t before = stream->reader->inflated_bytes();
    const auto started = WatchClock::now();
    take(id, *stream, data, piece);  // may end the stream (its answer flushed)
    inflate_spent_ += WatchClock::now() - started;
    stream = find(id);
    if (!stream) return;
    const std::uint64_t spent = stream->reader->inflated_bytes() - before;
    inflate_left_ -= static_cast<std::size_t>(std::min<std::uint64_t>(spent, inflate_left_));
  }
  if (!stream) return;
  stream->deferred.clear();
  stream->deferred_from = 0;
  // Its end came while its bytes waited: it was not dispatched then.
  if (stream->request_ended && !stream->waiting && !stream->answered) dispatch(id);
}

// Whether the connection may inflate more in the window under way (a new one starts when it
// ended).
bool GrpcConnection::inflate_share_left() {
  const auto now = WatchClock::now();
  if (now - inflate_window_ >= kInflateWindow) {
    inflate_window_ = now;
    inflate_spent_ = {};
  }
  return inflate_spent_ < kInflateShare;
}

// The next turn: behind the handlers queued now, or at the next window once this one's share
// is spent.
void GrpcConnection::next_inflate_turn() {
  if (inflate_turn_posted_) return;
  inflate_turn_posted_ = true;
  auto self = std::static_pointer_cast<GrpcConnection>(shared_from_this());
  auto turn = [self] {
    self->inflate_turn_posted_ = false;
    if (self->lost_) return;
    self->inflate_left_ = kInflateTurnBytes;
    self->as_received([&] {
      std::vector<std::int32_t> ids;
      for (const auto& [id, stream] : self->streams_) {
        if (stream->deferring()) ids.push_back(id);
      }
      for (std::int32_t id : ids) self->take_deferred(id);
    });
  };
  if (inflate_share_left()) return asio::post(*io_, std::move(turn));
  auto timer = std::make_shared<asio::steady_timer>(*io_, inflate_window_ + kInflateWindow);
  timer->async_wait([timer, turn = std::move(turn)](std::error_code) { turn(); });
}

}  // namespace sonic::server
