// Test support: a bare HTTP/2 server on 127.0.0.1 that answers gRPC calls the way a test
// scripts it, for protocol events a real server only produces by accident: GOAWAY with a lower
// last-stream-id while streams are open, and calls held open to watch the client reset them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sonic::test {

/// How the server treats the calls it receives.
struct H2Script {
  /// On the first connection only: once this many calls have arrived, send GOAWAY naming the
  /// first call's stream as the last one processed, answer that call, and close the connection
  /// when it is answered. Every other call on it is thus refused unprocessed. 0: never.
  int goaway_after_calls = 0;
  /// Answer calls (an empty ModelInferResponse, grpc-status 0). False: hold every call open.
  bool answer = true;
  /// On every connection: answer calls as they come, and once this many have arrived send
  /// GOAWAY naming the last of them; calls that arrive later are refused. 0: never.
  int goaway_every = 0;
  /// The first this many calls (over all connections) are answered as a proxy answers when its
  /// upstream fails: HTTP status `proxy_status` (nginx: 502 Bad Gateway), content-type
  /// text/html, an HTML page, and no grpc-status. The others as the rest of the script says.
  int proxy_errors = 0;
  int proxy_status = 502;
};

/// Runs on its own thread; every method is thread-safe. The destructor closes every connection.
class ScriptedH2Server {
 public:
  explicit ScriptedH2Server(H2Script script);
  ~ScriptedH2Server();
  ScriptedH2Server(const ScriptedH2Server&) = delete;
  ScriptedH2Server& operator=(const ScriptedH2Server&) = delete;

  /// "grpc://127.0.0.1:<port>".
  std::string url() const;
  /// Connections accepted so far.
  int connections() const;
  /// Calls received completely (headers and body), over all connections.
  int calls_received() const;
  /// Calls answered, over all connections.
  int calls_answered() const;
  /// RST_STREAM frames with error code CANCEL received from the client.
  int cancels_received() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sonic::test
