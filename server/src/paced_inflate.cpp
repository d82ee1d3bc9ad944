#include "paced_inflate.hpp"

#include <algorithm>
#include <optional>

#include "protocol/compression.hpp"

namespace sonic::server {

namespace {

struct Inflating {
  Inflating(HttpBody in, Compression encoding, std::size_t most_ratio, std::size_t most_bytes)
      : body(std::move(in)),
        inflater(encoding),
        ratio(most_ratio),
        max_bytes(most_bytes),
        bound(protocol::inflate_bound(body.size, ratio, max_bytes)),
        next(reinterpret_cast<const std::uint8_t*>(body.bytes.get())),
        left(body.size) {}

  HttpBody body;
  protocol::Inflater inflater;
  std::size_t ratio, max_bytes, bound;
  const std::uint8_t* next;  // the compressed bytes not yet taken
  std::size_t left;
  // Uninitialised, as a body read from the socket is: its pages are touched as the stream
  // inflates into them, so that a bomb costs what it really inflates to (its bound is held in
  // the memory budget already), and nothing is copied as it grows.
  std::shared_ptr<char[]> out{new char[bound]};
  std::size_t produced = 0;
  std::function<void(Result<HttpBody>)> done;

  // Inflates one slice: the result when the body is done (or refused), else nothing.
  std::optional<Result<HttpBody>> slice() {
    std::size_t budget = kInflateSliceBytes;
    while (!inflater.finished() && budget > 0) {
      if (produced == bound) {
        return Result<HttpBody>(protocol::inflated_past_bound(body.size, ratio, max_bytes));
      }
      const std::size_t room = std::min(bound - produced, budget);
      auto n =
          inflater.inflate(next, left, reinterpret_cast<std::uint8_t*>(out.get() + produced), room);
      if (!n) return Result<HttpBody>(n.error());
      produced += *n;
      budget -= *n;
      if (*n == 0 && !inflater.finished()) {
        return Result<HttpBody>(
            Error(StatusCode::Internal, "invalid compressed message: it ends before its end"));
      }
    }
    if (!inflater.finished()) return std::nullopt;
    if (left != 0) {
      return Result<HttpBody>(
          Error(StatusCode::Internal, "invalid compressed message: bytes after its end"));
    }
    return Result<HttpBody>(HttpBody{std::move(out), produced});
  }
};

void run_slice(std::shared_ptr<CpuExecutor> executor, std::shared_ptr<Inflating> state) {
  CpuExecutor& pool = *executor;
  pool.run_async([executor = std::move(executor), state = std::move(state)]() mutable {
    auto result = state->slice();
    if (!result) return run_slice(std::move(executor), std::move(state));
    auto done = std::move(state->done);
    state.reset();  // the compressed bytes and the zlib state go before the request runs
    done(std::move(*result));
  });
}

}  // namespace

void inflate_paced(std::shared_ptr<CpuExecutor> executor, HttpBody body, Compression encoding,
                   std::size_t ratio, std::size_t max_bytes,
                   std::function<void(Result<HttpBody>)> done) {
  auto state = std::make_shared<Inflating>(std::move(body), encoding, ratio, max_bytes);
  state->done = std::move(done);
  run_slice(std::move(executor), std::move(state));
}

}  // namespace sonic::server
