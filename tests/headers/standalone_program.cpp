// Uses the header-only API (tensors, requests, the CPU executor) with no library but the
// standard one. Exits non-zero when an answer is wrong.
#include <sonic/sonic.hpp>

#include <iostream>

int main() {
  auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), 1);
  std::vector<std::int32_t> a(16, 2), b(16, 3);
  auto result = executor->infer(sonic::InferRequest("simple")
                                    .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                                    .input("INPUT1", sonic::Tensor::view(b, {1, 16})));
  if (!result || result->output("OUTPUT0").as<std::int32_t>()[15] != 5) return 1;
  // Without a linked transport, a client names the target to link instead of failing obscurely.
  try {
    sonic::Client client("grpc://127.0.0.1:8001");
    return 2;
  } catch (const sonic::Error& e) {
    if (std::string(e.what()).find("sonic::grpc") == std::string::npos) return 3;
  }
  std::cout << "standalone program ok";
  return 0;
}
