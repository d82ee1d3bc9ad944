// An HTTP request's compressed body, inflated on the executor's pool in slices. Inflating costs
// the server CPU its sender does not pay for (20 bodies of 63 KiB that inflated to 64 MiB each
// kept the pool busy for seconds, and a well-behaved client's calls missed their deadline). So
// a body inflates at most kInflateSliceBytes at a time, after which the rest of its work goes
// to the back of the pool's queue (CpuExecutor::run_async runs work first in, first out):
// bodies of many connections take turns with each other and with the requests queued among
// them, and a request waits for one slice of each body ahead of it, not for whole bombs. An
// HTTP connection reads one request at a time, so each connection has at most one body in
// the queue: a share of the pool per connection. The bound (protocol::inflate_bound) stops a
// bomb as soon as its inflated bytes pass it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "http_server.hpp"
#include "sonic/compression.hpp"
#include "sonic/error.hpp"
#include "sonic/executor.hpp"

namespace sonic::server {

/// What a body inflates at most before the rest of its work waits behind the pool's queue:
/// about a millisecond of zlib.
inline constexpr std::size_t kInflateSliceBytes = std::size_t{1} << 20;

/// Inflates `body` (`encoding`: gzip or deflate) on `executor`'s pool, a slice at a time, into
/// at most protocol::inflate_bound(body.size, ratio, max_bytes) bytes (the error past it is
/// protocol::inflated_past_bound's). `done` runs exactly once, on a pool thread, never inside
/// this call, with the inflated bytes (a buffer of the bound's size, its pages touched only as
/// far as they were written) or the error (INTERNAL for bytes that are not one whole stream).
void inflate_paced(std::shared_ptr<CpuExecutor> executor, HttpBody body, Compression encoding,
                   std::size_t ratio, std::size_t max_bytes,
                   std::function<void(Result<HttpBody>)> done);

}  // namespace sonic::server
