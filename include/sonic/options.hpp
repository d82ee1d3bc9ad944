// sonic — client configuration, with every default in one place.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <functional>

#include "sonic/compression.hpp"
#include "sonic/error.hpp"
#include "sonic/retry.hpp"
#include "sonic/routing.hpp"
#include "sonic/stats.hpp"

namespace sonic {

class Fallback;

/// Looks up a host name: the addresses it stands for now, each as "address:port" (an IPv6
/// address in brackets: "[::1]:8001"). It may block; sonic calls it on a thread of its own.
using Resolver =
    std::function<Result<std::vector<std::string>>(const std::string& host, std::uint16_t port)>;

/// Where a client's completion callbacks run. Whichever it is, a callback never runs inside
/// infer_async() or cancel(), and callbacks of different requests may run at the same time.
enum class CallbackThread {
  /// The default: on the network thread that received the reply, once it is done with its
  /// sockets for the moment. No thread is woken per request, and a callback that only hands
  /// the result on (sets a flag, spawns a framework task, fulfils a promise) costs the I/O
  /// nothing. A callback that holds the thread longer than one to two milliseconds
  /// (a network thread looks every millisecond), or that makes a blocking sonic call, does not
  /// stall its
  /// connection: the connection moves to a fresh network thread while the callback finishes,
  /// and the client's later callbacks run on the callback threads. Outcomes decided elsewhere
  /// (a deadline, a cancel(), the CPU fallback) also go to the callback threads.
  Network,
  /// On the process's callback threads (ClientOptions::callback_threads), always: a callback
  /// never delays any I/O, at the price of a thread wake-up per request (about a third of a
  /// small request's client CPU).
  Pool,
  /// Right where the outcome is decided, inside the transport's handling of the reply (or on
  /// the retry timer's or the CPU executor's thread): the leanest, for callbacks that take
  /// well under a microsecond and never block. Meanwhile, the connection moves no bytes.
  /// Blocking calls of this client (infer, control calls) fail there with
  /// FAILED_PRECONDITION instead of deadlocking; destroying the client there finishes on
  /// another thread.
  Inline,
};

/// The regions a grpc+shm:// client places tensors in (see sonic::shm for memory users fill
/// themselves).
struct SharedMemoryOptions {
  /// Most bytes of shared memory a client keeps. A request that finds no free region within
  /// this limit is sent over plain gRPC instead of waiting.
  std::size_t pool_bytes = std::size_t{1} << 30;
  /// Smallest region created; larger ones are powers of two above it.
  std::size_t min_region_bytes = std::size_t{64} << 10;
};

/// Compression: of gRPC messages, and of tcp+zstd:// tensors (tcp:// sends them as they are).
struct CompressionOptions {
  /// How requests' messages are compressed over gRPC (grpc://, grpc+shm://'s inline tensors,
  /// and streams) and HTTP (http://: the whole body, as Content-Encoding, and the answer asked
  /// for the same way); a request may choose otherwise, InferRequest::compression: None, the
  /// default, or Deflate or Gzip, which pay only on slow links with compressible tensors. A
  /// gRPC message that would not shrink goes as it is. Answers are taken compressed either way.
  Compression grpc = Compression::None;
  /// zstd level: 1 is fast, which is what a saturated link needs; higher trades CPU for bytes.
  int zstd_level = 1;
  /// Compress only tensors that shrink: a sample of each is compressed first, and one that
  /// does not compress (noise, already compressed data) goes raw, costing no more CPU.
  bool adaptive = true;
};

/// How endpoints given by host name are looked up.
struct Resolution {
  /// Make every address of a host name an endpoint of its own, as a Kubernetes headless service
  /// or a DNS round robin intends: requests balance over all of them and each has its own
  /// circuit breaker. Off (the default, like gRPC's pick-first): a name is one endpoint,
  /// connected to its first reachable address. IP literals are never looked up.
  bool each_address = false;
  /// With each_address: how often names are looked up again. New addresses join the rotation;
  /// vanished ones take no new requests and close once their requests are done.
  std::chrono::milliseconds interval{30'000};
  /// Most addresses taken from one name; further ones are ignored (and logged).
  std::size_t max_addresses = 64;
  /// The lookup; empty means the system's (getaddrinfo, through the linked transport). Set it
  /// to plug in another discovery service. It is never called once the client is destroyed: the
  /// destructor waits for a lookup in progress to return.
  Resolver resolver;
};

/// Ragged ("many requests") batching: requests whose inputs differ in shape merge too. Each
/// input of the merged request holds the requests' elements one after the other as a 1-D
/// tensor, and one more input says where each request's elements end: what Triton gives a
/// model under ragged batching (inputs with allow_ragged_batch concatenated into 1-D tensors,
/// and a BATCH_ACCUMULATED_ELEMENT_COUNT batch input). The model answers with one row per
/// request along the first dimension of each output.
struct RaggedBatching {
  /// The INT32 input, shape [requests], that holds for each request the element count of
  /// `source_input` in it and in every request before it ([3, 7, 12] for 3, 4 and 5).
  std::string accumulated_count_input;
  /// The input whose elements are counted; empty: each request's first input.
  std::string source_input;
};

/// Client-side batching of one model's requests (ClientOptions::batching): concurrent requests
/// from any threads merge into one request along the batch (first) dimension, which is sent
/// once, and each gets its rows of the answer and its own callback. Triton's dynamic batcher
/// merges on the server; merging before the wire also saves the messages, headers and
/// per-request work of both sides. Requests merge when they agree on everything but their
/// inputs' bytes and batch sizes: model version, input names, datatypes and shapes past the
/// first dimension (any shapes, when ragged), requested outputs, parameters (none), headers
/// and compression; one that does not waits for the next batch. The merged request has the
/// earliest deadline of its parts. When it fails for a reason that one part may cause (an
/// invalid input, an error of the model), each part is sent again alone, so that each gets
/// its own verdict; UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED answer every part.
struct BatchingOptions {
  /// Most rows (requests, when ragged) in one merged request; 0: the model's max_batch_size
  /// from its configuration, asked once. Until that answer, and for a model without a batch
  /// dimension, requests go one by one.
  std::int64_t max_batch = 0;
  /// How long the first request of a batch waits for others; a full batch goes at once.
  std::chrono::microseconds max_delay{500};
  /// Merge requests whose shapes differ (see RaggedBatching); off by default.
  std::optional<RaggedBatching> ragged;
};

/// How Client::infer_chunked splits one request with a large batch.
struct ChunkOptions {
  /// Rows (first-dimension entries) per chunk; 0: chosen from target_chunk_bytes, and at most
  /// the model's max_batch_size when its configuration gives one.
  std::int64_t rows = 0;
  /// With rows == 0: the input bytes one chunk should carry. A few MiB keep a GPU busy while
  /// the next chunk travels (bench/chunked.sh: 0.5 to 5 MB chunks did best, loopback and 1 Gbit).
  std::size_t target_chunk_bytes = std::size_t{2} << 20;
  /// Chunks sent and not yet answered, at most.
  std::size_t max_in_flight = 4;
};

/// TLS of grpcs://, tcp+tls:// and tcp+zstd+tls:// endpoints (TLS 1.2 or later, OpenSSL). The
/// server's certificate is always verified, and so is the name it is for: a certificate that
/// does not verify fails the connection (UNAVAILABLE, naming the reason); nothing falls back to
/// plaintext. Each of the three PEM items comes from a file or from memory (the `_pem` text
/// wins when both are set).
struct TlsOptions {
  /// Certificate authorities the server's certificate must chain to. Neither set: the
  /// system's store (/etc/ssl/certs).
  std::string ca_file;
  std::string ca_pem;
  /// The client's certificate chain and its private key, for a server that requires mutual
  /// TLS. Set both or neither.
  std::string cert_file;
  std::string cert_pem;
  std::string key_file;
  std::string key_pem;
  /// The name the server's certificate must be for, and the one announced to it (SNI); empty:
  /// the endpoint's host (a name, or an IP address, which the certificate must then list).
  std::string server_name;
};

/// How a Client connects and behaves. Every field has a default that suits a grid job talking
/// to a Triton-like server; change only what you need.
struct ClientOptions {
  /// Endpoint URLs: "grpc://host:port". Requests go to the healthy endpoint with the fewest
  /// requests in flight; a failing one is ejected for a while (see `breaker`).
  std::vector<std::string> endpoints;

  /// Whether a host name stands for one endpoint or for each of its addresses.
  Resolution resolution;

  /// Compression of gRPC messages and of tcp+zstd:// tensors.
  CompressionOptions compression;
  /// Shared memory pool of grpc+shm:// endpoints.
  SharedMemoryOptions shared_memory;
  /// Certificates of grpcs://, tcp+tls:// and tcp+zstd+tls:// endpoints.
  TlsOptions tls;

  /// Retries of failed requests (by default: up to 3 attempts on UNAVAILABLE, within gRPC's
  /// retry throttling of 100 tokens per endpoint and 0.1 per success), server pushback heeded,
  /// early refusals moved elsewhere at once (see RetryPolicy and RetryBudget).
  RetryPolicy retry;
  /// Ejection of failing endpoints and their return.
  CircuitBreaker breaker;
  /// Which endpoint a request goes to: discovery of the models each one has, preferred
  /// endpoints, balancing, pinned models.
  Routing routing;
  /// Runs a request in-process when no endpoint can: all ejected, attempts spent on
  /// server-side failures, or the model unknown to the servers. Only models registered in it
  /// fall back; the result says where it ran (InferResult::executed_on()).
  std::shared_ptr<Fallback> fallback;
  /// With a fallback: a request still unanswered after this long also starts locally, and the
  /// first answer wins. When the local one does, the remote attempt is cancelled on the wire
  /// (gRPC: RST_STREAM CANCEL; http://: its connection is closed), as RequestHandle::cancel()
  /// does, so that the server may drop it; tcp:// has no cancel frame, and its answer is
  /// dropped when it comes. Zero disables it.
  std::chrono::milliseconds fallback_latency_budget{0};
  /// Receives sonic's log messages (endpoint ejections and returns, fallback transitions);
  /// nothing is printed without it.
  LogHook log;

  /// Time limit for a request that sets none itself; zero means no limit.
  std::chrono::milliseconds default_timeout{0};
  /// Most requests of this client under way at once (sent, retried, or waiting for their
  /// callbacks; blocking calls and futures count too). Past it a request fails at once with
  /// RESOURCE_EXHAUSTED naming this option (its callback still runs outside infer_async()),
  /// rather than waiting in a queue: a job that sends faster than it is answered hears so on
  /// its first request too many, instead of burying itself under requests bound to miss their
  /// deadlines. Zero (the default): no limit, since the right one depends on the job (its
  /// requests' size, its memory, its rate times its deadlines); a job that means to hold at
  /// most N requests sets N.
  std::size_t max_in_flight = 0;
  /// Time limit for control calls (metadata, health, statistics).
  std::chrono::milliseconds control_timeout{10'000};
  /// Time to establish a connection before requests waiting on it fail with UNAVAILABLE.
  std::chrono::milliseconds connect_timeout{3'000};
  /// After a failed connection attempt the next one waits this long, doubling (with ±20 %
  /// jitter) after each consecutive failure up to reconnect_backoff_max; a success resets it.
  /// Meanwhile requests for that endpoint fail at once with UNAVAILABLE when they can go to
  /// another endpoint or the fallback, and a dead server is not hammered; a client with one
  /// endpoint and no fallback waits for the next attempt instead (bounded by each deadline).
  std::chrono::milliseconds reconnect_backoff{100};
  std::chrono::milliseconds reconnect_backoff_max{5'000};
  /// Interval of HTTP/2 PINGs while calls wait for answers, to notice a peer that vanished
  /// without closing the connection; zero disables keepalive. Pings are never sent on an idle
  /// connection. gRPC servers (Triton included) by default refuse more than two pings in five
  /// minutes on a connection where they send nothing: keep this at a minute or more for them.
  std::chrono::milliseconds keepalive_interval{60'000};
  /// A PING unanswered for this long declares the connection dead (requests: UNAVAILABLE).
  std::chrono::milliseconds keepalive_timeout{10'000};

  /// Largest message accepted or sent, in bytes (gRPC's default is 4 MiB; Triton's clients,
  /// like sonic, allow 2 GiB - 1). Larger responses fail with RESOURCE_EXHAUSTED.
  std::size_t max_message_bytes = 0x7fffffff;
  /// HTTP/2 receive window per stream: how much a server may send before sonic acknowledges.
  /// Large windows let big tensors stream at full speed on high-latency links.
  std::uint32_t stream_window_bytes = 16u << 20;
  /// HTTP/2 receive window for the whole connection, shared by all streams.
  std::uint32_t connection_window_bytes = 256u << 20;
  /// http:// and https:// endpoints: keep-alive connections per endpoint. HTTP/1.1 carries
  /// one request at a time on a connection, so this many requests are in flight at once;
  /// more wait, in order, for a connection to come free. Connections open as requests need
  /// them and stay open for the next ones.
  std::size_t http_connections = 8;

  /// Share connections with the other clients of this process: clients of the same endpoint
  /// URL (and the same connection settings: timeouts, keepalive, windows) use one connection
  /// to it, as gRPC channels do, instead of one each. Requests of many clients multiplex over
  /// it; destroying a client cancels only its own requests. Off: this client's own connections.
  bool share_connections = true;
  /// A blocking infer() on a grpc:// or tcp:// endpoint runs on a connection of the calling
  /// thread's own, which that thread drives while it waits: it writes the request, waits for
  /// the socket and reads the answer itself, as gRPC's synchronous stub does, instead of
  /// handing the request to a network thread and sleeping until that thread hands the answer
  /// back (two thread wake-ups, half a small request's client CPU). Each thread that
  /// makes blocking calls then holds one more connection per endpoint and client, open until
  /// the client or the thread ends. Off: blocking calls share the client's connections.
  bool drive_blocking_calls = true;
  /// Network threads of the process: every client's connections are spread over them (each
  /// connection stays on one). Threads start as connections need them; the pool grows to the
  /// largest number any client of the process asked for. Zero: 2.
  std::size_t network_threads = 0;

  /// Client-side batching, by model name: opt-in, models not named here go one by one.
  std::map<std::string, BatchingOptions> batching;

  /// Check inputs against the model's metadata (fetched once per model and cached) before
  /// sending, so that mistakes fail at once with INVALID_ARGUMENT instead of on the server.
  bool validate_inputs = true;
  /// Metadata headers sent with every call (lower-case names).
  std::vector<std::pair<std::string, std::string>> headers;
  /// A bearer token for every call, sent as "authorization: Bearer TOKEN" (gRPC metadata, as
  /// token-checking ingresses and `sonic-server --auth-token-file` expect). Asked before each
  /// call and stream, on the thread that starts it: it must be quick and thread-safe, as
  /// sonic::TokenFile (sonic/credentials.hpp) is. An error, or a token with bytes other than
  /// visible ASCII, fails the call with that error (UNAUTHENTICATED) before anything is sent.
  /// Unset: no token.
  std::function<Result<std::string>()> bearer_token;
  /// Where completion callbacks run (see CallbackThread).
  CallbackThread callbacks = CallbackThread::Network;
  /// Threads that run the callbacks that do not run on a network thread, shared by every
  /// client of the process: the pool starts with the first callback that needs it and grows to
  /// the largest number any client asked for. A client that only uses infer() and
  /// infer_future() starts none.
  std::size_t callback_threads = 1;
};

}  // namespace sonic
