// The typed control calls (sonic/control.hpp) as the service's messages: each request encoded
// as its method's protobuf request, each response decoded into its typed answer. Transports
// whose wire carries those messages (gRPC, sonic's TCP frames) answer control_async() with
// them; the HTTP transport maps the same messages to REST.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "sonic/detail/export.hpp"
#include "sonic/transport.hpp"

namespace sonic::protocol {

/// The serialized protobuf request of `request`'s method.
SONIC_EXPORT std::string encode_control_request(const ControlRequest& request);

/// The answer of `request`'s type from its method's serialized response: INTERNAL for one that
/// does not parse (the server sent it).
SONIC_EXPORT Result<ControlAnswer> decode_control_answer(const ControlRequest& request,
                                                         std::string_view response);

/// One unary call of the service: `request` is the method's serialized request; `done` gets the
/// serialized response or the call's error, under Transport::control_async()'s contract.
using MessageCall =
    std::function<void(ControlMethod method, std::string request, Callback<std::string> done)>;

/// Transport::control_async() over `call`: encodes, calls, decodes.
SONIC_EXPORT void control_by_messages(ControlRequest request, const MessageCall& call,
                                      Callback<ControlAnswer> done);

/// The same for a transport whose one unary call of the service is its member `unary`.
template <typename T>
void control_by_messages(T& transport,
                         void (T::*unary)(ControlMethod, std::string, Deadline,
                                          Callback<std::string>),
                         ControlRequest request, Deadline deadline, Callback<ControlAnswer> done) {
  control_by_messages(
      std::move(request),
      [&transport, unary, deadline](ControlMethod method, std::string message,
                                    Callback<std::string> answer) {
        (transport.*unary)(method, std::move(message), deadline, std::move(answer));
      },
      std::move(done));
}

}  // namespace sonic::protocol
