"""An independent client for bench/vs_grpcio.sh: Google's grpcio (Debian's python3-grpcio),
sending identity_fp32 requests to a KServe v2 server with CONCURRENCY in flight, written the
obvious way with one of its two APIs:

  asyncio  await stub.ModelInfer(request) in CONCURRENCY tasks (grpc.aio)
  future   stub.ModelInfer.future(request): CONCURRENCY futures, the oldest awaited, then
           replaced (the blocking channel), as bench/peer_sonic_python.py's "future"
  sync     stub.ModelInfer(request), one blocking call after another (CONCURRENCY 1): gRPC
           core's synchronous call, which drives its completion queue on the calling thread,
           as Triton's C++ client does

Prints one JSON object: throughput (requests/s), p50_us and p99_us (latency of each request),
client_cpu_us (this process's user + system CPU per request). A warm-up of WARMUP requests
goes first and is not counted.

    peer_grpcio.py --target 127.0.0.1:8001 --proto-dir proto --gen-dir DIR
                   --elements 16 --concurrency 16 --requests 20000 [--api future|sync]
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "interop"))
from stubs import load_stubs  # noqa: E402  (the interop tests' stub generator)
from inflight import keep_in_flight  # noqa: E402  (bench/, this script's directory)

GIB = 1 << 30


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def identity_request(args, pb2):
    request = pb2.ModelInferRequest(model_name="identity_fp32")
    request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, args.elements])
    request.raw_input_contents.append(bytes(4 * args.elements))
    return request


OPTIONS = [("grpc.max_receive_message_length", GIB), ("grpc.max_send_message_length", GIB)]


def summary(latencies, requests, wall, cpu):
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e6
    return {"throughput": requests / wall, "p50_us": pick(0.5), "p99_us": pick(0.99),
            "client_cpu_us": cpu / requests * 1e6}


def measured(args, phase):
    """Runs phase(total, latencies) for the warm-up, then for the requests that count."""
    phase(args.warmup, [])
    latencies = []
    cpu, wall = cpu_seconds(), time.perf_counter()
    phase(args.requests, latencies)
    wall = time.perf_counter() - wall
    cpu = cpu_seconds() - cpu
    return summary(latencies, args.requests, wall, cpu)


def run_future(args, pb2, pb2_grpc, grpc):
    request = identity_request(args, pb2)
    with grpc.insecure_channel(args.target, options=OPTIONS) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)

        def phase(total, latencies):
            keep_in_flight(lambda: stub.ModelInfer.future(request), args.concurrency, total,
                           latencies)

        return measured(args, phase)


def run_sync(args, pb2, pb2_grpc, grpc):
    if args.concurrency != 1:
        sys.exit("peer_grpcio: --api sync makes one call at a time (--concurrency 1)")
    request = identity_request(args, pb2)
    with grpc.insecure_channel(args.target, options=OPTIONS) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)

        def phase(total, latencies):
            for _ in range(total):
                start = time.perf_counter()
                stub.ModelInfer(request)
                latencies.append(time.perf_counter() - start)

        return measured(args, phase)


async def run_asyncio(args, pb2, pb2_grpc, grpc):
    request = identity_request(args, pb2)
    async with grpc.aio.insecure_channel(args.target, options=OPTIONS) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        latencies = []

        async def worker(count, record):
            for _ in range(count):
                start = time.perf_counter()
                await stub.ModelInfer(request)
                if record:
                    latencies.append(time.perf_counter() - start)

        async def phase(total, record):
            per = [total // args.concurrency + (1 if i < total % args.concurrency else 0)
                   for i in range(args.concurrency)]
            await asyncio.gather(*(worker(n, record) for n in per))

        await phase(args.warmup, False)
        cpu, wall = cpu_seconds(), time.perf_counter()
        await phase(args.requests, True)
        wall = time.perf_counter() - wall
        cpu = cpu_seconds() - cpu
    return summary(latencies, args.requests, wall, cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True, help="host:port of the server")
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--gen-dir", required=True)
    ap.add_argument("--elements", type=int, default=16, help="FP32 elements per request")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--api", choices=("asyncio", "future", "sync"), default="asyncio")
    args = ap.parse_args()
    _, pb2, pb2_grpc = load_stubs(args.proto_dir, args.gen_dir)
    import grpc
    import grpc.aio  # noqa: F401
    if args.api == "future":
        print(json.dumps(run_future(args, pb2, pb2_grpc, grpc)))
    elif args.api == "sync":
        print(json.dumps(run_sync(args, pb2, pb2_grpc, grpc)))
    else:
        print(json.dumps(asyncio.run(run_asyncio(args, pb2, pb2_grpc, grpc))))


if __name__ == "__main__":
    main()
