// Sends one request to the `simple` model and prints the outputs:  simple_client [URL]
#include <sonic/sonic.hpp>

#include <iostream>

int main(int argc, char** argv) try {
  sonic::Client client(argc > 1 ? argv[1] : "grpc://127.0.0.1:8001");
  std::vector<int32_t> a(16), b(16, 1);
  for (int i = 0; i < 16; ++i) a[i] = i;
  auto result = client.infer(sonic::InferRequest("simple")
                                 .input("INPUT0", sonic::Tensor::view(a, {1, 16}))
                                 .input("INPUT1", sonic::Tensor::view(b, {1, 16})));
  for (const char* name : {"OUTPUT0", "OUTPUT1"}) {
    std::cout << name << ":";
    for (int32_t v : result.output(name).as<int32_t>()) std::cout << ' ' << v;
    std::cout << '\n';
  }
} catch (const sonic::Error& e) {
  std::cerr << "simple_client: " << e.what() << '\n';
  return 1;
}
