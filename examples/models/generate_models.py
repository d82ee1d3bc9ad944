#!/usr/bin/env python3
"""Writes a Triton model repository of small physics-shaped networks, and their reference outputs.

    generate_models.py OUT_DIR

OUT_DIR/repository/<model>/config.pbtxt and <model>/1/model.{onnx,pt}: a layout that Triton,
sonic-server and sonic's in-process fallback all serve. OUT_DIR/reference/<model>/ holds, as .npy
files, one input batch per input and the outputs torch computes for it (the answers every server
must give). OUT_DIR/edge_cases/ holds models that try a backend's edges (TopK, a graph that works
at one batch size only, an output that is an input, a per-row output, a fixed first dimension).
The weights come from a fixed seed, so two runs write the same numbers. Needs only Debian's
python3-torch, python3-onnx and python3-numpy; nothing is downloaded.

The models:
  jet_mlp_{onnx,torch}     a jet tagger: 16 features -> 5 class probabilities (softmax)
  emtrk_cnn_{onnx,torch}   a ProtoDUNE EmTrkMichelId-shaped CNN: a 48x48 wire-time patch ->
                           em/track/none probabilities and a Michel-electron score
  edgeconv_torch           a ParticleNet-like EdgeConv network: 32 points of 7 features, a
                           k-nearest-neighbour graph rebuilt inside the model -> 5 classes
  calibrated_energy_torch  energies times a gain, plus an offset when one is sent: an optional
                           input (Optional[Tensor] = None in TorchScript, optional: true in
                           its config)
  <net>_{onnx,onnx13,torch} the field's network shapes (field_models.py: particlenet, part,
                           deeptau, deepjet, deepmet, gravnet), ONNX at opsets 11 and 13
  bdt_onnx                 a boosted decision tree as ai.onnx.ml's TreeEnsembleRegressor (bdt.py)
  track_energy_onnx        a stateful model (sequence_batching): the hits of a track come one
                           request each, and each answer is the mean energy of the track's hits
                           so far; the sum and the count are Triton-style implicit state
"""
import os
import sys
from typing import Optional

import numpy as np
import torch
from torch import nn

import bdt
import field_models

# The opset CMS's ONNX models are mostly exported at; the field-shaped networks come at 13 too.
ONNX_OPSET = 11
BATCH = 4  # rows in each reference batch
MAX_BATCH = 64


class JetMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                                    nn.Linear(32, 5))

    def forward(self, features):
        return torch.softmax(self.layers(features), dim=1)


class EmTrkCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2))
        self.dense = nn.Sequential(nn.Linear(16 * 10 * 10, 32), nn.ReLU())
        self.em_trk_none = nn.Linear(32, 3)
        self.michel = nn.Linear(32, 1)

    def forward(self, patch):
        hidden = self.dense(torch.flatten(self.features(patch), 1))
        return torch.softmax(self.em_trk_none(hidden), dim=1), torch.sigmoid(self.michel(hidden))


class EdgeConv(nn.Module):
    """Edge features (x_i, x_j - x_i) over each point's k nearest neighbours, max-aggregated."""

    def __init__(self, k: int = 4):
        super().__init__()
        self.k = k
        self.edge = nn.Sequential(nn.Linear(14, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 5)

    def forward(self, points):
        # points: [N, P, 7]; the first two features (eta, phi) place a point in the graph.
        coords = points[:, :, 0:2]
        distances = torch.cdist(coords, coords)
        neighbours = torch.topk(distances, self.k + 1, dim=2, largest=False).indices[:, :, 1:]
        n, p, f = points.shape
        gathered = torch.gather(points.unsqueeze(1).expand(n, p, p, f), 2,
                                neighbours.unsqueeze(3).expand(n, p, self.k, f))
        centre = points.unsqueeze(2).expand(n, p, self.k, f)
        edges = self.edge(torch.cat([centre, gathered - centre], dim=3))
        pooled = edges.max(dim=2).values.mean(dim=1)
        return torch.softmax(self.head(pooled), dim=1)


CONFIG_TYPES = {torch.float32: "TYPE_FP32", torch.int64: "TYPE_INT64"}


def tensor_config(name, dims, dtype=torch.float32):
    return (f'  {{\n    name: "{name}"\n    data_type: {CONFIG_TYPES[dtype]}\n'
            f'    dims: {list(dims)}\n  }}')


def write_config(path, name, platform, inputs, outputs, extra=""):
    text = (f'name: "{name}"\nplatform: "{platform}"\nmax_batch_size: {MAX_BATCH}\n'
            f'input [\n' + ",\n".join(tensor_config(*t) for t in inputs) + "\n]\n"
            f'output [\n' + ",\n".join(tensor_config(*t) for t in outputs) + "\n]\n"
            + extra)
    with open(path, "w") as f:
        f.write(text)


def write_reference(out, name, inputs, outputs):
    folder = os.path.join(out, "reference", name)
    os.makedirs(folder, exist_ok=True)
    for tensor_name, value in list(inputs.items()) + list(outputs.items()):
        value = value.detach().numpy()
        np.save(os.path.join(folder, tensor_name + ".npy"),
                value if value.dtype == np.int64 else value.astype(np.float32))


class TopTwo(nn.Module):
    """ONNX TopK (as in the kNN of ParticleNet-like networks)."""

    def forward(self, x):
        return torch.topk(x, 2, dim=1).values


class FixedBatch(nn.Module):
    """A reshape to a constant shape: the graph works at batch 4 only."""

    def forward(self, x):
        return torch.softmax(x.reshape(4, 16), dim=1)


def export_edge_case(out, name, module, example):
    version = os.path.join(out, "edge_cases", name, "1")
    os.makedirs(version, exist_ok=True)
    torch.onnx.export(module, example, os.path.join(version, "model.onnx"),
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=ONNX_OPSET)


def save_edge_case(out, name, graph):
    """Writes an ONNX graph made with onnx's helper (opset 13) as OUT/edge_cases/NAME."""
    import onnx
    from onnx import helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    version = os.path.join(out, "edge_cases", name, "1")
    os.makedirs(version, exist_ok=True)
    onnx.save(model, os.path.join(version, "model.onnx"))


def export_passthrough(out):
    """A graph that answers one of its inputs as an output, as ONNX allows: ONNX Runtime then
    hands back the input's own buffer."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "passthrough", [x], [x, y])
    save_edge_case(out, "passthrough_onnx", graph)


def export_row_sum(out):
    """One number per row: an output of shape [batch], which a config gives as dims [1] with an
    empty reshape, as Triton completes it."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                              "row_sum", [x], [y], initializer=[axes])
    save_edge_case(out, "row_sum_onnx", graph)


def export_fixed_first_dim(out):
    """A graph whose inputs and outputs have a fixed first dimension: it cannot batch."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "fixed", [x], [y])
    save_edge_case(out, "fixed_first_dim_onnx", graph)


def export(out, name, module, example, input_names, output_names, formats, variable=None):
    """Writes `module` as each of `formats` ("onnx" at opset 11, "onnx13", "torch") with its
    config and reference. `variable`: {tensor name: [dimensions beyond the batch that vary]}."""
    variable = variable or {}
    module.eval()
    with torch.no_grad():
        results = module(*example)
    if not isinstance(results, tuple):
        results = (results,)
    for fmt in formats:
        model_name = f"{name}_{fmt}"
        version = os.path.join(out, "repository", model_name, "1")
        os.makedirs(version, exist_ok=True)
        if fmt.startswith("onnx"):
            names_in, names_out = input_names, output_names
            axes = {n: {0: "batch", **{d: f"{n}_{d}" for d in variable.get(n, [])}}
                    for n in names_in + names_out}
            torch.onnx.export(module, example, os.path.join(version, "model.onnx"),
                              input_names=names_in, output_names=names_out, dynamic_axes=axes,
                              opset_version=13 if fmt == "onnx13" else ONNX_OPSET)
            platform = "onnxruntime_onnx"
        else:
            # Triton's PyTorch backend names tensors <name>__<index> when the module's own
            # argument names cannot be read; the numbered form works with every Triton version.
            names_in = [f"INPUT__{i}" for i in range(len(input_names))]
            names_out = [f"OUTPUT__{i}" for i in range(len(output_names))]
            # The trace's self-check re-traces and compares graphs, which differ in mangled
            # module names for the transformer; the tests compare the traced model's answers
            # with the eager module's instead.
            torch.jit.trace(module, example, check_trace=False).save(
                os.path.join(version, "model.pt"))
            platform = "pytorch_libtorch"

        def dims(original, tensor):
            shape = list(tensor.shape[1:])
            for d in variable.get(original, []):
                shape[d - 1] = -1
            return shape
        write_config(os.path.join(out, "repository", model_name, "config.pbtxt"), model_name,
                     platform,
                     [(n, dims(o, t), t.dtype) for n, o, t in zip(names_in, input_names, example)],
                     [(n, dims(o, t), t.dtype) for n, o, t in zip(names_out, output_names, results)])
        write_reference(out, model_name, dict(zip(names_in, example)),
                        dict(zip(names_out, results)))


class TrackEnergy(nn.Module):
    """mean = (sum + energy) / (count + 1), the running sums restarted where `continuing` is 0.

    `continuing` is the sequence batcher's START control given as fp32_false_true: [1, 0], so
    that restarting is a product rather than a branch.
    """

    def forward(self, energy, continuing, sum_in, count_in):
        sum_out = sum_in * continuing + energy
        count_out = count_in * continuing + 1.0
        return sum_out / count_out, sum_out, count_out


TRACK_ENERGY_CONFIG = """name: "track_energy_onnx"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "energy" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "mean_energy" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    {
      name: "continuing"
      control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 1, 0 ] } ]
    }
  ]
  state [
    { input_name: "sum_in" output_name: "sum_out" data_type: TYPE_FP32 dims: [ 1 ] },
    { input_name: "count_in" output_name: "count_out" data_type: TYPE_FP32 dims: [ 1 ] }
  ]
}
"""


def export_track_energy(out):
    version = os.path.join(out, "repository", "track_energy_onnx", "1")
    os.makedirs(version, exist_ok=True)
    names_in = ["energy", "continuing", "sum_in", "count_in"]
    names_out = ["mean_energy", "sum_out", "count_out"]
    example = tuple(torch.ones(1, 1) for _ in names_in)
    torch.onnx.export(TrackEnergy(), example, os.path.join(version, "model.onnx"),
                      input_names=names_in, output_names=names_out,
                      dynamic_axes={n: {0: "batch"} for n in names_in + names_out},
                      opset_version=ONNX_OPSET)
    with open(os.path.join(out, "repository", "track_energy_onnx", "config.pbtxt"), "w") as f:
        f.write(TRACK_ENERGY_CONFIG)


class CalibratedEnergy(nn.Module):
    """energy * 2, plus `offset` when the request sends one (None when it leaves it out)."""

    def forward(self, energy: torch.Tensor, offset: Optional[torch.Tensor] = None):
        scaled = energy * 2.0
        if offset is None:
            return scaled
        return scaled + offset


CALIBRATED_ENERGY_CONFIG = """name: "calibrated_energy_torch"
platform: "pytorch_libtorch"
max_batch_size: 8
input [
  { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] optional: true }
]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def export_calibrated_energy(out):
    """Scripted, not traced: a trace would fix which branch the offset takes."""
    model_dir = os.path.join(out, "repository", "calibrated_energy_torch")
    os.makedirs(os.path.join(model_dir, "1"), exist_ok=True)
    torch.jit.script(CalibratedEnergy()).save(os.path.join(model_dir, "1", "model.pt"))
    with open(os.path.join(model_dir, "config.pbtxt"), "w") as f:
        f.write(CALIBRATED_ENERGY_CONFIG)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    torch.manual_seed(20261126)
    generator = torch.Generator().manual_seed(7)
    export(out, "jet_mlp", JetMlp(), (torch.randn(BATCH, 16, generator=generator),),
           ["features"], ["probabilities"], ["onnx", "torch"])
    export(out, "emtrk_cnn", EmTrkCnn(), (torch.rand(BATCH, 1, 48, 48, generator=generator),),
           ["patch"], ["em_trk_none", "michel"], ["onnx", "torch"])
    export(out, "edgeconv", EdgeConv(), (torch.randn(BATCH, 32, 7, generator=generator),),
           ["points"], ["probabilities"], ["torch"])
    for name, module, example, inputs, outputs, variable in field_models.examples(generator, BATCH):
        export(out, name, module, example, inputs, outputs, ["onnx", "onnx13", "torch"], variable)
    bdt.export(out)
    export_track_energy(out)
    export_calibrated_energy(out)
    export_edge_case(out, "topk_onnx", TopTwo(), (torch.randn(BATCH, 16, generator=generator),))
    export_passthrough(out)
    export_row_sum(out)
    export_fixed_first_dim(out)
    export_edge_case(out, "fixed_batch_onnx", FixedBatch(),
                       (torch.randn(BATCH, 16, generator=generator),))


if __name__ == "__main__":
    main()
