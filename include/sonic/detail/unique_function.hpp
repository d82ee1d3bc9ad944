// sonic — a move-only std::function, so that callbacks may own promises and task handles.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace sonic::detail {

template <typename Signature>
class UniqueFunction;

/// Type-erased, move-only callable. Unlike std::function it accepts callables that cannot be
/// copied (lambdas capturing std::promise or std::unique_ptr). Callables of up to
/// kInlineBytes are stored in place: a request's completion chain passes through several of
/// them, and a heap block each (allocated on one thread, freed on another) was a measurable
/// part of a small request's cost.
template <typename R, typename... Args>
class UniqueFunction<R(Args...)> {
 public:
  static constexpr std::size_t kInlineBytes = 64;

  UniqueFunction() = default;
  UniqueFunction(std::nullptr_t) {}  // NOLINT: implicit, like std::function

  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, UniqueFunction> &&
                                        std::is_invocable_r_v<R, F&, Args...>>>
  UniqueFunction(F&& f) {  // NOLINT: implicit, like std::function
    using Stored = std::decay_t<F>;
    if constexpr (fits_inline<Stored>()) {
      ::new (static_cast<void*>(storage_.buffer)) Stored(std::forward<F>(f));
      ops_ = &inline_ops<Stored>;
    } else {
      storage_.heap = new Stored(std::forward<F>(f));
      ops_ = &heap_ops<Stored>;
    }
  }

  UniqueFunction(UniqueFunction&& other) noexcept { take(other); }
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  UniqueFunction& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  ~UniqueFunction() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }

 private:
  union Storage {
    void* heap;
    alignas(std::max_align_t) unsigned char buffer[kInlineBytes];
  };

  // What a stored callable can do; one static table per callable type and placement.
  struct Ops {
    R (*call)(Storage&, Args&&...);
    void (*move)(Storage& from, Storage& to) noexcept;  // leaves `from` empty
    void (*destroy)(Storage&) noexcept;
  };

  template <typename F>
  static constexpr bool fits_inline() {
    return sizeof(F) <= kInlineBytes && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

  template <typename F>
  static F& inline_object(Storage& s) noexcept {
    return *std::launder(reinterpret_cast<F*>(s.buffer));
  }

  template <typename F>
  static constexpr Ops inline_ops = {
      [](Storage& s, Args&&... args) -> R {
        return inline_object<F>(s)(std::forward<Args>(args)...);
      },
      [](Storage& from, Storage& to) noexcept {
        ::new (static_cast<void*>(to.buffer)) F(std::move(inline_object<F>(from)));
        inline_object<F>(from).~F();
      },
      [](Storage& s) noexcept { inline_object<F>(s).~F(); },
  };

  template <typename F>
  static constexpr Ops heap_ops = {
      [](Storage& s, Args&&... args) -> R {
        return (*static_cast<F*>(s.heap))(std::forward<Args>(args)...);
      },
      [](Storage& from, Storage& to) noexcept {
        to.heap = from.heap;
        from.heap = nullptr;
      },
      [](Storage& s) noexcept { delete static_cast<F*>(s.heap); },
  };

  void take(UniqueFunction& other) noexcept {
    ops_ = other.ops_;
    if (ops_) {
      ops_->move(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }

  void reset() noexcept {
    if (ops_) {
      const Ops* ops = ops_;
      ops_ = nullptr;
      ops->destroy(storage_);
    }
  }

  const Ops* ops_ = nullptr;
  Storage storage_;
};

}  // namespace sonic::detail
