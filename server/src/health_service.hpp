// gRPC's standard health service, grpc.health.v1.Health, as Triton serves it beside the
// inference service: Kubernetes' gRPC probes and load balancers call its Check.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sonic/error.hpp"
#include "sonic/executor.hpp"

namespace sonic::server {

/// The HTTP/2 path of Check.
inline constexpr std::string_view kHealthCheckPath = "/grpc.health.v1.Health/Check";
/// The service's path prefix: its other method, Watch, is answered UNIMPLEMENTED.
inline constexpr std::string_view kHealthServicePrefix = "/grpc.health.v1.Health/";
/// The largest HealthCheckRequest read. It carries a service name, and it is read without the
/// bearer token: a caller without one must not make the server hold more.
inline constexpr std::size_t kMaxHealthCheckRequestBytes = 4096;

/// Answers a serialized HealthCheckRequest { string service = 1 } with a serialized
/// HealthCheckResponse { ServingStatus status = 1 }: SERVING (1) while the server is ready
/// (ServerReady's answer, strict readiness included), else NOT_SERVING (2). As Triton's
/// (server src/grpc/grpc_server.cc, RegisterHealthCheck), the service named in the request
/// does not change the answer. INVALID_ARGUMENT for bytes that are not a HealthCheckRequest.
Result<std::string> answer_health_check(const CpuExecutor& executor, bool strict_readiness,
                                        std::string_view request);

}  // namespace sonic::server
