// A job's fallback built without CMake: `g++ app.cpp $(pkg-config --cflags --libs sonic-onnx)`,
// running a model of a Triton repository in-process (check_install.sh builds and runs it).
//   fallback_app REPOSITORY
#include <sonic/repository/repository.hpp>
#include <sonic/sonic.hpp>

#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto executor = sonic::repository::executor_from_repository({argv[1]}, 1);
  std::vector<float> features(16, 0.5f);
  auto result = executor->infer(sonic::InferRequest("jet_mlp_onnx")
                                    .input("features", sonic::Tensor::view(features, {1, 16})));
  if (!result) {
    std::cerr << result.error().message() << "\n";
    return 1;
  }
  std::cout << "jet_mlp_onnx in-process: p0 = " << result->output("probabilities").as<float>()[0]
            << "\n";
}
