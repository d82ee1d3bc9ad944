// Why the endpoints a request tried were unavailable: when every attempt fails, the error names
// each of them, not only the last.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "client/model_ref.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::detail {

/// One request's record; not thread-safe (its attempt chain is sequential).
class SONIC_EXPORT UnavailableEndpoints {
 public:
  /// Endpoint `slot` answered UNAVAILABLE: its latest word is kept, in the order first seen.
  void note(std::size_t slot, const Error& error);

  /// `error`, or when it is UNAVAILABLE and more than one endpoint was, one naming each with
  /// its URL (`url_of(slot)`), where the transport's message does not already.
  Error describe(Error error, const std::function<std::string(std::size_t)>& url_of) const;

 private:
  std::vector<std::pair<std::size_t, std::string>> entries_;  // (slot, message)
};

/// Why no endpoint may take a request for `model` now: `why` as EndpointPool::why_unservable
/// says it, or, when that is empty, because all `active` endpoints are ejected.
SONIC_EXPORT Error no_endpoint_error(const ModelRef& model, const std::string& why,
                                     std::size_t active);

}  // namespace sonic::detail
