#include "socket_reads.hpp"

#include <algorithm>
#include <memory>

namespace sonic::net {

ReadResult read_available(asio::ip::tcp::socket& socket, std::size_t max_bytes) {
  thread_local std::unique_ptr<std::uint8_t[]> buffer;
  if (!buffer) buffer.reset(new std::uint8_t[kReadBytes]);  // not zeroed: nothing reads it first
  ReadResult result;
  result.data = buffer.get();
  result.size =
      socket.read_some(asio::buffer(buffer.get(), std::min(max_bytes, kReadBytes)), result.error);
  if (result.error == asio::error::would_block || result.error == asio::error::try_again) {
    result.error = {};
    result.size = 0;
  }
  return result;
}

}  // namespace sonic::net
