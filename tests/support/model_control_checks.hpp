// Model control from the client, checked the same way against every server (sonic-server in
// the integration tests, the Triton-like python_server.py in the interop tests): the index
// lists the model READY; unloaded it is UNAVAILABLE there, not ready, and its requests fail
// with UNAVAILABLE; loaded again it serves. Leaves the model loaded.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <sonic/sonic.hpp>

namespace sonic::test {

inline const ModelIndex* find_in_index(const std::vector<ModelIndex>& index,
                                       const std::string& model) {
  auto it = std::find_if(index.begin(), index.end(),
                         [&](const ModelIndex& m) { return m.name == model; });
  return it == index.end() ? nullptr : &*it;
}

/// `request` must succeed on `model` while it is loaded.
inline void check_unload_and_load(Client& client, const std::string& model,
                                  const InferRequest& request) {
  const auto before = client.repository_index();
  const ModelIndex* listed = find_in_index(before, model);
  REQUIRE(listed);
  CHECK(listed->state == sonic::ModelState::Ready);

  client.unload_model(model);
  const auto unloaded = client.repository_index();
  REQUIRE(find_in_index(unloaded, model));
  CHECK(find_in_index(unloaded, model)->state == sonic::ModelState::Unavailable);
  CHECK_FALSE(find_in_index(client.repository_index(/*ready_only=*/true), model));
  CHECK_FALSE(client.model_ready(model));
  try {
    (void)client.infer(request);
    FAIL("a request for an unloaded model must fail");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unavailable);
  }

  client.load_model(model);
  CHECK(find_in_index(client.repository_index(), model)->state == sonic::ModelState::Ready);
  CHECK(client.model_ready(model));
  CHECK_NOTHROW((void)client.infer(request));
}

}  // namespace sonic::test
