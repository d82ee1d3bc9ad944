/* sonic — the C API: sonic's client (transports, retries, endpoint ejection, CPU fallback) for
 * programs and frameworks written in C, Fortran (ISO_C_BINDING), Julia (ccall), Go (cgo) or
 * anything else that calls C. Link -lsonic_c (pkg-config sonic-c, CMake sonic::c).
 *
 * Ownership, in one place:
 *   - Every object a *_create function gives is the caller's, freed by its *_destroy (NULL is
 *     accepted and ignored). A result handed to a callback is the callback's to destroy.
 *   - Strings and tensors a result returns live as long as that result.
 *   - Strings passed in are copied before the call returns.
 *   - Input bytes added with SONIC_BORROW stay the caller's: keep them valid and unchanged
 *     until every inference that sends the request has completed (sonic_client_infer returned,
 *     the callback of sonic_client_infer_async ran). SONIC_COPY copies them at once.
 * Errors: functions return SONIC_OK (0) or a gRPC status code; sonic_last_error() then says
 * why, on the calling thread. No C++ exception crosses this interface.
 * Threads: a client may be used from any number of threads at once; a request or a result by
 * one thread at a time.
 */
#ifndef SONIC_H
#define SONIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SONIC_C_API __attribute__((visibility("default")))
#else
#define SONIC_C_API
#endif

/** Status codes: gRPC's, so that a server's code arrives unchanged. */
typedef enum sonic_code {
  SONIC_OK = 0,
  SONIC_CANCELLED = 1,
  SONIC_UNKNOWN = 2,
  SONIC_INVALID_ARGUMENT = 3,
  SONIC_DEADLINE_EXCEEDED = 4,
  SONIC_NOT_FOUND = 5,
  SONIC_ALREADY_EXISTS = 6,
  SONIC_PERMISSION_DENIED = 7,
  SONIC_RESOURCE_EXHAUSTED = 8,
  SONIC_FAILED_PRECONDITION = 9,
  SONIC_ABORTED = 10,
  SONIC_OUT_OF_RANGE = 11,
  SONIC_UNIMPLEMENTED = 12,
  SONIC_INTERNAL = 13,
  SONIC_UNAVAILABLE = 14,
  SONIC_DATA_LOSS = 15,
  SONIC_UNAUTHENTICATED = 16
} sonic_code;

/** Tensor element types (KServe v2). Elements are little-endian, rows major. */
typedef enum sonic_datatype {
  SONIC_BOOL = 0,
  SONIC_UINT8 = 1,
  SONIC_UINT16 = 2,
  SONIC_UINT32 = 3,
  SONIC_UINT64 = 4,
  SONIC_INT8 = 5,
  SONIC_INT16 = 6,
  SONIC_INT32 = 7,
  SONIC_INT64 = 8,
  SONIC_FP16 = 9,
  SONIC_BF16 = 10,
  SONIC_FP32 = 11,
  SONIC_FP64 = 12,
  SONIC_BYTES = 13 /**< each element: a 4-byte little-endian length, then that many bytes */
} sonic_datatype;

/** How a request chooses among the endpoints that may serve it. */
typedef enum sonic_balancing {
  SONIC_LEAST_OUTSTANDING = 0,   /**< the one with the fewest of this client's requests in
                                      flight (ties rotate): the default */
  SONIC_POWER_OF_TWO_CHOICES = 1 /**< two drawn at random, and of them the one that looks
                                      faster (requests in flight times recent latency) */
} sonic_balancing;

/** How sonic_request_add_input takes the bytes. */
typedef enum sonic_ownership {
  SONIC_BORROW = 0, /**< no copy: the caller keeps them valid until the inferences completed */
  SONIC_COPY = 1    /**< copied now */
} sonic_ownership;

typedef struct sonic_client sonic_client;
typedef struct sonic_request sonic_request;
typedef struct sonic_result sonic_result;

/** What a client does for one model (sonic_client_options.models); sonic_model_options_init
 * fills the defaults: no preferred endpoints, no pin, no batching. Grows at its end like
 * sonic_client_options. */
typedef struct sonic_model_options {
  const char* model;                 /**< the model's name */
  const char* const* preferred_urls; /**< endpoints, among the client's URLs, that take this
                                          model's requests; the others only while none of
                                          these is in rotation and has the model */
  size_t preferred_count;
  const char* pin_version;         /**< the version requests ask for when they name none; a
                                        request or an answer of another version fails with
                                        SONIC_FAILED_PRECONDITION; NULL: any */
  const char* pin_config_checksum; /**< an endpoint gets the model's requests only once it
                                        reports a configuration with this checksum
                                        (sonic_client_model_config_checksum); NULL: unchecked */
  int batching;                    /**< 1: concurrent requests for the model, from any threads,
                                        merge along their first dimension into one request,
                                        and each gets its rows back; 0 (the default): each is
                                        sent alone */
  int64_t max_batch;               /**< most rows in one merged request; 0 (the default): the
                                        model's max_batch_size, asked once */
  double max_delay_seconds;        /**< how long the first request of a batch waits for others
                                        (0.0005); a full batch goes at once */
  const char* ragged_count_input;  /**< ragged batching: requests of any shapes merge into 1-D
                                        inputs, and this INT32 input, shape [requests], says
                                        where each one's elements end (Triton's
                                        BATCH_ACCUMULATED_ELEMENT_COUNT); NULL: off */
  const char* ragged_source_input; /**< the input whose elements it counts; NULL: the first */
} sonic_model_options;

/** Client settings; sonic_client_options_init fills the defaults. Fields are added at the end
 * as sonic grows (before 1.0 without a new soname): compile against the header of the library
 * the program runs with. */
typedef struct sonic_client_options {
  double timeout_seconds;             /**< per request; 0 (the default): no limit */
  int max_attempts;                   /**< attempts per request, the first included (3) */
  const char* fallback_repository;    /**< a Triton model repository run in-process when no
                                           server can (its backends must be linked); NULL: none */
  size_t fallback_threads;            /**< threads of that fallback (1); 0: the cores this
                                           process may use (its CPU affinity, limited by its
                                           cgroup's CPU quota), never the whole node's */
  const char* token_file;             /**< a file holding a bearer token, sent with every call
                                           ("authorization: Bearer ...") and read again when the
                                           file changes; NULL (the default): none */
  const char* tls_ca_file;            /**< grpcs:// and tcp+tls://: authorities (PEM) the server's
                                           certificate must chain to; NULL: the system's */
  const char* tls_cert_file;          /**< a client certificate (PEM) for mutual TLS; NULL: none */
  const char* tls_key_file;           /**< its private key (PEM) */
  const char* tls_server_name;        /**< the name the server's certificate must be for; NULL: the
                                           URL's host */
  double connect_timeout_seconds;     /**< how long opening a connection may take (3) */
  double per_attempt_timeout_seconds; /**< each attempt's own limit: one that passes it is
                                           retried while the request's timeout allows; 0 (the
                                           default): none */
  int eject_after;                    /**< consecutive transport failures that take an endpoint out
                                           of rotation until a health probe brings it back (3) */
  const char* compression;            /**< gRPC messages sent compressed: NULL or "none" (the
                                           default), "gzip" or "deflate" */
  int validate_inputs;       /**< 1 (the default): inputs are checked against the model's metadata
                                  (asked once per model) before a request is sent, so that mistakes
                                  fail at once; 0: sent as given */
  sonic_balancing balancing; /**< among endpoints that may serve a request
                                  (SONIC_LEAST_OUTSTANDING) */
  double discovery_interval_seconds; /**< ask every endpoint which models it has ready at start
                                          and this often, and send a model's requests only to
                                          those that list it; 0 (the default): no discovery */
  const sonic_model_options* models; /**< per-model routing and batching, `model_count` of
                                          them (copied by sonic_client_create); NULL: none */
  size_t model_count;
  const char* tls_ca_pem;   /**< the authorities as PEM text, for a program that holds them
                                 in memory: instead of tls_ca_file; NULL: none */
  const char* tls_cert_pem; /**< the client certificate as PEM text (tls_cert_file) */
  const char* tls_key_pem;  /**< its private key as PEM text (tls_key_file) */
  size_t max_in_flight;     /**< most requests of the client under way at once; past it a
                                 request fails at once with SONIC_RESOURCE_EXHAUSTED; 0 (the
                                 default): no limit */
} sonic_client_options;

/** A tensor of a result: views into it, valid while the result lives. */
typedef struct sonic_tensor {
  sonic_datatype datatype;
  const int64_t* shape;
  size_t rank;
  const void* data;
  size_t byte_size;
} sonic_tensor;

/** Called once per sonic_client_infer_async, never inside it, on one of sonic's threads:
 * `result` (the callback's to destroy) holds the outputs or the error. Keep it short; do not
 * call sonic_client_destroy on its own client from it. */
typedef void (*sonic_callback)(sonic_result* result, void* user_data);

/** Why the last failed call on this thread failed ("" if none); valid until the next call. */
SONIC_C_API const char* sonic_last_error(void);
/** The gRPC name of a code: "UNAVAILABLE". */
SONIC_C_API const char* sonic_code_name(sonic_code code);
/** The version of the library, "major.minor.patch". */
SONIC_C_API const char* sonic_version(void);

SONIC_C_API void sonic_client_options_init(sonic_client_options* options);
SONIC_C_API void sonic_model_options_init(sonic_model_options* options);
/** A client of `url_count` endpoint URLs ("grpc://host:port", "tcp://host:port", ...);
 * `options` may be NULL for the defaults. Connects lazily: a bad URL fails here, an absent
 * server on the first request. */
SONIC_C_API sonic_code sonic_client_create(const char* const* urls, size_t url_count,
                                           const sonic_client_options* options,
                                           sonic_client** client);
/** Completes requests in flight with SONIC_CANCELLED (their callbacks run before it returns)
 * and frees the client. */
SONIC_C_API void sonic_client_destroy(sonic_client* client);
/** Sets *ready to 1 when the server is ready for inference, 0 otherwise. */
SONIC_C_API sonic_code sonic_client_server_ready(sonic_client* client, int* ready);
/** Sends a request and waits: on SONIC_OK, *result holds its outputs. The request is left as
 * it was and may be sent again. */
SONIC_C_API sonic_code sonic_client_infer(sonic_client* client, const sonic_request* request,
                                          sonic_result** result);
/** sonic_client_infer for a request with a large batch: sent as chunks of `rows` rows along
 * the first dimension of its inputs (0: about 2 MiB of inputs per chunk, and at most the
 * model's max_batch_size), at most `max_in_flight` chunks at once (0: 4), and their outputs
 * joined in order into one *result, as if the model had taken the whole batch. On an error,
 * the first one, naming its chunk. */
SONIC_C_API sonic_code sonic_client_infer_chunked(sonic_client* client,
                                                  const sonic_request* request, int64_t rows,
                                                  size_t max_in_flight, sonic_result** result);
/** Sends a request; `callback` runs once with its result, never inside this call. SONIC_OK
 * means it was sent: its failures, including a request the server refuses, reach the
 * callback. */
SONIC_C_API sonic_code sonic_client_infer_async(sonic_client* client, const sonic_request* request,
                                                sonic_callback callback, void* user_data);
/** The client's counters as JSON (requests, retries, fallbacks, failures, endpoints): a
 * string to free with sonic_string_free. NULL on failure. */
SONIC_C_API char* sonic_client_stats_json(sonic_client* client);
/** The checksum of the configuration of `model` (version: NULL or "" for the server's choice)
 * as the server reports it, 16 hex digits: what pin_config_checksum expects. A string to free
 * with sonic_string_free; NULL on failure. */
SONIC_C_API char* sonic_client_model_config_checksum(sonic_client* client, const char* model,
                                                     const char* version);
SONIC_C_API void sonic_string_free(char* string);

/** A request for `model` (version: NULL or "" for the server's choice); NULL on failure. */
SONIC_C_API sonic_request* sonic_request_create(const char* model, const char* version);
SONIC_C_API void sonic_request_destroy(sonic_request* request);
/** Adds an input of `rank` dimensions. The bytes must fit the shape and datatype
 * (SONIC_INVALID_ARGUMENT otherwise). */
SONIC_C_API sonic_code sonic_request_add_input(sonic_request* request, const char* name,
                                               sonic_datatype datatype, const int64_t* shape,
                                               size_t rank, const void* data, size_t byte_size,
                                               sonic_ownership ownership);
/** Asks for one output by name; without any, all outputs come back. */
SONIC_C_API sonic_code sonic_request_add_output(sonic_request* request, const char* name);
/** The time the request may take, from sending to its result; 0: the client's default. */
SONIC_C_API sonic_code sonic_request_set_timeout(sonic_request* request, double seconds);
/** An id the server echoes back. */
SONIC_C_API sonic_code sonic_request_set_id(sonic_request* request, const char* id);

/** SONIC_OK for a result with outputs, else the code of its error. */
SONIC_C_API sonic_code sonic_result_code(const sonic_result* result);
/** The error's message, "" for a success. */
SONIC_C_API const char* sonic_result_error(const sonic_result* result);
SONIC_C_API size_t sonic_result_output_count(const sonic_result* result);
/** The name of output `index` (0 .. count-1); NULL past the end. */
SONIC_C_API const char* sonic_result_output_name(const sonic_result* result, size_t index);
/** The output `name`: SONIC_NOT_FOUND (the message lists the outputs) when there is none. */
SONIC_C_API sonic_code sonic_result_output(const sonic_result* result, const char* name,
                                           sonic_tensor* tensor);
/** 1 when the result was computed in-process by the fallback, 0 when by a server. */
SONIC_C_API int sonic_result_executed_locally(const sonic_result* result);
SONIC_C_API void sonic_result_destroy(sonic_result* result);

#ifdef __cplusplus
}
#endif

#endif /* SONIC_H */
