// A consumer of the installed sonic package: serves the built-in models in process and sends a
// `simple` request through sonic::Client over grpc://, grpc+shm://, tcp:// and tcp+zstd://.
// Exits non-zero when anything is wrong.
#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

int main() try {
  sonic::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.tcp_port = 0;
  sonic::Server server(sonic::CpuExecutor::with_models(sonic::models::builtin(), 1), options);
  server.start();

  std::vector<std::int32_t> a(16), b(16);
  for (int i = 0; i < 16; ++i) {
    a[i] = i;
    b[i] = 100 - 3 * i;
  }
  for (std::string scheme : {"grpc", "grpc+shm", "tcp", "tcp+zstd"}) {
    auto port = scheme.rfind("tcp", 0) == 0 ? server.tcp_port() : server.port();
    sonic::Client client(scheme + "://127.0.0.1:" + std::to_string(port));
    auto result = client.infer(sonic::InferRequest("simple")
                                   .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                                   .input("INPUT1", sonic::Tensor::view(b, {1, 16}))
                                   .timeout(std::chrono::seconds(30)));
    auto sum = result.output("OUTPUT0").as<std::int32_t>();
    if (sum.size() != 16) {
      std::cerr << "sonic_consumer: " << scheme << ": OUTPUT0 has " << sum.size()
                << " elements, expected 16\n";
      return 1;
    }
    for (int i = 0; i < 16; ++i) {
      if (sum[i] != a[i] + b[i]) {
        std::cerr << "sonic_consumer: " << scheme << ": OUTPUT0[" << i << "] = " << sum[i]
                  << ", expected " << a[i] + b[i] << '\n';
        return 1;
      }
    }
  }
  std::cout << "sonic_consumer: ok (sonic " << sonic::kVersion << ")\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "sonic_consumer: " << e.what() << '\n';
  return 1;
}
