// One way into the server for every protocol: the HTTP/REST port's inference runs through the
// same dispatch as the gRPC and TCP ports' (server/src/infer_dispatch.hpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include <sonic/client.hpp>

#include "loopback_server.hpp"
#include "thread_probe.hpp"

using namespace sonic;
using namespace sonic::test;

TEST_CASE("over http://, a server running models on its network thread runs every body there") {
  ServerOptions options;
  options.inline_models = true;  // one network thread (the default): every model runs there
  options.http_port = 0;
  LoopbackServer server(options);
  ThreadProbe probe;
  server.executor().add_model(probe.model("thread_probe", DataType::Int32));

  Client client("http://127.0.0.1:" + std::to_string(server.http_port()));
  // Bodies of a few bytes are decoded on the network thread, bodies of 32 KiB on the
  // executor's: either way the model then runs where gRPC's and TCP's would.
  for (const std::size_t elements : {std::size_t{4}, std::size_t{8192}}) {
    CAPTURE(elements);
    std::vector<std::future<InferResult>> answers;
    for (int i = 0; i < 20; ++i) {
      std::vector<std::int32_t> values(elements, i);
      answers.push_back(client.infer_future(
          InferRequest("thread_probe")
              .input("INPUT0", Tensor::from_vector(std::move(values),
                                                   {1, static_cast<std::int64_t>(elements)}))));
    }
    for (int i = 0; i < 20; ++i) {
      auto result = answers[i].get();
      CHECK(result.output("OUTPUT0").as<std::int32_t>()[elements - 1] == i);
    }
  }
  CHECK(probe.threads() == 1);  // the executor's 4 threads took no part
}
