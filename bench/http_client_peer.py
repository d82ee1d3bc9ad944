"""The independent HTTP client of bench/http_vs_grpc.sh: Python's http.client on one keep-alive
connection, sending identity_fp32 requests one at a time with Triton's binary tensor data
extension (the JSON header, then the tensor's bytes) and reading the binary answer. Prints the
figures sonic-perf's summary has: {"throughput", "p50_us", "p99_us", "client_cpu_us"}.

    python3 bench/http_client_peer.py PORT ELEMENTS REQUESTS
"""

import http.client
import json
import statistics
import sys
import time

import numpy as np

port, elements, requests = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
values = np.random.default_rng(1).standard_normal((1, elements)).astype(np.float32).tobytes()
header = json.dumps({
    "inputs": [{"name": "INPUT0", "shape": [1, elements], "datatype": "FP32",
                "parameters": {"binary_data_size": len(values)}}],
    "parameters": {"binary_data_output": True}}).encode()
body = header + values
headers = {"Content-Type": "application/octet-stream",
           "Inference-Header-Content-Length": str(len(header))}
connection = http.client.HTTPConnection("127.0.0.1", port)


def once():
    connection.request("POST", "/v2/models/identity_fp32/infer", body, headers)
    answer = connection.getresponse()
    data = answer.read()
    json_length = int(answer.getheader("Inference-Header-Content-Length"))
    if answer.status != 200 or len(data) - json_length != len(values):
        raise SystemExit("unexpected answer: %d %r" % (answer.status, data[:200]))


for _ in range(max(10, requests // 10)):  # warm-up
    once()
latencies = []
cpu_begun, wall_begun = time.process_time(), time.perf_counter()
for _ in range(requests):
    begun = time.perf_counter()
    once()
    latencies.append(time.perf_counter() - begun)
wall = time.perf_counter() - wall_begun
cpu = time.process_time() - cpu_begun
latencies.sort()
print(json.dumps({"throughput": requests / wall,
                  "p50_us": statistics.median(latencies) * 1e6,
                  "p99_us": latencies[int(len(latencies) * 0.99) - 1] * 1e6,
                  "client_cpu_us": cpu / requests * 1e6}))
