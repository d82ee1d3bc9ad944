#include "http_server.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "net/peer_user.hpp"

namespace sonic::server {

namespace {

constexpr std::size_t kReadChunk = 2048;
// How often a body waiting for memory asks again (as the TCP port's frames do).
constexpr std::chrono::milliseconds kAdmissionPoll{5};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// What operator new[] aligns to, and so where a body's binary tensor data is placed.
constexpr std::size_t kBodyAlignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

HttpReply plain(int status, std::string text, std::string extra_headers = {}) {
  return {status, "text/plain; charset=utf-8", std::move(text) + "\n", std::move(extra_headers)};
}

}  // namespace

const std::string& HttpRequest::header(const std::string& lower_name) const {
  static const std::string kNone;
  auto it = headers.find(lower_name);
  return it == headers.end() ? kNone : it->second;
}

const char* http_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

/// One client of an HTTP port. Reads a request head, then its body (admitted first against the
/// server's memory budget), hands the request to the service and writes its reply; then the
/// next request (keep-alive; pipelined ones in order). Closes when the client closes or asks to,
/// sends what the port does not take, or keeps it waiting past a timeout: the whole head must
/// arrive within the handshake timeout, and each read of a body and each write of a reply
/// within the stall timeout. Runs on one network thread; every member is touched on it only.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                 std::shared_ptr<HttpShared> shared,
                 std::shared_ptr<net::ConnectionSet<HttpConnection>> set, ConnectionSlot slot)
      : link_(std::move(socket), shared->tls),
        io_(std::move(io)),
        shared_(std::move(shared)),
        set_(std::move(set)),
        slot_(std::move(slot)),
        timer_(*io_),
        budget_(std::make_shared<ConnectionBudget>(
            shared_->context->memory,
            shared_->context->options.limits.max_connection_buffered_bytes)),
        models_(shared_->context, io_) {}

  const std::shared_ptr<asio::io_context>& io_context() const { return io_; }
  /// Whether, and since when, it waits for a request head (connection_room.hpp).
  WaitingMark& waiting_mark() { return waiting_; }
  /// Closes a connection claimed to make room at the port's cap (its thread).
  void evict() { close(); }

  /// The TLS handshake (none in plaintext) within the handshake timeout, then the requests.
  void start() {
    link_.handshake(server_limits().handshake_timeout, shared_from_this(),
                    [self = shared_from_this()](const std::string& failure) {
                      if (self->closed_) return;
                      if (!failure.empty()) return self->close();
                      self->read();
                    });
  }

  /// Closes the socket (pending reads and writes end) and the timer, and cancels the request the
  /// service has, if any: nobody will read its answer. Idempotent.
  void close() {
    if (closed_) return;
    closed_ = true;
    link_.close();
    timer_.cancel();
    if (caller_) caller_->cancel();
    models_.cancel_all();
    set_->remove(this);
  }

 private:
  const HttpLimits& limits() const { return shared_->service.limits; }

  // Who this connection's client is, for the shared memory extension: asked of the kernel once.
  // Over HTTP a region outlives the connection that registered it, as in Triton, whose
  // SharedMemoryManager keeps regions server-wide until they are unregistered: HTTP/1.1
  // clients register and infer over different connections (Triton's C++ client closes a curl
  // handle after each control call). So the registration's owner is not the connection but
  // its user (every client alike with --shm-access any), whose regions the per-connection
  // bounds then bound; nothing drops them when a connection ends.
  const ShmClient& shm_client() {
    if (!shm_client_) {
      shm_client_.emplace();
      if (shared_->context->options.shared_memory_access == SharedMemoryAccess::Owner) {
        shm_client_->user = net::local_peer_user(link_.socket());
      }
      shm_client_->connection = http_registrant(shm_client_->user);
    }
    return *shm_client_;
  }
  const ServerLimits& server_limits() const { return shared_->context->options.limits; }

  // Reads until a request is whole, then hands it over.
  void read() {
    if (closed_ || busy_ || watching_) return;
    if (!have_head_) {
      const std::size_t end = buffer_.find("\r\n\r\n");
      if (end == std::string::npos) return read_head();
      if (!parse_head(end + 4)) return;
    }
    if (!admit_body()) return;
    // Body bytes that came with the head (or a pipelined request's) are in buffer_.
    const std::size_t take = std::min(buffer_.size(), body_length_ - body_filled_);
    std::copy_n(buffer_.data(), take, request_.body.bytes.get() + body_filled_);
    buffer_.erase(0, take);
    body_filled_ += take;
    if (body_filled_ < body_length_) return read_body();
    dispatch();
  }

  void read_head() {
    if (buffer_.size() >= limits().max_head_bytes) {
      return send(plain(431, "request head too large"), false);
    }
    if (!awaiting_head_) {
      // One deadline for the whole head, not one per read: a client that sends a byte at a
      // time must still finish within it.
      awaiting_head_ = true;
      waiting_.waiting();
      arm(server_limits().handshake_timeout);
    }
    const std::size_t room = std::min(kReadChunk, limits().max_head_bytes - buffer_.size());
    link_.async_read_some(asio::buffer(chunk_.data(), room),
                          [self = shared_from_this()](std::error_code error, std::size_t n) {
                            if (self->closed_) return;
                            if (error) return self->close();
                            self->buffer_.append(self->chunk_.data(), n);
                            self->read();
                          });
  }

  // Reads the rest of the body straight into it, each read within the stall timeout.
  void read_body() {
    arm(server_limits().stall_timeout);
    link_.async_read_some(
        asio::buffer(request_.body.bytes.get() + body_filled_, body_length_ - body_filled_),
        [self = shared_from_this()](std::error_code error, std::size_t n) {
          if (self->closed_) return;
          if (error) return self->close();
          self->body_filled_ += n;
          self->read();
        });
  }

  // Parses the head that is the first `length` bytes of the buffer into request_; false when
  // it was refused (the refusal is being sent).
  bool parse_head(std::size_t length) {
    if (!waiting_.serving()) {  // it was chosen to make room at the port's cap
      close();
      return false;
    }
    awaiting_head_ = false;
    timer_.cancel();
    const std::string head = buffer_.substr(0, length);
    buffer_.erase(0, length);
    std::string_view rest(head);
    const std::size_t line_end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, line_end);
    rest.remove_prefix(line_end + 2);

    // Request line: METHOD SP TARGET SP HTTP/1.x
    const std::size_t first = line.find(' ');
    const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
    if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos) {
      send(plain(400, "malformed request line"), false);
      return false;
    }
    const std::string_view version = line.substr(second + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      send(plain(400, "only HTTP/1.1 and HTTP/1.0"), false);
      return false;
    }
    request_ = HttpRequest{};
    request_.method = std::string(line.substr(0, first));
    const std::string_view target = line.substr(first + 1, second - first - 1);
    request_.path = std::string(target.substr(0, target.find('?')));
    keep_alive_ = version == "HTTP/1.1";
    if (auto refused = net::parse_http_fields(rest, request_.headers); !refused.empty()) {
      send(plain(400, std::move(refused)), false);
      return false;
    }
    const std::string connection = net::ascii_lower(request_.header("connection"));
    if (connection.find("close") != std::string::npos) keep_alive_ = false;
    if (connection.find("keep-alive") != std::string::npos) keep_alive_ = true;
    // A body's end must be known before it is read, and known one way only (RFC 9112 6.3):
    // chunked bodies are not taken, which also rules out a request smuggled past a proxy that
    // reads the two framings differently.
    if (!request_.header("transfer-encoding").empty()) {
      send(plain(411, "chunked request bodies are not taken: send Content-Length"), false);
      return false;
    }
    body_length_ = 0;
    if (const std::string& declared = request_.header("content-length"); !declared.empty()) {
      const auto n = net::parse_http_length(declared);
      if (!n) {
        send(plain(400, "malformed Content-Length"), false);
        return false;
      }
      body_length_ = *n;
    }
    if (body_length_ > limits().max_body_bytes) {
      send(plain(413,
                 limits().max_body_bytes == 0
                     ? "requests with a body are not taken"
                     : "request body over " + std::to_string(limits().max_body_bytes) + " bytes"),
           false);
      return false;
    }
    have_head_ = true;
    body_filled_ = 0;
    admitted_ = false;
    return true;
  }

  // Holds the body's bytes in the memory budget before reading it; false while it waits for
  // memory (it asks again shortly; the client's bytes wait in the socket meanwhile).
  bool admit_body() {
    if (continue_sending_) return false;
    if (admitted_ || body_length_ == 0) return true;
    if (!budget_->admit(body_length_)) {
      timer_.expires_after(kAdmissionPoll);
      timer_.async_wait([self = shared_from_this()](std::error_code error) {
        if (!error && !self->closed_) self->read();
      });
      return false;
    }
    hold_ = BudgetHold(budget_, body_length_);
    budget_->settle(body_length_);
    admitted_ = true;
    // Uninitialised: the pages are touched as the bytes arrive. When binary tensor data follows
    // a JSON header, the body starts where that data lands on an aligned address, so that the
    // inputs are viewed in place rather than copied (new[] aligns to kBodyAlignment).
    std::size_t lead = 0;
    if (auto json = net::parse_http_length(request_.header("inference-header-content-length"));
        json && *json <= body_length_) {
      lead = (kBodyAlignment - *json % kBodyAlignment) % kBodyAlignment;
    }
    std::shared_ptr<char[]> block(new char[body_length_ + lead]);
    request_.body = HttpBody{std::shared_ptr<char[]>(block, block.get() + lead), body_length_};
    // curl asks before it sends a large body (it would send it after a second anyway). The
    // body is read once the interim answer is written: two writes never overlap.
    if (net::ascii_lower(request_.header("expect")) == "100-continue") {
      continue_sending_ = true;
      arm(server_limits().stall_timeout);
      out_buffers_ = {asio::buffer(kContinue)};
      link_.async_write(out_buffers_,
                        [self = shared_from_this()](std::error_code error, std::size_t) {
                          if (self->closed_) return;
                          if (error) return self->close();
                          self->continue_sending_ = false;
                          self->read();
                        });
      return false;
    }
    return true;
  }

  // Hands the whole request to the service; its reply comes back on this thread.
  void dispatch() {
    busy_ = true;
    have_head_ = false;
    timer_.cancel();
    head_only_ = request_.method == "HEAD";
    request_.client = [self = shared_from_this()]() -> const ShmClient& {
      return self->shm_client();
    };
    request_.budget = budget_;
    caller_ = std::make_shared<Caller>();
    request_.caller = caller_;
    request_.models = {&models_, weak_from_this(), io_};
    // The reply keeps the connection alive, and so does the read that watches for its close. A
    // reply given on this thread after `handle` returned (the dispatch's delivery) is written
    // at once; one given inside it, or on another thread, is posted.
    handling_ = true;
    shared_->service.handle(
        std::move(request_), [self = shared_from_this()](HttpReply reply) mutable {
          if (self->io_->get_executor().running_in_this_thread() && !self->handling_) {
            if (!self->closed_) self->send(std::move(reply), self->keep_alive_);
            return;
          }
          auto io = self->io_;
          asio::post(*io, [self = std::move(self), reply = std::move(reply)]() mutable {
            if (!self->closed_) self->send(std::move(reply), self->keep_alive_);
          });
        });
    handling_ = false;
    watch_for_close();
  }

  // While the service has a request, a read stays pending: a client that closes the
  // connection (gave up: its deadline, a cancel) is noticed at once, and its request cancelled
  // (close()), so that the server does not run it for nobody. Bytes it brings are the next,
  // pipelined request's, kept for after the reply. A client that has sent more already (a
  // pipelined request waits in the buffer) is not watched: it waits, unread, as it would
  // without this read, and the buffer stays at most a head's worth.
  void watch_for_close() {
    if (closed_ || watching_ || !buffer_.empty()) return;
    watching_ = true;
    const std::size_t room = std::min(kReadChunk, limits().max_head_bytes - buffer_.size());
    link_.async_read_some(asio::buffer(chunk_.data(), room),
                          [self = shared_from_this()](std::error_code error, std::size_t n) {
                            self->watching_ = false;
                            if (self->closed_) return;
                            if (error) return self->close();
                            self->buffer_.append(self->chunk_.data(), n);
                            if (self->busy_) return self->watch_for_close();
                            self->read();
                          });
  }

  // Writes the reply within the stall timeout, then reads the next request or closes.
  void send(HttpReply reply, bool keep_alive) {
    busy_ = true;
    out_ = "HTTP/1.1 " + std::to_string(reply.status) + " " + http_reason(reply.status) + "\r\n";
    if (!reply.content_type.empty()) out_ += "Content-Type: " + reply.content_type + "\r\n";
    std::size_t length = reply.body.size();
    for (auto part : reply.tail) length += part.size();
    out_ += "Content-Length: " + std::to_string(length) + "\r\n";
    out_ += reply.extra_headers;
    if (!keep_alive) out_ += "Connection: close\r\n";
    out_ += "\r\n";
    reply_body_ = std::move(reply.body);
    out_buffers_ = {asio::buffer(out_)};
    if (!head_only_ && !reply_body_.empty()) out_buffers_.push_back(asio::buffer(reply_body_));
    reply_tail_owner_ = std::move(reply.tail_owner);
    for (auto part : head_only_ ? std::vector<std::string_view>() : reply.tail) {
      if (!part.empty()) out_buffers_.push_back(asio::buffer(part.data(), part.size()));
    }
    arm(server_limits().stall_timeout);
    link_.async_write(out_buffers_,
                      [self = shared_from_this(), keep_alive](std::error_code error, std::size_t) {
                        if (self->closed_) return;
                        self->out_.clear();
                        self->reply_body_ = std::string();  // not kept between requests
                        self->reply_tail_owner_.reset();
                        self->request_.body = HttpBody();
                        self->hold_ = BudgetHold();
                        self->busy_ = false;
                        self->head_only_ = false;
                        self->caller_.reset();  // answered
                        if (error || !keep_alive) return self->close();
                        self->timer_.cancel();
                        if (self->watching_) {
                          // Its read goes on as the next head's: the head's timeout starts.
                          self->awaiting_head_ = true;
                          self->waiting_.waiting();
                          self->arm(self->server_limits().handshake_timeout);
                          return;
                        }
                        self->read();
                      });
  }

  // Closes the connection unless it is armed again (or closed) within `timeout`.
  void arm(std::chrono::milliseconds timeout) {
    const std::uint64_t generation = ++timer_generation_;
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this(), generation](std::error_code error) {
      if (error || generation != self->timer_generation_) return;
      self->close();
    });
  }

  net::Link link_;
  std::shared_ptr<asio::io_context> io_;
  WaitingMark waiting_;  // since accepted: the TLS handshake and the first head count
  std::shared_ptr<HttpShared> shared_;
  std::shared_ptr<net::ConnectionSet<HttpConnection>> set_;
  ConnectionSlot slot_;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  std::shared_ptr<ConnectionBudget> budget_;
  BudgetHold hold_;  // the body being read or answered
  std::array<char, kReadChunk> chunk_{};
  std::string buffer_;                   // bytes read past the last request, at most a head
  HttpRequest request_;                  // the request being read
  std::optional<ShmClient> shm_client_;  // made on first need
  std::size_t body_length_ = 0, body_filled_ = 0;
  std::string out_, reply_body_;                  // the reply being written
  std::shared_ptr<const void> reply_tail_owner_;  // and what its tail's bytes live in
  std::vector<asio::const_buffer> out_buffers_;   // what the write under way sends
  bool have_head_ = false;                        // request_ has its head; its body is being read
  bool admitted_ = false;                         // the body's bytes are held in the budget
  bool continue_sending_ = false;                 // an interim 100 Continue is being written
  bool awaiting_head_ = false;                    // the head timeout runs
  bool busy_ = false;               // a request is with the service or its reply written
  bool watching_ = false;           // a read is pending while busy_ (watch_for_close)
  std::shared_ptr<Caller> caller_;  // of the request with the service, until its reply is written
  bool keep_alive_ = true;
  bool head_only_ = false;
  bool handling_ = false;  // inside the service's `handle`
  bool closed_ = false;
  InferDispatch models_;  // where this connection's inference requests run
};

// At the cap, a connection waiting for a request head makes room for a newcomer.
static_assert(EvictsWaiting<HttpConnection>::value);

// Each HTTP port has its own cap (HttpLimits::max_connections), apart from the gRPC and TCP
// ports' one.
HttpServer::HttpServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads,
                       std::uint16_t port, HttpService service,
                       std::shared_ptr<net::TlsContext> tls)
    : shared_(
          std::make_shared<HttpShared>(HttpShared{context, std::move(service), std::move(tls)})),
      acceptor_(context, threads, port,
                std::make_shared<ConnectionCount>(shared_->service.limits.max_connections)) {}

void HttpServer::start() {
  acceptor_.start([this](asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                         ConnectionSlot slot) {
    return std::make_shared<HttpConnection>(std::move(socket), io, shared_, acceptor_.connections(),
                                            std::move(slot));
  });
}

void HttpServer::stop() {
  acceptor_.stop([](HttpConnection& connection) { connection.close(); });
}

}  // namespace sonic::server
