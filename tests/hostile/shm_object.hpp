// Test support: a POSIX shared memory object made by the test (unlinked on destruction), and
// the calls a client makes to register one with a server and read a tensor through it.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sonic/sonic.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/control_codec.hpp"
#include "protocol/names.hpp"

namespace sonic::test {

/// What `command` (a shell command line: shm_thief, run as another user) prints on stdout.
inline std::string output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen " + command + ": " + std::strerror(errno));
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  ::pclose(pipe);
  return out;
}

/// A shared memory object "/sonic-hostile-<pid>-<n>" of `size` bytes and `mode`.
class ShmObject {
 public:
  explicit ShmObject(off_t size, mode_t mode = 0600) : key_(next_key()) {
    fd_ = ::shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, mode);
    if (fd_ < 0) throw std::runtime_error("shm_open " + key_ + ": " + std::strerror(errno));
    ::fchmod(fd_, mode);  // exactly `mode`, whatever the umask
    resize(size);
  }
  ~ShmObject() {
    ::close(fd_);
    ::shm_unlink(key_.c_str());
  }
  ShmObject(const ShmObject&) = delete;
  ShmObject& operator=(const ShmObject&) = delete;

  const std::string& key() const { return key_; }
  /// Changes the object's size under whoever maps it.
  void resize(off_t size) {
    if (::ftruncate(fd_, size) != 0) {
      throw std::runtime_error("ftruncate " + key_ + ": " + std::strerror(errno));
    }
  }
  /// Writes `bytes` at offset 0.
  void write(const std::string& bytes) {
    if (::pwrite(fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
      throw std::runtime_error("pwrite " + key_ + ": " + std::strerror(errno));
    }
  }
  void chown_to(uid_t uid, gid_t gid) { (void)::fchown(fd_, uid, gid); }

 private:
  static std::string next_key() {
    static std::atomic<int> n{0};
    return "/sonic-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  }

  std::string key_;
  int fd_ = -1;
};

/// Registers `key` as region `name` (`byte_size` bytes from `offset`) over `client`'s
/// connection; throws sonic::Error as the server answers.
inline void register_region(Client& client, const std::string& name, const std::string& key,
                            std::uint64_t byte_size, std::uint64_t offset = 0) {
  protocol::SystemShmRegistration request{name, key, offset, byte_size};
  client.call("SystemSharedMemoryRegister", protocol::encode_system_shm_registration(request));
}

/// identity_fp32 on `floats` elements read from region `name`: the answer's values.
inline std::vector<float> identity_from_region(Client& client, const std::string& name,
                                               std::size_t floats) {
  Parameters where;
  where[protocol::kSharedMemoryRegion] = name;
  where[protocol::kSharedMemoryByteSize] = static_cast<std::int64_t>(floats * sizeof(float));
  auto result = client.infer(
      InferRequest("identity_fp32")
          .input("INPUT0",
                 Tensor::descriptor(DataType::Fp32, {1, static_cast<std::int64_t>(floats)}),
                 where));
  auto values = result.output("OUTPUT0").as<float>();
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace sonic::test
