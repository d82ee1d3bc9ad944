// The names both halves of every transport agree on: tensor and response parameters with a
// meaning, and the machine-readable reasons sonic's servers attach to errors.
#pragma once

#include <string_view>

namespace sonic::protocol {

/// Tensor parameters of Triton's shared memory extension: the region that holds the bytes, their
/// size, and their offset in the region (default 0).
inline constexpr const char* kSharedMemoryRegion = "shared_memory_region";
inline constexpr const char* kSharedMemoryByteSize = "shared_memory_byte_size";
inline constexpr const char* kSharedMemoryOffset = "shared_memory_offset";

/// Response parameters in which sonic's servers report their queue and compute time of the
/// request (nanoseconds); the client's decoder moves them into InferResult::timing().
inline constexpr const char* kServerQueueNs = "sonic_server_queue_ns";
inline constexpr const char* kServerComputeNs = "sonic_server_compute_ns";

/// Triton's response parameter on ModelStreamInfer: whether this is the last response to its
/// request (bool; a decoupled model's responses say false until the last).
inline constexpr const char* kFinalResponse = "triton_final_response";
/// Triton's request parameter (bool): a decoupled model's request ends with an empty response
/// whose kFinalResponse is true, so that the client learns where its responses end.
inline constexpr const char* kEnableEmptyFinalResponse = "triton_enable_empty_final_response";

/// Request parameter (int64, microseconds) in which sonic's HTTP and TCP clients send the time
/// left before their deadline, as gRPC sends it in grpc-timeout: a sonic server gives up on the
/// request once that much time has passed since it arrived (see sonic::Caller). Triton passes a
/// parameter it does not know to the model, which ignores it; its own `timeout` parameter is
/// something else (a queue policy's timeout, InferRequest::server_timeout()).
inline constexpr const char* kClientTimeoutParameter = "sonic_client_timeout_us";

/// Error reasons (Error::reason(), google.rpc.ErrorInfo.reason in domain "sonic"), for errors a
/// client recovers from by itself.
namespace reason {
/// RepositoryIndex's reason for a model taken out of service on purpose (Triton's word), rather
/// than one that failed: a server whose models are READY or unloaded is ready.
inline constexpr std::string_view kUnloaded = "unloaded";
/// A tensor names a shared memory region the server does not know (it restarted, or the
/// registration went away with its connection): register it again.
inline constexpr std::string_view kShmRegionNotFound = "SHM_REGION_NOT_FOUND";
/// An output is larger than the shared memory space the request reserved for it.
inline constexpr std::string_view kShmOutputTooSmall = "SHM_OUTPUT_TOO_SMALL";
/// The server refused the request at once (UNAVAILABLE) because the wait ahead of it in the
/// model's queue already exceeds the time left before its deadline: it would have run for a
/// caller no longer waiting. The server is healthy, only busy: another endpoint, or the
/// client's fallback, may still answer in time.
inline constexpr std::string_view kWouldMissDeadline = "WOULD_MISS_DEADLINE";
}  // namespace reason

/// gRPC's server pushback (the retry design, gRFC A6): a trailer whose value, a decimal count of
/// milliseconds, is how long a client waits before it tries that server again; a value that
/// is not a non-negative number asks it not to retry at all.
inline constexpr std::string_view kRetryPushbackHeader = "grpc-retry-pushback-ms";

}  // namespace sonic::protocol
