// python_server.py as a child of the test program: started on first use, stopped (SIGTERM, then
// SIGKILL) when the program exits. Where to find Python and the script is compiled in.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_server.hpp"

namespace sonic::test {

/// Starts another python_server.py with `options` added to its command line (throws
/// std::runtime_error when it does not start).
inline std::unique_ptr<ChildServer> start_python_server(std::vector<std::string> options = {}) {
  std::vector<std::string> args = {SONIC_INTEROP_PYTHON, SONIC_INTEROP_SERVER_SCRIPT, "--proto-dir",
                                   SONIC_INTEROP_PROTO_DIR, "--gen-dir", SONIC_INTEROP_GEN_DIR,
                                   "--host", "127.0.0.1", "--port", "0",
                                   // A backstop should this process vanish without a trace.
                                   "--max-seconds", "300"};
  args.insert(args.end(), options.begin(), options.end());
  return std::make_unique<ChildServer>(std::move(args), "listening on 127.0.0.1:");
}

/// The server's host and port ("127.0.0.1:PORT"). A failed start is remembered, so that every
/// test reports it without waiting again.
inline std::string python_server_address() {
  static std::string error;
  static std::unique_ptr<ChildServer> server = [] {
    try {
      return start_python_server();
    } catch (const std::exception& e) {
      error = e.what();
      return std::unique_ptr<ChildServer>();
    }
  }();
  if (!server) throw std::runtime_error(error);
  return "127.0.0.1:" + std::to_string(server->port());
}

/// The server's URL for plain gRPC.
inline std::string server_url() { return "grpc://" + python_server_address(); }

}  // namespace sonic::test
