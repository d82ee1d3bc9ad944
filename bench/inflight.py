"""The loop both Python clients of bench/python_vs_cpp.sh use for futures, so that sonic's and
grpcio's are driven alike: CONCURRENCY requests in flight, the oldest awaited, then replaced."""

import collections
import time


def keep_in_flight(send, concurrency, total, latencies):
    """Sends `total` requests with `send()` (which returns a future), at most `concurrency` at
    a time; appends each one's latency in seconds to `latencies`."""
    pending = collections.deque()
    for _ in range(min(concurrency, total)):
        pending.append((time.perf_counter(), send()))
    sent = len(pending)
    while pending:
        start, future = pending.popleft()
        future.result()
        latencies.append(time.perf_counter() - start)
        if sent < total:
            pending.append((time.perf_counter(), send()))
            sent += 1
