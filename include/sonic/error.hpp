// sonic — errors: status codes, the Error exception and Result<T>.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace sonic {

/// Status codes, numerically identical to gRPC's so that a server's code travels unchanged.
enum class StatusCode : int {
  Ok = 0,
  Cancelled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
};

/// The gRPC spelling of a code ("INVALID_ARGUMENT"); "UNKNOWN_STATUS" outside 0..16.
inline const char* to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::Ok: return "OK";
    case StatusCode::Cancelled: return "CANCELLED";
    case StatusCode::Unknown: return "UNKNOWN";
    case StatusCode::InvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::DeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::NotFound: return "NOT_FOUND";
    case StatusCode::AlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::PermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::ResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::FailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::Aborted: return "ABORTED";
    case StatusCode::OutOfRange: return "OUT_OF_RANGE";
    case StatusCode::Unimplemented: return "UNIMPLEMENTED";
    case StatusCode::Internal: return "INTERNAL";
    case StatusCode::Unavailable: return "UNAVAILABLE";
    case StatusCode::DataLoss: return "DATA_LOSS";
    case StatusCode::Unauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_STATUS";
}

/// What a code means to a sonic user and what to do about it, for error messages and logs.
inline const char* describe(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::Ok: return "success";
    case StatusCode::Cancelled: return "the request was cancelled before it completed";
    case StatusCode::Unknown: return "the server failed for an unknown reason";
    case StatusCode::InvalidArgument:
      return "the request is malformed: check tensor names, datatypes and shapes against the "
             "model metadata";
    case StatusCode::DeadlineExceeded:
      return "the deadline passed before a response arrived: raise the timeout or reduce load";
    case StatusCode::NotFound: return "the model or resource does not exist on the server";
    case StatusCode::AlreadyExists: return "the resource already exists";
    case StatusCode::PermissionDenied: return "the caller may not perform this operation";
    case StatusCode::ResourceExhausted:
      return "a limit was reached (message size, memory, queue): raise the limit or send less";
    case StatusCode::FailedPrecondition: return "the server is not in a state to do this";
    case StatusCode::Aborted: return "the operation was aborted";
    case StatusCode::OutOfRange: return "a value is out of range";
    case StatusCode::Unimplemented: return "the server does not implement this operation";
    case StatusCode::Internal: return "an internal error occurred in the server or the protocol";
    case StatusCode::Unavailable:
      return "the server cannot be reached or is not serving: check the URL and that the "
             "server runs; safe to retry";
    case StatusCode::DataLoss: return "data was lost or corrupted";
    case StatusCode::Unauthenticated: return "the request lacks valid credentials";
  }
  return "unrecognised status code";
}

/// A code from a number received on the wire; numbers outside gRPC's range become Unknown.
inline StatusCode status_code_from_int(std::int64_t value) noexcept {
  return (value >= 0 && value <= 16) ? static_cast<StatusCode>(value) : StatusCode::Unknown;
}

/// The failure of an operation: a status code plus a human-readable message (the server's own
/// message when the server produced it). Thrown by the blocking API; carried by Result<T>.
/// Copies own their text (no buffer shared between threads, unlike std::runtime_error's).
class Error : public std::exception {
 public:
  Error(StatusCode code, std::string message, std::string reason = {})
      : code_(code),
        message_(std::move(message)),
        reason_(std::move(reason)),
        what_(std::string(to_string(code)) + ": " + message_) {}

  /// The status code, as a gRPC server would have sent it.
  StatusCode code() const noexcept { return code_; }
  /// The message without the code prefix (what() has both).
  const std::string& message() const noexcept { return message_; }
  /// A machine-readable cause ("SHM_REGION_NOT_FOUND"), when the server gave one (gRPC's
  /// google.rpc.ErrorInfo.reason); empty otherwise. Programs branch on this, never on message().
  const std::string& reason() const noexcept { return reason_; }
  /// "CODE: message".
  const char* what() const noexcept override { return what_.c_str(); }

  /// pushback()'s value when the server asked that the request not be tried again at all.
  static constexpr std::chrono::milliseconds kNoRetry = std::chrono::milliseconds::max();
  /// The server's pushback, when it gave one: how long it asked clients to wait before their
  /// next attempt on it (gRPC's grpc-retry-pushback-ms trailer, HTTP's Retry-After on a 429 or
  /// 503 answer), or kNoRetry (a grpc-retry-pushback-ms that is not a non-negative integer:
  /// gRFC A6's "do not retry"). Empty when it said nothing.
  const std::optional<std::chrono::milliseconds>& pushback() const noexcept { return pushback_; }
  /// Records the server's pushback (transports do, from what the server sent).
  Error& set_pushback(std::chrono::milliseconds delay) noexcept {
    pushback_ = delay;
    return *this;
  }

  /// Whether the request never left this client: no connection to the server could be made,
  /// or the call could not start on it. Trying it again costs no server anything, so, as gRPC
  /// retries such calls transparently (gRFC A6), it neither spends nor waits for the retry
  /// budget (RetryBudget).
  bool never_sent() const noexcept { return never_sent_; }
  /// Marks it as such (transports do).
  Error& set_never_sent() noexcept {
    never_sent_ = true;
    return *this;
  }

 private:
  StatusCode code_;
  std::string message_;
  std::string reason_;
  std::string what_;
  std::optional<std::chrono::milliseconds> pushback_;
  bool never_sent_ = false;
};

/// Either a value or an Error. Async operations deliver one to their callback; reading value()
/// of a failed result throws its Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  /// The value; throws the Error when this result failed.
  T& value() & {
    throw_if_error();
    return std::get<0>(state_);
  }
  const T& value() const& {
    throw_if_error();
    return std::get<0>(state_);
  }
  T&& value() && {
    throw_if_error();
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The error; precondition: !ok().
  const Error& error() const { return std::get<1>(state_); }
  /// The code: Ok for a value.
  StatusCode code() const noexcept { return ok() ? StatusCode::Ok : error().code(); }

 private:
  void throw_if_error() const {
    if (!ok()) throw std::get<1>(state_);
  }
  std::variant<T, Error> state_;
};

/// The outcome of an operation that returns nothing.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit

  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  void value() const {
    if (error_) throw *error_;
  }
  const Error& error() const { return *error_; }
  StatusCode code() const noexcept { return ok() ? StatusCode::Ok : error_->code(); }

 private:
  std::optional<Error> error_;
};

}  // namespace sonic
