// net::PostBatch: work handed to network threads in a burst is held, then posted with one
// wake-up per io_context.
#include "net/post_batch.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace {

using sonic::net::PostBatch;

/// Runs the handlers `io` has ready, and says how many ran. (An io_context that ran out of work
/// stops: restarted first.)
std::size_t handlers_run(asio::io_context& io) {
  io.restart();
  return io.poll();
}

}  // namespace

TEST_CASE("without an open batch, net::post posts at once") {
  auto io = std::make_shared<asio::io_context>();
  int ran = 0;
  sonic::net::post(io, [&ran] { ++ran; });
  CHECK(handlers_run(*io) == 1);
  CHECK(ran == 1);
}

TEST_CASE("an open batch holds work until flushed, then posts it once per io_context") {
  auto first = std::make_shared<asio::io_context>();
  auto second = std::make_shared<asio::io_context>();
  std::vector<int> order;
  PostBatch batch;
  {
    PostBatch::Open open(batch);
    for (int i = 0; i < 3; ++i) sonic::net::post(first, [&order, i] { order.push_back(i); });
    sonic::net::post(second, [&order] { order.push_back(100); });
  }
  CHECK(batch.size() == 4);
  CHECK(handlers_run(*first) == 0);  // nothing reached the network thread yet
  sonic::net::post(first, [&order] { order.push_back(-1); });  // closed: posted at once
  CHECK(handlers_run(*first) == 1);
  CHECK(order == std::vector<int>{-1});

  batch.flush();
  CHECK(batch.empty());
  CHECK(handlers_run(*first) == 1);  // one handler, one wake-up, for the three
  CHECK(order == std::vector<int>{-1, 0, 1, 2});
  CHECK(handlers_run(*second) == 1);
  CHECK(order.back() == 100);
}

TEST_CASE("batches nest, and one destroyed unflushed posts what it holds") {
  auto io = std::make_shared<asio::io_context>();
  std::vector<int> order;
  PostBatch outer;
  PostBatch::Open open_outer(outer);
  {
    PostBatch inner;
    {
      PostBatch::Open open_inner(inner);
      sonic::net::post(io, [&order] { order.push_back(1); });
    }
    sonic::net::post(io, [&order] { order.push_back(2); });  // the outer batch again
    CHECK(inner.size() == 1);
    CHECK(outer.size() == 1);
  }  // inner goes: its work is posted
  CHECK(handlers_run(*io) == 1);
  CHECK(order == std::vector<int>{1});
  outer.flush();
  CHECK(handlers_run(*io) == 1);
  CHECK(order == std::vector<int>{1, 2});
  CHECK(PostBatch::current() == &outer);
}
