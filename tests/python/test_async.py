"""Futures, asyncio, streams, and many requests from many Python threads at once."""

import asyncio
import concurrent.futures
import gc
import os
import time

import numpy as np
import pytest

import sonic


@pytest.fixture(scope="module")
def client(server):
    with sonic.Client(server.grpc) as c:
        yield c


def simple_inputs(value):
    a = np.full((1, 16), value, np.int32)
    return {"INPUT0": a, "INPUT1": np.ones((1, 16), np.int32)}


def test_infer_async_is_a_concurrent_future(client):
    futures = [client.infer_async("simple", simple_inputs(i)) for i in range(64)]
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    for i, future in enumerate(futures):
        np.testing.assert_array_equal(future.result(10)["OUTPUT0"], np.full((1, 16), i + 1))


def test_an_async_failure_is_the_futures_exception(client):
    future = client.infer_async("no_such_model", {"INPUT0": np.ones((1, 2), np.float32)})
    assert isinstance(future.exception(10), sonic.NotFound)


def test_cancelling_the_future_cancels_the_request(silent_url):
    with sonic.Client(silent_url, validate_inputs=False) as silent:
        future = silent.infer_async("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)})
        assert future.cancel()
        assert future.cancelled()
        with pytest.raises(concurrent.futures.CancelledError):
            future.result(1)
        assert silent.stats()["failures_by_code"] == {"CANCELLED": 1}


def test_the_inputs_of_an_async_request_stay_alive_until_it_completes(client):
    future = client.infer_async("identity_fp32", {"INPUT0": np.arange(1024, dtype=np.float32)
                                                  .reshape(1, 1024)})
    # Nothing else holds the array: the request does.
    np.testing.assert_array_equal(future.result(10)["OUTPUT0"],
                                  np.arange(1024, dtype=np.float32).reshape(1, 1024))


def test_asyncio(client):
    async def many():
        return await asyncio.gather(*(client.ainfer("simple", simple_inputs(i))
                                      for i in range(100)))
    results = asyncio.run(many())
    for i, result in enumerate(results):
        assert result["OUTPUT0"][0, 0] == i + 1


def test_asyncio_answers_reach_the_loop_in_batches(client):
    """Answers that arrive together are handed to the event loop by one wake-up of the file
    descriptor it watches for sonic (one run of that reader), not one each: what makes
    ainfer() cheaper than wrapping infer_async()."""
    wakeups = []

    async def many():
        loop = asyncio.get_running_loop()
        add_reader = loop.add_reader

        def counted_add_reader(fd, callback, *args):
            def counted(*args):
                wakeups.append(fd)
                return callback(*args)
            return add_reader(fd, counted, *args)
        loop.add_reader = counted_add_reader
        tasks = [asyncio.ensure_future(client.ainfer("simple", simple_inputs(i)))
                 for i in range(100)]
        await asyncio.sleep(0)  # every task has sent its request
        # Keep the loop busy while the answers arrive: the network thread posts them without
        # needing this thread or the GIL, and the loop finds them all when it next looks.
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
        return await asyncio.gather(*tasks)

    results = asyncio.run(many())
    for i, result in enumerate(results):
        assert result["OUTPUT0"][0, 0] == i + 1
    assert 1 <= len(wakeups) <= 3, "%d wake-ups for 100 answers" % len(wakeups)


def test_every_new_event_loop_gets_its_answers(client):
    """asyncio.run() makes a loop each time, often where the last one was in memory: each
    must be watched for its own answers, never find the inbox of a loop that is gone; and a
    loop that is gone takes its inbox's eventfd along."""
    async def one(i):
        return await client.ainfer("simple", simple_inputs(i))

    def open_fds():
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    asyncio.run(one(0))
    before = open_fds()
    for i in range(50):
        result = asyncio.run(asyncio.wait_for(one(i), 5))
        assert result["OUTPUT0"][0, 0] == i + 1
    assert open_fds() <= before + 1, "an eventfd per loop stays open"


def test_asyncio_under_uvloop(client):
    """uvloop's loop implements add_reader itself: the answers reach it there as well."""
    uvloop = pytest.importorskip("uvloop")

    async def many():
        return await asyncio.gather(*(client.ainfer("simple", simple_inputs(i))
                                      for i in range(100)))

    loop = uvloop.new_event_loop()
    try:
        results = loop.run_until_complete(asyncio.wait_for(many(), 10))
    finally:
        loop.close()
    assert [int(r["OUTPUT0"][0, 0]) for r in results] == list(range(1, 101))


def test_cancelling_an_asyncio_task(silent_url):
    async def cancelled(client):
        task = asyncio.ensure_future(
            client.ainfer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with sonic.Client(silent_url, validate_inputs=False) as silent:
        asyncio.run(asyncio.wait_for(cancelled(silent), 2))
        assert silent.stats()["failures_by_code"] == {"CANCELLED": 1}


def test_a_thousand_concurrent_requests_from_python_threads(client):
    def one(i):
        result = client.infer("simple", simple_inputs(i % 1000))
        return int(result["OUTPUT0"][0, 0])

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        answers = list(pool.map(one, range(1000)))
    assert answers == [i % 1000 + 1 for i in range(1000)]
    in_flight = [client.infer_async("simple", simple_inputs(i)) for i in range(1000)]
    assert [int(f.result(30)["OUTPUT0"][0, 0]) for f in in_flight] == list(range(1, 1001))


def test_a_stream_of_a_decoupled_model(client):
    responses = []
    with client.open_stream(responses.append) as stream:
        stream.send("repeat_int32", {"IN": np.array([7, 8, 9], np.int32),
                                     "DELAY": np.zeros(3, np.uint32),
                                     "WAIT": np.zeros(1, np.uint32)}, request_id="r1",
                    parameters={"triton_enable_empty_final_response": True})
    # Leaving the block closed the stream and waited for every response.
    values = [int(r.result["OUT"][0]) for r in responses if r.result]
    assert values == [7, 8, 9]
    assert all(r.request_id == "r1" and r.error is None for r in responses)
    assert [r.final for r in responses] == [False, False, False, True]


def test_a_client_closed_before_its_stream_ends_it(server):
    client = sonic.Client(server.grpc)
    stream = client.open_stream(lambda response: None)
    client.close()
    with pytest.raises(sonic.Cancelled):
        stream.wait()


def test_leaving_a_stream_waits_for_its_answers(client):
    responses = []
    with client.open_stream(responses.append) as stream:
        stream.send("simple", {"INPUT0": np.ones((1, 16), np.int32),
                               "INPUT1": np.ones((1, 16), np.int32)}, request_id="ok")
    assert [r.request_id for r in responses] == ["ok"]
    assert responses[0].result["OUTPUT0"][0, 0] == 2
