// Test support: a loopback TCP proxy that injects network faults (delay, blackhole, reset, a
// response cut mid-message, refused connects) between a client and a server, switched at run
// time by the test. The reliability tests put it between sonic::Client and a LoopbackServer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sonic::test {

/// The fault a FaultProxy applies. Pass, Delay, Stall and CutAfter are modes for the data of
/// every connection; Reset is the one-off action of reset_all() and never lasts; Refuse is the
/// state of the listening socket, independent of the data mode.
enum class Fault { Pass, Delay, Stall, Reset, CutAfter, Refuse };

/// A TCP proxy on 127.0.0.1 that forwards each accepted connection to 127.0.0.1:<target> and
/// injects faults on demand, so that tests can break the network under a real client at a chosen
/// moment without root, netem or iptables.
///
/// It runs its own io_context on one thread. Every method is thread-safe and, except the
/// counters and set_target(), returns only once the io thread has applied it: data that arrives
/// after a call returns sees the new fault. Buffering is bounded (1 MiB per direction and
/// connection; beyond that the proxy stops reading, which pushes back on the sender), and the
/// destructor closes every socket and joins the thread without waiting on any peer.
class FaultProxy {
 public:
  /// Listens on 127.0.0.1:<ephemeral> and forwards every accepted connection to
  /// 127.0.0.1:target_port. A connection whose target cannot be reached is reset. Starts in
  /// Pass mode.
  explicit FaultProxy(std::uint16_t target_port);
  /// Stops accepting, closes every connection and joins the io thread. Never blocks on a peer.
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// The proxy's listening port; the same for the proxy's whole life (refuse() reopens it).
  std::uint16_t port() const;
  /// "grpc://127.0.0.1:<port>", for sonic::Client.
  std::string url() const;

  /// Connections accepted from now on are forwarded to 127.0.0.1:port; existing ones stay
  /// where they are (a failover target, or a restarted server on a new port).
  void set_target(std::uint16_t port);

  /// Forwards everything as it comes. Data held by stall() or delay() goes out at once, in order.
  void pass();
  /// Forwards each chunk read from either side `d` after it arrived, keeping order (latency,
  /// not bandwidth: chunks arriving together leave together).
  void delay(std::chrono::milliseconds d);
  /// Blackhole: connections stay open and new ones are accepted and connected to the target,
  /// but nothing is forwarded in either direction. Stalled data is held, not dropped (as TCP
  /// would retransmit it once a real network heals): pass() or delay() releases it in order.
  /// Past 1 MiB held per direction the proxy stops reading and the sender's socket fills up.
  void stall();
  /// Resets (SO_LINGER 0 + close, so the peer reads ECONNRESET) both sides of every current
  /// connection now, drops what they held, and returns to Pass: later connections go through.
  void reset_all();
  /// Server-to-client data: forwards `bytes` more bytes in total, over all connections, then
  /// resets the connection that carried the last of them (both sides) once the client side has
  /// taken them, cutting a response mid-message. The proxy then returns to Pass. Client-to-server
  /// data passes. cut_after(0) resets the next connection that has a response byte to forward.
  void cut_after(std::size_t bytes);
  /// While on, the listening socket is closed so that connects get ECONNREFUSED; established
  /// connections are untouched. Off reopens it on the same port and throws std::runtime_error
  /// if the port was taken meanwhile (the proxy stays refusing; refuse(false) may be retried).
  void refuse(bool on);

  /// The current data mode: Pass, Delay, Stall or CutAfter (never Reset or Refuse).
  Fault fault() const;
  /// Whether the listening socket is closed by refuse(true).
  bool refusing() const;

  /// Client connections accepted since construction.
  std::size_t connections_accepted() const;
  /// Connections currently open (accepted and not yet closed on both sides).
  std::size_t connections_open() const;
  /// Connections the proxy reset on purpose (reset_all(), cut_after()).
  std::size_t connections_reset() const;
  /// Bytes handed to the target's socket, over all connections.
  std::size_t bytes_to_server() const;
  /// Bytes handed to clients' sockets, over all connections.
  std::size_t bytes_to_client() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sonic::test
