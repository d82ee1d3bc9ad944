// How a receiver bounds the memory its peers make it hold: the readers of gRPC messages and TCP
// frames report every byte they keep, as it arrives, and the buffers they hand out report their
// release. A server accounts for each connection with one; a client passes none.
#pragma once

#include <cstddef>

namespace sonic::protocol {

/// Thread-safe: a tensor's buffer is released on whichever thread drops the last view of it.
/// Every byte reported arriving is later reported arrived (its message is whole, or was
/// dropped) and released (freed), in that order. Readers also ask before they take a message
/// (admit) and say when they are done with it (settle): a receiver bounds memory by what it
/// admits, so that every message it began can finish.
class ReceiveAccount {
 public:
  virtual ~ReceiveAccount() = default;
  /// A message of `bytes` (its declared length) would begin: true to take it now; false and
  /// the reader waits until asked to try again. Until settled, an admitted message's bytes
  /// count as promised.
  virtual bool admit(std::size_t bytes) noexcept {
    (void)bytes;
    return true;
  }
  /// The admitted message of `bytes` ended: whole, refused or dropped.
  virtual void settle(std::size_t bytes) noexcept { (void)bytes; }
  /// `bytes` more are held for a message still arriving.
  virtual void arriving(std::size_t bytes) noexcept = 0;
  /// `bytes` of messages still arriving now belong to messages that arrived whole or were
  /// dropped: they will be freed without more bytes from the peer.
  virtual void arrived(std::size_t bytes) noexcept = 0;
  /// `bytes` are no longer held.
  virtual void released(std::size_t bytes) noexcept = 0;
};

}  // namespace sonic::protocol
