// sonic — a move-only std::function, so that callbacks may own promises and task handles.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace sonic::detail {

template <typename Signature>
class UniqueFunction;

/// Type-erased, move-only callable. Unlike std::function it accepts callables that cannot be
/// copied (lambdas capturing std::promise or std::unique_ptr).
template <typename R, typename... Args>
class UniqueFunction<R(Args...)> {
 public:
  UniqueFunction() = default;
  UniqueFunction(std::nullptr_t) {}  // NOLINT: implicit, like std::function

  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, UniqueFunction> &&
                                        std::is_invocable_r_v<R, F&, Args...>>>
  UniqueFunction(F&& f)  // NOLINT: implicit, like std::function
      : callable_(std::make_unique<Model<std::decay_t<F>>>(std::forward<F>(f))) {}

  UniqueFunction(UniqueFunction&&) noexcept = default;
  UniqueFunction& operator=(UniqueFunction&&) noexcept = default;

  explicit operator bool() const noexcept { return callable_ != nullptr; }

  R operator()(Args... args) { return callable_->call(std::forward<Args>(args)...); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual R call(Args... args) = 0;
  };
  template <typename F>
  struct Model final : Concept {
    explicit Model(F&& f) : f_(std::move(f)) {}
    explicit Model(const F& f) : f_(f) {}
    R call(Args... args) override { return f_(std::forward<Args>(args)...); }
    F f_;
  };
  std::unique_ptr<Concept> callable_;
};

}  // namespace sonic::detail
