// Uses the API (tensors, requests, the CPU executor) with sonic's client and executor libraries
// and the standard library alone. Exits non-zero when an answer is wrong.
#include <sonic/executor.hpp>
#include <sonic/sonic.hpp>

#include <iostream>

int main() {
  sonic::Model add;
  add.name = "add";
  add.inputs = {{"A", sonic::DataType::Int32, {1, 16}}, {"B", sonic::DataType::Int32, {1, 16}}};
  add.outputs = {{"SUM", sonic::DataType::Int32, {1, 16}}};
  add.compute =
      [](const sonic::InferRequest& request) -> sonic::Result<std::vector<sonic::NamedTensor>> {
    auto a = request.find_input("A")->tensor.as<std::int32_t>();
    auto b = request.find_input("B")->tensor.as<std::int32_t>();
    std::vector<std::int32_t> sum(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
    return std::vector<sonic::NamedTensor>{
        {"SUM", sonic::Tensor::from_vector(std::move(sum), {1, 16}), {}}};
  };
  auto executor = sonic::CpuExecutor::with_models({add}, 1);
  std::vector<std::int32_t> a(16, 2), b(16, 3);
  auto result = executor->infer(sonic::InferRequest("add")
                                    .input("A", sonic::Tensor::view(a, {1, 16}))
                                    .input("B", sonic::Tensor::view(b, {1, 16})));
  if (!result || result->output("SUM").as<std::int32_t>()[15] != 5) return 1;
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
