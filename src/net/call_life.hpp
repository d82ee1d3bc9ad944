// One client call's life on its connection, as every client transport (grpc://, tcp://,
// http://) lives it: its deadline armed on the network thread's timers, its outcome decided
// once, held ("parked") while a write still reads the caller's bytes, and delivered exactly
// once. Cancellation comes through CallBook::watch (channel.hpp), which abandons the call as
// its deadline does.
//
// The Transport contract (include/sonic/transport.hpp) is why parking exists: a transport reads
// the request's tensors until `done` is called and never after, and the caller may free them as
// soon as `done` runs. A call that ends while a write still reads them (its deadline, a cancel,
// an early answer) is therefore answered only once the write is over; a write that does not end
// by the call's deadline, or within kParkedGrace, has its connection closed.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <asio.hpp>
#include "sonic/detail/unique_function.hpp"
#include "sonic/error.hpp"
#include "sonic/transport.hpp"

namespace sonic::net {

/// How long a client connection may keep writing the bytes of a request that already ended
/// (cancelled, or its client destroyed) before the connection is closed to let go of them:
/// the caller's memory must not be read after its callback, and that callback waits for it.
/// A request whose deadline passed gets no grace.
inline constexpr std::chrono::milliseconds kParkedGrace{1000};

template <typename Outcome>
class CallLife;

namespace call_life_detail {

template <typename T>
std::shared_ptr<T> lock_owner(const std::shared_ptr<T>& owner) {
  return owner;
}
template <typename T>
std::shared_ptr<T> lock_owner(const std::weak_ptr<T>& owner) {
  return owner.lock();
}

template <typename Owner>
using OwnerType = typename decltype(lock_owner(std::declval<const Owner&>()))::element_type;

// Whether `Connection` can own a `Call`'s life: abandon(call, Error) ends it now (and tells the
// peer); describe() names the peer for messages; let_go(call, why) closes what still writes the
// call's bytes.
template <typename Connection, typename Call, typename = void>
struct IsCallOwner : std::false_type {};
template <typename Connection, typename Call>
struct IsCallOwner<
    Connection, Call,
    std::void_t<decltype(std::declval<Connection&>().abandon(
                    std::declval<const std::shared_ptr<Call>&>(), std::declval<Error>())),
                decltype(std::string(std::declval<const Connection&>().describe())),
                decltype(std::declval<Connection&>().let_go(
                    std::declval<const std::shared_ptr<Call>&>(), std::declval<std::string>()))>>
    : std::true_type {};

template <typename Call, typename Owner>
void check_call_and_owner() {
  static_assert(std::is_base_of_v<CallLife<typename Call::Outcome>, Call>,
                "Call derives from net::CallLife<Call::Outcome>");
  static_assert(IsCallOwner<OwnerType<Owner>, Call>::value,
                "Owner is a shared_ptr or weak_ptr to a connection with public "
                "abandon(const std::shared_ptr<Call>&, Error), describe() and "
                "let_go(const std::shared_ptr<Call>&, std::string)");
}

}  // namespace call_life_detail

template <typename Call, typename Owner>
void arm_deadline(const std::shared_ptr<Call>& call, asio::io_context& io, const Owner& owner);
template <typename Call, typename Connection>
bool settle(const std::shared_ptr<Call>& call, typename Call::Outcome&& outcome, bool borrowed,
            asio::io_context& io, Connection& connection);

/// The life of one call: a transport's call type derives from it (as from BookEntry), with
/// `Outcome` what its `done` receives (a Result). `deadline` and `done` are set on the caller's
/// thread before the call is posted to its network thread; everything else runs there only.
/// Outcomes are taken by rvalue reference: an answer (its envelope and tensors) is moved once,
/// into `done`, however many steps hand it on.
template <typename OutcomeType>
class CallLife {
 public:
  using Outcome = OutcomeType;
  using Done = sonic::detail::UniqueFunction<void(Outcome)>;
  static_assert(std::is_constructible_v<Outcome, Error>, "an Error is an Outcome (a Result)");

  CallLife() = default;
  CallLife(const CallLife&) = delete;
  CallLife& operator=(const CallLife&) = delete;

  /// When the caller stops waiting; Deadline::max() for never.
  Deadline deadline = Deadline::max();
  /// The caller's completion: runs exactly once, on the network thread (see deliver()), and
  /// never inside the call that started the call (every call is posted to its thread first).
  Done done;

  /// Whether the outcome is decided: delivered, or parked until a write lets go of the bytes.
  bool finished() const noexcept { return finished_; }
  /// Whether an outcome waits for a write to let go of the caller's bytes.
  bool parked() const noexcept { return parked_ != nullptr; }

  /// Decides the outcome and hands it to `done` now, unless it was decided before (then
  /// `outcome` is dropped). For a call no write reads (it never reached a connection's writes).
  /// Network thread.
  void deliver(Outcome&& outcome) {
    if (finished_) return;
    finished_ = true;
    hand_over(std::move(outcome));
  }

  /// The write that read the caller's bytes is over: hands over the parked outcome, if any.
  /// Network thread.
  void release() {
    if (!parked_) return;
    auto outcome = std::move(parked_);
    hand_over(std::move(*outcome));
  }

  /// Holds `outcome` without deciding the call, for a carrier that decides it later, once its
  /// write is over (take_parked()): an http:// connection, which carries one call at a time.
  /// Network thread.
  void park(Outcome&& outcome) { parked_ = std::make_unique<Outcome>(std::move(outcome)); }
  /// The outcome park() held; parked() must be true. Network thread.
  Outcome take_parked() {
    auto outcome = std::move(parked_);
    return std::move(*outcome);
  }

 private:
  template <typename Call, typename Owner>
  friend void arm_deadline(const std::shared_ptr<Call>& call, asio::io_context& io,
                           const Owner& owner);
  template <typename Call, typename Connection>
  friend bool settle(const std::shared_ptr<Call>& call, typename Call::Outcome&& outcome,
                     bool borrowed, asio::io_context& io, Connection& connection);

  void hand_over(Outcome&& outcome) {
    if (timer_) timer_->cancel();
    auto finish = std::move(done);
    finish(std::move(outcome));
  }

  bool finished_ = false;
  std::unique_ptr<asio::steady_timer> timer_;  // the deadline, then the parked outcome's limit
  std::unique_ptr<Outcome> parked_;
};

/// Arms `call`'s deadline on `io` (the connection's network thread, which this runs on). When it
/// passes before the call ends, `owner` abandons it with DEADLINE_EXCEEDED; if its outcome then
/// waits for a write of its bytes, `owner` lets go of them (closes the connection) rather than
/// keep the caller past its deadline. A deadline already passed abandons the call at once,
/// inside this function. `Owner`: a shared_ptr (kept until the deadline passes or the call
/// ends) or a weak_ptr (nothing happens once the connection is gone) to the connection.
template <typename Call, typename Owner>
void arm_deadline(const std::shared_ptr<Call>& call, asio::io_context& io, const Owner& owner) {
  call_life_detail::check_call_and_owner<Call, Owner>();
  if (call->deadline == Deadline::max()) return;
  if (call->deadline <= Clock::now()) {
    call_life_detail::lock_owner(owner)->abandon(
        call, Error(StatusCode::DeadlineExceeded, "deadline passed before the request was sent"));
    return;
  }
  call->timer_ = std::make_unique<asio::steady_timer>(io, call->deadline);
  call->timer_->async_wait([owner, weak = std::weak_ptr<Call>(call)](std::error_code ec) {
    auto expired = weak.lock();
    if (ec || !expired || expired->finished()) return;  // ended after the timer fired
    auto self = call_life_detail::lock_owner(owner);
    if (!self) return;
    self->abandon(expired, Error(StatusCode::DeadlineExceeded,
                                 "no response from " + self->describe() + " before the deadline"));
    // Its request is still being written (a large tensor to a slow or stalled peer): the
    // deadline is a promise to the caller, whose memory the write reads. End the write.
    if (expired->parked()) {
      self->let_go(expired, "a request's deadline passed while it was still being written");
    }
  });
}

/// Decides `call`'s outcome, unless it was decided before (then false, and `outcome` is
/// dropped). When `borrowed` (a write still reads the caller's bytes) the outcome is parked:
/// the connection calls release() once the write is over, and keeps the call until then; true
/// is returned. A healthy connection finishes the write soon; a stalled one is let go of
/// (`connection.let_go`, which closes it and so ends the write) at the call's deadline or after
/// kParkedGrace, whichever comes first; the timer holds the connection (shared_from_this()).
/// Otherwise the outcome is delivered now, inside this function, and false is returned.
/// Network thread (of `io`).
template <typename Call, typename Connection>
bool settle(const std::shared_ptr<Call>& call, typename Call::Outcome&& outcome, bool borrowed,
            asio::io_context& io, Connection& connection) {
  using Owner = std::shared_ptr<Connection>;
  call_life_detail::check_call_and_owner<Call, Owner>();
  if (call->finished_) return false;
  if (!borrowed) {
    call->deliver(std::move(outcome));
    return false;
  }
  call->finished_ = true;
  call->parked_ = std::make_unique<typename Call::Outcome>(std::move(outcome));
  auto release_by = std::min(call->deadline, Clock::now() + kParkedGrace);
  call->timer_ = std::make_unique<asio::steady_timer>(io, release_by);
  auto self = std::static_pointer_cast<Connection>(connection.shared_from_this());
  call->timer_->async_wait([self, weak = std::weak_ptr<Call>(call)](std::error_code ec) {
    auto stuck = weak.lock();
    if (ec || !stuck || !stuck->parked()) return;
    self->let_go(stuck,
                 "a stopped request's bytes were still being written: the connection is closed "
                 "to let go of them");
  });
  return true;
}

}  // namespace sonic::net
