#include "plugin.hpp"

namespace plugin {

std::unique_ptr<sonic::Client> make_client(const std::string& url, sonic::ClientOptions options) {
  return std::make_unique<sonic::Client>(url, std::move(options));
}

sonic::RequestHandle start(sonic::Client& client, sonic::InferRequest request,
                           std::function<void(sonic::StatusCode)> done) {
  return client.infer_async(
      std::move(request),
      [done = std::move(done)](sonic::Result<sonic::InferResult> r) { done(r.code()); });
}

}  // namespace plugin
