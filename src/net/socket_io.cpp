#include "socket_io.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

namespace sonic::net {

ReadResult read_more_available(asio::ip::tcp::socket& socket, const std::uint8_t* head,
                               std::size_t head_size, std::size_t max_bytes) {
  thread_local std::unique_ptr<std::uint8_t[]> buffer;
  if (!buffer) buffer.reset(new std::uint8_t[kReadBytes]);
  std::memcpy(buffer.get(), head, head_size);
  const std::size_t room = std::max(std::min(max_bytes, kReadBytes), head_size) - head_size;
  std::error_code ignored;  // would_block, or an error the next read meets again
  const std::size_t n =
      room == 0 ? 0 : socket.read_some(asio::buffer(buffer.get() + head_size, room), ignored);
  return ReadResult{buffer.get(), head_size + n, {}};
}

void GatherWriter::Batch::clear() {
  copied.clear();
  spans.clear();
  holds.clear();
  buffers.clear();
  bytes = 0;
}

void GatherWriter::copy(const void* data, std::size_t size) {
  if (size == 0) return;
  Batch& b = pending_;
  if (!b.spans.empty() && !b.spans.back().external &&
      b.spans.back().offset + b.spans.back().size == b.copied.size()) {
    b.spans.back().size += size;  // runs of copies coalesce into one buffer
  } else {
    b.spans.push_back({nullptr, b.copied.size(), size});
  }
  b.copied.append(static_cast<const char*>(data), size);
  b.bytes += size;
}

void GatherWriter::reference(const void* data, std::size_t size) {
  if (size == 0) return;
  pending_.spans.push_back({static_cast<const std::uint8_t*>(data), 0, size});
  pending_.bytes += size;
}

void GatherWriter::keep(std::shared_ptr<void> hold) { pending_.holds.push_back(std::move(hold)); }

const std::vector<asio::const_buffer>& GatherWriter::begin_write() {
  std::swap(active_, pending_);
  // Addresses into `copied` are taken only now: it no longer grows.
  active_.buffers.reserve(active_.spans.size());
  for (const auto& span : active_.spans) {
    const auto* base =
        span.external ? span.external
                      : reinterpret_cast<const std::uint8_t*>(active_.copied.data()) + span.offset;
    active_.buffers.emplace_back(base, span.size);
  }
  writing_ = true;
  return active_.buffers;
}

std::vector<std::shared_ptr<void>> GatherWriter::end_write() {
  writing_ = false;
  auto holds = std::move(active_.holds);
  active_.clear();  // keeps the capacity: the next batch reuses it
  return holds;
}

std::vector<std::shared_ptr<void>> GatherWriter::drop_pending() {
  auto holds = std::move(pending_.holds);
  pending_.clear();
  return holds;
}

}  // namespace sonic::net
