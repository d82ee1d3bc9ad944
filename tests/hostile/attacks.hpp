// The attacks of a hostile or careless local client on sonic-server, one function each, shared
// by the tests of each finding and by the soak that runs them together. Each is bounded in
// time and bytes; each returns what it saw.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "raw_socket.hpp"

namespace sonic::test::attack {

using std::chrono::milliseconds;

/// A ModelInferRequest for `model` (INPUT0, FP32 [1, floats]) without its raw contents, which
/// follow it.
std::string infer_envelope(const std::string& model, std::size_t floats);
/// A ModelInferRequest for identity_fp32 with `floats` elements sent as raw contents.
std::string identity_request(std::size_t floats);

/// Opens an HTTP/2 connection as a gRPC client would: preface, SETTINGS (a stream window of
/// 2^31-1, so that the server may send as much as it likes) and a connection window update.
RawSocket h2_connect(int port, int receive_buffer = 0);

/// What a flood achieved.
struct Flood {
  std::size_t sent = 0;           ///< bytes the server took
  bool closed_by_server = false;  ///< the server ended the connection
};

/// gRPC ModelInfer calls of `request_floats` elements each, `total_bytes` in all, on one
/// connection whose owner never reads the answers (closed_by_server is not looked at).
Flood unread_answers(int port, std::size_t request_floats, std::size_t total_bytes);
/// One ModelStreamInfer call carrying requests of `request_floats` elements each,
/// `total_bytes` in all, whose owner never reads the answers nor ends its side.
Flood unread_stream_answers(int port, std::size_t request_floats, std::size_t total_bytes);
/// One ModelStreamInfer call carrying requests of `request_floats` elements each, `total_bytes`
/// in all, from a client that obeys flow control (it reads the server's WINDOW_UPDATEs and
/// sends only what they allow) but grants no window for the answers (SETTINGS_INITIAL_WINDOW_SIZE
/// 0), so that the server can write none of them. closed_by_server: the server ended the stream
/// (trailers or RST_STREAM) or the connection.
Flood windowless_stream(int port, std::size_t request_floats, std::size_t total_bytes);
/// PING frames, `total_bytes` of them, never reading the acknowledgements.
Flood ping_flood(int port, std::size_t total_bytes);
/// SETTINGS frames (one entry each), never reading the acknowledgements.
Flood settings_flood(int port, std::size_t total_bytes);
/// Calls whose message prefix declares `declared` bytes, followed by 8 of them, then silence:
/// `streams` of them on one connection, which is returned open.
RawSocket declared_and_stalled(int port, int streams, std::uint32_t declared);
/// One ModelInfer message of `total_bytes` made of empty raw_input_contents fields.
Flood empty_raw_fields(int port, std::size_t total_bytes);
/// Connections that send half the HTTP/2 preface and nothing more.
std::vector<RawSocket> half_prefaces(int port, int connections);
/// An HPACK bomb: one 4 KiB header enters the dynamic table, then header blocks refer to it
/// `references` times each, at about `bytes_per_second`, for `duration`.
Flood hpack_bomb(int port, milliseconds duration, std::size_t bytes_per_second,
                 int references = 256);

/// sonic TCP framing: ping frames, never reading the pongs.
Flood tcp_ping_flood(int port, std::size_t total_bytes);
/// A request frame whose single raw tensor record declares `declared` bytes, followed by 8 of
/// them, then silence; the connection is returned open.
RawSocket tcp_declared_and_stalled(int port, std::uint64_t declared);

/// An HTTP/REST inference request whose head declares a `declared`-byte body, of which 8 bytes
/// are sent; the connection is held open, sending nothing more.
RawSocket http_declared_and_stalled(int port, std::uint64_t declared);

/// HTTP/REST requests on one connection, `requests` of them in one write (pipelined), each a
/// JSON inference of `simple`, none of the answers read: returns the bytes sent.
std::size_t http_unread_pipeline(int port, int requests);
/// A request frame with one zstd record that says it decodes to `raw` bytes: real zstd data of
/// `raw` zero bytes when `real`, else 16 bytes of nonsense. Returns the server's answer frame
/// (empty when none came within 5 s).
std::string tcp_zstd_tensor(int port, std::uint64_t raw, bool real);
/// Compresses the zeros tcp_zstd_tensor(port, raw, true) sends, once per size; later calls
/// reuse them.
void prepare_zstd_tensor(std::uint64_t raw);

/// An HTTP/REST request to `model` (identity_fp32's input) of `floats` FP32 elements in binary,
/// its body gzipped:
/// zeros, one byte in every `spacing` random (0: none), which sets how far it inflates past
/// its size (about 1000 times for zeros, 100 for a spacing of 1024). Made once per shape.
std::string http_gzip_bomb(const std::string& model, std::size_t floats, std::size_t spacing);
/// One gRPC ModelInfer call to `model` whose message is gzipped (grpc-encoding gzip): an INPUT0
/// of `floats` FP32 elements as raw contents, shaped as http_gzip_bomb's, sent as flow control
/// allows. closed_by_server: the call was answered (or reset) within 10 s of its end.
Flood grpc_gzip_bomb(int port, const std::string& model, std::size_t floats, std::size_t spacing);
/// Makes the message grpc_gzip_bomb sends with these arguments, once.
void prepare_grpc_gzip_bomb(const std::string& model, std::size_t floats, std::size_t spacing);
/// Sends `request` on a fresh connection to `port`: the answer's status line and the start of
/// its body ("HTTP/1.1 400 Bad Request {...}"), empty when none came within 10 s.
std::string http_bomb_answer(int port, const std::string& request);

/// The status code of a TCP error frame, or -1 when `frame` is not one.
int tcp_error_code(const std::string& frame);

}  // namespace sonic::test::attack
