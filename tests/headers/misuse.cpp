// Mistakes the API turns into compile errors. check_misuse.cmake compiles this file once per
// MISUSE value and requires each to fail, naming what is wrong, and the file without MISUSE
// (the correct uses) to compile: so the check cannot pass because of an unrelated error.
#include <sonic/sonic.hpp>

#include <vector>

std::vector<float> make() { return std::vector<float>(4, 1.0f); }

int main() {
  std::vector<float> kept(4, 1.0f);
  const std::vector<float> kept_const(4, 1.0f);
  auto ok = sonic::Tensor::view(kept, {4});
  auto ok_const = sonic::Tensor::view(kept_const, {4});
  auto owned = sonic::Tensor::from_vector(make(), {4});  // a temporary is fine when owned
#if MISUSE == 1
  // The vector dies at the end of the statement: the tensor would dangle at once.
  auto dangling = sonic::Tensor::view(make(), {4});
#elif MISUSE == 2
  auto dangling = sonic::Tensor::view(std::vector<float>(4, 1.0f), {4});
#elif MISUSE == 3
  auto dangling = sonic::Tensor::view(std::move(kept), {4});
#endif
  return ok.byte_size() + ok_const.byte_size() + owned.byte_size() == 48 ? 0 : 1;
}
