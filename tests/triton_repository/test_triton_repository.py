"""Triton's example model repository, its configs as published, served by sonic-server as
tritonserver serves it, and run by a client's fallback. What Triton answers is taken from its
code (core src/model_config_utils.cc, src/server.cc, model_repository_manager.cc; server
src/grpc/grpc_server.cc, src/classification.cc), quoted where it is checked."""

import shutil
import uuid

import grpc
import numpy as np
import pytest
from google.protobuf import text_format

import make_models

ALL_MODELS = {"simple", "simple_int8", "simple_string", "simple_sequence",
              "simple_dyna_sequence", "simple_identity", "densenet_onnx", "inception_onnx"}
# The models sonic's backends run: simple_dyna_sequence names TensorFlow, which sonic has no
# backend for.
SERVED = {"simple", "simple_int8", "simple_string", "simple_sequence", "simple_identity",
          "densenet_onnx", "inception_onnx"}


def stub(server, pb):
    return pb[2].GRPCInferenceServiceStub(server.channel())


def index(server, pb, ready=False):
    answer = stub(server, pb).RepositoryIndex(pb[1].RepositoryIndexRequest(ready=ready))
    return {m.name: m for m in answer.models}


def test_the_index_lists_every_model_directory_with_its_state(triton_server, pb):
    # Triton lists every directory of the repository (RepositoryIndex), a model that failed
    # with state UNAVAILABLE and the reason it failed.
    models = index(triton_server, pb)
    assert set(models) == ALL_MODELS
    for name in SERVED:
        assert models[name].state == "READY", (name, models[name].reason)
    for name in ALL_MODELS - SERVED:
        assert models[name].state == "UNAVAILABLE"
        assert models[name].reason, name
    assert "tensorflow" in models["simple_dyna_sequence"].reason
    assert set(index(triton_server, pb, ready=True)) == SERVED


def test_readiness_is_strict_and_the_health_service_says_so(triton_server, pb, health_pb):
    # tritonserver's --strict-readiness (default true): not ready while a model failed to load;
    # live all the same. grpc.health.v1's Check answers from readiness, whatever service it
    # names (server src/grpc/grpc_server.cc, RegisterHealthCheck).
    service = stub(triton_server, pb)
    assert service.ServerLive(pb[1].ServerLiveRequest()).live
    assert not service.ServerReady(pb[1].ServerReadyRequest()).ready
    assert service.ModelReady(pb[1].ModelReadyRequest(name="simple")).ready
    assert not service.ModelReady(pb[1].ModelReadyRequest(name="simple_dyna_sequence")).ready
    health = health_pb[1].HealthStub(triton_server.channel())
    status = health_pb[0].HealthCheckResponse
    for name in ("", "inference.GRPCInferenceService", "simple"):
        answer = health.Check(health_pb[0].HealthCheckRequest(service=name), timeout=5)
        assert answer.status == status.NOT_SERVING
    # Read without a token, a health check holds no more than a service name.
    with pytest.raises(grpc.RpcError) as oversized:
        health.Check(health_pb[0].HealthCheckRequest(service="x" * 100000), timeout=5)
    assert oversized.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Triton serves Check only.
    with pytest.raises(grpc.RpcError) as watch:
        next(health.Watch(health_pb[0].HealthCheckRequest(), timeout=5))
    assert watch.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_repository_whose_models_all_load_is_ready(tmp_path, pb, health_pb):
    from conftest import Server
    repository = make_models.make(str(tmp_path / "repository"))
    for unserved in ALL_MODELS - SERVED:
        shutil.rmtree(tmp_path / "repository" / unserved)
    server = Server("--model-repository", repository)
    try:
        assert stub(server, pb).ServerReady(pb[1].ServerReadyRequest()).ready
        health = health_pb[1].HealthStub(server.channel())
        answer = health.Check(health_pb[0].HealthCheckRequest(), timeout=5)
        assert answer.status == health_pb[0].HealthCheckResponse.SERVING
    finally:
        server.stop()


def test_without_strict_readiness_the_server_is_ready_once_it_listens(triton_repository, pb):
    from conftest import Server
    server = Server("--model-repository", triton_repository, "--strict-readiness", "false")
    try:
        assert stub(server, pb).ServerReady(pb[1].ServerReadyRequest()).ready
    finally:
        server.stop()


def published_config(pb, name):
    with open(f"{make_models.CONFIGS}/{name}/config.pbtxt") as f:
        return text_format.Parse(f.read(), pb[0].ModelConfig())


@pytest.mark.parametrize("name", sorted(SERVED))
def test_model_config_answers_every_field_the_file_set(triton_server, pb, name):
    answer = stub(triton_server, pb).ModelConfig(pb[1].ModelConfigRequest(name=name)).config
    published = published_config(pb, name)
    expected = published.__class__()
    expected.CopyFrom(published)
    if published.HasField("sequence_batching") and \
            not published.sequence_batching.max_sequence_idle_microseconds:
        # NormalizeModelConfig: SEQUENCE_IDLE_DEFAULT_MICROSECONDS.
        expected.sequence_batching.max_sequence_idle_microseconds = 1000000
    for field, value in expected.ListFields():
        if field.name == "instance_group":  # completed below
            continue
        assert getattr(answer, field.name) == value, field.name
    # Triton's defaults (core src/model_config_utils.cc): the backend from the platform, the
    # model file, the latest version, and with no instance_group one group named after the
    # model, KIND_CPU on a host without GPUs, of 2 instances for ONNX Runtime and 1 for the
    # Python backend (SetDefaultInstanceCount); a group without a name is "<model>_<index>".
    python = published.backend == "python"
    assert answer.backend == ("python" if python else "onnxruntime")
    assert answer.default_model_filename == ("model.py" if python else "model.onnx")
    assert answer.version_policy.WhichOneof("policy_choice") == "latest"
    assert answer.version_policy.latest.num_versions == 1
    groups = [(g.name, g.kind, g.count) for g in answer.instance_group]
    kind_cpu = pb[0].ModelInstanceGroup.KIND_CPU
    count = 1 if python else 2
    if published.instance_group:
        assert groups == [(f"{name}_{i}", g.kind, count)
                          for i, g in enumerate(published.instance_group)]
    else:
        assert groups == [(name, kind_cpu, count)]


def test_every_field_of_a_config_comes_back(tmp_path, pb):
    # The fields sonic does not act on are answered as the file gave them: CMS's SonicTriton
    # reads the checksum agent of model_repository_agents, and tools read the others.
    from conftest import Server
    repository = make_models.make(str(tmp_path / "repository"))
    extra = """
optimization { execution_accelerators { cpu_execution_accelerator [ { name: "openvino" } ] }
               input_pinned_memory { enable: false } }
model_warmup [ { name: "zeros" batch_size: 1
                 inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } } } ]
model_repository_agents { agents [ { name: "checksum"
                                     parameters { key: "MD5:1/model.onnx" value: "abc" } } ] }
response_cache { enable: true }
model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" }
                                   histogram_options { buckets: [ 1, 10, 100 ] } } ] }
instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 2 } ] } } ]
dynamic_batching { max_queue_delay_microseconds: 100 }
"""
    with open(tmp_path / "repository" / "simple" / "config.pbtxt", "a") as f:
        f.write(extra)
    server = Server("--model-repository", repository)
    try:
        answer = stub(server, pb).ModelConfig(pb[1].ModelConfigRequest(name="simple")).config
    finally:
        server.stop()
    given = text_format.Parse(extra, pb[0].ModelConfig())
    for field in ("optimization", "model_warmup", "model_repository_agents", "response_cache",
                  "model_metrics"):
        assert getattr(answer, field) == getattr(given, field), field
    assert answer.instance_group[0].rate_limiter == given.instance_group[0].rate_limiter
    assert answer.dynamic_batching.max_queue_delay_microseconds == 100
    assert list(answer.dynamic_batching.preferred_batch_size) == [8]  # Triton's default


def infer(server, pb, model, inputs, outputs=(), parameters=None):
    """inputs: {name: array}; outputs: (name, class_count) pairs."""
    request = pb[1].ModelInferRequest(model_name=model)
    for name, array in inputs.items():
        tensor = request.inputs.add(name=name, datatype=datatype(array), shape=array.shape)
        del tensor
        request.raw_input_contents.append(raw_contents(array))
    for name, classes in outputs:
        wanted = request.outputs.add(name=name)
        if classes:
            wanted.parameters["classification"].int64_param = classes
    for key, value in (parameters or {}).items():
        if isinstance(value, bool):
            request.parameters[key].bool_param = value
        elif isinstance(value, int):
            request.parameters[key].int64_param = value
        else:
            request.parameters[key].string_param = value
    return stub(server, pb).ModelInfer(request, timeout=30)


def datatype(array):
    return {np.int32: "INT32", np.int8: "INT8", np.float32: "FP32",
            np.str_: "BYTES"}[array.dtype.type]


def raw_contents(array):
    """An array's raw_input_contents: BYTES elements each a 4-byte little-endian length and the
    bytes (KServe v2's binary form), other types their bytes."""
    if array.dtype.type is np.str_:
        return b"".join(len(e.encode()).to_bytes(4, "little") + e.encode() for e in array.flat)
    return np.ascontiguousarray(array).tobytes()


def output(answer, name, dtype):
    for i, tensor in enumerate(answer.outputs):
        if tensor.name == name:
            return tensor, np.frombuffer(answer.raw_output_contents[i], dtype=dtype).reshape(
                tuple(tensor.shape)) if dtype else answer.raw_output_contents[i]
    raise KeyError(name)


def bytes_elements(raw):
    items, at = [], 0
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 4], "little")
        items.append(raw[at + 4:at + 4 + n].decode())
        at += 4 + n
    return items


@pytest.mark.parametrize("model,dtype", [("simple", np.int32), ("simple_int8", np.int8)])
def test_simple_adds_and_subtracts(triton_server, pb, model, dtype):
    # Triton's simple_grpc_infer_client: INPUT0 = 0..15, INPUT1 = ones.
    a = np.arange(16, dtype=dtype).reshape(1, 16)
    b = np.ones((1, 16), dtype=dtype)
    answer = infer(triton_server, pb, model, {"INPUT0": a, "INPUT1": b})
    assert (output(answer, "OUTPUT0", dtype)[1] == a + b).all()
    assert (output(answer, "OUTPUT1", dtype)[1] == a - b).all()


def test_simple_string_adds_and_subtracts_decimal_strings(triton_server, pb):
    # Triton's simple_grpc_string_infer_client: INPUT0 = "0".."15", INPUT1 = "1"s; the answers
    # are the sums and differences, as decimal strings.
    a = np.array([[str(i) for i in range(16)]])
    b = np.array([["1"] * 16])
    answer = infer(triton_server, pb, "simple_string", {"INPUT0": a, "INPUT1": b})
    tensor, raw = output(answer, "OUTPUT0", None)
    assert tensor.datatype == "BYTES" and list(tensor.shape) == [1, 16]
    assert bytes_elements(raw) == [str(i + 1) for i in range(16)]
    assert bytes_elements(output(answer, "OUTPUT1", None)[1]) == [str(i - 1) for i in range(16)]


def test_simple_identity_gives_back_its_strings(triton_server, pb):
    # Triton's Python simple_identity, its model.py run in a stub process of the server's.
    strings = np.array([["hits", "", "żółw", "tracks"]], dtype=np.str_)
    answer = infer(triton_server, pb, "simple_identity", {"INPUT0": strings})
    tensor, raw = output(answer, "OUTPUT0", None)
    assert list(tensor.shape) == [1, 4] and tensor.datatype == "BYTES"
    assert bytes_elements(raw) == list(strings.flat)


def test_the_sequence_examples_get_what_triton_answers(triton_server, pb):
    # Triton's simple_grpc_sequence_sync_infer_client: two integer sequences and one string one,
    # each started with 0, 100 and 20 then given the values; expected "1 : 101 : 21" first, then
    # each sequence's input (the model computes (INPUT + START) * READY).
    values = [11, 7, 5, 3, 2, 0, 1]

    def run(first, sign, sequence_id):
        outputs = []
        sequence = [first] + [sign * v for v in values]
        for i, value in enumerate(sequence):
            answer = infer(triton_server, pb, "simple_sequence",
                           {"INPUT": np.full((1, 1), value, dtype=np.int32)},
                           parameters={"sequence_id": sequence_id, "sequence_start": i == 0,
                                       "sequence_end": i == len(sequence) - 1})
            outputs.append(int(output(answer, "OUTPUT", np.int32)[1][0][0]))
        return outputs

    assert run(0, 1, 1000) == [1] + values
    assert run(100, -1, 1001) == [101] + [-v for v in values]
    assert run(20, -1, str(uuid.uuid4())) == [21] + [-v for v in values]


def check_classes(texts, scores, k, label):
    order = np.argsort(-scores, kind="stable")[:k]
    # "value:index:label", the value as std::to_string writes it (six decimals).
    expected = ["%f:%d:%s %d" % (scores[i], i, label, i) for i in order]
    assert [t.rsplit(":", 2)[1:] for t in texts] == [e.rsplit(":", 2)[1:] for e in expected]
    for text, e in zip(texts, expected):
        assert float(text.split(":")[0]) == pytest.approx(float(e.split(":")[0]), rel=1e-5, abs=1e-5)
        assert len(text.split(":")[0].split(".")[1]) == 6


def test_classification_gives_the_top_classes_with_their_labels(triton_server, pb):
    rng = np.random.default_rng(3)
    image = rng.random((1, 3, 224, 224), dtype=np.float32)
    answer = infer(triton_server, pb, "densenet_onnx", {"data_0": image},
                   outputs=[("fc6_1", 3)])
    tensor, raw = output(answer, "fc6_1", None)
    # Batched model: [batch, k], BYTES.
    assert tensor.datatype == "BYTES" and list(tensor.shape) == [1, 3]
    check_classes(bytes_elements(raw), make_models.densenet_scores(image)[0], 3, "densenet class")

    picture = rng.random((299, 299, 3), dtype=np.float32)
    answer = infer(triton_server, pb, "inception_onnx", {"input:0": picture},
                   outputs=[("InceptionV3/Predictions/Softmax:0", 5)])
    tensor, raw = output(answer, "InceptionV3/Predictions/Softmax:0", None)
    assert tensor.datatype == "BYTES" and list(tensor.shape) == [5]  # no batch dimension
    check_classes(bytes_elements(raw), make_models.inception_scores(picture), 5, "inception class")


def test_a_class_count_that_is_not_a_positive_int64_is_refused(triton_server, pb):
    request = pb[1].ModelInferRequest(model_name="densenet_onnx")
    request.inputs.add(name="data_0", datatype="FP32", shape=[1, 3, 224, 224])
    request.raw_input_contents.append(np.zeros((1, 3, 224, 224), np.float32).tobytes())
    request.outputs.add(name="fc6_1").parameters["classification"].int64_param = 0
    with pytest.raises(grpc.RpcError) as refused:
        stub(triton_server, pb).ModelInfer(request, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid value for 'classification' parameter" in refused.value.details()


def test_the_fallback_reads_the_same_repository_the_same_way(triton_repository):
    # No server at this address: every request runs in the client's fallback, from the very
    # repository sonic-server served above. (Sanitizer builds have no Python package.)
    sonic = pytest.importorskip("sonic")
    client = sonic.Client("grpc://127.0.0.1:9", fallback_repository=triton_repository,
                          connect_timeout=0.2)
    try:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        result = client.infer("simple", {"INPUT0": a, "INPUT1": a})
        assert (result.as_numpy("OUTPUT0") == 2 * a).all()
        image = np.random.default_rng(4).random((1, 3, 224, 224), dtype=np.float32)
        result = client.infer("densenet_onnx", {"data_0": image},
                              outputs=[sonic.InferRequestedOutput("fc6_1", class_count=4)])
        texts = [t.decode() if isinstance(t, bytes) else t
                 for t in result.as_numpy("fc6_1").ravel()]
        check_classes(texts, make_models.densenet_scores(image)[0], 4, "densenet class")
        # Triton's sequence example, in-process: the fallback's sequence batcher gives the model
        # START and READY as the server's does.
        values = [0, 11, 7, 5, 3, 2, 0, 1]
        got = []
        for i, value in enumerate(values):
            result = client.infer("simple_sequence", {"INPUT": np.full((1, 1), value, np.int32)},
                                  parameters={"sequence_id": 1000, "sequence_start": i == 0,
                                              "sequence_end": i == len(values) - 1})
            got.append(int(result.as_numpy("OUTPUT")[0][0]))
        assert got == [1] + values[1:]
        assert client.stats()["fallbacks"] >= 2 + len(values)
    finally:
        client.close()


def test_the_health_check_needs_no_token_when_the_rest_does(tmp_path, pb, health_pb):
    # Kubernetes' gRPC probe sends no metadata; everything else still needs the token.
    from conftest import Server
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server = Server("--auth-token-file", str(token))
    try:
        health = health_pb[1].HealthStub(server.channel())
        answer = health.Check(health_pb[0].HealthCheckRequest(), timeout=5)
        assert answer.status == health_pb[0].HealthCheckResponse.SERVING  # built-in models
        with pytest.raises(grpc.RpcError) as refused:
            stub(server, pb).ServerReady(pb[1].ServerReadyRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        server.stop()
