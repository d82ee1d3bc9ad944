// One keep-alive HTTP/1.1 connection of the http:// client: one call at a time (requests are
// not pipelined, so one slow answer never holds up another request), the request written from
// the caller's tensors by reference, and an inference answer's binary outputs read straight
// into their own aligned buffers. Runs on its pool's network thread; every member is touched
// there only.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/call_life.hpp"
#include "net/channel.hpp"
#include "net/connection_settings.hpp"
#include "net/connector.hpp"
#include "net/link.hpp"
#include "rest_codec.hpp"
#include "sonic/compression.hpp"
#include "sonic/detail/unique_function.hpp"

namespace sonic::http {

class HttpPool;

/// An answer as it came: its status, its body (or the body's JSON part, when binary tensor
/// data follows it), and the binary parts, each in its own aligned buffer.
struct HttpAnswer {
  int status = 0;
  /// Retry-After of a 429 or 503 answer (RFC 9110 10.2.3, RFC 6585): the server's pushback.
  std::optional<std::chrono::milliseconds> retry_after;
  std::string body;
  /// The body's JSON, when the connection parsed it to find the binary parts (null otherwise).
  nlohmann::json parsed;
  std::vector<std::shared_ptr<std::uint8_t>> parts;
  std::vector<std::size_t> part_sizes;
};

/// One call: what to send and the handler of the answer (`done`, which runs exactly once, on
/// the network thread). Its connection parks its outcome in it while a write reads its bytes.
struct HttpCall : net::CallLife<Result<HttpAnswer>>,
                  net::BookEntry<HttpCall, net::CallLife<Result<HttpAnswer>>::Done> {
  RestRequest request;
  std::string head;  ///< the request line and header fields, ending in the blank line
  /// An inference call: a 200 answer with Inference-Header-Content-Length carries binary parts.
  bool binary_answer = false;
  /// The body's Content-Encoding (it is compressed; the answer may come compressed the same way).
  Compression encoding = Compression::None;
  /// Inference-Header-Content-Length: the JSON's length before compression.
  std::size_t json_length = 0;
  bool wait_for_reconnect = false;

  // Progress, owned by the pool.
  std::weak_ptr<HttpPool> connection;  ///< the pool it was submitted to (net::CallBook's name)
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  /// What the connection tells its pool, on the network thread.
  struct Events {
    /// Connected (empty) or not (why); called once.
    std::function<void(const std::string& failure)> connected;
    /// The call it carried is over with `outcome`, or (null call) the connection closed while
    /// idle; either way the connection is free again unless it closed.
    std::function<void(std::shared_ptr<HttpCall> call, Result<HttpAnswer> outcome)> finished;
  };

  HttpConnection(asio::io_context& io, const Endpoint& endpoint, net::ConnectionSettings settings,
                 Events events);

  /// Resolves, connects and shakes hands within the connect timeout.
  void connect();
  /// Sends `call` (connected and idle only) and reads its answer.
  void start(std::shared_ptr<HttpCall> call);
  /// Ends the call it carries with `why`, closing the connection (HTTP/1.1 has no other way
  /// to stop a request). The outcome is reported once no write reads the caller's bytes.
  void abandon(Error why);
  /// Closes the connection; a call it carries ends with `why`.
  void close(const Error& why);

  bool idle() const { return connected_ && !closed_ && !call_; }
  bool connecting() const { return !connected_ && !closed_; }
  /// Whether a call was ever started on it (a connection that closes before that is the
  /// server turning connections away).
  bool served() const { return served_; }
  bool closed() const { return closed_; }

 private:
  enum class Phase { Head, Body, Json, Binary };

  void keep_alive();
  void read();
  void on_read(std::size_t n);
  void on_head();
  void body_bytes(const char* data, std::size_t n);
  void start_binary();
  // The whole body has been read: the answer, inflated first when it came compressed.
  void body_read();
  Result<HttpAnswer> inflated();
  void next_part();
  // The call's outcome is decided: delivered now, or once the write of its bytes is over.
  void finish(Result<HttpAnswer> outcome);
  void deliver(Result<HttpAnswer> outcome);
  void lost(const std::string& why);

  const Endpoint endpoint_;
  net::ConnectionSettings settings_;
  Events events_;
  net::Connector connector_;
  net::Link link_;
  bool connected_ = false;
  bool closed_ = false;
  bool writing_ = false;  // a write reads the call's bytes
  bool reading_ = false;
  bool served_ = false;
  bool answered_ = false;  // the call's outcome is decided (parked in the call while writing_)
  std::shared_ptr<HttpCall> call_;
  std::vector<asio::const_buffer> out_;

  // The answer being read.
  std::array<char, 16 << 10> chunk_{};
  std::string buffer_;  // bytes of the head read so far
  Phase phase_ = Phase::Head;
  HttpAnswer answer_;
  bool close_after_ = false;  // the server said Connection: close (or spoke HTTP/1.0)
  Compression encoding_ = Compression::None;         // the answer's Content-Encoding
  std::optional<std::size_t> inflated_json_length_;  // of a compressed answer with binary data
  std::size_t body_left_ = 0;                        // of the whole body
  std::size_t json_left_ = 0;                        // of its JSON part (Phase::Json)
  std::size_t part_ = 0, part_filled_ = 0;           // Phase::Binary
};

}  // namespace sonic::http
