#include "tensor_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace sonic::protocol {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kMappedAbove = std::size_t{32} << 20;  // glibc's largest mmap threshold

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
}  // namespace

std::shared_ptr<std::uint8_t> allocate_tensor_buffer(std::size_t bytes) {
  if (bytes <= kMappedAbove) {
    return std::shared_ptr<std::uint8_t>(new std::uint8_t[std::max<std::size_t>(bytes, 1)],
                                         std::default_delete<std::uint8_t[]>());
  }
  // Over-map by one huge page so that the buffer can start on a huge page boundary.
  std::size_t length = round_up(bytes, kHugePage);
  void* mapped = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto base = reinterpret_cast<std::uintptr_t>(mapped);
  std::uintptr_t start = round_up(base, kHugePage);
  std::size_t head = start - base;  // below one huge page, so some tail is always left over
  if (head > 0) munmap(mapped, head);
  munmap(reinterpret_cast<void*>(start + length), kHugePage - head);
  auto* data = reinterpret_cast<std::uint8_t*>(start);
  madvise(data, length, MADV_HUGEPAGE);  // advice only: without huge pages it still works
  try {
    return std::shared_ptr<std::uint8_t>(data, [length](std::uint8_t* p) { munmap(p, length); });
  } catch (...) {
    munmap(data, length);
    throw;
  }
}

}  // namespace sonic::protocol
