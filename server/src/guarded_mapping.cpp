#include "guarded_mapping.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

namespace sonic::server {

namespace {

// What the signal handler reads: plain atomics, no locks, no allocation. A slot is in use while
// `begin` is not 0; `end` is written before `begin` and `begin` cleared before the unmap.
struct Slot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> truncated{false};
};

std::array<Slot, GuardedMapping::kMaxMappings> slots;
std::mutex claim_mutex;  // claiming and releasing slots (never taken by the handler)
struct sigaction previous_handler;

void on_bus_error(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& slot : slots) {
    const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_relaxed)) {
      continue;
    }
    // The object shrank under a mapping of ours: zero pages in its place, then the faulting
    // access is retried and succeeds. mmap is a plain system call, safe here.
    const std::size_t length = slot.end.load(std::memory_order_relaxed) - begin;
    ::mmap(reinterpret_cast<void*>(begin), length, PROT_READ | PROT_WRITE,
           MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    slot.truncated.store(true, std::memory_order_release);
    return;
  }
  // Not ours: as if this handler had never been installed.
  if (previous_handler.sa_flags & SA_SIGINFO) {
    previous_handler.sa_sigaction(signal, info, context);
  } else if (previous_handler.sa_handler != SIG_DFL && previous_handler.sa_handler != SIG_IGN) {
    previous_handler.sa_handler(signal);
  } else {
    // Default action on return: the access faults again and the process dies of SIGBUS.
    ::signal(SIGBUS, SIG_DFL);
  }
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = &on_bus_error;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    ::sigaction(SIGBUS, &action, &previous_handler);
  });
}

}  // namespace

Result<std::shared_ptr<GuardedMapping>> GuardedMapping::map(int fd, std::size_t length,
                                                            off_t offset) {
  install_handler();
  std::lock_guard<std::mutex> lock(claim_mutex);
  std::size_t slot = 0;
  while (slot < slots.size() && slots[slot].begin.load(std::memory_order_relaxed) != 0) ++slot;
  if (slot == slots.size()) {
    return Error(
        StatusCode::ResourceExhausted,
        "this process maps " + std::to_string(kMaxMappings) + " shared memory regions already");
  }
  void* data = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
  if (data == MAP_FAILED) {
    const int error = errno;
    return Error(error == ENOMEM ? StatusCode::ResourceExhausted : StatusCode::InvalidArgument,
                 std::string("cannot map shared memory: ") + std::strerror(error));
  }
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  slots[slot].truncated.store(false, std::memory_order_relaxed);
  slots[slot].end.store(begin + length, std::memory_order_relaxed);
  slots[slot].begin.store(begin, std::memory_order_release);
  try {
    return std::shared_ptr<GuardedMapping>(
        new GuardedMapping(static_cast<std::uint8_t*>(data), length, slot));
  } catch (...) {
    slots[slot].begin.store(0, std::memory_order_release);
    ::munmap(data, length);
    throw;
  }
}

GuardedMapping::~GuardedMapping() {
  std::lock_guard<std::mutex> lock(claim_mutex);
  slots[slot_].begin.store(0, std::memory_order_release);
  ::munmap(data_, length_);
}

bool GuardedMapping::truncated() const noexcept {
  return slots[slot_].truncated.load(std::memory_order_acquire);
}

}  // namespace sonic::server
