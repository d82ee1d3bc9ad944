#include "client/unavailable_endpoints.hpp"

namespace sonic::detail {

void UnavailableEndpoints::note(std::size_t slot, const Error& error) {
  for (auto& [seen, message] : entries_) {
    if (seen == slot) {
      message = error.message();
      return;
    }
  }
  entries_.emplace_back(slot, error.message());
}

Error UnavailableEndpoints::describe(Error error,
                                     const std::function<std::string(std::size_t)>& url_of) const {
  if (error.code() != StatusCode::Unavailable || entries_.size() < 2) return error;
  std::string message;
  bool listed = false;
  for (const auto& entry : entries_) listed = listed || entry.second == error.message();
  if (!listed) message = error.message() + "; ";  // "all ejected", say
  message += "none of the " + std::to_string(entries_.size()) + " endpoints tried answered:";
  for (const auto& [slot, why] : entries_) {
    const std::string url = url_of(slot);
    message += ' ';
    // Transports name the endpoint in their messages; add it where one did not.
    if (!url.empty() && why.find(url) == std::string::npos) message += url + ": ";
    message += why + ';';
  }
  message.pop_back();
  return Error(error.code(), std::move(message), error.reason());
}

Error no_endpoint_error(const ModelRef& model, const std::string& why, std::size_t active) {
  if (why.empty()) {
    return Error(StatusCode::Unavailable, "no endpoint available: all " + std::to_string(active) +
                                              " are ejected after failures");
  }
  return Error(StatusCode::Unavailable,
               "no endpoint may serve model '" + model.name + "' now: " + why);
}

}  // namespace sonic::detail
