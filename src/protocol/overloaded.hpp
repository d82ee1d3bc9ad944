// A visitor made of lambdas, one per alternative of a std::variant (std::visit's usual helper).
#pragma once

namespace sonic::protocol {

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace sonic::protocol
