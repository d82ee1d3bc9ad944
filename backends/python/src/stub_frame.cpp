#include "stub_frame.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

namespace sonic::python_backend {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kAlignment = 64;

Error unavailable(const std::string& what) { return Error(StatusCode::Unavailable, what); }

void put_u32(std::uint8_t* out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

void put_u64(std::uint8_t* out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t get_le(const std::uint8_t* in, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= std::uint64_t{in[i]} << (8 * i);
  return value;
}

// Whether the watched process ended (a zombie included), without reaping it.
bool ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// Waits until `fd` is readable (POLLIN), or writable (POLLOUT), or the deadline passes, or the
// watched process ends; data left to read comes first.
Result<void> wait_ready(int fd, short events, const std::optional<Clock::time_point>& deadline,
                        const PeerWatch& watch) {
  constexpr long long kCheckMillis = 50;  // how often a pid without a pidfd is checked
  for (;;) {
    long long timeout_ms = -1;
    if (deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return Error(StatusCode::DeadlineExceeded, "no answer in time");
      timeout_ms = left + 1;
    }
    if (watch.pidfd < 0 && watch.pid > 0) {
      timeout_ms = timeout_ms < 0 ? kCheckMillis : std::min(timeout_ms, kCheckMillis);
    }
    pollfd p[2] = {{fd, events, 0}, {watch.pidfd, POLLIN, 0}};
    const int ready = ::poll(p, watch.pidfd >= 0 ? 2 : 1,
                             static_cast<int>(std::min<long long>(timeout_ms, INT_MAX)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return unavailable(std::string("poll: ") + std::strerror(errno));
    }
    if (p[0].revents != 0) return {};
    if (p[1].revents != 0 || (watch.pidfd < 0 && watch.pid > 0 && ended(watch.pid))) {
      return unavailable("ended");
    }
  }
}

// Reads exactly `size` bytes; `started` says whether a frame is under way (for the message).
Result<void> read_exactly(int fd, void* out, std::size_t size,
                          const std::optional<Clock::time_point>& deadline, bool started,
                          const PeerWatch& watch) {
  auto* at = static_cast<std::uint8_t*>(out);
  while (size > 0) {
    if (auto ok = wait_ready(fd, POLLIN, deadline, watch); !ok) return ok;
    const ssize_t got = ::recv(fd, at, size, 0);
    if (got == 0) return unavailable(started ? "closed within a frame" : "closed");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return unavailable(std::string("recv: ") + std::strerror(errno));
    }
    at += got;
    size -= static_cast<std::size_t>(got);
    started = true;
  }
  return {};
}

std::size_t aligned(std::size_t size) { return (size + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

Result<void> write_frame(int fd, const std::string& header, const std::vector<ByteRange>& buffers,
                         std::optional<std::chrono::steady_clock::time_point> deadline,
                         const PeerWatch& watch) {
  if (header.size() > kMaxHeaderBytes || buffers.size() > kMaxBuffers) {
    return Error(StatusCode::ResourceExhausted, "a message to the Python stub is too large");
  }
  std::vector<std::uint8_t> prefix(8 + 8 * buffers.size());
  put_u32(prefix.data(), static_cast<std::uint32_t>(header.size()));
  put_u32(prefix.data() + 4, static_cast<std::uint32_t>(buffers.size()));
  for (std::size_t i = 0; i < buffers.size(); ++i) put_u64(&prefix[8 + 8 * i], buffers[i].size);

  std::vector<iovec> pieces;
  pieces.reserve(2 + buffers.size());
  pieces.push_back({prefix.data(), prefix.size()});
  pieces.push_back({const_cast<char*>(header.data()), header.size()});
  for (const auto& b : buffers) {
    // sendmsg only reads through these pointers.
    if (b.size > 0) pieces.push_back({const_cast<void*>(b.data), b.size});
  }
  std::size_t first = 0;
  while (first < pieces.size()) {
    msghdr message{};
    message.msg_iov = &pieces[first];
    // Linux takes at most IOV_MAX pieces per call.
    message.msg_iovlen = std::min<std::size_t>(pieces.size() - first, IOV_MAX);
    // Non-blocking, so that a peer that stops reading costs the deadline, not this thread.
    const ssize_t sent = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (auto ok = wait_ready(fd, POLLOUT, deadline, watch); !ok) return ok;
        continue;
      }
      return unavailable(std::string("send: ") + std::strerror(errno));
    }
    auto left = static_cast<std::size_t>(sent);
    while (first < pieces.size() && left >= pieces[first].iov_len) {
      left -= pieces[first].iov_len;
      ++first;
    }
    if (left > 0) {
      pieces[first].iov_base = static_cast<std::uint8_t*>(pieces[first].iov_base) + left;
      pieces[first].iov_len -= left;
    }
  }
  return {};
}

Result<Frame> read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                         const FrameLimits& limits, const PeerWatch& watch) {
  std::uint8_t counts[8];
  if (auto ok = read_exactly(fd, counts, sizeof counts, deadline, false, watch); !ok)
    return ok.error();
  const std::uint64_t header_size = get_le(counts, 4);
  const std::uint64_t buffer_count = get_le(counts + 4, 4);
  if (header_size > kMaxHeaderBytes || buffer_count > kMaxBuffers) {
    return Error(StatusCode::DataLoss, "the Python stub declared a header of " +
                                           std::to_string(header_size) + " bytes and " +
                                           std::to_string(buffer_count) + " buffers, past the " +
                                           "limits (" + std::to_string(kMaxHeaderBytes) + ", " +
                                           std::to_string(kMaxBuffers) + ")");
  }
  std::vector<std::uint8_t> sizes(8 * buffer_count);
  if (auto ok = read_exactly(fd, sizes.data(), sizes.size(), deadline, true, watch); !ok) {
    return ok.error();
  }
  Frame frame;
  std::uint64_t declared = 0;  // the sum of the sizes, checked against the limit
  std::uint64_t total = 0;     // what they take, each at a 64-byte boundary
  std::vector<std::size_t> sizes_read(buffer_count);
  for (std::size_t i = 0; i < buffer_count; ++i) {
    const std::uint64_t size = get_le(&sizes[8 * i], 8);
    // Compared with what is left of the limit, so that the sum cannot wrap.
    if (size > limits.max_buffer_bytes - declared) {
      return Error(StatusCode::DataLoss,
                   "the Python stub declared buffers of more than " +
                       std::to_string(limits.max_buffer_bytes) +
                       " bytes in one message (the model's max_message_bytes parameter)");
    }
    declared += size;
    sizes_read[i] = static_cast<std::size_t>(size);
    total += aligned(static_cast<std::size_t>(size));
  }
  frame.header.resize(static_cast<std::size_t>(header_size));
  if (auto ok = read_exactly(fd, frame.header.data(), frame.header.size(), deadline, true, watch);
      !ok) {
    return ok.error();
  }
  if (total > 0) {
    void* block = ::operator new (static_cast<std::size_t>(total), std::align_val_t{kAlignment});
    frame.storage = std::shared_ptr<const void>(block, [](const void* p) {
      ::operator delete (const_cast<void*>(p), std::align_val_t{kAlignment});
    });
    auto* at = static_cast<std::uint8_t*>(block);
    for (const std::size_t size : sizes_read) {
      if (auto ok = read_exactly(fd, at, size, deadline, true, watch); !ok) return ok.error();
      frame.buffers.push_back({at, size});
      at += aligned(size);
    }
  } else {
    for (std::size_t i = 0; i < buffer_count; ++i) frame.buffers.push_back({nullptr, 0});
  }
  return frame;
}

}  // namespace sonic::python_backend
