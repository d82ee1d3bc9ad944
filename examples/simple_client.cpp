// Sends the `simple` model two INT32 vectors and prints their sum, difference and the round
// trip time:  simple_client [URL]
#include <sonic/sonic.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <numeric>
#include <vector>

int main(int argc, char** argv) try {
  sonic::Client client(argc > 1 ? argv[1] : "grpc://127.0.0.1:8001");
  std::vector<int32_t> a(16), b(16, 1);
  std::iota(a.begin(), a.end(), 0);
  auto request = [&] {
    return sonic::InferRequest("simple")
        .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
        .input("INPUT1", sonic::Tensor::view(b, {1, 16}));
  };
  auto result = client.infer(request());  // the first call also connects and reads metadata
  for (const char* name : {"OUTPUT0", "OUTPUT1"}) {
    std::cout << name << ":";
    for (int32_t v : result.output(name).as<int32_t>()) std::cout << ' ' << v;
    std::cout << '\n';
  }

  std::vector<double> ms;
  for (int i = 0; i < 1000; ++i) {
    auto start = std::chrono::steady_clock::now();
    (void)client.infer(request());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::cout << "round trip over " << ms.size() << " requests: p50 " << ms[ms.size() / 2]
            << " ms, p99 " << ms[ms.size() * 99 / 100] << " ms\n";
} catch (const sonic::Error& e) {
  std::cerr << "simple_client: " << e.what() << '\n';
  return 1;
}
