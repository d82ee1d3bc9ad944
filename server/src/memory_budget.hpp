// The bytes a server holds for its clients (messages arriving, requests waiting for or in a
// model, answers not yet written) against two limits: one for the whole server and one per
// connection. A message is admitted only when its declared length fits beside what is held
// and promised already; until then its client waits (gRPC flow control, TCP backpressure).
// So every message that began can finish, and memory stays within the limits plus what
// waiting clients sent ahead (bounded by their flow-control windows).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>

#include "protocol/receive_account.hpp"

namespace sonic::server {

/// The server's total. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t limit) : limit_(limit) {}

  std::size_t limit() const noexcept { return limit_; }
  /// Bytes held now.
  std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }

  /// Messages waiting for admission, each holding what its client sent ahead (at most its
  /// stream's first window): beyond kWaitingPerGiB per GiB of the limit, new calls are refused
  /// (a client retries a refused stream) rather than let the waiting grow.
  static constexpr std::size_t kWaitingPerGiB = 1024;
  bool crowded() const noexcept {
    const std::size_t cap = std::max<std::size_t>(64, (limit_ >> 30) * kWaitingPerGiB);
    return waiting_.load(std::memory_order_relaxed) >= cap;
  }
  void waiting_begins() noexcept { waiting_.fetch_add(1, std::memory_order_relaxed); }
  void waiting_ends() noexcept { waiting_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  friend class ConnectionBudget;
  const std::size_t limit_;
  std::atomic<std::size_t> waiting_{0};
  std::atomic<std::size_t> held_{0};
  std::atomic<std::size_t> arriving_{0};  // part of held_: messages not yet whole
  std::atomic<std::size_t> promised_{0};  // declared lengths of admitted messages
};

/// One connection's share, counted in the server's total too. Thread-safe.
class ConnectionBudget final : public protocol::ReceiveAccount {
 public:
  ConnectionBudget(std::shared_ptr<MemoryBudget> server, std::size_t limit)
      : server_(std::move(server)), limit_(limit) {}
  ~ConnectionBudget() override;

  /// True when `bytes` fit under both limits beside what is held (apart from messages still
  /// arriving, which their promises cover) and promised. A message no larger than the limits
  /// is always admitted once enough is freed (the options make sure it is).
  bool admit(std::size_t bytes) noexcept override;
  void settle(std::size_t bytes) noexcept override;
  void arriving(std::size_t bytes) noexcept override;
  void arrived(std::size_t bytes) noexcept override;
  void released(std::size_t bytes) noexcept override;
  /// Bytes that arrived whole at once: an answer being written, say.
  void hold(std::size_t bytes) noexcept {
    arriving(bytes);
    arrived(bytes);
  }

  std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_; }

 private:
  std::shared_ptr<MemoryBudget> server_;
  const std::size_t limit_;
  std::atomic<std::size_t> held_{0};
  std::atomic<std::size_t> arriving_{0};
  std::atomic<std::size_t> promised_{0};
};

/// Bytes held for as long as this object lives (an answer until it is written). Move-only.
class BudgetHold {
 public:
  BudgetHold() = default;
  BudgetHold(std::shared_ptr<ConnectionBudget> budget, std::size_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {
    if (budget_) budget_->hold(bytes_);
  }
  ~BudgetHold() {
    if (budget_) budget_->released(bytes_);
  }
  BudgetHold(BudgetHold&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(other.bytes_) {}
  BudgetHold& operator=(BudgetHold&& other) noexcept {
    if (this != &other) {
      if (budget_) budget_->released(bytes_);
      budget_ = std::move(other.budget_);
      bytes_ = other.bytes_;
    }
    return *this;
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;

  /// Holds `bytes` more (a stream's next answer); the hold needs a budget.
  void grow(std::size_t bytes) noexcept {
    budget_->hold(bytes);
    bytes_ += bytes;
  }
  /// Lets go of everything held so far, and keeps the budget for what grow() holds next.
  void release() noexcept {
    if (budget_) budget_->released(bytes_);
    bytes_ = 0;
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::shared_ptr<ConnectionBudget> budget_;
  std::size_t bytes_ = 0;
};

}  // namespace sonic::server
