// A POSIX shared memory object this process creates, maps and finally unlinks, under a name
// unique to the process, so that a crashed job leaves nothing that breaks the next one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sonic/error.hpp"

namespace sonic::shm {

class SystemRegion {
 public:
  /// Creates, sizes and maps a new object of `bytes` bytes. UNAVAILABLE when the system
  /// refuses (the message says why).
  static Result<std::unique_ptr<SystemRegion>> create(std::size_t bytes);
  ~SystemRegion();  // unmaps and unlinks
  SystemRegion(const SystemRegion&) = delete;
  SystemRegion& operator=(const SystemRegion&) = delete;

  /// The region name servers know it by, and the shm_open key ("/" + name).
  const std::string& name() const noexcept { return name_; }
  const std::string& key() const noexcept { return key_; }
  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  SystemRegion(std::string name, std::uint8_t* data, std::size_t size);

  std::string name_;
  std::string key_;
  std::uint8_t* data_;
  std::size_t size_;
};

/// Unlinks the objects that dead processes created under sonic's naming scheme (they crashed
/// before they could). The first region a process creates runs it.
void remove_stale_regions();

/// The prefix of every object sonic creates: "sonic-<pid>-".
std::string region_prefix_of(long pid);

}  // namespace sonic::shm
