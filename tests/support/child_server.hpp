// Test support: a server program run as a child process on an ephemeral port. It dies with the
// test process (PR_SET_PDEATHSIG), so a crashed or killed test leaves nothing running.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sonic::test {

using namespace std::chrono_literals;

/// Limits the child runs under.
struct ChildLimits {
  /// RLIMIT_AS in bytes (`ulimit -v`, common on batch nodes); 0: inherited.
  rlim_t address_space = 0;
  /// Niceness added to the child's (`nice -n`): a server sharing the test's cores that should
  /// not stand for a CPU the client lacks.
  int nice = 0;
  /// SCHED_IDLE: the child runs only on a core no other thread wants (niceness still lets a
  /// busy child hold a core for a scheduler tick or more while a woken thread waits).
  bool idle = false;
};

/// A server child process that prints "<prefix><port>" once it listens.
class ChildServer {
 public:
  /// Runs `args` (program first) and waits for its line "<listening_prefix><port>".
  ChildServer(std::vector<std::string> args, std::string listening_prefix, ChildLimits limits = {})
      : args_(std::move(args)), prefix_(std::move(listening_prefix)), limits_(limits) {
    start();
  }
  ~ChildServer() { stop(); }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  /// Waits for a further line "<prefix><port>" (a second listener, say) and returns the port.
  int next_port(const std::string& prefix, std::chrono::seconds limit = 20s) {
    return read_port(prefix, limit);
  }

  /// Empty while the child runs; once it has ended, how ("killed by signal 7 (Bus error)").
  std::string ended() {
    if (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ended_ = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) +
                                           " (" + strsignal(WTERMSIG(status)) + ")"
                                     : "exited with status " + std::to_string(WEXITSTATUS(status));
      }
    }
    return ended_;
  }

  /// Sends `signal` and reaps the child (SIGKILL: a crash, as far as clients can tell).
  void kill_now(int signal) noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  /// SIGTERM (a graceful stop), then SIGKILL after 5 s.
  void stop() noexcept {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      const auto deadline = Clock::now() + 5s;
      bool reaped = false;
      while (Clock::now() < deadline) {
        pid_t r = waitpid(pid_, nullptr, WNOHANG);
        if (r == pid_ || (r < 0 && errno != EINTR)) {
          reaped = true;
          break;
        }
        std::this_thread::sleep_for(20ms);
      }
      if (!reaped) kill_now(SIGKILL);
      pid_ = -1;
    }
    if (out_fd_ >= 0) {
      close(out_fd_);
      out_fd_ = -1;
    }
  }

 private:
  using Clock = std::chrono::steady_clock;

  void start() {
    // Everything the child needs is prepared before fork(): after it only async-signal-safe
    // calls are made.
    std::vector<std::string> args = args_;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) fail("pipe2", errno);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) fail("open /dev/null", errno);
    const pid_t parent = getpid();

    pid_t pid = fork();
    if (pid < 0) fail("fork", errno);
    if (pid == 0) {
      // Die with this process, even when it crashes or is killed by ctest's timeout.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (limits_.address_space != 0) {
        rlimit limit{limits_.address_space, limits_.address_space};
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
      }
      errno = 0;
      if (limits_.nice != 0 && ::nice(limits_.nice) == -1 && errno != 0) _exit(126);
      if (limits_.idle) {
        sched_param param{};
        if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) _exit(126);
      }
      dup2(devnull, STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);  // stderr stays ours: the server's diagnostics show in the log
      execv(argv[0], argv.data());
      static const char msg[] = "cannot execute the test server\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
      (void)ignored;
      _exit(127);
    }
    pid_ = pid;
    close(devnull);
    close(out[1]);
    out_fd_ = out[0];
    try {
      port_ = read_port(prefix_, 20s);
    } catch (...) {
      stop();
      throw;
    }
  }

  // Waits for the line "<prefix>PORT"; what follows it stays in text_ for the next call.
  int read_port(const std::string& prefix, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    std::string& text = text_;
    for (;;) {
      auto newline = text.find('\n');
      if (newline != std::string::npos) {
        std::string line = text.substr(0, newline);
        text.erase(0, newline + 1);
        if (line.compare(0, prefix.size(), prefix) != 0) {
          throw std::runtime_error(name() + " printed '" + line +
                                   "' instead of its listening line");
        }
        int port = std::stoi(line.substr(prefix.size()));
        if (port <= 0 || port > 65535) throw std::runtime_error("bad port in '" + line + "'");
        return port;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        throw std::runtime_error(name() + " did not print its listening line within " +
                                 std::to_string(limit.count()) + " s (output so far: '" + text +
                                 "')");
      }
      pollfd p{out_fd_, POLLIN, 0};
      int n = poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("poll", errno);
      }
      if (n == 0) continue;
      char buf[256];
      ssize_t got = read(out_fd_, buf, sizeof buf);
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        fail("read", errno);
      }
      if (got == 0) {
        // Its stdout closed: it is exiting. Say how, if it does so promptly.
        int status = 0;
        std::string how = "closed its stdout";
        for (int i = 0; i < 100; ++i) {
          if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            if (WIFEXITED(status))
              how = "exited with status " + std::to_string(WEXITSTATUS(status));
            if (WIFSIGNALED(status))
              how = "was killed by signal " + std::to_string(WTERMSIG(status));
            break;
          }
          std::this_thread::sleep_for(20ms);
        }
        throw std::runtime_error(name() + " " + how +
                                 " before it printed its listening line (see its stderr above; "
                                 "output so far: '" +
                                 text + "')");
      }
      text.append(buf, static_cast<std::size_t>(got));
    }
  }

  std::string name() const {
    return args_.size() > 1 && args_[0].find("python") != std::string::npos ? args_[1] : args_[0];
  }

  [[noreturn]] void fail(const char* what, int error) const {
    throw std::runtime_error("starting " + name() + ": " + what + ": " + std::strerror(error));
  }

  std::vector<std::string> args_;
  std::string prefix_;
  ChildLimits limits_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  std::string text_;   // read from its stdout, not yet consumed
  std::string ended_;  // how it ended, once reaped by ended()
};

}  // namespace sonic::test
