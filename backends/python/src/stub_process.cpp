#include "stub_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace sonic::python_backend {

namespace {

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process
// (prctl(2)). Models load on whichever thread the executor picks, some of which end after the
// load; so every stub is forked from this one thread, which lives as long as the process (it is
// never joined: the process's end ends it, and with it the stubs).
class Spawner {
 public:
  static Spawner& get() {
    static Spawner* spawner = new Spawner;  // never destroyed: its thread runs to the end
    return *spawner;
  }

  template <typename Work>
  auto run(Work work) -> decltype(work()) {
    std::packaged_task<decltype(work())()> task(std::move(work));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back([&task] { task(); });
    }
    wake_.notify_one();
    return result.get();
  }

 private:
  Spawner() {
    std::thread([this] {
      for (;;) {
        std::function<void()> work;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [this] { return !queue_.empty(); });
          work = std::move(queue_.front());
          queue_.pop_front();
        }
        work();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = ::strsignal(signal);
    return "was killed by signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")";
  }
  return "ended (status " + std::to_string(status) + ")";
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

Result<std::string> find_python() {
  if (const char* chosen = std::getenv("SONIC_PYTHON"); chosen && *chosen) {
    if (!executable(chosen)) {
      return Error(StatusCode::FailedPrecondition,
                   std::string("SONIC_PYTHON is ") + chosen + ", which is not an executable file");
    }
    return std::string(chosen);
  }
  const char* path = std::getenv("PATH");
  std::string directories = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= directories.size()) {
    const std::size_t end = std::min(directories.find(':', start), directories.size());
    std::string directory = directories.substr(start, end - start);
    if (directory.empty()) directory = ".";
    const std::string candidate = directory + "/python3";
    if (executable(candidate)) return candidate;
    start = end + 1;
  }
  return Error(StatusCode::FailedPrecondition,
               "the Python backend runs models in python3 processes, and there is no python3 on "
               "PATH (install python3 with numpy, or set SONIC_PYTHON to an interpreter)");
}

Result<StubProcess> StubProcess::spawn(const std::string& python,
                                       const std::vector<std::string>& arguments) {
  // Everything the child needs is made before fork(): after it, in a threaded process, the
  // child may call only async-signal-safe functions.
  std::vector<std::string> words{python};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return Error(StatusCode::Internal, std::string("socketpair: ") + std::strerror(errno));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  const int max_fd = files.rlim_cur == RLIM_INFINITY || files.rlim_cur > 65536
                         ? 65536
                         : static_cast<int>(files.rlim_cur);

  const auto [pid, fork_error] = Spawner::get().run([&]() -> std::pair<pid_t, int> {
    const pid_t child = ::fork();
    if (child != 0) return {child, errno};
    // The child: die with the spawning thread (the process), and have the socket as fd 3.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // A process group of its own, so that what the model forks is killed with it.
    ::setpgid(0, 0);
    // Not the server's blocked signals (the thread that forked has StopSignals' mask) or
    // ignored ones: exec keeps both, and a model's own handling of SIGTERM or SIGINT needs them.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int number = 1; number < NSIG; ++number) {
      if (number != SIGKILL && number != SIGSTOP) ::sigaction(number, &default_action, nullptr);
    }
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    if (null_fd >= 0) ::dup2(null_fd, 0);
    if (ends[1] == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else if (::dup2(ends[1], 3) < 0) {
      ::_exit(127);
    }
    // No other descriptor of the server's (listening sockets, clients') reaches the stub.
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
      for (int fd = 4; fd < max_fd; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  });
  ::close(ends[1]);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) {
    ::close(ends[0]);
    return Error(StatusCode::Internal, std::string("fork: ") + std::strerror(fork_error));
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists at once
  StubProcess process;
  process.pid_ = pid;
  process.group_ = pid;
  process.fd_ = ends[0];
#ifdef SYS_pidfd_open
  process.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (process.pidfd_ >= 0) ::fcntl(process.pidfd_, F_SETFD, FD_CLOEXEC);
#endif
  return process;
}

StubProcess::StubProcess(StubProcess&& other) noexcept
    : pid_(other.pid_),
      group_(other.group_),
      fd_(other.fd_),
      pidfd_(other.pidfd_),
      ended_(std::move(other.ended_)) {
  other.pid_ = -1;
  other.group_ = -1;
  other.fd_ = -1;
  other.pidfd_ = -1;
}

StubProcess& StubProcess::operator=(StubProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) kill();
    if (fd_ >= 0) ::close(fd_);
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = other.pid_;
    group_ = other.group_;
    fd_ = other.fd_;
    pidfd_ = other.pidfd_;
    ended_ = std::move(other.ended_);
    other.pid_ = -1;
    other.group_ = -1;
    other.fd_ = -1;
    other.pidfd_ = -1;
  }
  return *this;
}

StubProcess::~StubProcess() {
  if (pid_ > 0) kill();
  if (fd_ >= 0) ::close(fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
}

std::string StubProcess::reap(bool block) {
  if (pid_ <= 0) return ended_;
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return {};
  ended_ = got == pid_ ? describe_status(status) : "ended (waitpid failed)";
  pid_ = -1;
  // What it forked ends with it. The group's id is not reused while a member of it lives.
  if (group_ > 0) ::kill(-group_, SIGKILL);
  group_ = -1;
  return ended_;
}

std::string StubProcess::kill() {
  if (pid_ <= 0) return ended_;
  if (auto ended = reap(false); !ended.empty()) return ended;
  ::kill(-group_, SIGKILL);
  ::kill(pid_, SIGKILL);  // should setpgid have failed
  return reap(true);
}

std::string StubProcess::wait_or_kill(int ms) {
  for (int waited = 0; waited < ms; waited += 5) {
    if (auto ended = reap(false); !ended.empty()) return ended;
    ::usleep(5000);
  }
  return kill();
}

}  // namespace sonic::python_backend
