"""Pipelines with Python models: an ensemble of a Python preprocessing model, an ONNX network and
a Python postprocessing model (the usual shape of a Triton pipeline), served by sonic-server and
run in a client's fallback with the same answers; and a decoupled Python model over a gRPC
stream, as Triton's decoupled examples answer, alone and as a step whose responses go on through
the steps after it while it runs."""

import numpy as np
import pytest

from conftest import tensor
from test_python_backend import TIMEOUT, infer, stub

CALIBRATION = np.float32(0.75)  # preprocess's config parameter


def expected(hits):
    """What the three steps compute, in numpy: preprocess, onnx_add_sub, postprocess."""
    scaled = (np.log1p(np.maximum(hits, 0)) * CALIBRATION).astype(np.float32)
    squared = (scaled * scaled).astype(np.float32)
    total, spread = scaled + squared, scaled - squared
    logit = (total.sum(axis=1, keepdims=True)
             - 2 * np.abs(spread).sum(axis=1, keepdims=True))
    score = (1 / (1 + np.exp(-logit))).astype(np.float32)
    label = [[b"signal" if s > 0.5 else b"background"] for s in score[:, 0]]
    return score, label


HITS = np.array([[0.0, 1.5, 3.0, 40.0], [0.1, 0.0, 0.0, 0.2], [-1.0, 7.0, 0.5, 2.0]],
                dtype=np.float32)


def test_an_ensemble_of_python_and_onnx_models_computes_its_steps(server, pb):
    got = infer(server, pb, "pipeline", {"HITS": HITS})
    score, label = expected(HITS)
    np.testing.assert_allclose(got["SCORE"], score, rtol=1e-6)
    assert got["LABEL"].tolist() == label
    assert {b"signal", b"background"} == {row[0] for row in label}  # both decisions are met


def test_the_fallback_runs_the_pipeline_with_the_servers_answers(server, pb, repository):
    sonic = pytest.importorskip("sonic")  # sanitizer builds have no Python package
    served = infer(server, pb, "pipeline", {"HITS": HITS})
    client = sonic.Client("grpc://127.0.0.1:9", fallback_repository=repository,
                          connect_timeout=0.2)
    try:
        local = client.infer("pipeline", {"HITS": HITS})
        assert np.asarray(local.as_numpy("SCORE")).tobytes() == served["SCORE"].tobytes()
        labels = [bytes(s) if not isinstance(s, bytes) else s
                  for s in local.as_numpy("LABEL").ravel()]
        assert labels == served["LABEL"].ravel().tolist()
        assert client.stats()["fallbacks"] >= 1
    finally:
        client.close()


def test_each_step_counts_its_own_executions(server, pb):
    def successes(model):
        answer = stub(server, pb).ModelStatistics(
            pb[1].ModelStatisticsRequest(name=model), timeout=TIMEOUT)
        return answer.model_stats[0].inference_stats.success.count

    steps = ("pipeline", "preprocess", "onnx_add_sub", "postprocess")
    before = {m: successes(m) for m in steps}
    infer(server, pb, "pipeline", {"HITS": HITS})
    assert {m: successes(m) - before[m] for m in steps} == {m: 1 for m in steps}


def test_a_decoupled_python_model_answers_over_a_stream(server, pb):
    request = pb[1].ModelInferRequest(model_name="repeat", id="stream")
    tensor(pb, request, "IN", np.array([4, 5, 6], dtype=np.int32))
    answers = list(stub(server, pb).ModelStreamInfer(iter([request]), timeout=TIMEOUT))
    assert [a.error_message for a in answers] == [""] * 3
    values = [np.frombuffer(a.infer_response.raw_output_contents[0], np.int32).tolist()
              for a in answers]
    assert values == [[4], [5], [6]]
    assert {a.infer_response.id for a in answers} == {"stream"}


def test_a_decoupled_steps_responses_stream_through_the_ensemble_while_it_runs(server, pb,
                                                                               tmp_path):
    # "paced" sends its second response only once the test has the first: an ensemble that held
    # a step's responses until it returned would fail the request after 10 s.
    go_file = tmp_path / "go"
    request = pb[1].ModelInferRequest(model_name="paced_pipeline", id="paced")
    request.parameters["go_file"].string_param = str(go_file)
    tensor(pb, request, "IN", np.array([7, 8, 9], dtype=np.int32))
    answers = []
    for answer in stub(server, pb).ModelStreamInfer(iter([request]), timeout=TIMEOUT):
        answers.append(answer)
        go_file.touch()
    assert [a.error_message for a in answers] == [""] * 3
    values = [np.frombuffer(a.infer_response.raw_output_contents[0], np.int32).tolist()
              for a in answers]
    assert values == [[7], [8], [9]]
    assert {a.infer_response.id for a in answers} == {"paced"}
