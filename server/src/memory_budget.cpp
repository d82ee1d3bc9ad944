#include "memory_budget.hpp"

namespace sonic::server {

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// What is held and promised: the bytes of messages still arriving are in both, once.
std::size_t committed(const std::atomic<std::size_t>& held,
                      const std::atomic<std::size_t>& arriving,
                      const std::atomic<std::size_t>& promised) {
  const std::size_t h = held.load(kRelaxed);
  const std::size_t a = arriving.load(kRelaxed);
  return (h > a ? h - a : 0) + promised.load(kRelaxed);
}

}  // namespace

ConnectionBudget::~ConnectionBudget() {
  // Buffers hold this object until they are freed, so everything was released by now; should
  // a count be left over all the same, it must not stay in the server's total forever.
  server_->arriving_.fetch_sub(arriving_.load(kRelaxed), kRelaxed);
  server_->held_.fetch_sub(held_.load(kRelaxed), kRelaxed);
  server_->promised_.fetch_sub(promised_.load(kRelaxed), kRelaxed);
}

bool ConnectionBudget::admit(std::size_t bytes) noexcept {
  if (committed(held_, arriving_, promised_) + bytes > limit_) return false;
  if (committed(server_->held_, server_->arriving_, server_->promised_) + bytes > server_->limit_) {
    return false;
  }
  // Connections on other threads may admit at the same moment: the limits are approximate by
  // at most one message per network thread.
  promised_.fetch_add(bytes, kRelaxed);
  server_->promised_.fetch_add(bytes, kRelaxed);
  return true;
}

void ConnectionBudget::settle(std::size_t bytes) noexcept {
  promised_.fetch_sub(bytes, kRelaxed);
  server_->promised_.fetch_sub(bytes, kRelaxed);
}

void ConnectionBudget::arriving(std::size_t bytes) noexcept {
  held_.fetch_add(bytes, kRelaxed);
  arriving_.fetch_add(bytes, kRelaxed);
  server_->held_.fetch_add(bytes, kRelaxed);
  server_->arriving_.fetch_add(bytes, kRelaxed);
}

void ConnectionBudget::arrived(std::size_t bytes) noexcept {
  arriving_.fetch_sub(bytes, kRelaxed);
  server_->arriving_.fetch_sub(bytes, kRelaxed);
}

void ConnectionBudget::released(std::size_t bytes) noexcept {
  held_.fetch_sub(bytes, kRelaxed);
  server_->held_.fetch_sub(bytes, kRelaxed);
}

}  // namespace sonic::server
