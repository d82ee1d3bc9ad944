// TLS end to end: grpcs://, tcp+tls:// and tcp+zstd+tls:// against a server with
// ServerOptions::tls, with certificates the openssl command made for the test. Each way a
// connection must not be made (an unknown authority, an expired certificate, the wrong name, a
// plaintext peer, a missing or foreign client certificate) fails UNAVAILABLE naming the
// reason, and no refused call reaches a model.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "expect_error.hpp"
#include "loopback_server.hpp"
#include "test_certificates.hpp"

using namespace sonic;
using namespace sonic::test;

namespace {

ServerOptions serving(const TestCertificates& certs, const std::string& cert = "server.pem") {
  ServerOptions options;
  options.tls.cert_file = certs.file(cert);
  options.tls.key_file = certs.file("server.key");
  options.tcp_port = 0;
  return options;
}

ClientOptions trusting(const TestCertificates& certs, const std::string& ca = "ca.pem") {
  ClientOptions options;
  options.tls.ca_file = certs.file(ca);
  options.retry.max_attempts = 1;
  options.connect_timeout = std::chrono::milliseconds(3000);
  return options;
}

// The server's secure URLs: the gRPC port's, and the TCP port's with and without zstd.
std::vector<std::string> secure_urls(LoopbackServer& server) {
  return {"grpcs://127.0.0.1:" + std::to_string(server.port()), server.tcp_url("tcp+tls"),
          server.tcp_url("tcp+zstd+tls")};
}

void check_answers(Client& client) {
  auto result = client.infer(simple_request(3, 4));
  auto sum = result.output("OUTPUT0").as<std::int32_t>();
  REQUIRE(sum.size() == 16);
  CHECK(sum[0] == 7);
}

// The call's error, which must be UNAVAILABLE and say `reason`.
void check_refused(Client& client, const std::string& reason) {
  Error error = expect_error([&] { (void)client.infer(simple_request(1, 2)); });
  MESSAGE(std::string(error.what()));
  CHECK(error.code() == StatusCode::Unavailable);
  CHECK(std::string(error.what()).find(reason) != std::string::npos);
}

}  // namespace

TEST_CASE("grpcs://, tcp+tls:// and tcp+zstd+tls:// answer through TLS") {
  TestCertificates certs;
  LoopbackServer server(serving(certs));
  for (const auto& url : secure_urls(server)) {
    CAPTURE(url);
    Client client(url, trusting(certs));
    check_answers(client);
    CHECK(client.server_metadata().name == "sonic-server");
  }
  SUBCASE("with the authority and the name given in memory") {
    ClientOptions options;
    options.tls.ca_pem = certs.text("ca.pem");
    options.tls.server_name = "localhost";  // the certificate lists it too
    for (const auto& url : secure_urls(server)) {
      CAPTURE(url);
      Client client(url, options);
      check_answers(client);
    }
  }
}

TEST_CASE("a server certificate that does not verify fails the connection, naming why") {
  TestCertificates certs;
  struct Case {
    const char* what;
    const char* server_certificate;
    const char* client_authority;
    const char* server_name;  // the client's ClientOptions::tls.server_name
    const char* reason;       // what the error must say
  };
  const Case cases[] = {
      {"signed by an authority the client does not trust", "server.pem", "other-ca.pem", "",
       "server's certificate was refused: unable to get local issuer"},
      {"expired", "expired.pem", "ca.pem", "", "certificate has expired"},
      {"for another host", "wrong-host.pem", "ca.pem", "", "IP address mismatch"},
      {"valid, but not for the name the client expects", "server.pem", "ca.pem",
       "elsewhere.example", "hostname mismatch"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    LoopbackServer server(serving(certs, c.server_certificate));
    ClientOptions options = trusting(certs, c.client_authority);
    options.tls.server_name = c.server_name;
    for (const auto& url : secure_urls(server)) {
      CAPTURE(url);
      Client client(url, options);
      check_refused(client, c.reason);
    }
    CHECK(simple_executions(server) == 0);
  }
}

TEST_CASE("TLS and plaintext never meet silently") {
  TestCertificates certs;
  SUBCASE("a TLS client and a plaintext server") {
    ServerOptions plain;
    plain.tcp_port = 0;
    LoopbackServer server(plain);
    for (const std::string& url :
         {"grpcs://127.0.0.1:" + std::to_string(server.port()), server.tcp_url("tcp+tls")}) {
      CAPTURE(url);
      Client client(url, trusting(certs));
      check_refused(client, "does not speak TLS");
    }
    CHECK(simple_executions(server) == 0);
  }
  SUBCASE("a plaintext client and a TLS server") {
    LoopbackServer server(serving(certs));
    ClientOptions plain;
    plain.retry.max_attempts = 1;
    Client grpc(server.url(), plain);
    check_refused(grpc, "not a TLS one (grpcs://)");
    Client tcp(server.tcp_url(), plain);
    check_refused(tcp, "not a TLS one (tcp+tls://)");
    CHECK(simple_executions(server) == 0);
  }
}

TEST_CASE("mutual TLS: the server takes only clients with a certificate of its authority") {
  TestCertificates certs;
  ServerOptions options = serving(certs);
  options.tls.client_ca_file = certs.file("ca.pem");
  LoopbackServer server(options);
  for (const auto& url : secure_urls(server)) {
    CAPTURE(url);
    ClientOptions with_certificate = trusting(certs);
    with_certificate.tls.cert_file = certs.file("client.pem");
    with_certificate.tls.key_file = certs.file("client.key");
    Client admitted(url, with_certificate);
    check_answers(admitted);

    Client anonymous(url, trusting(certs));
    check_refused(anonymous, "certificate required");

    ClientOptions foreign = trusting(certs);
    foreign.tls.cert_pem = certs.text("outsider.pem");
    foreign.tls.key_pem = certs.text("outsider.key");
    Client outsider(url, foreign);
    check_refused(outsider, "unknown ca");
  }
  CHECK(simple_executions(server) == 3);
}

TEST_CASE("TLS settings that cannot be used are refused when the client or server is made") {
  TestCertificates certs;
  ClientOptions missing_ca;
  missing_ca.tls.ca_file = certs.file("no-such-ca.pem");
  Error client_error = expect_error([&] { Client client("grpcs://127.0.0.1:1", missing_ca); });
  CHECK(client_error.code() == StatusCode::InvalidArgument);
  CHECK(std::string(client_error.what()).find("no-such-ca.pem") != std::string::npos);

  ClientOptions half = trusting(certs);
  half.tls.cert_file = certs.file("client.pem");  // and no key
  CHECK(expect_error([&] { Client client("tcp+tls://127.0.0.1:1", half); }).code() ==
        StatusCode::InvalidArgument);

  ServerOptions mismatched = serving(certs);
  mismatched.tls.key_file = certs.file("client.key");
  Error server_error = expect_error([&] { Server server(test_executor(1), mismatched); });
  CHECK(server_error.code() == StatusCode::InvalidArgument);
  MESSAGE(std::string(server_error.what()));
  CHECK(std::string(server_error.what()).find("client.key") != std::string::npos);
}
