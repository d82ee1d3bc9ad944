/* The C API's routing and client-side batching against two real sonic-servers: preferred
 * endpoints, balancing, pinned versions and configurations, merged requests, and the option
 * checks. Each option must reach the C++ client and do there what it does from C++.
 *   test_c_routing GRPC_URL SECOND_GRPC_URL
 * Exits 0 when every check passed; prints each failed check. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sonic.h"

enum { kWidth = 4, kBatched = 64 };

/* A request for identity_fp32 of one row, [value, value + 1, ...], borrowing `row`. */
static sonic_request* identity_request(float* row, float value) {
  static const int64_t shape[2] = {1, kWidth};
  for (int i = 0; i < kWidth; ++i) row[i] = value + (float)i;
  sonic_request* request = sonic_request_create("identity_fp32", NULL);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, row,
                                kWidth * sizeof(float), SONIC_BORROW) == SONIC_OK);
  return request;
}

/* The value of `key` (a JSON number) in the stats object of endpoint `url`; -1 if absent. */
static long endpoint_counter(sonic_client* client, const char* url, const char* key) {
  char* stats = sonic_client_stats_json(client);
  long value = -1;
  char pattern[160];
  snprintf(pattern, sizeof pattern, "{\"url\":\"%s\"", url);
  const char* endpoint = stats ? strstr(stats, pattern) : NULL;
  if (endpoint) {
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char* field = strstr(endpoint, pattern);
    const char* end = strchr(endpoint, '}');
    if (field && end && field < end) value = strtol(field + strlen(pattern), NULL, 10);
  }
  sonic_string_free(stats);
  return value;
}

/* The value of the client-wide counter `key`; -1 if absent. */
static long client_counter(sonic_client* client, const char* key) {
  char* stats = sonic_client_stats_json(client);
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* field = stats ? strstr(stats, pattern) : NULL;
  long value = field ? strtol(field + strlen(pattern), NULL, 10) : -1;
  sonic_string_free(stats);
  return value;
}

static void test_option_checks(const char* url) {
  sonic_client_options options;
  sonic_client_options_init(&options);
  CHECK(options.balancing == SONIC_LEAST_OUTSTANDING && options.discovery_interval_seconds == 0 &&
        options.models == NULL && options.model_count == 0);
  sonic_model_options model;
  sonic_model_options_init(&model);
  CHECK(model.batching == 0 && model.max_batch == 0 && model.max_delay_seconds == 0.0005 &&
        model.preferred_count == 0 && model.pin_version == NULL &&
        model.ragged_count_input == NULL);
  sonic_client* client = NULL;

  options.balancing = (sonic_balancing)7;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(client == NULL && strstr(sonic_last_error(), "balancing") != NULL);
  sonic_client_options_init(&options);
  options.discovery_interval_seconds = -1;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "discovery_interval_seconds") != NULL);

  sonic_client_options_init(&options);
  options.model_count = 1; /* and models NULL */
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  options.models = &model; /* without a name */
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "model name") != NULL);
  model.model = "identity_fp32";
  model.batching = 1;
  model.max_batch = -1;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "identity_fp32") && strstr(sonic_last_error(), "max_batch"));
  model.max_batch = 0;
  model.ragged_source_input = "INPUT0";
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "ragged_count_input") != NULL);
  model.ragged_source_input = NULL;
  sonic_model_options twice[2] = {model, model};
  options.models = twice;
  options.model_count = 2;
  CHECK(sonic_client_create(&url, 1, &options, &client) == SONIC_INVALID_ARGUMENT);
  CHECK(strstr(sonic_last_error(), "twice") != NULL);
  CHECK(client == NULL);
}

/* Callbacks completed, and how many of them got what they should. */
struct Tally {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int completed;
  int correct;
};

static void tally_add(struct Tally* tally, int correct) {
  pthread_mutex_lock(&tally->mutex);
  tally->completed += 1;
  tally->correct += correct;
  pthread_cond_signal(&tally->changed);
  pthread_mutex_unlock(&tally->mutex);
}

static void tally_wait(struct Tally* tally, int count) {
  pthread_mutex_lock(&tally->mutex);
  while (tally->completed < count) pthread_cond_wait(&tally->changed, &tally->mutex);
  pthread_mutex_unlock(&tally->mutex);
}

/* A client of `urls` with `options` (the defaults when NULL) and `model` as its one model's
 * settings; NULL (a failed check) when it cannot be made. */
static sonic_client* client_with_model(const char* const* urls, size_t url_count,
                                       const sonic_model_options* model,
                                       sonic_client_options* options) {
  sonic_client_options defaults;
  if (!options) {
    sonic_client_options_init(&defaults);
    options = &defaults;
  }
  options->models = model;
  options->model_count = 1;
  sonic_client* client = NULL;
  CHECK(sonic_client_create(urls, url_count, options, &client) == SONIC_OK);
  return client;
}

struct BatchedCall {
  struct Tally* tally;
  float row[kWidth];
};

/* Each caller must get its own row back, not another's of the merged request. */
static void check_own_row(sonic_result* result, void* user_data) {
  struct BatchedCall* call = user_data;
  sonic_tensor out;
  int own = sonic_result_code(result) == SONIC_OK &&
            sonic_result_output(result, "OUTPUT0", &out) == SONIC_OK && out.rank == 2 &&
            out.shape[0] == 1 && memcmp(out.data, call->row, sizeof call->row) == 0;
  sonic_result_destroy(result);
  tally_add(call->tally, own);
}

static void test_batching(const char* url) {
  sonic_model_options model;
  sonic_model_options_init(&model);
  model.model = "identity_fp32";
  model.batching = 1;
  model.max_batch = kBatched;
  model.max_delay_seconds = 0.02;
  sonic_client* client = client_with_model(&url, 1, &model, NULL);
  if (!client) return;
  /* The first request asks for the model's configuration; the ones after it merge. */
  struct Tally tally = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  struct BatchedCall calls[kBatched];
  sonic_request* requests[kBatched];
  for (int i = 0; i < kBatched; ++i) {
    calls[i].tally = &tally;
    requests[i] = identity_request(calls[i].row, (float)(10 * i));
    CHECK(sonic_client_infer_async(client, requests[i], check_own_row, &calls[i]) == SONIC_OK);
  }
  tally_wait(&tally, kBatched);
  CHECK(tally.correct == kBatched);
  for (int i = 0; i < kBatched; ++i) sonic_request_destroy(requests[i]);
  CHECK(client_counter(client, "batched_requests") == kBatched);
  long merged = client_counter(client, "merged_requests");
  CHECK(merged > 0 && merged < kBatched / 2);
  sonic_client_destroy(client);
}

static void test_preferred_endpoint(const char* url, const char* second) {
  const char* both[2] = {url, second};
  sonic_model_options model;
  sonic_model_options_init(&model);
  model.model = "identity_fp32";
  model.preferred_urls = &second;
  model.preferred_count = 1;
  sonic_client* client = client_with_model(both, 2, &model, NULL);
  if (!client) return;
  float row[kWidth];
  for (int i = 0; i < 20; ++i) {
    sonic_request* request = identity_request(row, (float)i);
    sonic_result* result = NULL;
    CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
    sonic_result_destroy(result);
    sonic_request_destroy(request);
  }
  CHECK(endpoint_counter(client, url, "attempts") == 0);
  CHECK(endpoint_counter(client, second, "attempts") == 20);
  sonic_client_destroy(client);
}

static void count_completion(sonic_result* result, void* user_data) {
  int ok = sonic_result_code(result) == SONIC_OK;
  sonic_result_destroy(result);
  tally_add(user_data, ok);
}

static void test_power_of_two_choices(const char* url, const char* second) {
  const char* both[2] = {url, second};
  sonic_client_options options;
  sonic_client_options_init(&options);
  options.balancing = SONIC_POWER_OF_TWO_CHOICES;
  sonic_client* client = NULL;
  CHECK(sonic_client_create(both, 2, &options, &client) == SONIC_OK);
  if (!client) return;
  enum { kRequests = 200 };
  float row[kWidth];
  sonic_request* request = identity_request(row, 1);
  struct Tally done = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  for (int i = 0; i < kRequests; ++i) {
    CHECK(sonic_client_infer_async(client, request, count_completion, &done) == SONIC_OK);
  }
  tally_wait(&done, kRequests);
  sonic_request_destroy(request);
  CHECK(done.correct == kRequests);
  long first = endpoint_counter(client, url, "attempts");
  long other = endpoint_counter(client, second, "attempts");
  CHECK(first > 0 && other > 0 && first + other == kRequests);
  sonic_client_destroy(client);
}

static sonic_request* simple_request(const char* version, int32_t* ones) {
  static const int64_t shape[2] = {1, 16};
  for (int i = 0; i < 16; ++i) ones[i] = 1;
  sonic_request* request = sonic_request_create("simple", version);
  CHECK(sonic_request_add_input(request, "INPUT0", SONIC_INT32, shape, 2, ones, 64, SONIC_BORROW) ==
        SONIC_OK);
  CHECK(sonic_request_add_input(request, "INPUT1", SONIC_INT32, shape, 2, ones, 64, SONIC_BORROW) ==
        SONIC_OK);
  CHECK(sonic_request_set_timeout(request, 5) == SONIC_OK);
  return request;
}

static void test_pins(const char* url) {
  sonic_client* probe = NULL;
  CHECK(sonic_client_create(&url, 1, NULL, &probe) == SONIC_OK);
  char* checksum = sonic_client_model_config_checksum(probe, "simple", NULL);
  CHECK(checksum != NULL && strlen(checksum) == 16);
  CHECK(sonic_client_model_config_checksum(probe, "no_such_model", NULL) == NULL);
  CHECK(strstr(sonic_last_error(), "no_such_model") != NULL);
  sonic_client_destroy(probe);
  if (!checksum) return;

  int32_t ones[16];
  sonic_model_options model;
  sonic_model_options_init(&model);
  model.model = "simple";
  model.pin_version = "1";
  model.pin_config_checksum = checksum;
  sonic_client* client = client_with_model(&url, 1, &model, NULL);
  sonic_request* request = simple_request(NULL, ones);
  sonic_result* result = NULL;
  CHECK(sonic_client_infer(client, request, &result) == SONIC_OK);
  sonic_tensor sum;
  CHECK(result && sonic_result_output(result, "OUTPUT0", &sum) == SONIC_OK &&
        ((const int32_t*)sum.data)[0] == 2);
  sonic_result_destroy(result);
  sonic_request_destroy(request);
  request = simple_request("2", ones); /* another version than the pinned one */
  CHECK(sonic_client_infer(client, request, &result) == SONIC_FAILED_PRECONDITION);
  sonic_request_destroy(request);
  sonic_client_destroy(client);
  sonic_string_free(checksum);

  /* A server that reports another configuration gets none of the model's requests. */
  model.pin_version = NULL;
  model.pin_config_checksum = "0000000000000000";
  sonic_client_options options;
  sonic_client_options_init(&options);
  options.max_attempts = 1;
  client = client_with_model(&url, 1, &model, &options);
  request = simple_request(NULL, ones);
  CHECK(sonic_client_infer(client, request, &result) != SONIC_OK);
  CHECK(strstr(sonic_last_error(), "checksum") || strstr(sonic_last_error(), "configuration"));
  sonic_request_destroy(request);
  sonic_client_destroy(client);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_c_routing GRPC_URL SECOND_GRPC_URL\n");
    return 2;
  }
  test_option_checks(argv[1]);
  test_batching(argv[1]);
  test_preferred_endpoint(argv[1], argv[2]);
  test_power_of_two_choices(argv[1], argv[2]);
  test_pins(argv[1]);
  printf("%s: %d failed checks\n", failures ? "FAIL" : "OK", failures);
  return failures ? 1 : 0;
}
