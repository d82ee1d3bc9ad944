/* The C API in a few lines: sends 16 floats to sonic-server's identity_fp32 and prints them.
 *   infer [URL]   (default grpc://127.0.0.1:8001) */
#include <stdio.h>

#include "sonic.h"

int main(int argc, char** argv) {
  const char* url = argc > 1 ? argv[1] : "grpc://127.0.0.1:8001";
  sonic_client* client = NULL;
  if (sonic_client_create(&url, 1, NULL, &client) != SONIC_OK) {
    fprintf(stderr, "%s\n", sonic_last_error());
    return 1;
  }
  float values[16];
  for (int i = 0; i < 16; ++i) values[i] = (float)i;
  const int64_t shape[2] = {1, 16};
  sonic_request* request = sonic_request_create("identity_fp32", NULL);
  sonic_request_add_input(request, "INPUT0", SONIC_FP32, shape, 2, values, sizeof values,
                          SONIC_BORROW);
  sonic_result* result = NULL;
  sonic_code code = sonic_client_infer(client, request, &result);
  if (code != SONIC_OK) {
    fprintf(stderr, "%s: %s\n", sonic_code_name(code), sonic_last_error());
  } else {
    sonic_tensor out;
    sonic_result_output(result, "OUTPUT0", &out);
    for (size_t i = 0; i < out.byte_size / sizeof(float); ++i) {
      printf("%g ", ((const float*)out.data)[i]);
    }
    printf("\n");
  }
  sonic_result_destroy(result);
  sonic_request_destroy(request);
  sonic_client_destroy(client);
  return code == SONIC_OK ? 0 : 1;
}
