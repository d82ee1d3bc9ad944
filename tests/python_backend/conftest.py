"""Fixtures of the Python backend's tests: a copy of models/ with an ONNX model made here (onnx's
helper), sonic-server children on loopback ports they pick (tests/triton_repository's Server), and
grpcio stubs of sonic's protos. The build (CMakeLists.txt beside this file) sets SONIC_SERVER,
SONIC_PROTO_DIR, SONIC_PYTHON (the interpreter the stubs run under) and PYTHONPATH."""

import importlib.util
import os
import shutil
import sys

import numpy as np
import pytest
from onnx import TensorProto, checker, helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import stubs  # noqa: E402


def _triton_repository_conftest():
    path = os.path.join(HERE, "..", "triton_repository", "conftest.py")
    sys.path.insert(0, os.path.dirname(path))  # its own imports
    spec = importlib.util.spec_from_file_location("triton_repository_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Server = _triton_repository_conftest().Server


def add_sub_onnx(path):
    """OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 on FP32 [batch, 4]."""
    shape = ("batch", 4)
    x = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("INPUT0", "INPUT1")]
    y = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
         for n in ("OUTPUT0", "OUTPUT1")]
    nodes = [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
             helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])]
    model = helper.make_model(helper.make_graph(nodes, "add_sub", x, y),
                              opset_imports=[helper.make_opsetid("", 13)])
    checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save(model, path)


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("python_backend") / "models"
    shutil.copytree(os.path.join(HERE, "models"), root)
    add_sub_onnx(str(root / "onnx_add_sub" / "1" / "model.onnx"))
    (root / "onnx_add_sub" / "config.pbtxt").write_text(
        'name: "onnx_add_sub"\nbackend: "onnxruntime"\nmax_batch_size: 8\n')
    # An ensemble's version directory is empty (git keeps none).
    for ensemble in ("pipeline", "paced_pipeline"):
        os.makedirs(root / ensemble / "1", exist_ok=True)
    return str(root)


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    """(model_config_pb2, grpc_service_pb2, grpc_service_pb2_grpc) of sonic's proto/."""
    return stubs.load_stubs(os.environ["SONIC_PROTO_DIR"], str(tmp_path_factory.mktemp("stubs")))


@pytest.fixture(scope="module")
def server(repository):
    started = Server("--model-repository", repository, "--model-control-mode", "explicit",
                     "--load-model", "*")
    yield started
    started.stop()


def tensor(pb, request, name, array):
    """Adds `array` to a ModelInferRequest as input `name`, in raw_input_contents."""
    datatypes = {np.dtype(np.float32): "FP32", np.dtype(np.int32): "INT32",
                 np.dtype(np.uint32): "UINT32",
                 np.dtype(np.object_): "BYTES"}
    request.inputs.add(name=name, datatype=datatypes[array.dtype], shape=list(array.shape))
    if array.dtype == np.object_:
        request.raw_input_contents.append(b"".join(
            len(item).to_bytes(4, "little") + item for item in array.reshape(-1)))
    else:
        request.raw_input_contents.append(np.ascontiguousarray(array).tobytes())
