#include "health_service.hpp"

#include "control_service.hpp"
#include "protocol/wire.hpp"

namespace sonic::server {

namespace {

namespace wire = protocol::wire;

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class ServingStatus : std::uint64_t { kServing = 1, kNotServing = 2 };

// Whether `bytes` is a HealthCheckRequest: its one field, `service`, a string.
bool is_health_check_request(std::string_view bytes) {
  wire::Reader reader(bytes);
  while (!reader.done()) {
    std::uint32_t field;
    wire::WireType type;
    if (!reader.tag(field, type)) return false;
    std::string_view ignored;
    if (field == 1 ? (type != wire::WireType::Len || !reader.bytes(ignored)) : !reader.skip(type)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::string> answer_health_check(const CpuExecutor& executor, bool strict_readiness,
                                        std::string_view request) {
  if (!is_health_check_request(request)) {
    return Error(StatusCode::InvalidArgument,
                 "the message is not a grpc.health.v1.HealthCheckRequest");
  }
  const auto status = server_ready(executor, strict_readiness) ? ServingStatus::kServing
                                                               : ServingStatus::kNotServing;
  std::string response;
  wire::put_varint_field(response, 1, static_cast<std::uint64_t>(status));
  return response;
}

}  // namespace sonic::server
