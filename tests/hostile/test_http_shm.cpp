// Triton's shared memory extension on the HTTP/REST port, through sonic's http:// client: the
// port binds regions with the gRPC port's registry, so a hostile local client gets the same
// answers there: sizes past a region refused, a region truncated under the server an error for
// its request and never a crash, a region unregistered while requests use it either read
// whole or not found.
#include <doctest/doctest.h>
#include <pwd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "hostile_target.hpp"
#include "shm_object.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

std::string http_endpoint(const HostileTarget& target) {
  return "http://127.0.0.1:" + std::to_string(target.http_port());
}

StatusCode http_refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  return StatusCode::Ok;
}

// 16 floats 1000, 1001, ... as the object's first bytes.
std::string counting_floats() {
  std::string bytes(64, '\0');
  for (int i = 0; i < 16; ++i) {
    const float value = 1000.0f + static_cast<float>(i);
    std::memcpy(&bytes[static_cast<std::size_t>(i) * 4], &value, 4);
  }
  return bytes;
}

}  // namespace

TEST_CASE("over HTTP, regions are bound as over gRPC: sizes past them refused, truncation too") {
  HostileTarget target;
  ShmObject object(4096);
  object.write(counting_floats());
  Client client(http_endpoint(target));
  register_region(client, "small", object.key(), 64);
  const auto read = identity_from_region(client, "small", 16);
  REQUIRE(read.size() == 16);
  CHECK(read[15] == 1015.0f);
  // 17 floats: past the 64 registered bytes, though the object has more.
  CHECK(http_refusal([&] { identity_from_region(client, "small", 17); }) ==
        StatusCode::InvalidArgument);
  CHECK(http_refusal([&] { identity_from_region(client, "nosuch", 16); }) == StatusCode::NotFound);
  // The object shrinks under the server: an error for the request, and the region goes.
  object.resize(0);
  CHECK(http_refusal([&] { identity_from_region(client, "small", 16); }) ==
        StatusCode::InvalidArgument);
  REQUIRE_MESSAGE(target.ended().empty(), "the server " << target.ended());
  CHECK(http_refusal([&] { identity_from_region(client, "small", 16); }) == StatusCode::NotFound);
}

TEST_CASE("over HTTP, a region unregistered while requests use it: read whole or not found") {
  HostileTarget target;
  ShmObject object(4096);
  object.write(counting_floats());
  Client reader(http_endpoint(target));
  Client churner(http_endpoint(target));
  register_region(churner, "churn", object.key(), 4096);
  std::atomic<bool> done{false};
  std::thread churn([&] {
    // Unregistered and registered again as fast as the port answers.
    while (!done.load()) {
      churner.call("SystemSharedMemoryUnregister", protocol::encode_region_name("churn"));
      register_region(churner, "churn", object.key(), 4096);
    }
  });
  int whole = 0, missing = 0, wrong = 0;
  for (int i = 0; i < 300; ++i) {
    try {
      const auto values = identity_from_region(reader, "churn", 16);
      whole += values.size() == 16 && values[0] == 1000.0f && values[15] == 1015.0f;
      wrong += !(values.size() == 16 && values[0] == 1000.0f && values[15] == 1015.0f);
    } catch (const Error& e) {
      if (e.code() == StatusCode::NotFound) {
        ++missing;
      } else {
        ++wrong;
        MESSAGE(e.what());
      }
    }
  }
  done = true;
  churn.join();
  MESSAGE(whole << " read whole, " << missing << " not found");
  CHECK(wrong == 0);
  CHECK(whole > 0);
  REQUIRE_MESSAGE(target.ended().empty(), "the server " << target.ended());
}

TEST_CASE("over HTTP, a client maps only memory it owns and uses only its user's regions") {
  // The owner checks of the gRPC port ("a client maps only shared memory it owns"), on the HTTP
  // port: the kernel names the user on the other end of the HTTP connection.
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root, to run the thief as another user");
    return;
  }
  const passwd* nobody = ::getpwnam("nobody");
  REQUIRE(nobody != nullptr);
  HostileTarget target;
  ShmObject secret(4096, 0600);  // root's
  secret.write(counting_floats());
  const std::string thief = std::string(SHM_THIEF_BINARY) + " " + http_endpoint(target) + " " +
                            std::to_string(nobody->pw_uid) + " ";
  const std::string by_key = output_of(thief + secret.key());
  MESSAGE("thief on root's object: " << by_key);
  CHECK(by_key.rfind("refused: ", 0) == 0);
  CHECK(by_key.find("is not this client's") != std::string::npos);
  // Root's region, registered by root over HTTP, is not found by another user's connection.
  Client owner(http_endpoint(target));
  register_region(owner, "roots", secret.key(), 64);
  CHECK(identity_from_region(owner, "roots", 16)[0] == 1000.0f);
  const std::string by_name = output_of(thief + "@roots");
  MESSAGE("thief on root's region: " << by_name);
  CHECK(by_name.rfind("refused: NOT_FOUND", 0) == 0);
  // The same client with an object of its own is served.
  ShmObject own(4096, 0600);
  own.chown_to(nobody->pw_uid, nobody->pw_gid);
  own.write(counting_floats());
  const std::string served = output_of(thief + own.key());
  MESSAGE("thief on its own object: " << served);
  CHECK(served.rfind("read: 1000 1001", 0) == 0);
}
