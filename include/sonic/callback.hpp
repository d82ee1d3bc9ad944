// sonic — completion callbacks inside a framework: forwarding exceptions and errors as
// std::exception_ptr, which task-based frameworks (TBB task groups, CMSSW's ExternalWork
// WaitingTaskWithArenaHolder::doneWaiting) take.
#pragma once

#include <exception>
#include <utility>

#include "sonic/error.hpp"
#include "sonic/transport.hpp"

namespace sonic {

/// The error of a failed result as a std::exception_ptr holding its sonic::Error; null for a
/// success. What a framework's waiting task is resumed with.
template <typename T>
std::exception_ptr exception_of(const Result<T>& result) {
  return result.ok() ? nullptr : std::make_exception_ptr(result.error());
}

/// A callback for infer_async that runs `callback` and hands whatever it throws to
/// `on_exception(std::exception_ptr)`, on the same thread, instead of letting it reach sonic's
/// thread. (sonic never lets a callback's exception escape: it catches it, counts it in
/// ClientStats::callback_exceptions and logs it, but only the framework knows which event it
/// belongs to.) `on_exception` itself must not throw.
template <typename T, typename Function, typename OnException>
Callback<T> forward_exceptions(Function callback, OnException on_exception) {
  return [callback = std::move(callback),
          on_exception = std::move(on_exception)](Result<T> result) mutable {
    try {
      callback(std::move(result));
    } catch (...) {
      on_exception(std::current_exception());
    }
  };
}

}  // namespace sonic
