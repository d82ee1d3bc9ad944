// Triton's shared memory extension lets a client name memory the server maps. A hostile local
// client must not crash the server through it, read or write memory that is not its own, or
// fill the server's address space; and registrations must not outlive their connection.
#include <doctest/doctest.h>
#include <pwd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "eventually.hpp"
#include "hostile_target.hpp"
#include "shm_object.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

ClientOptions own_connection(const std::string& url) {
  ClientOptions options;
  options.endpoints = {url};
  options.share_connections = false;
  return options;
}

StatusCode code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    MESSAGE(std::string(e.what()));
    return e.code();
  }
  return StatusCode::Ok;
}

}  // namespace

TEST_CASE("a region truncated under the server is an error for its request, not a crash") {
  // Was: register a 1 MiB region, ftruncate the object to 0, infer from it: SIGBUS killed the
  // server.
  HostileTarget target;
  ShmObject object(1 << 20);
  Client client(target.grpc_url());
  register_region(client, "shrinking", object.key(), 1 << 20);
  CHECK(identity_from_region(client, "shrinking", 16).size() == 16);
  object.resize(0);
  CHECK(code_of([&] { identity_from_region(client, "shrinking", 16); }) ==
        StatusCode::InvalidArgument);
  REQUIRE_MESSAGE(target.ended().empty(), "the server " << target.ended());
  // The region is gone; the same name can be registered again, with memory that is there.
  ShmObject fresh(1 << 20);
  register_region(client, "shrinking", fresh.key(), 1 << 20);
  CHECK(identity_from_region(client, "shrinking", 16).size() == 16);
}

TEST_CASE("regions per connection and in all are limited") {
  // Was: one 4 KiB object registered under 65,500 names filled vm.max_map_count, and the next
  // connection aborted the server (an uncaught std::bad_alloc).
  HostileTarget target({"--max-connection-shm-regions", "8", "--max-shm-regions", "12"});
  ShmObject object(4096);
  Client first(own_connection(target.grpc_url()));
  for (int i = 0; i < 8; ++i) register_region(first, "a" + std::to_string(i), object.key(), 4096);
  CHECK(code_of([&] { register_region(first, "a8", object.key(), 4096); }) ==
        StatusCode::ResourceExhausted);
  Client second(own_connection(target.grpc_url()));
  for (int i = 0; i < 4; ++i) register_region(second, "b" + std::to_string(i), object.key(), 4096);
  CHECK(code_of([&] { register_region(second, "b4", object.key(), 4096); }) ==
        StatusCode::ResourceExhausted);
  Probe probe(target.grpc_url());
  std::this_thread::sleep_for(200ms);
  auto report = probe.stop();
  CHECK_MESSAGE(report.failures == 0, report.first_failure);
}

TEST_CASE("mapped bytes are limited: sparse objects cannot fill the address space") {
  // Was: 63 registrations of a sparse 16 TiB object filled the server's address space, and
  // other clients got RESOURCE_EXHAUSTED.
  HostileTarget target;
  std::unique_ptr<ShmObject> huge;
  try {
    huge = std::make_unique<ShmObject>(off_t{16} << 40);
  } catch (const std::exception& e) {
    MESSAGE("skipped: this system cannot make a sparse 16 TiB object (" << e.what() << ")");
    return;
  }
  Client client(own_connection(target.grpc_url()));
  int refused = 0;
  for (int i = 0; i < 63; ++i) {
    if (code_of([&] {
          register_region(client, "huge" + std::to_string(i), huge->key(), std::uint64_t{16} << 40);
        }) == StatusCode::ResourceExhausted) {
      ++refused;
    }
  }
  CHECK(refused == 63);
  Probe probe(target.grpc_url());
  std::this_thread::sleep_for(200ms);
  auto report = probe.stop();
  CHECK_MESSAGE(report.failures == 0, report.first_failure);
}

TEST_CASE("registrations end with the connection that made them") {
  // Was: they outlived it, until the server stopped.
  HostileTarget target;
  ShmObject object(4096);
  auto owner = std::make_unique<Client>(own_connection(target.grpc_url()));
  register_region(*owner, "mine", object.key(), 4096);
  // Another connection of the same user sees it (sonic's grpc+shm:// registers on one
  // connection and may send on another).
  Client other(own_connection(target.grpc_url()));
  CHECK(identity_from_region(other, "mine", 16).size() == 16);
  owner.reset();  // closes its connection
  CHECK(eventually(
      [&] {
        return code_of([&] {
                 other.call("SystemSharedMemoryStatus", protocol::encode_region_name("mine"));
               }) == StatusCode::NotFound;
      },
      3000ms));
}

TEST_CASE("a client maps only shared memory it owns") {
  // Was: a client running as nobody registered root's mode-0600 object by its key, read it
  // through identity_fp32 and could overwrite it through an output: the server opened any key
  // with its own privileges.
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root, to run the thief as another user");
    return;
  }
  const passwd* nobody = ::getpwnam("nobody");
  REQUIRE(nobody != nullptr);
  HostileTarget target;
  ShmObject secret(4096, 0600);  // root's
  std::string bytes(64, '\0');
  for (int i = 0; i < 16; ++i) {
    float value = 1000.0f + static_cast<float>(i);
    std::memcpy(&bytes[static_cast<std::size_t>(i) * 4], &value, 4);
  }
  secret.write(bytes);
  const std::string thief = std::string(SHM_THIEF_BINARY) + " " +
                            std::to_string(target.grpc_port()) + " " +
                            std::to_string(nobody->pw_uid) + " ";
  std::string stolen = output_of(thief + secret.key());
  MESSAGE("thief on root's object: " << stolen);
  CHECK(stolen.rfind("refused: PERMISSION_DENIED", 0) == 0);

  // The same client with an object of its own is served.
  ShmObject own(4096, 0600);
  own.chown_to(nobody->pw_uid, nobody->pw_gid);
  own.write(bytes);
  std::string read = output_of(thief + own.key());
  MESSAGE("thief on its own object: " << read);
  CHECK(read.rfind("read: 1000 1001", 0) == 0);
}
