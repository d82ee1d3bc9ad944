#include "keepalive.hpp"

namespace sonic::net {

void Keepalive::activity() {
  if (interval_.count() <= 0 || armed_ || stopped_ || !hooks_.busy) return;
  auto owner = owner_.lock();
  if (!owner) return;
  armed_ = true;
  timer_.expires_after(ping_outstanding_ ? timeout_ : interval_);
  timer_.async_wait([this, owner](std::error_code ec) {
    armed_ = false;
    if (ec || stopped_) return;
    if (ping_outstanding_) {
      if (std::chrono::steady_clock::now() - ping_sent_ >= timeout_) {
        stopped_ = true;
        return hooks_.dead("keepalive ping unanswered for " + std::to_string(timeout_.count()) +
                           " ms");
      }
    } else if (hooks_.busy()) {
      hooks_.send_ping();
      ping_outstanding_ = true;
      ping_sent_ = std::chrono::steady_clock::now();
    }
    if (ping_outstanding_ || hooks_.busy()) activity();  // idle: no more pings until a call
  });
}

}  // namespace sonic::net
