"""The C++ client's routing, client-side batching and chunking, from Python: each option
reaches ClientOptions and does what it does in C++."""

import concurrent.futures

import numpy as np
import pytest

import sonic
from conftest import Server


def rows(first, count, width=4):
    return np.arange(first * width, (first + count) * width, dtype=np.float32).reshape(count, width)


@pytest.fixture(scope="module")
def second_server():
    started = Server()
    yield started
    started.stop()


def test_client_side_batching_merges_requests_from_threads(server):
    options = {"identity_fp32": {"max_batch": 64, "max_delay": 0.02}}
    with sonic.Client(server.grpc, batching=options) as client:
        def one(i):
            return client.infer("identity_fp32", {"INPUT0": rows(i, 1)})["OUTPUT0"]

        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(one, range(64)))
        for i, answer in enumerate(answers):  # each caller gets its own row back
            np.testing.assert_array_equal(answer, rows(i, 1))
        stats = client.stats()
        # A request that no other joins within max_delay (its callers' threads all busy, on a
        # loaded machine) goes alone, unmerged: every request is one or the other.
        alone = stats["requests"] - stats["merged_requests"]
        assert stats["batched_requests"] + alone == 64, stats
        assert alone < 8, stats  # most are merged,
        assert stats["merged_requests"] < 32, stats  # 16 callers at a time sharing requests


def test_batching_options_are_checked(server):
    with pytest.raises(sonic.InvalidArgument, match="unknown key 'max_rows'"):
        sonic.Client(server.grpc, batching={"identity_fp32": {"max_rows": 4}})
    with pytest.raises(sonic.InvalidArgument, match="accumulated_count_input"):
        sonic.Client(server.grpc, batching={"identity_fp32": {"ragged": {"source_input": "X"}}})
    with pytest.raises(sonic.InvalidArgument, match="must be a dict"):
        sonic.Client(server.grpc, batching=["identity_fp32"])
    # True asks for the defaults, False for none.
    with sonic.Client(server.grpc, batching={"identity_fp32": True, "simple": False}) as client:
        assert client.infer("identity_fp32", {"INPUT0": rows(0, 2)})["OUTPUT0"].shape == (2, 4)


def test_infer_chunked_joins_the_chunks_in_order(server):
    batch = rows(0, 100)
    with sonic.Client(server.grpc) as client:
        result = client.infer_chunked("identity_fp32", {"INPUT0": batch}, rows=10,
                                      max_in_flight=3)
        np.testing.assert_array_equal(result["OUTPUT0"], batch)
        assert client.stats()["requests"] == 10  # a chunk counts once
        with pytest.raises(sonic.InvalidArgument):
            client.infer_chunked("identity_fp32", {"INPUT0": batch}, rows=-1)


def test_a_preferred_endpoint_takes_the_models_requests(server, second_server):
    endpoints = [server.grpc, second_server.grpc]
    with sonic.Client(endpoints, preferred={"identity_fp32": [second_server.grpc]}) as client:
        for i in range(20):
            client.infer("identity_fp32", {"INPUT0": rows(i, 1)})
        attempts = {e["url"]: e["attempts"] for e in client.stats()["endpoints"]}
        assert attempts == {server.grpc: 0, second_server.grpc: 20}


def test_balancing_spreads_requests_and_is_named(server, second_server):
    endpoints = [server.grpc, second_server.grpc]
    with sonic.Client(endpoints, balancing="power_of_two_choices") as client:
        futures = [client.infer_async("identity_fp32", {"INPUT0": rows(i, 1)})
                   for i in range(200)]
        for future in futures:
            future.result(30)
        attempts = [e["attempts"] for e in client.stats()["endpoints"]]
        assert sum(attempts) == 200 and min(attempts) > 0, attempts
    with pytest.raises(sonic.InvalidArgument, match="power_of_two_choices"):
        sonic.Client(endpoints, balancing="random")


def test_a_pinned_model_refuses_another_version_and_configuration(server):
    inputs = {"INPUT0": np.ones((1, 16), np.int32), "INPUT1": np.ones((1, 16), np.int32)}
    with sonic.Client(server.grpc) as probe:
        checksum = probe.model_config_checksum("simple")
    assert len(checksum) == 16
    pinned = {"simple": {"version": "1", "config_checksum": checksum}}
    with sonic.Client(server.grpc, pins=pinned) as client:
        assert client.infer("simple", inputs)["OUTPUT0"][0, 0] == 2
        with pytest.raises(sonic.FailedPrecondition):
            client.infer("simple", inputs, version="2")
    other = {"simple": {"config_checksum": "0" * 16}}
    with sonic.Client(server.grpc, pins=other, max_attempts=1) as client:
        with pytest.raises(sonic.Error, match="checksum|configuration"):
            client.infer("simple", inputs, timeout=5)


def test_each_address_of_a_name_is_an_endpoint(server):
    port = server.grpc.rsplit(":", 1)[1]
    with sonic.Client("grpc://localhost:" + port, each_address=True,
                      resolve_interval=60, max_addresses=8, connect_timeout=1) as client:
        for i in range(5):
            client.infer("identity_fp32", {"INPUT0": rows(i, 1)})
        urls = [e["url"] for e in client.stats()["endpoints"]]
        assert "grpc://127.0.0.1:" + port in urls, urls


def test_breaker_and_compression_options_are_taken(server, dead_url):
    with sonic.Client([dead_url, server.grpc], eject_after=1, cool_down=0.05,
                      probe_interval=0.05, model_recheck=1, adaptive_compression=False,
                      connect_timeout=1) as client:
        for i in range(5):
            client.infer("identity_fp32", {"INPUT0": rows(i, 1)})
        dead = next(e for e in client.stats()["endpoints"] if e["url"] == dead_url)
        assert dead["ejections"] >= 1
    with pytest.raises(sonic.InvalidArgument, match="cool_down"):
        sonic.Client(server.grpc, cool_down=-1)


def test_connection_options_are_taken_and_checked(server):
    with sonic.Client(server.grpc, keepalive_timeout=5, reconnect_backoff=0.05,
                      reconnect_backoff_max=1, stream_window_bytes=1 << 20,
                      connection_window_bytes=1 << 24, shm_min_region_bytes=1 << 16) as client:
        np.testing.assert_array_equal(
            client.infer("identity_fp32", {"INPUT0": rows(0, 2)})["OUTPUT0"], rows(0, 2))
    for window in (0, 1 << 31):
        with pytest.raises(sonic.InvalidArgument, match="stream_window_bytes"):
            sonic.Client(server.grpc, stream_window_bytes=window)
    with pytest.raises(sonic.InvalidArgument, match="reconnect_backoff"):
        sonic.Client(server.grpc, reconnect_backoff=-1)
