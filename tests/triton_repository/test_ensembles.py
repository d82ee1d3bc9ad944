"""Ensembles (platform "ensemble") served by sonic-server and run by a client's fallback, checked
with grpcio against what Triton's ensemble scheduler does (core src/ensemble_scheduler/):

- steps run when their tensors are there, independent ones at the same time;
- only the steps the requested outputs need run (Triton prunes the others);
- a composing model out of service makes the ensemble unready;
- ValidateEnsembleConfig's refusals, in its words;
- statistics count each composing model's own executions.

The networks are ONNX models made here with onnx's helper."""

import os

import grpc
import numpy as np
import pytest
from onnx import TensorProto, helper

import make_models
from conftest import Server
from test_triton_repository import index, infer, output, stub

FP32 = TensorProto.FLOAT


def unary(op, constant):
    """Y = X op constant, FP32 [batch, 4]."""
    x = helper.make_tensor_value_info("X", FP32, ("batch", 4))
    y = helper.make_tensor_value_info("Y", FP32, ("batch", 4))
    c = helper.make_tensor("c", FP32, [1], [constant])
    return helper.make_graph([helper.make_node(op, ["X", "c"], ["Y"])], op.lower(), [x], [y], [c])


def binary():
    """Z = A + B, FP32 [batch, 4]."""
    a, b = (helper.make_tensor_value_info(n, FP32, ("batch", 4)) for n in ("A", "B"))
    z = helper.make_tensor_value_info("Z", FP32, ("batch", 4))
    return helper.make_graph([helper.make_node("Add", ["A", "B"], ["Z"])], "add", [a, b], [z])


def onnx_model(root, name, graph, inputs, outputs):
    make_models.save(graph, os.path.join(root, name, "1", "model.onnx"))
    tensors = "".join(
        f'{kind} [{{ name: "{n}" data_type: TYPE_FP32 dims: [ 4 ] }}]\n'
        for kind, names in (("input", inputs), ("output", outputs)) for n in names)
    with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
        f.write(f'name: "{name}"\nbackend: "onnxruntime"\nmax_batch_size: 8\n{tensors}')


def ensemble(root, name, steps, inputs=("IN",), outputs=("OUT",), max_batch_size=8):
    """steps: (model, {model input: tensor}, {model output: tensor})."""
    os.makedirs(os.path.join(root, name, "1"), exist_ok=True)  # Triton wants one, empty
    tensors = "".join(
        f'{kind} [{{ name: "{n}" data_type: TYPE_FP32 dims: [ 4 ] }}]\n'
        for kind, names in (("input", inputs), ("output", outputs)) for n in names)
    text = ""
    for model, input_map, output_map in steps:
        maps = "".join(f'input_map {{ key: "{k}" value: "{v}" }}\n' for k, v in input_map.items())
        maps += "".join(f'output_map {{ key: "{k}" value: "{v}" }}\n'
                        for k, v in output_map.items())
        text += f'step [{{ model_name: "{model}" model_version: -1\n{maps}}}]\n'
    with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
        f.write(f'name: "{name}"\nplatform: "ensemble"\nmax_batch_size: {max_batch_size}\n'
                f'{tensors}ensemble_scheduling {{\n{text}}}\n')


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ensembles"))
    onnx_model(root, "double", unary("Mul", 2.0), ["X"], ["Y"])
    onnx_model(root, "plus_one", unary("Add", 1.0), ["X"], ["Y"])
    onnx_model(root, "add", binary(), ["A", "B"], ["Z"])
    # OUT = 2 IN + (IN + 1): two independent steps, then one that takes both.
    ensemble(root, "pipeline", [
        ("double", {"X": "IN"}, {"Y": "doubled"}),
        ("plus_one", {"X": "IN"}, {"Y": "shifted"}),
        ("add", {"A": "doubled", "B": "shifted"}, {"Z": "OUT"}),
    ], outputs=("OUT", "doubled"))
    # An ensemble of an ensemble: 2 (2 IN + IN + 1).
    ensemble(root, "nested", [
        ("pipeline", {"IN": "IN"}, {"OUT": "sum"}),
        ("double", {"X": "sum"}, {"Y": "OUT"}),
    ])
    # Refusals (ValidateEnsembleConfig's):
    ensemble(root, "unmapped_input", [("add", {"A": "IN"}, {"Z": "OUT"})])
    ensemble(root, "wrong_input", [("double", {"X": "IN", "W": "IN"}, {"Y": "OUT"})])
    ensemble(root, "too_large_batch", [("double", {"X": "IN"}, {"Y": "OUT"})], max_batch_size=16)
    ensemble(root, "missing_step", [("no_such_model", {"X": "IN"}, {"Y": "OUT"})])
    ensemble(root, "loop_a", [("loop_b", {"IN": "IN"}, {"OUT": "OUT"})])
    ensemble(root, "loop_b", [("loop_a", {"IN": "IN"}, {"OUT": "OUT"})])
    return root


@pytest.fixture(scope="module")
def server(repository):
    started = Server("--model-repository", repository, "--model-control-mode", "explicit",
                     "--load-model", "*")
    yield started
    started.stop()


def run(server, pb, model, x, outputs=()):
    answer = infer(server, pb, model, {"IN": x}, [(name, 0) for name in outputs])
    return {t.name: output(answer, t.name, np.float32)[1] for t in answer.outputs}


X = np.arange(8, dtype=np.float32).reshape(2, 4)


def test_an_ensemble_runs_its_steps_in_dataflow_order(server, pb):
    got = run(server, pb, "pipeline", X)
    assert set(got) == {"OUT", "doubled"}
    np.testing.assert_array_equal(got["OUT"], 3 * X + 1)
    np.testing.assert_array_equal(got["doubled"], 2 * X)
    np.testing.assert_array_equal(run(server, pb, "nested", X)["OUT"], 2 * (3 * X + 1))


def statistics(server, pb, model):
    answer = stub(server, pb).ModelStatistics(pb[1].ModelStatisticsRequest(name=model))
    return answer.model_stats[0].inference_stats.success.count


def test_only_the_steps_the_requested_outputs_need_run(server, pb):
    before = {m: statistics(server, pb, m) for m in ("double", "plus_one", "add")}
    got = run(server, pb, "pipeline", X, outputs=["doubled"])
    assert set(got) == {"doubled"}
    after = {m: statistics(server, pb, m) for m in ("double", "plus_one", "add")}
    # Each composing model counts its own executions; the pruned ones ran none.
    assert after == {"double": before["double"] + 1, "plus_one": before["plus_one"],
                     "add": before["add"]}


def test_the_ensemble_refusals_are_tritons(server, pb):
    models = index(server, pb)
    assert models["pipeline"].state == "READY"
    reasons = {name: models[name].reason for name in
               ("unmapped_input", "wrong_input", "too_large_batch", "missing_step", "loop_a")}
    assert all(models[name].state == "UNAVAILABLE" for name in reasons), reasons
    assert ("in ensemble unmapped_input, input B in model add is not mapped to any ensemble "
            "tensors") in reasons["unmapped_input"]
    assert ("in ensemble wrong_input, ensemble tensor IN is mapping to non-existing input W in "
            "model double") in reasons["wrong_input"]
    assert ("ensemble too_large_batch allows maximum batch size 16, but it contains model double "
            "which only allows maximum batch size to be 8") in reasons["too_large_batch"]
    assert "no_such_model" in reasons["missing_step"]
    assert "circular dependency" in reasons["loop_a"]


def test_a_composing_model_out_of_service_makes_the_ensemble_unready(server, pb):
    service = stub(server, pb)

    def ready(name):
        return service.ModelReady(pb[1].ModelReadyRequest(name=name)).ready

    assert ready("pipeline") and ready("nested")
    service.RepositoryModelUnload(pb[1].RepositoryModelUnloadRequest(model_name="plus_one"))
    try:
        assert not ready("pipeline") and not ready("nested")
        with pytest.raises(grpc.RpcError) as refused:
            run(server, pb, "pipeline", X)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "plus_one" in refused.value.details()
        state = index(server, pb)["pipeline"]
        assert state.state == "UNAVAILABLE" and "plus_one" in state.reason
    finally:
        service.RepositoryModelLoad(pb[1].RepositoryModelLoadRequest(model_name="plus_one"))
    assert ready("pipeline")
    np.testing.assert_array_equal(run(server, pb, "pipeline", X)["OUT"], 3 * X + 1)


def test_independent_steps_run_at_once_under_load(server, pb):
    # Many clients at once, each request's two first steps posted beside each other: every
    # answer is right and none waits on another (a pool full of waiting ensembles would hang).
    from concurrent.futures import ThreadPoolExecutor
    inputs = [np.full((1, 4), i, np.float32) for i in range(64)]
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda x: run(server, pb, "nested", x)["OUT"], inputs))
    for x, got in zip(inputs, answers):
        np.testing.assert_array_equal(got, 2 * (3 * x + 1))


def test_the_fallback_runs_the_same_ensembles_with_the_same_answers(server, pb, repository):
    sonic = pytest.importorskip("sonic")  # sanitizer builds have no Python package
    client = sonic.Client("grpc://127.0.0.1:9", fallback_repository=repository,
                          connect_timeout=0.2)
    try:
        for model in ("pipeline", "nested"):
            served = run(server, pb, model, X)["OUT"]
            local = client.infer(model, {"IN": X}).as_numpy("OUT")
            assert served.tobytes() == np.asarray(local).tobytes()
        with pytest.raises(Exception) as refused:
            client.infer("missing_step", {"IN": X})
        assert "no_such_model" in str(refused.value)
    finally:
        client.close()


def test_unload_dependents_takes_the_steps_no_other_model_runs(repository, pb):
    """Triton's unload_dependents (TRITONSERVER_ServerUnloadModelAndDependents), as
    tritonclient.grpc sends it: the ensemble's composing models go with it, unless a model still
    in service runs them."""
    started = Server("--model-repository", repository, "--model-control-mode", "explicit",
                     "--load-model", "nested")
    try:
        service = stub(started, pb)

        def ready(name):
            return service.ModelReady(pb[1].ModelReadyRequest(name=name)).ready

        def unload(name, dependents):
            request = pb[1].RepositoryModelUnloadRequest(model_name=name)
            request.parameters["unload_dependents"].bool_param = dependents
            service.RepositoryModelUnload(request)

        assert all(ready(m) for m in ("nested", "pipeline", "double", "plus_one", "add"))
        unload("nested", False)
        assert not ready("nested") and ready("pipeline") and ready("double")
        service.RepositoryModelLoad(pb[1].RepositoryModelLoadRequest(model_name="nested"))
        unload("pipeline", True)  # nested still runs double: it stays
        assert [ready(m) for m in ("pipeline", "double", "plus_one", "add")] == \
            [False, True, False, False]
    finally:
        started.stop()
