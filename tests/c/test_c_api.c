/* The C API against a real sonic-server, from C: sync and callback inference, every datatype,
 * errors with codes and messages, ownership, the client's options, chunks, and the fallback.
 *   test_c_api GRPC_URL DEAD_URL [MODEL_REPOSITORY]
 * Exits 0 when every check passed; prints each failed check. */
#define _POSIX_C_SOURCE 200809L /* sockets and clock_gettime under C11 without extensions */

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sonic.h"

static sonic_request* simple_request(int32_t* a, int32_t* b) {
  static const int64_t shape[2] = {1, 16};
  sonic_request* request = sonic_request_create("simple", NULL);
  CHECK(request != NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_INT32, shape, 2, a, 64, SONIC_BORROW) ==
        SONIC_OK);
  CHECK(sonic_request_add_input(request, "INPUT1", SONIC_INT32, shape, 2, b, 64, SONIC_BORROW) ==
        SONIC_OK);
  return request;
}

static void test_sync(sonic_client* client) {
  int32_t a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = i, b[i] = 1;
  sonic_request* request = simple_request(a, b);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  CHECK(sonic_result_code(result) == SONIC_OK);
  CHECK(strcmp(sonic_result_error(result), "") == 0);
  CHECK(sonic_result_output_count(result) == 2);
  CHECK(sonic_result_output_name(result, 2) == NULL);
  sonic_tensor sum;
  CHECK(sonic_result_output(result, "OUTPUT0", &sum) == SONIC_OK);
  CHECK(sum.datatype == SONIC_INT32 && sum.rank == 2 && sum.shape[1] == 16);
  CHECK(sum.byte_size == 64 && ((const int32_t*)sum.data)[15] == 16);
  sonic_tensor missing;
  CHECK(sonic_result_output(result, "NOPE", &missing) == SONIC_NOT_FOUND);
  CHECK(strstr(sonic_last_error(), "OUTPUT0") != NULL); /* names the outputs present */
  CHECK(!sonic_result_executed_locally(result));
  sonic_result_destroy(result);
  /* The request is unchanged: send it again, with new values in the borrowed memory. */
  a[0] = 100;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  CHECK(sonic_result_output(result, "OUTPUT0", &sum) == SONIC_OK);
  CHECK(((const int32_t*)sum.data)[0] == 101);
  sonic_result_destroy(result);
  sonic_request_destroy(request);
}

static void test_errors(sonic_client* client) {
  sonic_client* bad = NULL;
  const char* url = "ftp://127.0.0.1:1";
  CHECK(sonic_client_create(&url, 1, NULL, &bad) == SONIC_INVALID_ARGUMENT);
  CHECK(bad == NULL && strlen(sonic_last_error()) > 0);
  CHECK(sonic_client_create(NULL, 0, NULL, &bad) == SONIC_INVALID_ARGUMENT);

  float values[4] = {0};
  int64_t shape[2] = {1, 4};
  sonic_request* request = sonic_request_create("identity_fp32", NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, values, 12,
                                SONIC_BORROW) == SONIC_INVALID_ARGUMENT); /* 12 != 16 bytes */
  CHECK(strstr(sonic_last_error(), "INPUT0") != NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", (sonic_datatype)99, shape, 2, values, 16,
                                SONIC_COPY) == SONIC_INVALID_ARGUMENT);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, values, 16,
                                (sonic_ownership)-1) == SONIC_INVALID_ARGUMENT);
  CHECK(strcmp(sonic_code_name((sonic_code)-5), "UNKNOWN") == 0);
  CHECK(sonic_request_add_input(NULL, "INPUT0", SONIC_FP32, shape, 2, values, 16, SONIC_COPY) ==
        SONIC_INVALID_ARGUMENT);
  /* Durations past int64's microseconds, or NaN, are refused, not converted. */
  CHECK(sonic_request_set_timeout(request, 1e300) == SONIC_INVALID_ARGUMENT);
  CHECK(sonic_request_set_timeout(request, NAN) == SONIC_INVALID_ARGUMENT);
  CHECK(sonic_request_set_timeout(request, -1) == SONIC_INVALID_ARGUMENT);
  CHECK(sonic_request_set_timeout(request, 2.5) == SONIC_OK);
  sonic_client_options options;
  sonic_client_options_init(&options);
  options.timeout_seconds = 1e300;
  const char* good_url = "grpc://127.0.0.1:1";
  CHECK(sonic_client_create(&good_url, 1, &options, &bad) == SONIC_INVALID_ARGUMENT);
  /* A token that cannot be read fails the call before anything is sent, naming its file. */
  sonic_client_options_init(&options);
  CHECK(options.token_file == NULL);
  options.token_file = "/nonexistent/sonic-token";
  sonic_client* tokened = NULL;
  CHECK(sonic_client_create(&good_url, 1, &options, &tokened) == SONIC_OK);
  sonic_result* refused = NULL;
  CHECK(sonic_client_infer(tokened, request, &refused) == SONIC_UNAUTHENTICATED);
  CHECK(refused == NULL && strstr(sonic_last_error(), "/nonexistent/sonic-token") != NULL);
  sonic_client_destroy(tokened);
  /* TLS settings reach the client: an authority file that does not exist is refused when the
     client is made, naming it. */
  sonic_client_options_init(&options);
  CHECK(options.tls_ca_file == NULL && options.tls_cert_file == NULL &&
        options.tls_key_file == NULL && options.tls_server_name == NULL);
  options.tls_ca_file = "/nonexistent/sonic-ca.pem";
  const char* secure_url = "grpcs://127.0.0.1:1";
  sonic_client* secure = NULL;
  CHECK(sonic_client_create(&secure_url, 1, &options, &secure) == SONIC_INVALID_ARGUMENT);
  CHECK(secure == NULL && strstr(sonic_last_error(), "/nonexistent/sonic-ca.pem") != NULL);
  /* and so is PEM text that holds no certificate */
  sonic_client_options_init(&options);
  CHECK(options.tls_ca_pem == NULL && options.tls_cert_pem == NULL && options.tls_key_pem == NULL);
  options.tls_ca_pem = "not a certificate";
  CHECK(sonic_client_create(&secure_url, 1, &options, &secure) == SONIC_INVALID_ARGUMENT);
  CHECK(secure == NULL && strstr(sonic_last_error(), "PEM text") != NULL);
  sonic_request_destroy(request);

  request = sonic_request_create("no_such_model", NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, values, 16, SONIC_COPY) ==
        SONIC_OK);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_NOT_FOUND);
  CHECK(result == NULL && strstr(sonic_last_error(), "no_such_model") != NULL);
  sonic_request_destroy(request);
  CHECK(strcmp(sonic_code_name(SONIC_UNAVAILABLE), "UNAVAILABLE") == 0);
  sonic_client_destroy(NULL); /* accepted */
  sonic_request_destroy(NULL);
  sonic_result_destroy(NULL);
}

static void test_every_datatype(sonic_client* client) {
  static const char* names[] = {"bool",  "uint8", "uint16", "uint32", "uint64", "int8", "int16",
                                "int32", "int64", "fp16",   "bf16",   "fp32",   "fp64"};
  static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  for (int type = SONIC_BOOL; type <= SONIC_FP64; ++type) {
    unsigned char bytes[6 * 8];
    size_t byte_size = 6 * sizes[type];
    for (size_t i = 0; i < byte_size; ++i)
      bytes[i] = (unsigned char)(type == SONIC_BOOL ? i % 2 : i * 7);
    char model[32];
    snprintf(model, sizeof model, "identity_%s", names[type]);
    int64_t shape[2] = {2, 3};
    sonic_request* request = sonic_request_create(model, NULL);
    CHECK(sonic_request_add_input(request, "INPUT0", (sonic_datatype)type, shape, 2, bytes,
                                  byte_size, SONIC_COPY) == SONIC_OK);
    memset(bytes, 0, sizeof bytes); /* copied: the request no longer reads them */
    sonic_result* result = NULL;
    CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
    sonic_tensor out;
    CHECK(sonic_result_output(result, "OUTPUT0", &out) == SONIC_OK);
    CHECK(out.datatype == (sonic_datatype)type && out.byte_size == byte_size);
    for (size_t i = 0; i < byte_size && i < out.byte_size; ++i) {
      unsigned char want = (unsigned char)(type == SONIC_BOOL ? i % 2 : i * 7);
      if (((const unsigned char*)out.data)[i] != want) {
        fprintf(stderr, "%s: byte %zu differs\n", model, i);
        ++failures;
        break;
      }
    }
    sonic_result_destroy(result);
    sonic_request_destroy(request);
  }
  /* BYTES: a 4-byte little-endian length before each element. */
  const unsigned char strings[] = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0};
  int64_t shape[2] = {1, 2};
  sonic_request* request = sonic_request_create("identity_bytes", NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_BYTES, shape, 2, strings, sizeof strings,
                                SONIC_BORROW) == SONIC_OK);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  sonic_tensor out;
  CHECK(sonic_result_output(result, "OUTPUT0", &out) == SONIC_OK);
  CHECK(out.byte_size == sizeof strings && memcmp(out.data, strings, sizeof strings) == 0);
  sonic_result_destroy(result);
  sonic_request_destroy(request);
}

enum { kAsyncRequests = 200 };

struct Tally {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int completed;
  int correct;
};

static void count_answer(sonic_result* result, void* user_data) {
  struct Tally* tally = user_data;
  sonic_tensor sum;
  int ok = sonic_result_code(result) == SONIC_OK &&
           sonic_result_output(result, "OUTPUT0", &sum) == SONIC_OK &&
           ((const int32_t*)sum.data)[3] == 4;
  sonic_result_destroy(result);
  pthread_mutex_lock(&tally->mutex);
  tally->completed += 1;
  tally->correct += ok;
  pthread_cond_signal(&tally->changed);
  pthread_mutex_unlock(&tally->mutex);
}

static void test_async(sonic_client* client) {
  int32_t a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = i, b[i] = 1;
  sonic_request* request = simple_request(a, b);
  struct Tally tally = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  for (int i = 0; i < kAsyncRequests; ++i) {
    CHECK(sonic_client_infer_async(client, request, count_answer, &tally) == SONIC_OK);
  }
  pthread_mutex_lock(&tally.mutex);
  while (tally.completed < kAsyncRequests) pthread_cond_wait(&tally.changed, &tally.mutex);
  pthread_mutex_unlock(&tally.mutex);
  CHECK(tally.correct == kAsyncRequests);
  sonic_request_destroy(request); /* after the callbacks: they borrowed a and b */
  char* stats = sonic_client_stats_json(client);
  CHECK(stats != NULL && strstr(stats, "\"succeeded\":") != NULL);
  sonic_string_free(stats);
}

static double seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* A loopback listener that never accepts: connections open (the kernel completes them),
 * requests go out, and no answer comes. Writes its URL into `url`; returns the socket. */
static int silent_listener(char* url, size_t size) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  CHECK(listener >= 0 && bind(listener, (struct sockaddr*)&address, sizeof address) == 0 &&
        listen(listener, 16) == 0 &&
        getsockname(listener, (struct sockaddr*)&address, &length) == 0);
  snprintf(url, size, "grpc://127.0.0.1:%d", ntohs(address.sin_port));
  return listener;
}

static void test_options(const char* url, const char* dead_url) {
  sonic_client_options options;
  sonic_client_options_init(&options);
  CHECK(options.connect_timeout_seconds == 3 && options.per_attempt_timeout_seconds == 0 &&
        options.eject_after == 3 && options.compression == NULL && options.validate_inputs == 1 &&
        options.max_in_flight == 0);
  sonic_client* client = NULL;
  /* Values sonic cannot take are refused when the client is made, each named. */
  options.compression = "brotli";
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(client == NULL && strstr(sonic_last_error(), "brotli") != NULL);
  sonic_client_options_init(&options);
  options.eject_after = 0;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "eject_after") != NULL);
  sonic_client_options_init(&options);
  options.connect_timeout_seconds = -1;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "connect_timeout_seconds") != NULL);

  /* gzip-compressed requests, which sonic-server takes as Triton's does. */
  int32_t a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = i, b[i] = 2;
  sonic_request* request = simple_request(a, b);
  sonic_result* result = NULL;
  sonic_client_options_init(&options);
  options.compression = "gzip";
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_OK);
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  sonic_tensor sum;
  CHECK(sonic_result_output(result, "OUTPUT0", &sum) == SONIC_OK &&
        ((const int32_t*)sum.data)[15] == 17);
  sonic_result_destroy(result);
  sonic_client_destroy(client);

  /* One failure ejects a dead endpoint (eject_after 1; by default it takes 3): the first
   * request tries it, fails over to the live one, and the dead one is out. */
  const char* both[2] = {dead_url, url};
  sonic_client_options_init(&options);
  options.eject_after = 1;
  CHECK(sonic_client_create(both, 2, &options, &client) == SONIC_OK);
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  sonic_result_destroy(result);
  char* stats = sonic_client_stats_json(client);
  CHECK(stats != NULL && strstr(stats, "\"ejections\":1") != NULL);
  sonic_string_free(stats);
  sonic_client_destroy(client);

  /* A per-attempt limit ends each attempt on a server that never answers: two attempts of
   * 0.2 s, where the request's own limit is 20 s. (Unvalidated: validating would first ask
   * that server for the model's metadata, which the control timeout bounds instead.) */
  char silent_url[64];
  int listener = silent_listener(silent_url, sizeof silent_url);
  const char* silent = silent_url;
  sonic_client_options_init(&options);
  options.per_attempt_timeout_seconds = 0.2;
  options.max_attempts = 2;
  options.timeout_seconds = 20;
  options.validate_inputs = 0;
  CHECK(sonic_client_create(&silent, 1, &options, &client) == SONIC_OK);
  double start = seconds_now();
  CHECK(sonic_client_infer(client, request, &result) == SONIC_DEADLINE_EXCEEDED);
  double took = seconds_now() - start;
  CHECK(took >= 0.3 && took < 10);
  sonic_client_destroy(client);
  close(listener);
  sonic_request_destroy(request);
}

static void test_chunked(sonic_client* client) {
  enum { kRows = 10, kWidth = 4 };
  float batch[kRows * kWidth];
  for (int i = 0; i < kRows * kWidth; ++i) batch[i] = (float)i;
  int64_t shape[2] = {kRows, kWidth};
  sonic_request* request = sonic_request_create("identity_fp32", NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, batch, sizeof batch,
                                SONIC_BORROW) == SONIC_OK);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer_chunked(client, request, 3, 2, &result) == SONIC_OK); /* 4 chunks */
  sonic_tensor out;
  CHECK(sonic_result_output(result, "OUTPUT0", &out) == SONIC_OK);
  CHECK(out.rank == 2 && out.shape[0] == kRows && out.byte_size == sizeof batch);
  CHECK(memcmp(out.data, batch, sizeof batch) == 0);
  sonic_result_destroy(result);
  CHECK(sonic_client_infer_chunked(client, request, -1, 0, &result) == SONIC_INVALID_ARGUMENT);
  sonic_request_destroy(request);
}

static void test_fallback(const char* dead_url, const char* repository) {
  sonic_client_options options;
  sonic_client_options_init(&options);
  options.fallback_repository = repository;
  options.max_attempts = 1;
  sonic_client* client = NULL;
  CHECK(sonic_client_create(&dead_url, 1, &options, &client) == SONIC_OK);
  float features[16];
  for (int i = 0; i < 16; ++i) features[i] = 0.5f;
  int64_t shape[2] = {1, 16};
  sonic_request* request = sonic_request_create("jet_mlp_onnx", NULL);
  CHECK(sonic_request_add_input(request, "features", SONIC_FP32, shape, 2, features,
                                sizeof features, SONIC_BORROW) == SONIC_OK);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  CHECK(sonic_result_executed_locally(result));
  sonic_tensor probabilities;
  CHECK(sonic_result_output(result, "probabilities", &probabilities) == SONIC_OK);
  float total = 0;
  for (int i = 0; i < 5; ++i) total += ((const float*)probabilities.data)[i];
  CHECK(total > 0.999f && total < 1.001f); /* a softmax */
  sonic_result_destroy(result);
  sonic_request_destroy(request);
  sonic_client_destroy(client);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_c_api GRPC_URL DEAD_URL [MODEL_REPOSITORY]\n");
    return 2;
  }
  const char* url = argv[1];
  sonic_client* client = NULL;
  CHECK(sonic_client_create(&url, 1, NULL, &client) == SONIC_OK);
  int ready = 0;
  CHECK(sonic_client_server_ready(client, &ready) == SONIC_OK && ready == 1);
  test_sync(client);
  test_errors(client);
  test_every_datatype(client);
  test_async(client);
  test_chunked(client);
  sonic_client_destroy(client);
  test_options(url, argv[2]);
  if (argc > 3) test_fallback(argv[2], argv[3]);
  printf("%s: %d failed checks (sonic %s)\n", failures ? "FAIL" : "OK", failures, sonic_version());
  return failures ? 1 : 0;
}
