"""A bare sonic-server (no repository) hosts Triton's example models under their names; they
answer as the configs Triton publishes (docs/examples/model_repository, copied in
model_repository/) say: what ModelConfig answers, and what the clients that read it do with it.
perf_analyzer reads ModelConfig to shape its load (client perf_analyzer src/model_parser.cc:
max_batch_size decides whether -b may exceed 1, a sequence_batching block makes the model a
sequence model, which gets correlation ids, START and END)."""

import numpy as np
import pytest

from conftest import Server
from test_triton_repository import bytes_elements, infer, output, published_config, stub

# Triton's published example models the bare server hosts (repeat_int32 is the QA repository's
# decoupled model: no published config to compare).
EXAMPLES = ["simple", "simple_sequence", "simple_string", "simple_identity"]


@pytest.fixture(scope="module")
def bare_server():
    started = Server()
    yield started
    started.stop()


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_built_in_examples_answer_the_published_configs(bare_server, pb, name):
    answer = stub(bare_server, pb).ModelConfig(pb[1].ModelConfigRequest(name=name)).config
    expected = published_config(pb, name)
    if expected.HasField("sequence_batching") and \
            not expected.sequence_batching.max_sequence_idle_microseconds:
        # Triton's NormalizeModelConfig: SEQUENCE_IDLE_DEFAULT_MICROSECONDS.
        expected.sequence_batching.max_sequence_idle_microseconds = 1000000
    for field, value in expected.ListFields():
        # platform and backend name what runs the model: here sonic's own code, not the ONNX
        # or Python file the published repository holds.
        if field.name in ("platform", "backend", "instance_group"):
            continue
        assert getattr(answer, field.name) == value, field.name
    assert [g.kind for g in answer.instance_group] == [pb[0].ModelInstanceGroup.KIND_CPU]


@pytest.mark.parametrize("name,dims", [("simple", [-1, 16]), ("simple_string", [-1, 16]),
                                       ("simple_sequence", [-1, 1]),
                                       ("simple_identity", [-1, -1])])
def test_the_metadata_shows_the_batch_dimension(bare_server, pb, name, dims):
    # Triton's ModelMetadata puts -1 before the config's dims of a batching model.
    metadata = stub(bare_server, pb).ModelMetadata(pb[1].ModelMetadataRequest(name=name))
    for tensor in list(metadata.inputs) + list(metadata.outputs):
        assert list(tensor.shape) == dims, tensor.name


def test_simple_takes_a_batch_of_two(bare_server, pb):
    # perf_analyzer -b 2: INPUT0 and INPUT1 of shape [2, 16].
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = np.full((2, 16), 3, dtype=np.int32)
    answer = infer(bare_server, pb, "simple", {"INPUT0": a, "INPUT1": b})
    total, difference = output(answer, "OUTPUT0", np.int32), output(answer, "OUTPUT1", np.int32)
    assert list(total[0].shape) == [2, 16] and (total[1] == a + b).all()
    assert (difference[1] == a - b).all()


def test_simple_refuses_a_batch_past_its_max_batch_size(bare_server, pb):
    a = np.zeros((9, 16), dtype=np.int32)
    with pytest.raises(Exception) as refused:
        infer(bare_server, pb, "simple", {"INPUT0": a, "INPUT1": a})
    # Triton's core (infer_request.cc): "inference request batch-size must be <= 8 for 'simple'".
    assert refused.value.code().name == "INVALID_ARGUMENT"
    assert refused.value.details() == "inference request batch-size must be <= 8 for 'simple'"


def test_simple_string_takes_a_batch_of_two(bare_server, pb):
    a = np.array([[str(i) for i in range(16)], [str(-i) for i in range(16)]])
    b = np.array([["2"] * 16] * 2)
    answer = infer(bare_server, pb, "simple_string", {"INPUT0": a, "INPUT1": b})
    tensor, raw = output(answer, "OUTPUT0", None)
    assert list(tensor.shape) == [2, 16]
    assert bytes_elements(raw) == [str(int(x) + 2) for x in a.flat]


def test_a_sequence_of_ten_as_perf_analyzer_sends_it(bare_server, pb):
    # perf_analyzer --sequence-length 10: one correlation id, START on the first request, END
    # on the last, an INPUT each time.
    values = list(range(10, 20))
    got = []
    for i, value in enumerate(values):
        answer = infer(bare_server, pb, "simple_sequence",
                       {"INPUT": np.full((1, 1), value, dtype=np.int32)},
                       parameters={"sequence_id": 42, "sequence_start": i == 0,
                                   "sequence_end": i == len(values) - 1})
        got.append(int(output(answer, "OUTPUT", np.int32)[1][0][0]))
    assert got == [values[0] + 1] + values[1:]


def test_the_server_names_itself_as_id_says(bare_server, pb):
    # tritonserver's --id ("Identifier for this server", default "triton") is the name its
    # ServerMetadata answers; Triton's health examples check it. sonic-server's is its own.
    assert stub(bare_server, pb).ServerMetadata(pb[1].ServerMetadataRequest()).name == \
        "sonic-server"
    named = Server("--id", "triton")
    try:
        assert stub(named, pb).ServerMetadata(pb[1].ServerMetadataRequest()).name == "triton"
    finally:
        named.stop()
