// The metrics port (Triton's 8002): `GET /metrics` over HTTP/1.1 answers the Prometheus page of
// metrics_text.hpp. Nothing else is served, and no request may carry a body; a hostile or
// broken client is cut off with a bounded cost (http_server.hpp, docs/limits.md).
#pragma once

#include <memory>

#include "http_server.hpp"
#include "metrics_text.hpp"

namespace sonic::server {

/// The metrics port's service: the page, rendered from the executor's statistics and the
/// host's counters at each scrape. A scraper's request is a few hundred bytes; Prometheus keeps
/// one connection per target, and a few more allow for curl and dashboards.
HttpService metrics_service(std::shared_ptr<ServerContext> context);

}  // namespace sonic::server
