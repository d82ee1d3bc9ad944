"""sonic's Python package as a client for bench/python_vs_cpp.sh: identity_fp32 requests with
CONCURRENCY in flight, through one of its APIs:

  sync     client.infer() in a loop (CONCURRENCY 1), or one thread per request in flight
  future   client.infer_async(): CONCURRENCY futures, the oldest awaited, then replaced
  asyncio  await client.ainfer() in CONCURRENCY tasks

Prints one JSON object, as bench/peer_grpcio.py does: throughput (requests/s), p50_us and
p99_us, client_cpu_us (this process's user + system CPU per request), after WARMUP requests;
and caller_cpu_us, the CPU of the thread that runs the requests per request: the event loop's
with asyncio, the caller's with sync at 1 in flight, only the waiting for the others.

    peer_sonic_python.py --url grpc://127.0.0.1:8001 --api future --elements 16
                         --concurrency 16 --requests 20000
"""

import argparse
import asyncio
import json
import resource
import threading
import time

import numpy as np

import sonic
from inflight import keep_in_flight


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_sync(client, inputs, concurrency, total, latencies):
    def worker(count):
        for _ in range(count):
            start = time.perf_counter()
            client.infer("identity_fp32", inputs)
            latencies.append(time.perf_counter() - start)
    if concurrency == 1:
        worker(total)
        return
    threads = [threading.Thread(target=worker, args=(total // concurrency,))
               for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_future(client, inputs, concurrency, total, latencies):
    keep_in_flight(lambda: client.infer_async("identity_fp32", inputs), concurrency, total,
                   latencies)


def run_asyncio(client, inputs, concurrency, total, latencies):
    async def worker(count):
        for _ in range(count):
            start = time.perf_counter()
            await client.ainfer("identity_fp32", inputs)
            latencies.append(time.perf_counter() - start)

    async def all_workers():
        await asyncio.gather(*(worker(total // concurrency) for _ in range(concurrency)))
    asyncio.run(all_workers())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--api", choices=("sync", "future", "asyncio"), default="future")
    ap.add_argument("--elements", type=int, default=16, help="FP32 elements per request")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--warmup", type=int, default=500)
    args = ap.parse_args()
    run = {"sync": run_sync, "future": run_future, "asyncio": run_asyncio}[args.api]
    inputs = {"INPUT0": np.random.rand(1, args.elements).astype(np.float32)}
    with sonic.Client(args.url) as client:
        run(client, inputs, args.concurrency, args.warmup, [])
        latencies = []
        cpu, caller, wall = cpu_seconds(), time.thread_time(), time.perf_counter()
        run(client, inputs, args.concurrency, args.requests, latencies)
        wall = time.perf_counter() - wall
        caller = time.thread_time() - caller
        cpu = cpu_seconds() - cpu
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e6
    print(json.dumps({"throughput": len(latencies) / wall, "p50_us": pick(0.5),
                      "p99_us": pick(0.99), "client_cpu_us": cpu / len(latencies) * 1e6,
                      "caller_cpu_us": caller / len(latencies) * 1e6}))


if __name__ == "__main__":
    main()
