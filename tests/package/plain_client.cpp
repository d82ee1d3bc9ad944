// Linked the plainest way there is, `g++ plain_client.cpp -lsonic_grpc`, with no CMake and no
// pkg-config: one `simple` request to the server at the URL given.
#include <sonic/sonic.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: plain_client URL\n";
    return 2;
  }
  sonic::Client client(argv[1]);
  std::vector<std::int32_t> a(16, 20), b(16, 22);
  auto result = client.infer(sonic::InferRequest("simple")
                                 .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                                 .input("INPUT1", sonic::Tensor::view(b, {1, 16})));
  auto sum = result.output("OUTPUT0").as<std::int32_t>();
  if (sum.size() != 16 || sum[15] != 42) {
    std::cerr << "plain_client: wrong answer\n";
    return 1;
  }
  std::cout << "plain_client: ok\n";
  return 0;
} catch (const sonic::Error& e) {
  std::cerr << "plain_client: " << e.what() << '\n';
  return 1;
}
