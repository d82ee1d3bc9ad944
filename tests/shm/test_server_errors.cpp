// How the grpc+shm:// client reads a server's shared memory errors: by machine-readable reason
// when the server gives one (sonic's do), by its words only when it gives none (Triton).
#include "server_errors.hpp"

#include <doctest/doctest.h>

#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include "protocol/names.hpp"
#include "shm_fixture.hpp"

using namespace sonic;
using namespace sonic::shm;

namespace {
const std::string kLost(protocol::reason::kShmRegionNotFound);
const std::string kSmall(protocol::reason::kShmOutputTooSmall);
}  // namespace

TEST_CASE("a reason decides, whatever the words say") {
  CHECK(lost_registration(Error(StatusCode::InvalidArgument, "region gone", kLost)));
  CHECK(lost_registration(Error(StatusCode::FailedPrecondition, "", kLost)));
  CHECK(output_space_too_small(Error(StatusCode::ResourceExhausted, "too big", kSmall)));
  // Words that would match, with another reason: the reason wins.
  Error misleading(StatusCode::InvalidArgument,
                   "unable to find shared memory region 'x'; should be at least 64 bytes",
                   "QUOTA_EXCEEDED");
  CHECK_FALSE(lost_registration(misleading));
  CHECK_FALSE(output_space_too_small(misleading));
  CHECK_FALSE(lost_registration(Error(StatusCode::InvalidArgument, "x", kSmall)));
}

TEST_CASE("without a reason, Triton's words and codes are understood") {
  // Triton's shared memory manager: an unknown region after a restart...
  CHECK(lost_registration(
      Error(StatusCode::NotFound, "Unable to find shared memory region: 'input_region'")));
  CHECK(lost_registration(
      Error(StatusCode::InvalidArgument, "Unable to find shared memory region 'input_region'")));
  // ...and an output larger than its region.
  CHECK(output_space_too_small(Error(StatusCode::Internal,
                                     "shared memory size specified with the request for output "
                                     "'OUTPUT0' should be at least 64 bytes to hold the results")));
  // Not these: other codes, other words.
  CHECK_FALSE(
      lost_registration(Error(StatusCode::Unavailable, "unable to find shared memory region")));
  CHECK_FALSE(lost_registration(Error(StatusCode::NotFound, "unknown model 'm'")));
  CHECK_FALSE(output_space_too_small(Error(StatusCode::Unavailable, "should be at least")));
}

TEST_CASE(
    "sonic-server gives Triton's code and words, and the reason, for a region it does not "
    "know") {
  test::ShmServer server;
  Client client(server.grpc_url());
  std::vector<float> unused(4);
  Parameters where;
  where[protocol::kSharedMemoryRegion] = std::string("never-registered");
  where[protocol::kSharedMemoryByteSize] = std::int64_t{16};
  try {
    (void)client.infer(InferRequest(test::identity_name(DataType::Fp32))
                           .input("INPUT0", Tensor::descriptor(DataType::Fp32, {1, 4}), where));
    FAIL("must throw");
  } catch (const Error& e) {
    CHECK(e.code() == StatusCode::NotFound);
    CHECK(e.message().rfind("Unable to find shared memory region: 'never-registered'", 0) == 0);
    CHECK(e.reason() == kLost);
    CHECK(lost_registration(e));
  }
}
