// FaultProxy: every socket, timer and fault setting lives on the proxy's one io thread, so none of
// them needs a lock; public methods post to that thread and wait for the result.
#include "fault_proxy.hpp"

#include <asio.hpp>

#include <sys/ioctl.h>
#if defined(__linux__)
#include <linux/sockios.h>
#endif

#include <array>
#include <atomic>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace sonic::test {
namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadSize = 64 * 1024;   // one read, one chunk at most
constexpr std::size_t kMaxHeld = 1024 * 1024;  // per direction and connection; then stop reading
constexpr auto kCallTimeout = std::chrono::seconds(10);  // an io thread that never answers
constexpr auto kDrainStep = std::chrono::milliseconds(1);
constexpr auto kDrainLimit = std::chrono::milliseconds(200);
constexpr auto kAcceptRetry = std::chrono::milliseconds(10);

/// Bytes read from one side and not yet written to the other.
struct Chunk {
  std::vector<char> data;
  std::size_t offset = 0;  // bytes of data already written
  Clock::time_point arrival;
};

/// One direction of a connection: reads from src, holds, writes to dst.
struct Pipe {
  Pipe(asio::io_context& io, tcp::socket& from, tcp::socket& to) : src(from), dst(to), timer(io) {}

  tcp::socket& src;
  tcp::socket& dst;
  std::array<char, kReadSize> buffer{};
  std::deque<Chunk> held;
  std::size_t held_bytes = 0;
  bool reading = false;      // a read on src is in flight
  bool writing = false;      // a write on dst is in flight
  bool eof = false;          // src sent FIN
  bool shut = false;         // FIN forwarded to dst
  bool timer_armed = false;  // waiting for the delay of the front chunk
  asio::steady_timer timer;
};

/// One accepted client connection and its connection to the target.
struct Session {
  Session(asio::io_context& io, std::uint64_t session_id, tcp::socket accepted)
      : id(session_id),
        client(std::move(accepted)),
        server(io),
        up(io, client, server),
        down(io, server, client),
        drain_timer(io) {}

  Pipe& pipe(bool to_client) { return to_client ? down : up; }

  std::uint64_t id;
  tcp::socket client;
  tcp::socket server;
  Pipe up;                 // client to server
  Pipe down;               // server to client
  bool connected = false;  // server socket connected; pipes run
  bool closed = false;
  bool cutting = false;  // cut_after's budget ended here: reset once the client took the bytes
  asio::steady_timer drain_timer;
  Clock::time_point drain_deadline;
};

using SessionPtr = std::shared_ptr<Session>;

void close_socket(tcp::socket& socket, bool reset) {
  std::error_code ec;
  if (!socket.is_open()) return;
  if (reset) socket.set_option(asio::socket_base::linger(true, 0), ec);
  socket.close(ec);
}

/// Bytes the kernel still holds for the peer (unsent or unacknowledged); 0 when unknown.
int unsent_bytes(tcp::socket& socket) {
#if defined(SIOCOUTQ)
  int queued = 0;
  if (::ioctl(socket.native_handle(), SIOCOUTQ, &queued) == 0) return queued;
#else
  (void)socket;
#endif
  return 0;
}

}  // namespace

class FaultProxy::Impl {
 public:
  explicit Impl(std::uint16_t target_port)
      : work_(asio::make_work_guard(io_)), acceptor_(io_), accept_retry_(io_) {
    target_ = target_port;
    if (std::error_code ec = open_acceptor(0)) {
      throw std::runtime_error("FaultProxy: cannot listen on 127.0.0.1: " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { run(); });
  }

  ~Impl() {
    try {
      call([this] { shutdown(); });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FaultProxy: shutdown: %s\n", e.what());
    }
    work_.reset();
    io_.stop();
    thread_.join();
  }

  /// Runs f on the io thread and returns its result. f reports failures in its result rather
  /// than throwing.
  template <typename F>
  auto call(F f) -> decltype(f()) {
    using R = decltype(f());
    if (io_.get_executor().running_in_this_thread()) return f();
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    std::future<R> result = task->get_future();
    asio::post(io_, [task] { (*task)(); });
    if (result.wait_for(kCallTimeout) != std::future_status::ready) {
      throw std::runtime_error("FaultProxy: io thread did not answer");
    }
    return result.get();
  }

  // ---- io thread only ----

  void set_mode(Fault mode, Clock::duration delay, std::size_t cut) {
    mode_ = mode;
    delay_ = delay;
    cut_left_ = cut;
    for (const SessionPtr& s : snapshot()) {
      for (bool to_client : {false, true}) {
        Pipe& p = s->pipe(to_client);
        if (p.timer_armed) p.timer.cancel();  // its handler pumps under the new mode
        pump(s, to_client);
      }
    }
  }

  void reset_all() {
    for (const SessionPtr& s : snapshot()) {
      ++resets_;
      close_session(s, /*reset=*/true);
    }
    set_mode(Fault::Pass, {}, 0);
  }

  /// Returns the error of reopening the listener; the caller throws it on its own thread (an
  /// exception carried across threads by a future trips ThreadSanitizer in libstdc++).
  std::error_code refuse(bool on) {
    if (on == refusing_) return {};
    if (on) {
      refusing_ = true;
      ++accept_generation_;
      accept_retry_.cancel();
      std::error_code ec;
      acceptor_.close(ec);
      return {};
    }
    if (std::error_code ec = open_acceptor(port_)) return ec;
    refusing_ = false;
    accept();
    return {};
  }

  Fault mode() const { return mode_; }
  bool refusing() const { return refusing_; }

 private:
  void run() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "FaultProxy: io thread: %s\n", e.what());
      }
    }
  }

  void shutdown() {
    ++accept_generation_;
    accept_retry_.cancel();
    std::error_code ec;
    acceptor_.close(ec);
    for (const SessionPtr& s : snapshot()) close_session(s, /*reset=*/false);
  }

  std::vector<SessionPtr> snapshot() const {
    std::vector<SessionPtr> all;
    all.reserve(sessions_.size());
    for (const auto& entry : sessions_) all.push_back(entry.second);
    return all;
  }

  std::error_code open_acceptor(std::uint16_t port) {
    const tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port);
    std::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    // SO_REUSEADDR lets the reopened listener share the port with the proxy's own established
    // connections; a foreign listener on the port still makes bind fail.
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      std::error_code ignored;
      acceptor_.close(ignored);
      return ec;
    }
    ++accept_generation_;
    return {};
  }

  void accept() {
    const std::uint64_t generation = accept_generation_;
    acceptor_.async_accept([this, generation](std::error_code ec, tcp::socket socket) {
      if (!ec) on_accept(std::move(socket));
      if (generation != accept_generation_ || !acceptor_.is_open()) return;  // closed or reopened
      if (!ec) return accept();
      // EMFILE and the like: try again shortly rather than spin.
      accept_retry_.expires_after(kAcceptRetry);
      accept_retry_.async_wait([this, generation](std::error_code wait_ec) {
        if (!wait_ec && generation == accept_generation_ && acceptor_.is_open()) accept();
      });
    });
  }

  void on_accept(tcp::socket socket) {
    ++accepted_;
    auto s = std::make_shared<Session>(io_, next_id_++, std::move(socket));
    sessions_.emplace(s->id, s);
    open_ = sessions_.size();
    const tcp::endpoint target(asio::ip::address_v4::loopback(), target_.load());
    s->server.async_connect(target, [this, s](std::error_code ec) {
      if (s->closed) return;
      if (ec) return close_session(s, /*reset=*/true);  // target down: the client sees a reset
      s->connected = true;
      std::error_code ignored;
      s->client.set_option(tcp::no_delay(true), ignored);
      s->server.set_option(tcp::no_delay(true), ignored);
      for (bool to_client : {false, true}) {
        start_read(s, to_client);
        pump(s, to_client);
      }
    });
  }

  void start_read(const SessionPtr& s, bool to_client) {
    Pipe& p = s->pipe(to_client);
    if (s->closed || !s->connected || p.reading || p.eof || p.held_bytes >= kMaxHeld) return;
    p.reading = true;
    p.src.async_read_some(
        asio::buffer(p.buffer), [this, s, to_client](std::error_code ec, std::size_t n) {
          Pipe& pipe = s->pipe(to_client);
          pipe.reading = false;
          if (s->closed) return;
          if (ec == asio::error::eof) {
            pipe.eof = true;
            return pump(s, to_client);
          }
          if (ec) return close_session(s, /*reset=*/true);  // pass a reset on to the other side
          const auto begin = pipe.buffer.begin();
          pipe.held.push_back(Chunk{
              std::vector<char>(begin, begin + static_cast<std::ptrdiff_t>(n)), 0, Clock::now()});
          pipe.held_bytes += n;
          pump(s, to_client);
          start_read(s, to_client);
        });
  }

  /// Writes the front chunk of a pipe if the current fault lets it go now.
  void pump(const SessionPtr& s, bool to_client) {
    Pipe& p = s->pipe(to_client);
    if (s->closed || !s->connected || p.writing || p.timer_armed) return;
    if (to_client && s->cutting) return;
    if (p.held.empty()) {
      if (p.eof && !p.shut) {
        p.shut = true;
        std::error_code ignored;
        p.dst.shutdown(tcp::socket::shutdown_send, ignored);
        if (s->up.shut && s->down.shut) close_session(s, /*reset=*/false);
      }
      return;
    }
    if (mode_ == Fault::Stall) return;
    Chunk& chunk = p.held.front();
    if (mode_ == Fault::Delay && Clock::now() < chunk.arrival + delay_) {
      p.timer_armed = true;
      p.timer.expires_at(chunk.arrival + delay_);
      p.timer.async_wait([this, s, to_client](std::error_code) {
        s->pipe(to_client).timer_armed = false;
        pump(s, to_client);
      });
      return;
    }
    std::size_t length = chunk.data.size() - chunk.offset;
    if (to_client && mode_ == Fault::CutAfter) {
      if (cut_left_ == 0) {  // cut_after(0): this connection is the one
        mode_ = Fault::Pass;
        ++resets_;
        return close_session(s, /*reset=*/true);
      }
      if (length >= cut_left_) {
        length = cut_left_;
        mode_ = Fault::Pass;  // one-shot: other connections pass from here on
        s->cutting = true;
      }
      cut_left_ -= length;
    }
    p.writing = true;
    // Counted as handed to the socket, not once the write completes: the peer may read them,
    // and a test read the counter, before this thread runs the completion.
    (to_client ? to_client_ : to_server_) += length;
    asio::async_write(p.dst, asio::buffer(chunk.data.data() + chunk.offset, length),
                      [this, s, to_client](std::error_code ec, std::size_t n) {
                        Pipe& pipe = s->pipe(to_client);
                        pipe.writing = false;
                        if (s->closed) return;
                        if (ec) return close_session(s, /*reset=*/true);
                        Chunk& front = pipe.held.front();
                        front.offset += n;
                        pipe.held_bytes -= n;
                        if (front.offset == front.data.size()) pipe.held.pop_front();
                        if (to_client && s->cutting) {
                          s->drain_deadline = Clock::now() + kDrainLimit;
                          return reset_when_drained(s);
                        }
                        pump(s, to_client);
                        start_read(s, to_client);
                      });
  }

  /// A reset discards what the kernel has not sent yet: wait (bounded) until the client's socket
  /// has delivered the cut_after bytes, then reset.
  void reset_when_drained(const SessionPtr& s) {
    if (s->closed) return;
    if (unsent_bytes(s->client) > 0 && Clock::now() < s->drain_deadline) {
      s->drain_timer.expires_after(kDrainStep);
      s->drain_timer.async_wait([this, s](std::error_code) { reset_when_drained(s); });
      return;
    }
    ++resets_;
    close_session(s, /*reset=*/true);
  }

  void close_session(const SessionPtr& s, bool reset) {
    if (s->closed) return;
    s->closed = true;
    close_socket(s->client, reset);
    close_socket(s->server, reset);
    s->up.timer.cancel();
    s->down.timer.cancel();
    s->drain_timer.cancel();
    sessions_.erase(s->id);
    open_ = sessions_.size();
  }

  // Declared first, destroyed last: every socket and timer below belongs to it.
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::uint64_t accept_generation_ = 0;
  bool refusing_ = false;
  Fault mode_ = Fault::Pass;
  Clock::duration delay_{};
  std::size_t cut_left_ = 0;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, SessionPtr> sessions_;
  std::thread thread_;

 public:
  // Read from any thread; written on the io thread (target_: by set_target).
  std::uint16_t port_ = 0;
  std::atomic<std::uint16_t> target_{0};
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> resets_{0};
  std::atomic<std::size_t> to_server_{0};
  std::atomic<std::size_t> to_client_{0};
};

FaultProxy::FaultProxy(std::uint16_t target_port) : impl_(std::make_unique<Impl>(target_port)) {}

FaultProxy::~FaultProxy() = default;

std::uint16_t FaultProxy::port() const { return impl_->port_; }

std::string FaultProxy::url() const { return "grpc://127.0.0.1:" + std::to_string(port()); }

void FaultProxy::set_target(std::uint16_t port) { impl_->target_ = port; }

void FaultProxy::pass() {
  impl_->call([this] { impl_->set_mode(Fault::Pass, {}, 0); });
}

void FaultProxy::delay(std::chrono::milliseconds d) {
  if (d.count() < 0) throw std::invalid_argument("FaultProxy::delay: negative delay");
  impl_->call([this, d] { impl_->set_mode(Fault::Delay, d, 0); });
}

void FaultProxy::stall() {
  impl_->call([this] { impl_->set_mode(Fault::Stall, {}, 0); });
}

void FaultProxy::reset_all() {
  impl_->call([this] { impl_->reset_all(); });
}

void FaultProxy::cut_after(std::size_t bytes) {
  impl_->call([this, bytes] { impl_->set_mode(Fault::CutAfter, {}, bytes); });
}

void FaultProxy::refuse(bool on) {
  const std::error_code ec = impl_->call([this, on] { return impl_->refuse(on); });
  if (ec) {
    throw std::runtime_error("FaultProxy: cannot reopen 127.0.0.1:" + std::to_string(port()) +
                             " (taken while refusing?): " + ec.message());
  }
}

Fault FaultProxy::fault() const {
  return impl_->call([this] { return impl_->mode(); });
}

bool FaultProxy::refusing() const {
  return impl_->call([this] { return impl_->refusing(); });
}

std::size_t FaultProxy::connections_accepted() const { return impl_->accepted_; }
std::size_t FaultProxy::connections_open() const { return impl_->open_; }
std::size_t FaultProxy::connections_reset() const { return impl_->resets_; }
std::size_t FaultProxy::bytes_to_server() const { return impl_->to_server_; }
std::size_t FaultProxy::bytes_to_client() const { return impl_->to_client_; }

}  // namespace sonic::test
