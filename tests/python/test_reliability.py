"""Retries, other endpoints and the in-process fallback, from Python."""

import os

import numpy as np
import pytest

import sonic


def test_a_dead_endpoint_is_retried_on_a_live_one(server, dead_url):
    with sonic.Client([dead_url, server.grpc], connect_timeout=1) as client:
        for i in range(10):
            result = client.infer("simple", {"INPUT0": np.full((1, 16), i, np.int32),
                                             "INPUT1": np.ones((1, 16), np.int32)})
            assert result["OUTPUT0"][0, 0] == i + 1
        stats = client.stats()
        assert stats["succeeded"] == 10 and stats["failed"] == 0
        dead = next(e for e in stats["endpoints"] if e["url"] == dead_url)
        assert dead["failures"] >= 1
        assert stats["retries"] >= 1


def test_without_retries_a_dead_endpoint_fails(dead_url):
    with sonic.Client(dead_url, max_attempts=1) as client:
        with pytest.raises(sonic.Unavailable):
            client.infer("simple", {"INPUT0": np.ones((1, 16), np.int32),
                                    "INPUT1": np.ones((1, 16), np.int32)})


def test_the_fallback_runs_the_repositorys_model_in_process(models, dead_url):
    reference = os.path.join(os.path.dirname(models), "reference", "jet_mlp_onnx")
    features = np.load(os.path.join(reference, "features.npy"))
    expected = np.load(os.path.join(reference, "probabilities.npy"))
    with sonic.Client(dead_url, fallback_repository=models, connect_timeout=1) as client:
        result = client.infer("jet_mlp_onnx", {"features": features})
        assert result.executed_on == "local"
        np.testing.assert_allclose(result["probabilities"], expected, rtol=1e-5, atol=1e-6)
        assert client.stats()["fallbacks"] == 1
        future = client.infer_async("jet_mlp_onnx", {"features": features})
        assert future.result(30).executed_on == "local"


def test_fallback_threads_zero_runs_on_the_cores_the_process_may_use(models, dead_url):
    # 0: sonic::usable_cores() threads (the affinity mask, limited by the cgroup quota).
    with sonic.Client(dead_url, fallback_repository=models, fallback_threads=0,
                      connect_timeout=1) as client:
        features = np.zeros((1, 16), np.float32)
        assert client.infer("jet_mlp_onnx", {"features": features}).executed_on == "local"
