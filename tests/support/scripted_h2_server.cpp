#include "scripted_h2_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sonic::test {

namespace {

nghttp2_nv header(const char* name, const char* value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value)), std::strlen(name),
          std::strlen(value), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

struct ScriptedH2Server::State {
  // One accepted connection and its nghttp2 server session; touched only by the server thread.
  struct Connection {
    State* server = nullptr;
    int fd = -1;
    bool first = false;
    nghttp2_session* session = nullptr;
    std::vector<std::int32_t> complete;  // calls whose request fully arrived, not yet handled
    std::int32_t first_stream = 0;
    int calls = 0;
    bool going_away = false;
    bool draining = false;  // GOAWAY written and our side shut: reading until the client closes
    bool dead = false;
    ~Connection() {
      if (session) nghttp2_session_del(session);
      if (fd >= 0) ::close(fd);
    }
  };

  H2Script script;
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> connections{0}, received{0}, answered{0}, cancels{0};
  int proxy_errors_sent = 0;  // on the server's thread
  std::vector<std::unique_ptr<Connection>> open;
  std::thread thread;

  static ssize_t on_send(nghttp2_session*, const std::uint8_t* data, std::size_t length, int,
                         void* user) {
    auto* c = static_cast<Connection*>(user);
    ssize_t sent = ::send(c->fd, data, length, MSG_NOSIGNAL);
    if (sent < 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    return sent;
  }

  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* c = static_cast<Connection*>(user);
    bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && end) {
      c->complete.push_back(frame->hd.stream_id);
    } else if (frame->hd.type == NGHTTP2_RST_STREAM &&
               frame->rst_stream.error_code == NGHTTP2_CANCEL) {
      ++c->server->cancels;
    }
    return 0;
  }

  // The body of every answer: one gRPC message holding an empty ModelInferResponse, then the
  // trailers with grpc-status 0.
  static ssize_t read_body(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*, void*) {
    if (length < 5) return NGHTTP2_ERR_CALLBACK_FAILURE;
    std::memset(buf, 0, 5);
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_nv trailer = header("grpc-status", "0");
    nghttp2_submit_trailer(session, stream_id, &trailer, 1);
    return 5;
  }

  // A proxy's error page, as nginx sends it when its upstream fails.
  static constexpr const char* kErrorPage =
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
      "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
      "</body>\r\n</html>\r\n";

  static ssize_t read_error_page(nghttp2_session*, std::int32_t, std::uint8_t* buf,
                                 std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                 void*) {
    const std::size_t size = std::strlen(kErrorPage);
    if (length < size) return NGHTTP2_ERR_CALLBACK_FAILURE;
    std::memcpy(buf, kErrorPage, size);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(size);
  }

  void answer_as_proxy(Connection& c, std::int32_t stream_id) {
    const std::string status = std::to_string(script.proxy_status);
    nghttp2_nv nva[] = {header(":status", status.c_str()), header("content-type", "text/html")};
    nghttp2_data_provider body{};
    body.read_callback = &State::read_error_page;
    nghttp2_submit_response(c.session, stream_id, nva, 2, &body);
    ++answered;
  }

  void answer(Connection& c, std::int32_t stream_id) {
    nghttp2_nv nva[] = {header(":status", "200"), header("content-type", "application/grpc")};
    nghttp2_data_provider body{};
    body.read_callback = &State::read_body;
    nghttp2_submit_response(c.session, stream_id, nva, 2, &body);
    ++answered;
  }

  // Applies the script to the calls that arrived since the last look.
  void handle_calls(Connection& c) {
    auto complete = std::move(c.complete);
    c.complete.clear();
    for (std::int32_t id : complete) {
      ++received;
      if (c.calls++ == 0) c.first_stream = id;
      if (c.going_away) continue;
      if (proxy_errors_sent < script.proxy_errors) {
        ++proxy_errors_sent;
        answer_as_proxy(c, id);
        continue;
      }
      bool scripted_goaway = c.first && script.goaway_after_calls > 0;
      if (script.goaway_every > 0) {
        answer(c, id);
        if (c.calls == script.goaway_every) {
          nghttp2_submit_goaway(c.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR, nullptr, 0);
          c.going_away = true;
        }
      } else if (scripted_goaway) {
        if (c.calls == script.goaway_after_calls) {
          nghttp2_submit_goaway(c.session, NGHTTP2_FLAG_NONE, c.first_stream, NGHTTP2_NO_ERROR,
                                nullptr, 0);
          answer(c, c.first_stream);
          c.going_away = true;
        }
      } else if (script.answer) {
        answer(c, id);
      }
    }
  }

  void accept_one() {
    int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->server = this;
    c->fd = fd;
    c->first = connections++ == 0;
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_send_callback(callbacks, &State::on_send);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &State::on_frame);
    nghttp2_session_server_new(&c->session, callbacks, c.get());
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, nullptr, 0);
    nghttp2_session_send(c->session);
    open.push_back(std::move(c));
  }

  void read_from(Connection& c) {
    std::uint8_t buffer[16384];
    ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      c.dead = true;
      return;
    }
    if (c.draining) return;  // what the client still sends for refused streams is dropped
    if (nghttp2_session_mem_recv(c.session, buffer, static_cast<std::size_t>(n)) < 0) {
      c.dead = true;
      return;
    }
    handle_calls(c);
    if (nghttp2_session_send(c.session) != 0) c.dead = true;
    // After GOAWAY, once the processed calls are answered, close gracefully as HTTP/2 servers
    // do: shut our side and read until the client closes, so that data it is still sending
    // does not make the kernel reset the connection under the answers.
    if (c.going_away && !nghttp2_session_want_write(c.session)) {
      ::shutdown(c.fd, SHUT_WR);
      c.draining = true;
    }
  }

  void run() {
    while (!stop) {
      std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
      for (auto& c : open) fds.push_back({c->fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) accept_one();
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(*open[i - 1]);
      }
      std::vector<std::unique_ptr<Connection>> alive;
      for (auto& c : open) {
        if (!c->dead) alive.push_back(std::move(c));
      }
      open = std::move(alive);
    }
    open.clear();
  }
};

ScriptedH2Server::ScriptedH2Server(H2Script script) : state_(std::make_unique<State>()) {
  state_->script = script;
  state_->listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(state_->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(state_->listen_fd, 16) != 0) {
    ::close(state_->listen_fd);
    throw std::runtime_error("scripted HTTP/2 server: cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(state_->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  state_->port = ntohs(addr.sin_port);
  state_->thread = std::thread([state = state_.get()] { state->run(); });
}

ScriptedH2Server::~ScriptedH2Server() {
  state_->stop = true;
  state_->thread.join();
  ::close(state_->listen_fd);
}

std::string ScriptedH2Server::url() const {
  return "grpc://127.0.0.1:" + std::to_string(state_->port);
}
int ScriptedH2Server::connections() const { return state_->connections; }
int ScriptedH2Server::calls_received() const { return state_->received; }
int ScriptedH2Server::calls_answered() const { return state_->answered; }
int ScriptedH2Server::cancels_received() const { return state_->cancels; }

}  // namespace sonic::test
