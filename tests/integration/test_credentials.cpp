// Bearer tokens end to end: ClientOptions::bearer_token (sonic::TokenFile) against a server
// started with ServerOptions::auth_token_file, over grpc:// and tcp://. Without the token, with
// a wrong one and with a rotated one; an unauthenticated call never reaches a model.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "loopback_server.hpp"
#include "sonic/credentials.hpp"

using namespace sonic;
using namespace sonic::test;
using namespace std::chrono_literals;

namespace {

// A token file of this test's own, removed when it goes.
struct TokenFileOnDisk {
  std::string path = "/tmp/sonic-test-token-" + std::to_string(::getpid()) + "-" +
                     std::to_string(reinterpret_cast<std::uintptr_t>(this));
  explicit TokenFileOnDisk(const std::string& token) { write(token); }
  ~TokenFileOnDisk() { std::remove(path.c_str()); }
  // Replaced as token agents do: a new file renamed over the old, never a half-written one.
  void write(const std::string& token) const {
    const std::string next = path + ".next";
    std::ofstream(next) << token << "\n";
    REQUIRE(std::rename(next.c_str(), path.c_str()) == 0);
  }
};

ServerOptions requiring(const TokenFileOnDisk& file) {
  ServerOptions options;
  options.auth_token_file = file.path;
  options.tcp_port = 0;
  return options;
}

ClientOptions with_token(std::function<Result<std::string>()> token) {
  ClientOptions options;
  options.bearer_token = std::move(token);
  options.retry.max_attempts = 1;
  return options;
}

StatusCode code_of(Client& client) {
  try {
    (void)client.infer(simple_request(1, 2));
    return StatusCode::Ok;
  } catch (const Error& e) {
    MESSAGE(std::string(e.what()));
    return e.code();
  }
}

}  // namespace

TEST_CASE("a server that requires a token refuses calls without it, over grpc:// and tcp://") {
  TokenFileOnDisk file("s3cret-token-1");
  LoopbackServer server(requiring(file));
  for (const std::string& url : {server.url(), server.tcp_url()}) {
    CAPTURE(url);
    ClientOptions plain;
    plain.retry.max_attempts = 1;
    Client client(url, plain);
    CHECK(code_of(client) == StatusCode::Unauthenticated);
    // Control calls too: nothing is said about the models without the token.
    CHECK_THROWS_AS((void)client.model_metadata("simple"), Error);
    try {
      (void)client.server_metadata();
      FAIL("ServerMetadata answered without the token");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::Unauthenticated);
    }
    Client wrong(url, with_token([] { return Result<std::string>("s3cret-token-2"); }));
    CHECK(code_of(wrong) == StatusCode::Unauthenticated);
  }
  CHECK(simple_executions(server) == 0);  // no refused call reached the model
}

TEST_CASE("the right token is let in; a rotated one is followed by client and server") {
  TokenFileOnDisk server_file("first-token");
  TokenFileOnDisk client_file("first-token");
  LoopbackServer server(requiring(server_file));
  for (const std::string& url : {server.url(), server.tcp_url()}) {
    CAPTURE(url);
    // Rechecked at every call here; by default at most once a second.
    Client client(url, with_token(TokenFile(client_file.path, 0ms)));
    CHECK(code_of(client) == StatusCode::Ok);
    CHECK(client.model_metadata("simple").name == "simple");
  }
  // The site rotates the token: the server's file first, then the client's.
  server_file.write("second-token");
  client_file.write("second-token");
  std::this_thread::sleep_for(1100ms);  // the server looks at its file at most once a second
  for (const std::string& url : {server.url(), server.tcp_url()}) {
    CAPTURE(url);
    Client client(url, with_token(TokenFile(client_file.path, 0ms)));
    CHECK(code_of(client) == StatusCode::Ok);
    Client stale(url, with_token([] { return Result<std::string>("first-token"); }));
    CHECK(code_of(stale) == StatusCode::Unauthenticated);
  }
}

TEST_CASE("one connection follows its client's token as it changes (tcp:// metadata frames)") {
  TokenFileOnDisk server_file("token-a");
  LoopbackServer server(requiring(server_file));
  std::string current = "token-a";
  std::mutex mutex;
  auto token = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return Result<std::string>(current);
  };
  for (const std::string& url : {server.url(), server.tcp_url()}) {
    CAPTURE(url);
    Client client(url, with_token(token));
    CHECK(code_of(client) == StatusCode::Ok);
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = "token-b";
    }
    CHECK(code_of(client) == StatusCode::Unauthenticated);  // the server still wants token-a
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = "token-a";
    }
    CHECK(code_of(client) == StatusCode::Ok);
  }
}

TEST_CASE("a token that cannot be had fails the call before anything is sent") {
  LoopbackServer server;  // requires nothing: the failure is the client's own
  Client missing(server.url(), with_token(TokenFile("/nonexistent/sonic-token")));
  try {
    (void)missing.infer(simple_request(1, 2));
    FAIL("a call went without its token");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::Unauthenticated);
    CHECK(std::string(e.what()).find("/nonexistent/sonic-token") != std::string::npos);
  }
  Client bad(server.url(), with_token([] { return Result<std::string>("two\nlines"); }));
  CHECK(code_of(bad) == StatusCode::Unauthenticated);
  CHECK(simple_executions(server) == 0);
}

TEST_CASE("TokenFile: trimmed, re-read only when the file changed, errors name the file") {
  TokenFileOnDisk file("  abc.def-ghi  ");
  TokenFile token(file.path, 0ms);
  CHECK(token().value() == "abc.def-ghi");
  file.write("xyz");
  CHECK(token().value() == "xyz");
  TokenFile slow(file.path, 1h);
  CHECK(slow().value() == "xyz");
  file.write("later");
  CHECK(slow().value() == "xyz");  // not looked at again within its recheck period
  file.write("has space");
  auto refused = token();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == StatusCode::Unauthenticated);
  file.write("");
  CHECK_FALSE(token());
  file.write(std::string(20 << 10, 'a'));  // never read whole: a token is at most 16 KiB
  auto huge = token();
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message().find("at most") != std::string::npos);
  std::remove(file.path.c_str());
  auto gone = token();
  REQUIRE_FALSE(gone);
  CHECK(gone.error().message().find(file.path) != std::string::npos);
}

TEST_CASE("a server whose token file cannot be read does not start") {
  ServerOptions options;
  options.auth_token_file = "/nonexistent/sonic-server-token";
  options.port = 0;
  CHECK_THROWS_AS(Server(test_executor(1), options), Error);
}
