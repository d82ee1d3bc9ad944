// Triton's LogSettings and TraceSetting from C++: Client::call with the methods' names and
// messages, over every transport that reaches sonic-server's control plane (gRPC, HTTP/REST,
// TCP), all answered by the one handler of each method.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "expect_error.hpp"
#include "loopback_server.hpp"
#include "protocol/settings_codec.hpp"

using namespace sonic;
using namespace sonic::test;

TEST_CASE("log and trace settings are read and changed through Client::call on each transport") {
  ServerOptions options;
  options.tcp_port = 1;  // some: LoopbackServer picks an ephemeral one
  options.http_port = 0;
  LoopbackServer server(options);
  const std::string http = "http://127.0.0.1:" + std::to_string(server.http_port());
  std::uint32_t level = 0;
  for (const std::string& url : {server.url(), http, server.tcp_url()}) {
    CAPTURE(url);
    Client client(url);
    // Each transport sees the change the one before made: the server keeps one set.
    auto before = protocol::decode_log_settings(
        client.call("LogSettings", protocol::encode_log_settings({})));
    REQUIRE(before);
    CHECK(std::get<std::uint32_t>(before->at("log_verbose_level")) == level);
    CHECK(std::get<std::string>(before->at("log_format")) == "default");
    ++level;
    auto after = protocol::decode_log_settings(
        client.call("LogSettings", protocol::encode_log_settings({{"log_verbose_level", level}})));
    REQUIRE(after);
    CHECK(std::get<std::uint32_t>(after->at("log_verbose_level")) == level);
    auto format = expect_error([&] {
      (void)client.call("LogSettings",
                        protocol::encode_log_settings({{"log_format", std::string("json")}}));
    });
    CHECK(format.code() == StatusCode::InvalidArgument);
    CHECK(format.message() == "invalid argument for log_format, got: json");

    auto trace = protocol::decode_trace_settings(
        client.call("TraceSetting",
                    protocol::encode_trace_setting_request({"simple", {{"trace_rate", {"9"}}}})));
    REQUIRE(trace);
    CHECK(trace->at("trace_rate") == std::vector<std::string>{"9"});
    CHECK(trace->at("trace_level") == std::vector<std::string>{"OFF"});
    auto global = protocol::decode_trace_settings(
        client.call("TraceSetting", protocol::encode_trace_setting_request({})));
    REQUIRE(global);
    CHECK(global->at("trace_rate") == std::vector<std::string>{"1000"});
    auto unknown = expect_error([&] {
      (void)client.call("TraceSetting", protocol::encode_trace_setting_request({"nobody", {}}));
    });
    CHECK(unknown.code() == StatusCode::InvalidArgument);
    CHECK(unknown.message() == "Request for unknown model : nobody");
  }
}
