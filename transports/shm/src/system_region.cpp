#include "system_region.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>

namespace sonic::shm {

namespace {

std::string errno_text() { return std::strerror(errno); }

// A per-process nonce, so that a new process reusing a dead one's pid gets other names.
const std::string& process_tag() {
  static const std::string tag = [] {
    std::random_device random;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", random());
    return region_prefix_of(static_cast<long>(::getpid())) + hex + "-";
  }();
  return tag;
}

}  // namespace

std::string region_prefix_of(long pid) { return "sonic-" + std::to_string(pid) + "-"; }

SystemRegion::SystemRegion(std::string name, std::uint8_t* data, std::size_t size)
    : name_(std::move(name)), key_("/" + name_), data_(data), size_(size) {}

SystemRegion::~SystemRegion() {
  ::munmap(data_, size_);
  ::shm_unlink(key_.c_str());
}

Result<std::unique_ptr<SystemRegion>> SystemRegion::create(std::size_t bytes) {
  static std::once_flag cleaned;
  std::call_once(cleaned, remove_stale_regions);
  static std::atomic<std::uint64_t> counter{0};
  std::string name = process_tag() + std::to_string(counter++);
  std::string key = "/" + name;
  int fd = ::shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    return Error(StatusCode::Unavailable,
                 "cannot create shared memory '" + key + "': " + errno_text());
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::string why = errno_text();
    ::close(fd);
    ::shm_unlink(key.c_str());
    return Error(StatusCode::Unavailable, "cannot size shared memory '" + key + "' to " +
                                              std::to_string(bytes) + " bytes: " + why);
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) {
    std::string why = errno_text();
    ::shm_unlink(key.c_str());
    return Error(StatusCode::Unavailable, "cannot map shared memory '" + key + "': " + why);
  }
  return std::unique_ptr<SystemRegion>(
      new SystemRegion(std::move(name), static_cast<std::uint8_t*>(data), bytes));
}

void remove_stale_regions() {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  const long self = static_cast<long>(::getpid());
  while (dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strncmp(name, "sonic-", 6) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name + 6, &end, 10);
    if (end == name + 6 || *end != '-' || pid <= 0 || pid == self) continue;
    // Only objects of processes that no longer exist (not merely of other users).
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      ::shm_unlink((std::string("/") + name).c_str());
    }
  }
  ::closedir(dir);
}

}  // namespace sonic::shm
