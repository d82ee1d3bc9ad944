// UniqueFunction: move-only callables stored in place or on the heap, each destroyed exactly
// once, whatever the moves.
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <sonic/detail/unique_function.hpp>
#include <string>

using sonic::detail::UniqueFunction;

namespace {

// Counts live copies of itself, so that a leaked or doubly destroyed callable shows.
struct Tracked {
  static inline int live = 0;
  explicit Tracked(int v) : value(v) { ++live; }
  Tracked(Tracked&& other) noexcept : value(other.value) { ++live; }
  Tracked(const Tracked&) = delete;
  ~Tracked() { --live; }
  int value;
};

}  // namespace

TEST_CASE("small and large callables are called, moved and destroyed exactly once") {
  Tracked::live = 0;
  {
    auto small_state = std::make_unique<Tracked>(2);  // move-only capture, fits in place
    UniqueFunction<int(int)> small = [t = std::move(small_state)](int x) { return x * t->value; };
    std::array<char, 200> padding{};  // too big to fit in place
    padding[199] = 5;
    UniqueFunction<int(int)> large = [t = Tracked(3), padding](int x) {
      return x * t.value + padding[199];
    };
    CHECK(Tracked::live == 2);
    CHECK(small(10) == 20);
    CHECK(large(10) == 35);

    UniqueFunction<int(int)> moved_small = std::move(small);
    UniqueFunction<int(int)> moved_large = std::move(large);
    CHECK_FALSE(small);
    CHECK_FALSE(large);
    CHECK(moved_small(1) == 2);
    CHECK(moved_large(1) == 8);
    CHECK(Tracked::live == 2);

    moved_small = std::move(moved_large);  // the small one is destroyed, the large one moves
    CHECK(Tracked::live == 1);
    CHECK(moved_small(2) == 11);
    moved_small = nullptr;
    CHECK(Tracked::live == 0);
    CHECK_FALSE(moved_small);
  }
  CHECK(Tracked::live == 0);
}

TEST_CASE("a callable holding another UniqueFunction, and arguments passed by value") {
  Tracked::live = 0;
  {
    UniqueFunction<std::string(std::string)> inner = [t = Tracked(1)](std::string s) {
      return s + std::to_string(t.value);
    };
    UniqueFunction<std::string(std::string)> outer =
        [inner = std::move(inner)](std::string s) mutable { return inner(std::move(s)) + "!"; };
    std::string long_text(100, 'x');  // moved through both layers
    CHECK(outer(long_text) == long_text + "1!");
    CHECK(Tracked::live == 1);
  }
  CHECK(Tracked::live == 0);
}
