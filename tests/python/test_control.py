"""Health, metadata, configuration, statistics and the repository, in KServe's JSON shapes."""

import numpy as np

import sonic


def test_control_calls(server):
    with sonic.Client(server.grpc) as client:
        assert client.server_live() and client.server_ready()
        assert client.model_ready("simple") and not client.model_ready("no_such_model")
        metadata = client.server_metadata()
        assert metadata["name"] and "model_repository" in metadata["extensions"]
        model = client.model_metadata("simple")
        assert model["name"] == "simple"
        assert model["inputs"][0] == {"name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]}
        config = client.model_config("simple")
        assert config["name"] == "simple"
        names = {m["name"] for m in client.repository_index()}
        assert {"simple", "identity_fp32", "identity_bytes"} <= names
        client.infer("simple", {"INPUT0": np.ones((1, 16), np.int32),
                                "INPUT1": np.ones((1, 16), np.int32)})
        (stats,) = client.model_statistics("simple")
        assert stats["inference_count"] >= 1
        assert stats["inference_stats"]["success"]["count"] >= 1


def test_client_statistics(server):
    with sonic.Client(server.grpc) as client:
        for _ in range(3):
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)})
        stats = client.stats()
        assert stats["requests"] == 3 and stats["succeeded"] == 3
        assert stats["endpoints"][0]["url"] == server.grpc


def test_option_names_are_listed_and_each_is_documented():
    names = sonic.client_option_names()
    assert "timeout" in names and "fallback_repository" in names
    undocumented = [name for name in names if name not in sonic.Client.__doc__]
    assert not undocumented, "not in help(sonic.Client): %s" % undocumented
