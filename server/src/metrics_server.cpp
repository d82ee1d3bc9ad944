#include "metrics_server.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace sonic::server {

namespace {
// What a client may make the metrics port hold. A connection holds at most kMaxHeadBytes of
// request (a scraper's request is a few hundred bytes) and one page being written: with
// kMaxConnections of them, the port costs a few MiB at most whatever its clients do. Prometheus
// keeps one connection per target; a few more allow for curl and dashboards.
constexpr std::size_t kMaxHeadBytes = 8 << 10;
constexpr std::size_t kMaxConnections = 64;
constexpr std::size_t kReadChunk = 2048;
constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}
}  // namespace

/// One client of the metrics port: reads a request head, answers it, and reads the next (keep-
/// alive, pipelined requests one after another) until the client closes, asks to close, sends
/// what the port does not take, or keeps it waiting past a timeout. Runs on one network thread;
/// every member is touched on it only.
class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io,
                    std::shared_ptr<MetricsShared> shared,
                    std::shared_ptr<net::ConnectionSet<MetricsConnection>> set)
      : socket_(std::move(socket)),
        io_(std::move(io)),
        shared_(std::move(shared)),
        set_(std::move(set)),
        timer_(*io_) {}
  // The count was taken when the connection was accepted (MetricsServer::start).
  ~MetricsConnection() { shared_->connections.fetch_sub(1, std::memory_order_relaxed); }

  const std::shared_ptr<asio::io_context>& io_context() const { return io_; }

  void start() { read(); }

  /// Closes the socket (pending reads and writes end) and the timer. Idempotent.
  void close() {
    if (closed_) return;
    closed_ = true;
    std::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    timer_.cancel();
    set_->remove(this);
  }

 private:
  struct Reply {
    int status;
    const char* reason;
    std::string body;
    bool keep_alive;
    bool head_only = false;
    const char* extra_header = "";
  };

  // Answers a head already buffered, or reads more of one: a request head must arrive whole
  // within the handshake timeout of the first wait for it (the next on a kept-alive connection
  // too, its wait starting when the previous answer is written).
  void read() {
    if (closed_) return;
    const std::size_t end = buffer_.find("\r\n\r\n");
    if (end != std::string::npos) return answer(end + 4);
    if (buffer_.size() >= kMaxHeadBytes) {
      return send({431, "Request Header Fields Too Large", "request head too large\n", false});
    }
    if (!awaiting_head_) {
      // One deadline for the whole head, not one per read: a client that sends a byte at a
      // time must still finish within it.
      awaiting_head_ = true;
      arm(shared_->context->options.limits.handshake_timeout);
    }
    const std::size_t room = std::min(kReadChunk, kMaxHeadBytes - buffer_.size());
    socket_.async_read_some(asio::buffer(chunk_.data(), room),
                            [self = shared_from_this()](std::error_code error, std::size_t n) {
                              if (self->closed_) return;
                              if (error) return self->close();
                              self->buffer_.append(self->chunk_.data(), n);
                              self->read();
                            });
  }

  // Answers the request whose head is the first `length` bytes of the buffer.
  void answer(std::size_t length) {
    awaiting_head_ = false;
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
      return send({400, "Bad Request", "malformed request line\n", false});
    }
    const std::string_view method = line.substr(0, first);
    const std::string_view target = line.substr(first + 1, second - first - 1);
    const std::string_view version = line.substr(second + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      return send({400, "Bad Request", "only HTTP/1.1 and HTTP/1.0\n", false});
    }
    bool keep_alive = version == "HTTP/1.1";
    while (!rest.empty() && rest != "\r\n") {
      const std::size_t end = rest.find("\r\n");
      const std::string_view field = rest.substr(0, end);
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
      const std::size_t colon = field.find(':');
      if (colon == std::string_view::npos) {
        return send({400, "Bad Request", "malformed header field\n", false});
      }
      const std::string name = lower(trim(field.substr(0, colon)));
      const std::string value = lower(trim(field.substr(colon + 1)));
      // The port takes no request bodies: a body would have to be read and thrown away.
      if ((name == "content-length" && value != "0") || name == "transfer-encoding") {
        return send({413, "Content Too Large", "requests with a body are not taken\n", false});
      }
      if (name == "connection") {
        if (value.find("close") != std::string::npos) keep_alive = false;
        if (value.find("keep-alive") != std::string::npos) keep_alive = true;
      }
    }
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only) {
      return send({405, "Method Not Allowed", "only GET and HEAD\n", keep_alive, false,
                   "Allow: GET, HEAD\r\n"});
    }
    const std::string_view path = target.substr(0, target.find('?'));
    if (path != "/metrics") return send({404, "Not Found", "not found\n", keep_alive, head_only});
    const auto& executor = shared_->context->executor;
    send({200, "OK", render_metrics(executor->all_statistics(), shared_->host.read()), keep_alive,
          head_only});
  }

  // Writes the reply within the stall timeout, then reads the next request or closes.
  void send(Reply reply) {
    out_ = "HTTP/1.1 " + std::to_string(reply.status) + " " + reply.reason + "\r\n";
    out_ += "Content-Type: ";
    out_ += reply.status == 200 ? kContentType : std::string_view("text/plain; charset=utf-8");
    out_ += "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\n";
    out_ += reply.extra_header;
    if (!reply.keep_alive) out_ += "Connection: close\r\n";
    out_ += "\r\n";
    if (!reply.head_only) out_ += reply.body;
    arm(shared_->context->options.limits.stall_timeout);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), keep_alive = reply.keep_alive](
                          std::error_code error, std::size_t) {
                        if (self->closed_) return;
                        self->out_.clear();
                        self->out_.shrink_to_fit();  // a page is not kept between scrapes
                        if (error || !keep_alive) return self->close();
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

  asio::ip::tcp::socket socket_;
  std::shared_ptr<asio::io_context> io_;
  std::shared_ptr<MetricsShared> shared_;
  std::shared_ptr<net::ConnectionSet<MetricsConnection>> set_;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  std::array<char, kReadChunk> chunk_{};
  std::string buffer_;          // request bytes not yet answered, at most kMaxHeadBytes
  std::string out_;             // the reply being written
  bool awaiting_head_ = false;  // the head timeout runs
  bool closed_ = false;
};

MetricsServer::MetricsServer(std::shared_ptr<ServerContext> context, net::NetworkThreads& threads)
    : shared_(std::make_shared<MetricsShared>()),
      threads_(threads),
      accept_io_(threads_.next()),
      listener_(*accept_io_, context->options.host,
                static_cast<std::uint16_t>(std::max(0, context->options.metrics_port))),
      connections_(std::make_shared<net::ConnectionSet<MetricsConnection>>()) {
  shared_->context = std::move(context);
  shared_->host.read();  // the first scrape's CPU share starts here, not at boot
}

void MetricsServer::start() {
  listener_.start(
      [this] { return threads_.next(); },
      [this](asio::ip::tcp::socket socket, std::shared_ptr<asio::io_context> io) {
        if (shared_->connections.fetch_add(1, std::memory_order_relaxed) >= kMaxConnections) {
          shared_->connections.fetch_sub(1, std::memory_order_relaxed);
          return;  // as many as allowed: this one closes now
        }
        auto connection =
            std::make_shared<MetricsConnection>(std::move(socket), io, shared_, connections_);
        if (!connections_->add(connection)) return;  // stopping: it closes now
        asio::post(*io, [connection] { connection->start(); });
      });
}

void MetricsServer::stop() {
  listener_.close();
  for (auto& connection : connections_->close()) {
    asio::post(*connection->io_context(), [connection] { connection->close(); });
  }
}

}  // namespace sonic::server
