// A Python model instance's stub process: a python3 child running sonic_python_stub.py, joined
// to this process by a socketpair (its fd 3), and ended with this process.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sonic/error.hpp"
#include "stub_frame.hpp"

namespace sonic::python_backend {

/// The interpreter stubs run under: $SONIC_PYTHON when set, else python3 on PATH.
/// FAILED_PRECONDITION saying how to get one when there is none.
Result<std::string> find_python();

/// One running stub. Not thread-safe: one owner at a time uses it.
class StubProcess {
 public:
  /// Starts `python` with `arguments`, its fd 3 being this end's peer. Stdin is /dev/null;
  /// stdout and stderr are this process's, so that the model's prints and logs go where the
  /// server's go. The child is killed (SIGKILL) when this process ends, however it ends:
  /// spawned from a thread that lives as long as the process, with PR_SET_PDEATHSIG. It leads a
  /// process group of its own, which kill() ends: the processes a model forks go with it.
  static Result<StubProcess> spawn(const std::string& python,
                                   const std::vector<std::string>& arguments);

  StubProcess() = default;
  StubProcess(StubProcess&& other) noexcept;
  StubProcess& operator=(StubProcess&& other) noexcept;
  StubProcess(const StubProcess&) = delete;
  StubProcess& operator=(const StubProcess&) = delete;
  /// Kills and reaps the child if it still runs.
  ~StubProcess();

  int fd() const noexcept { return fd_; }
  pid_t pid() const noexcept { return pid_; }
  /// For read_frame and write_frame: how they see the child end while a process it forked
  /// keeps the socket open.
  PeerWatch watch() const noexcept { return {pidfd_, pid_}; }

  /// SIGKILL to its process group, then reaps it; what became of it ("killed by signal 9
  /// (Killed)").
  std::string kill();
  /// Waits up to `ms` for the child to end by itself, then kills it; how it ended.
  std::string wait_or_kill(int ms);

 private:
  // Reaps the child, blocking when `block`; empty when it still runs.
  std::string reap(bool block);

  pid_t pid_ = -1;
  pid_t group_ = -1;  // its process group, killed with it (the processes it forked)
  int fd_ = -1;
  int pidfd_ = -1;     // readable once the child ended; -1 where the kernel has no pidfd_open
  std::string ended_;  // how it ended, once reaped
};

}  // namespace sonic::python_backend
