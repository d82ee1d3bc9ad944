// sonic C API — sonic_client_options as the C++ client's ClientOptions.
#include "client_options.hpp"

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "c_values.hpp"
#include "sonic/credentials.hpp"
#include "sonic/error.hpp"
#include "sonic/repository/repository.hpp"

namespace sonic::c_api {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(StatusCode::InvalidArgument, why); }

std::chrono::milliseconds milliseconds_of(double seconds, const char* field) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration_of(seconds, field));
}

/// The compression a C caller named; nothing for a name sonic does not know.
std::optional<Compression> compression_of(const char* name) {
  if (!name || std::strcmp(name, "none") == 0) return Compression::None;
  if (std::strcmp(name, "gzip") == 0) return Compression::Gzip;
  if (std::strcmp(name, "deflate") == 0) return Compression::Deflate;
  return std::nullopt;
}

Balancing balancing_of(const sonic_balancing& value) {
  switch (number_of(value)) {
    case SONIC_LEAST_OUTSTANDING: return Balancing::LeastOutstanding;
    case SONIC_POWER_OF_TWO_CHOICES: return Balancing::PowerOfTwoChoices;
    default:
      refuse("balancing must be SONIC_LEAST_OUTSTANDING or SONIC_POWER_OF_TWO_CHOICES, not " +
             std::to_string(number_of(value)));
  }
}

/// models[i] into the routing and batching of `config`.
void add_model(const sonic_model_options& given, ClientOptions& config) {
  if (!given.model || !*given.model) refuse("models: an entry has no model name");
  const std::string model = given.model;
  const std::string field = "models['" + model + "'] ";
  if (config.routing.preferred.count(model) || config.routing.pins.count(model) ||
      config.batching.count(model)) {
    refuse(field + "is given twice");
  }
  if (given.preferred_count > 0) {
    if (!given.preferred_urls) refuse(field + "preferred_urls is NULL");
    auto& urls = config.routing.preferred[model];
    for (std::size_t i = 0; i < given.preferred_count; ++i) {
      if (!given.preferred_urls[i]) refuse(field + "preferred_urls has a NULL URL");
      urls.emplace_back(given.preferred_urls[i]);
    }
  }
  if (given.pin_version || given.pin_config_checksum) {
    ModelPin& pin = config.routing.pins[model];
    if (given.pin_version) pin.version = given.pin_version;
    if (given.pin_config_checksum) pin.config_checksum = given.pin_config_checksum;
  }
  if (given.batching == 0) return;
  if (given.max_batch < 0) refuse(field + "max_batch must not be negative");
  BatchingOptions& batching = config.batching[model];
  batching.max_batch = given.max_batch;
  batching.max_delay = duration_of(given.max_delay_seconds, field + "max_delay_seconds");
  if (given.ragged_count_input) {
    RaggedBatching& ragged = batching.ragged.emplace();
    ragged.accumulated_count_input = given.ragged_count_input;
    if (given.ragged_source_input) ragged.source_input = given.ragged_source_input;
  } else if (given.ragged_source_input) {
    refuse(field + "ragged_source_input needs ragged_count_input");
  }
}

}  // namespace

void init_model_options(sonic_model_options& options) {
  const BatchingOptions defaults;
  options.model = nullptr;
  options.preferred_urls = nullptr;
  options.preferred_count = 0;
  options.pin_version = nullptr;
  options.pin_config_checksum = nullptr;
  options.batching = 0;
  options.max_batch = defaults.max_batch;
  options.max_delay_seconds = std::chrono::duration<double>(defaults.max_delay).count();
  options.ragged_count_input = nullptr;
  options.ragged_source_input = nullptr;
}

ClientOptions client_options_of(const char* const* urls, std::size_t url_count,
                                const sonic_client_options& given) {
  if (!urls || url_count == 0) refuse("a client needs at least one URL");
  ClientOptions config;
  for (std::size_t i = 0; i < url_count; ++i) {
    if (!urls[i]) refuse("a URL is NULL");
    config.endpoints.emplace_back(urls[i]);
  }
  config.default_timeout = milliseconds_of(given.timeout_seconds, "timeout_seconds");
  config.connect_timeout =
      milliseconds_of(given.connect_timeout_seconds, "connect_timeout_seconds");
  config.retry.per_attempt_timeout =
      milliseconds_of(given.per_attempt_timeout_seconds, "per_attempt_timeout_seconds");
  if (given.max_attempts < 1) refuse("max_attempts must be at least 1");
  config.retry.max_attempts = given.max_attempts;
  if (given.eject_after < 1) refuse("eject_after must be at least 1");
  config.breaker.failures_to_eject = given.eject_after;
  auto compression = compression_of(given.compression);
  if (!compression) {
    refuse(std::string("compression must be NULL, \"none\", \"gzip\" or \"deflate\", not \"") +
           given.compression + "\"");
  }
  config.compression.grpc = *compression;
  config.validate_inputs = given.validate_inputs != 0;
  config.max_in_flight = given.max_in_flight;

  config.routing.balancing = balancing_of(given.balancing);
  config.routing.discovery_interval =
      milliseconds_of(given.discovery_interval_seconds, "discovery_interval_seconds");
  if (given.model_count > 0 && !given.models) refuse("models is NULL");
  for (std::size_t i = 0; i < given.model_count; ++i) add_model(given.models[i], config);

  if (given.fallback_repository) {
    config.fallback = repository::executor_from_repository(
        {given.fallback_repository}, given.fallback_threads);  // 0: the job's cores
  }
  if (given.token_file) config.bearer_token = TokenFile(given.token_file);
  if (given.tls_ca_file) config.tls.ca_file = given.tls_ca_file;
  if (given.tls_cert_file) config.tls.cert_file = given.tls_cert_file;
  if (given.tls_key_file) config.tls.key_file = given.tls_key_file;
  if (given.tls_server_name) config.tls.server_name = given.tls_server_name;
  if (given.tls_ca_pem) config.tls.ca_pem = given.tls_ca_pem;
  if (given.tls_cert_pem) config.tls.cert_pem = given.tls_cert_pem;
  if (given.tls_key_pem) config.tls.key_pem = given.tls_key_pem;
  return config;
}

}  // namespace sonic::c_api
