// Shared by the decoder targets: feeds a fuzz input to a reader in chunks whose sizes the input
// chooses too, so that message, frame and field boundaries land anywhere.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/grpc_wire.hpp"

/// Input layout: byte 0 & 7 = k, then k chunk-size bytes, then the stream. Calls
/// `feed(const std::uint8_t*, std::size_t)` with each chunk (an exact copy, so that ASan sees
/// any read past its end) until it returns false, as a peer would give up on a broken stream.
template <typename Feed>
void in_fuzzed_chunks(const std::uint8_t* data, std::size_t size, Feed feed) {
  if (size == 0) return;
  std::size_t k = data[0] & 7u;
  if (size < 1 + k) return;
  const std::uint8_t* sizes = data + 1;
  const std::uint8_t* body = data + 1 + k;
  std::size_t left = size - 1 - k;
  for (std::size_t i = 0; left > 0; ++i) {
    std::size_t chunk = k == 0 ? left : std::min<std::size_t>(left, 1u + sizes[i % k]);
    std::vector<std::uint8_t> copy(body, body + chunk);
    body += chunk;
    left -= chunk;
    if (!feed(copy.data(), copy.size())) return;
  }
}

/// Feeds a fuzz input to a MessageReader in fuzzed chunks, its call's grpc-encoding chosen by
/// (byte 0 >> 3) % 3 (identity, deflate, gzip: compressed messages are inflated as they come).
/// Calls `on_message(ReceivedMessage&&)` (returning a number to keep the work observable) for
/// every completed message; stops at the first reader error, as a peer would reset the stream.
template <typename OnMessage>
std::size_t feed_in_fuzzed_chunks(const std::uint8_t* data, std::size_t size,
                                  sonic::protocol::RawFieldPath raw_field,
                                  std::size_t max_message_bytes, OnMessage on_message) {
  sonic::protocol::MessageReader reader(raw_field, max_message_bytes);
  if (size > 0) reader.set_encoding(static_cast<sonic::Compression>((data[0] >> 3) % 3));
  std::size_t sum = 0;
  in_fuzzed_chunks(data, size, [&](const std::uint8_t* chunk, std::size_t n) {
    auto fed = reader.feed(chunk, n);
    for (auto& message : reader.messages()) sum += on_message(std::move(message));
    reader.messages().clear();
    return fed.ok();
  });
  sum += reader.at_boundary() ? 1 : 0;
  return sum;
}
