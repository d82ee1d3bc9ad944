"""Throughput of a model against its batch size: sends batches of 1, 2, 4, ... rows with 16
requests in flight and reports rows per second, drawn with matplotlib when it is installed
(Debian's python3-matplotlib), printed as a table otherwise.

    python3 batch_sweep.py [--url grpc://127.0.0.1:8001] [--model identity_fp32]
                           [--features 16] [--max-batch 256] [--seconds 1] [--plot sweep.png]
"""

import argparse
import time

import numpy as np

import sonic


def rows_per_second(client, model, batch, features, seconds, in_flight=16):
    inputs = {"INPUT0": np.random.rand(batch, features).astype(np.float32)}
    pending = [client.infer_async(model, inputs) for _ in range(in_flight)]
    completed = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pending.pop(0).result()
        completed += 1
        pending.append(client.infer_async(model, inputs))
    elapsed = time.perf_counter() - start
    for future in pending:
        future.result()
    return completed * batch / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="grpc://127.0.0.1:8001")
    parser.add_argument("--model", default="identity_fp32")
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--plot", default="batch_sweep.png", help="image to draw")
    args = parser.parse_args()

    batches, rates = [], []
    with sonic.Client(args.url) as client:
        batch = 1
        print("%8s %14s" % ("batch", "rows/s"))
        while batch <= args.max_batch:
            rate = rows_per_second(client, args.model, batch, args.features, args.seconds)
            batches.append(batch)
            rates.append(rate)
            print("%8d %14.0f" % (batch, rate))
            batch *= 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(install python3-matplotlib to draw this)")
        return
    figure, axes = plt.subplots()
    axes.plot(batches, rates, marker="o")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("batch size (rows per request)")
    axes.set_ylabel("rows per second")
    axes.set_title("%s at %s, 16 requests in flight" % (args.model, args.url))
    axes.grid(True, which="both", alpha=0.3)
    figure.savefig(args.plot, dpi=100)
    print("drawn in " + args.plot)


if __name__ == "__main__":
    main()
