#include "metrics_server.hpp"

#include "sonic/custom_metrics.hpp"

namespace sonic::server {

HttpService metrics_service(std::shared_ptr<ServerContext> context) {
  auto host = std::make_shared<HostUsageReader>();
  host->read();  // the first scrape's CPU share starts here, not at boot
  HttpService service;
  service.limits = HttpLimits{8 << 10, 0, 64};
  service.handle = [context = std::move(context), host](HttpRequest request, HttpRespond respond) {
    if (request.method != "GET" && request.method != "HEAD") {
      return respond(
          {405, "text/plain; charset=utf-8", "only GET and HEAD\n", "Allow: GET, HEAD\r\n"});
    }
    if (request.path != "/metrics") {
      return respond({404, "text/plain; charset=utf-8", "not found\n", {}});
    }
    // Scrapes come one at a time per connection; the reader's own lock orders several. The
    // models' own metrics (pb_utils.MetricFamily) follow the server's, on one page as in Triton.
    respond({200,
             "text/plain; version=0.0.4; charset=utf-8",
             render_metrics(context->executor->all_statistics(), host->read()) +
                 CustomMetricRegistry::global().render(),
             {}});
  };
  return service;
}

}  // namespace sonic::server
