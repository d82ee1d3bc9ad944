// The field's network shapes (examples/models/field_models.py: ParticleNet-, ParT-, DeepTau-,
// DeepJet-, DeepMET- and GravNet-like, and a BDT as ai.onnx.ml), each as ONNX at opsets 11 and 13
// and as TorchScript: sonic-server and a client's fallback, running the same file, answer as
// torch does within 1e-4, and answer alike to the bit.
#include <doctest/doctest.h>

#include <cstring>

#include "reference_checks.hpp"
#include "sonic/executor.hpp"
#include "sonic/repository/repository.hpp"
#include "sonic/server.hpp"
#include "sonic/sonic.hpp"

using namespace sonic;

namespace {

struct Network {
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

const std::vector<Network> kNetworks = {
    {"particlenet", {"points"}, {"probabilities"}},
    {"part", {"particles"}, {"probabilities"}},
    {"deeptau", {"grid", "high_level"}, {"probabilities"}},
    {"deepjet", {"charged", "global_features"}, {"probabilities"}},
    {"deepmet", {"particles", "types"}, {"met_xy"}},
    {"gravnet", {"hits"}, {"energy_fractions"}},
};

// Each network in each format: the model's name and its tensors' names there.
std::vector<Network> served_models() {
  std::vector<Network> models;
  for (const auto& n : kNetworks) {
    models.push_back({n.name + "_onnx", n.inputs, n.outputs});
    models.push_back({n.name + "_onnx13", n.inputs, n.outputs});
    Network torch{n.name + "_torch", {}, {}};
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      torch.inputs.push_back("INPUT__" + std::to_string(i));
    for (std::size_t i = 0; i < n.outputs.size(); ++i)
      torch.outputs.push_back("OUTPUT__" + std::to_string(i));
    models.push_back(torch);
  }
  models.push_back({"bdt_onnx", {"features"}, {"probability"}});
  return models;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         (a.byte_size() == 0 || std::memcmp(a.data(), b.data(), a.byte_size()) == 0);
}

}  // namespace

TEST_CASE("the field's networks: server and fallback answer as torch, and alike to the bit") {
  const std::string repository = test::kModels + "/repository";
  auto served = std::make_shared<CpuExecutor>(2);
  served->set_source(std::make_shared<repository::Repository>(std::vector<std::string>{repository}),
                     false);
  for (const auto& model : served_models()) {
    auto loaded = served->load_model(model.name);
    REQUIRE_MESSAGE(loaded, model.name << ": " << loaded.error().message());
  }
  ServerOptions options;
  options.port = 0;
  Server server(served, options);
  server.start();
  Client client("grpc://127.0.0.1:" + std::to_string(server.port()));
  auto fallback = repository::executor_from_repository({repository}, 2);
  for (const auto& model : served_models()) {
    INFO(model.name);
    auto request = test::reference_request(model.name, model.inputs);
    auto from_server = client.infer_future(request).get();
    auto in_process = fallback->infer(request);
    REQUIRE_MESSAGE(in_process, in_process.error().message());
    CHECK(test::compare_with_reference(model.name, model.outputs, from_server, 1e-4f) == "");
    CHECK(test::compare_with_reference(model.name, model.outputs, in_process, 1e-4f) == "");
    for (const auto& output : model.outputs) {
      CHECK_MESSAGE(same_bytes(from_server.output(output), in_process->output(output)), output);
    }
  }
  server.stop();
}
