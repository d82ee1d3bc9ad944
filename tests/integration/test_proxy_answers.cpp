// What a proxy in front of gRPC servers answers when a replica fails (nginx's grpc_pass,
// HAProxy, Envoy): an HTTP error status with an HTML page and no grpc-status. gRPC maps such a
// status to a code (doc/http-grpc-status-mapping.md: 502, 503, 504 are UNAVAILABLE) and never
// reads the page as gRPC messages; sonic retries UNAVAILABLE, so the caller sees nothing.
#include <doctest/doctest.h>

#include <string>

#include "loopback_server.hpp"
#include "scripted_h2_server.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

ClientOptions through_proxy(int attempts) {
  ClientOptions options;
  options.validate_inputs = false;  // the scripted server knows no metadata
  options.retry.max_attempts = attempts;
  return options;
}

}  // namespace

TEST_CASE("a proxy's 502 page is UNAVAILABLE naming the status, never a malformed message") {
  for (int status : {502, 503, 504}) {
    CAPTURE(status);
    H2Script script;
    script.proxy_errors = 1;
    script.proxy_status = status;
    ScriptedH2Server server(script);
    Client client(server.url(), through_proxy(1));
    try {
      (void)client.infer(simple_request(1, 2));
      FAIL("the proxy's error page was taken for an answer");
    } catch (const Error& e) {
      CHECK(e.code() == StatusCode::Unavailable);
      CHECK_MESSAGE(
          std::string(e.what()).find("HTTP status " + std::to_string(status)) != std::string::npos,
          e.what());
    }
  }
}

TEST_CASE("behind a proxy whose replica failed, the retry succeeds and the caller sees nothing") {
  H2Script script;
  script.proxy_errors = 2;
  ScriptedH2Server server(script);
  Client client(server.url(), through_proxy(3));
  CHECK_NOTHROW((void)client.infer(simple_request(1, 2)));
  CHECK(server.calls_received() == 3);
  CHECK(client.stats().retries == 2);
}
