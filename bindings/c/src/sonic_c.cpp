// sonic C API — sonic.h over the C++ client. Every entry point catches what C++ may throw and
// turns it into a code and a thread-local message.
#include "sonic.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "c_values.hpp"
#include "client_options.hpp"
#include "sonic/routing.hpp"
#include "sonic/sonic.hpp"

struct sonic_client {
  sonic::Client client;
};

struct sonic_request {
  sonic::InferRequest request;
};

struct sonic_result {
  sonic::Result<sonic::InferResult> outcome = sonic::Error(sonic::StatusCode::Unknown, "");
  std::string error;
};

namespace {

using sonic::c_api::duration_of;
using sonic::c_api::number_of;

// The C enums are the C++ ones, value for value.
static_assert(SONIC_UNAUTHENTICATED == static_cast<int>(sonic::StatusCode::Unauthenticated));
static_assert(SONIC_BOOL == static_cast<int>(sonic::DataType::Bool) &&
              SONIC_FP16 == static_cast<int>(sonic::DataType::Fp16) &&
              SONIC_BF16 == static_cast<int>(sonic::DataType::Bf16) &&
              SONIC_FP64 == static_cast<int>(sonic::DataType::Fp64) &&
              SONIC_BYTES == static_cast<int>(sonic::DataType::Bytes));

thread_local std::string last_error;

sonic_code fail(sonic::StatusCode code, std::string message) {
  last_error = std::move(message);
  return static_cast<sonic_code>(code);
}

/// Runs `body` (which returns a sonic_code) with every C++ exception turned into a code.
template <typename Body>
sonic_code guarded(Body body) noexcept {
  try {
    return body();
  } catch (const sonic::Error& error) {
    return fail(error.code(), error.message());
  } catch (const std::bad_alloc&) {
    return fail(sonic::StatusCode::ResourceExhausted, "out of memory");
  } catch (const std::exception& error) {
    return fail(sonic::StatusCode::Internal, error.what());
  } catch (...) {
    return fail(sonic::StatusCode::Unknown, "an unknown C++ exception");
  }
}

sonic_code null_argument(const char* name) {
  return fail(sonic::StatusCode::InvalidArgument, std::string(name) + " is NULL");
}

/// `text` as a string the caller frees with sonic_string_free, in `copy`.
sonic_code copied_string(const std::string& text, char*& copy) {
  copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (!copy) return fail(sonic::StatusCode::ResourceExhausted, "out of memory");
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return SONIC_OK;
}

sonic_result* new_result(sonic::Result<sonic::InferResult> outcome) {
  auto* result = new sonic_result;
  if (!outcome) result->error = outcome.error().message();
  result->outcome = std::move(outcome);
  return result;
}

}  // namespace

extern "C" {

const char* sonic_last_error(void) { return last_error.c_str(); }

const char* sonic_code_name(sonic_code code) {
  return sonic::to_string(sonic::status_code_from_int(number_of(code)));
}

const char* sonic_version(void) { return sonic::kVersion; }

void sonic_client_options_init(sonic_client_options* options) {
  if (!options) return;
  const sonic::ClientOptions defaults;
  auto seconds = [](auto duration) { return std::chrono::duration<double>(duration).count(); };
  options->timeout_seconds = seconds(defaults.default_timeout);
  options->max_attempts = defaults.retry.max_attempts;
  options->fallback_repository = nullptr;
  options->fallback_threads = 1;
  options->token_file = nullptr;
  options->tls_ca_file = nullptr;
  options->tls_cert_file = nullptr;
  options->tls_key_file = nullptr;
  options->tls_server_name = nullptr;
  options->connect_timeout_seconds = seconds(defaults.connect_timeout);
  options->per_attempt_timeout_seconds = seconds(defaults.retry.per_attempt_timeout);
  options->eject_after = defaults.breaker.failures_to_eject;
  options->compression = nullptr;
  options->validate_inputs = defaults.validate_inputs ? 1 : 0;
  options->balancing = defaults.routing.balancing == sonic::Balancing::PowerOfTwoChoices
                           ? SONIC_POWER_OF_TWO_CHOICES
                           : SONIC_LEAST_OUTSTANDING;
  options->discovery_interval_seconds = seconds(defaults.routing.discovery_interval);
  options->models = nullptr;
  options->model_count = 0;
  options->tls_ca_pem = nullptr;
  options->tls_cert_pem = nullptr;
  options->tls_key_pem = nullptr;
  options->max_in_flight = defaults.max_in_flight;
}

void sonic_model_options_init(sonic_model_options* options) {
  if (options) sonic::c_api::init_model_options(*options);
}

sonic_code sonic_client_create(const char* const* urls, size_t url_count,
                               const sonic_client_options* options, sonic_client** client) {
  return guarded([&] {
    if (!client) return null_argument("client");
    *client = nullptr;
    sonic_client_options given;
    sonic_client_options_init(&given);
    if (options) given = *options;
    *client =
        new sonic_client{sonic::Client(sonic::c_api::client_options_of(urls, url_count, given))};
    return SONIC_OK;
  });
}

void sonic_client_destroy(sonic_client* client) { delete client; }

sonic_code sonic_client_server_ready(sonic_client* client, int* ready) {
  return guarded([&] {
    if (!client) return null_argument("client");
    if (!ready) return null_argument("ready");
    *ready = client->client.server_ready() ? 1 : 0;
    return SONIC_OK;
  });
}

sonic_code sonic_client_infer(sonic_client* client, const sonic_request* request,
                              sonic_result** result) {
  return guarded([&] {
    if (!client) return null_argument("client");
    if (!request) return null_argument("request");
    if (!result) return null_argument("result");
    *result = nullptr;
    sonic::InferResult outputs = client->client.infer(request->request);
    *result = new_result(std::move(outputs));
    return SONIC_OK;
  });
}

sonic_code sonic_client_infer_chunked(sonic_client* client, const sonic_request* request,
                                      int64_t rows, size_t max_in_flight, sonic_result** result) {
  return guarded([&] {
    if (!client) return null_argument("client");
    if (!request) return null_argument("request");
    if (!result) return null_argument("result");
    *result = nullptr;
    if (rows < 0) return fail(sonic::StatusCode::InvalidArgument, "rows must not be negative");
    sonic::ChunkOptions chunks;
    chunks.rows = rows;
    if (max_in_flight > 0) chunks.max_in_flight = max_in_flight;
    sonic::InferResult outputs = client->client.infer_chunked(request->request, chunks);
    *result = new_result(std::move(outputs));
    return SONIC_OK;
  });
}

sonic_code sonic_client_infer_async(sonic_client* client, const sonic_request* request,
                                    sonic_callback callback, void* user_data) {
  return guarded([&] {
    if (!client) return null_argument("client");
    if (!request) return null_argument("request");
    if (!callback) return null_argument("callback");
    client->client.infer_async(request->request,
                               [callback, user_data](sonic::Result<sonic::InferResult> outcome) {
                                 sonic_result* result = nullptr;
                                 try {
                                   result = new_result(std::move(outcome));
                                 } catch (...) {
                                   return;  // out of memory: nothing left to report it with
                                 }
                                 callback(result, user_data);
                               });
    return SONIC_OK;
  });
}

char* sonic_client_stats_json(sonic_client* client) {
  char* copy = nullptr;
  guarded([&] {
    if (!client) return null_argument("client");
    return copied_string(client->client.stats().to_json(), copy);
  });
  return copy;
}

char* sonic_client_model_config_checksum(sonic_client* client, const char* model,
                                         const char* version) {
  char* copy = nullptr;
  guarded([&] {
    if (!client) return null_argument("client");
    if (!model) return null_argument("model");
    std::string checksum =
        sonic::model_config_checksum(client->client.model_config(model, version ? version : ""));
    return copied_string(checksum, copy);
  });
  return copy;
}

void sonic_string_free(char* string) { std::free(string); }

sonic_request* sonic_request_create(const char* model, const char* version) {
  sonic_request* request = nullptr;
  guarded([&] {
    if (!model) return null_argument("model");
    request = new sonic_request{sonic::InferRequest(model, version ? version : "")};
    return SONIC_OK;
  });
  return request;
}

void sonic_request_destroy(sonic_request* request) { delete request; }

sonic_code sonic_request_add_input(sonic_request* request, const char* name,
                                   sonic_datatype datatype, const int64_t* shape, size_t rank,
                                   const void* data, size_t byte_size, sonic_ownership ownership) {
  return guarded([&] {
    if (!request) return null_argument("request");
    if (!name) return null_argument("name");
    if (!shape && rank > 0) return null_argument("shape");
    if (!data && byte_size > 0) return null_argument("data");
    const long long type_number = number_of(datatype);
    if (type_number < SONIC_BOOL || type_number > SONIC_BYTES) {
      return fail(sonic::StatusCode::InvalidArgument,
                  "input '" + std::string(name) + "': datatype " + std::to_string(type_number) +
                      " is not a sonic_datatype");
    }
    const long long copy = number_of(ownership);
    if (copy != SONIC_BORROW && copy != SONIC_COPY) {
      return fail(sonic::StatusCode::InvalidArgument,
                  "input '" + std::string(name) + "': ownership " + std::to_string(copy) +
                      " is neither SONIC_BORROW nor SONIC_COPY");
    }
    auto type = static_cast<sonic::DataType>(type_number);
    sonic::Shape dims(shape, shape + rank);
    sonic::Tensor tensor = copy == SONIC_COPY
                               ? sonic::Tensor::copy_bytes(type, dims, data, byte_size)
                               : sonic::Tensor::view_bytes(type, dims, data, byte_size);
    if (auto fits = tensor.check(); !fits) {
      return fail(fits.code(), "input '" + std::string(name) + "': " + fits.error().message());
    }
    request->request.input(name, std::move(tensor));
    return SONIC_OK;
  });
}

sonic_code sonic_request_add_output(sonic_request* request, const char* name) {
  return guarded([&] {
    if (!request) return null_argument("request");
    if (!name) return null_argument("name");
    request->request.output(name);
    return SONIC_OK;
  });
}

sonic_code sonic_request_set_timeout(sonic_request* request, double seconds) {
  return guarded([&] {
    if (!request) return null_argument("request");
    request->request.timeout(duration_of(seconds, "the timeout"));
    return SONIC_OK;
  });
}

sonic_code sonic_request_set_id(sonic_request* request, const char* id) {
  return guarded([&] {
    if (!request) return null_argument("request");
    if (!id) return null_argument("id");
    request->request.id(id);
    return SONIC_OK;
  });
}

sonic_code sonic_result_code(const sonic_result* result) {
  if (!result) return null_argument("result");
  return static_cast<sonic_code>(result->outcome.code());
}

const char* sonic_result_error(const sonic_result* result) {
  return result ? result->error.c_str() : "result is NULL";
}

size_t sonic_result_output_count(const sonic_result* result) {
  return result && result->outcome ? result->outcome->outputs().size() : 0;
}

const char* sonic_result_output_name(const sonic_result* result, size_t index) {
  if (index >= sonic_result_output_count(result)) return nullptr;
  return result->outcome->outputs()[index].name.c_str();
}

sonic_code sonic_result_output(const sonic_result* result, const char* name, sonic_tensor* tensor) {
  return guarded([&] {
    if (!result) return null_argument("result");
    if (!name) return null_argument("name");
    if (!tensor) return null_argument("tensor");
    if (!result->outcome) {
      return fail(result->outcome.code(), "the result is an error: " + result->error);
    }
    const sonic::Tensor& found = result->outcome->output(name);
    found.check().value();  // a caller reads byte_size bytes: they must be there
    tensor->datatype = static_cast<sonic_datatype>(found.dtype());
    tensor->shape = found.shape().data();
    tensor->rank = found.shape().size();
    tensor->data = found.data();
    tensor->byte_size = found.byte_size();
    return SONIC_OK;
  });
}

int sonic_result_executed_locally(const sonic_result* result) {
  return result && result->outcome && result->outcome->executed_on() == sonic::ExecutedOn::Local;
}

void sonic_result_destroy(sonic_result* result) { delete result; }

}  // extern "C"
