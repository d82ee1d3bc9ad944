// sonic — what a RequestHandle cancels besides a plain request: a part of a merged batch, a
// request sent in chunks.
#pragma once

namespace sonic::detail {

class Cancellable {
 public:
  virtual ~Cancellable() = default;
  /// As RequestHandle::cancel(): true when this call cancelled it; thread-safe.
  virtual bool cancel() = 0;
};

}  // namespace sonic::detail
