#!/usr/bin/python3
# Over 500 lines: one handler per method of the service, behaving as Triton's does.
"""KServe v2 / Triton-compatible test server built on python3-grpcio.

An independent implementation of the server side of proto/grpc_service.proto,
used to check that sonic's C++ client interoperates with the stock gRPC
stack. Python stubs are generated at run time from the repository's .proto
files, so the wire format under test is exactly the one sonic compiles.

Usage:
    /usr/bin/python3 tests/interop/python_server.py \
        --proto-dir proto --gen-dir build/interop-gen [--max-seconds 120]

Once serving it prints exactly one line, `listening on 127.0.0.1:PORT`
(PORT is ephemeral unless --port is given), and serves until SIGTERM/SIGINT
or until --max-seconds elapse.

Models (version "1"; Triton's examples with max_batch_size 8, as it publishes them):
  simple         INT32 INPUT0, INPUT1 [-1,16] -> OUTPUT0 = INPUT0 + INPUT1,
                                                OUTPUT1 = INPUT0 - INPUT1
                 (int32 wrap-around arithmetic)
  identity_fp32  FP32 INPUT0 [-1,-1] -> OUTPUT0 (identical)
  slow           FP32 INPUT0 [-1,-1] -> OUTPUT0 (identical) after 2 seconds;
                 gives up early if the client cancels or its deadline passes
  simple_string, simple_identity, simple_sequence, repeat_int32 (decoupled)
                 Triton's example models (triton_examples.py)

Implemented methods: ServerLive, ServerReady, ModelReady, ServerMetadata,
ModelMetadata, ModelConfig, ModelStatistics, ModelInfer, ModelStreamInfer,
RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload, the three
SystemSharedMemory calls, and the three CudaSharedMemory calls as a Triton built
without GPUs answers them (triton_shm.py). The rest answer UNIMPLEMENTED.

Where sonic-server and Triton differ, this server behaves as Triton does, so
that sonic's client is tested against Triton's behaviour: system shared memory
as described in triton_shm.py, raw_input_contents only for the inputs that are
neither in shared memory nor typed, and Triton's wording below.

RepositoryModelLoad and RepositoryModelUnload are allowed, as on a Triton started
with --model-control-mode=explicit.

Error statuses:
  unknown model                     NOT_FOUND  "Request for unknown model:
                                               'NAME' is not found"
  unknown version                   NOT_FOUND
  model unloaded                    UNAVAILABLE
  malformed inputs / outputs        INVALID_ARGUMENT
ModelStreamInfer answers as Triton's stream_infer_handler.cc does: a response
per request of a model that is not decoupled, in order, and as many as a
decoupled model makes; each carries the parameter triton_final_response (true
on a request's last response; a decoupled model's are false, and with the
request parameter triton_enable_empty_final_response an empty response with
true follows the last). A request that fails is answered in error_message,
with an infer_response that names it (its id; and its model, version and
triton_final_response once the model ran), and the stream goes on; once the
client ends its side the stream ends with status OK. ModelInfer refuses a
decoupled model with UNIMPLEMENTED and Triton's words.

Overload (not Triton's; for the client's tests): with --refuse-infer, every
ModelInfer is refused before it runs, as an overloaded server refuses, and
counted as a failure in its model's statistics:
  unavailable           UNAVAILABLE
  would-miss-deadline   UNAVAILABLE with a google.rpc.ErrorInfo whose reason is
                        WOULD_MISS_DEADLINE (domain "sonic") in
                        grpc-status-details-bin: sonic-server's early refusal
  pushback=VALUE        RESOURCE_EXHAUSTED with the trailer
                        grpc-retry-pushback-ms: VALUE (gRFC A6)

Request parameter `echo_metadata` (bool true): every invocation metadata
entry whose key starts with "x-sonic-" comes back as a string response
parameter under the same key. Repeated keys are joined with ",". Values of
binary ("-bin") keys are returned base64-encoded (standard alphabet, padded)
so the exact received bytes can be compared.

Inputs may come as raw_input_contents or as typed contents (int_contents for
INT32, fp32_contents for FP32); outputs are always returned raw. When the
request names outputs only those are returned, in the requested order;
otherwise every output of the model, in model order.
"""

import argparse
import base64
import signal
import sys
import threading
import time
from concurrent import futures

GIB = 1 << 30


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto-dir", required=True,
                    help="directory holding grpc_service.proto")
    ap.add_argument("--gen-dir", required=True,
                    help="directory for generated Python stubs")
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="exit after this many seconds (default 120)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0,
                    help="port to bind (default 0 = ephemeral)")
    ap.add_argument("--workers", type=int, default=96,
                    help="handler threads (default 96)")
    ap.add_argument("--infer-response-compression", default="none",
                    choices=["none", "gzip", "deflate"],
                    help="compress ModelInfer answers, as Triton's "
                         "--grpc-infer-response-compression-level does "
                         "(grpcio compresses; default none)")
    ap.add_argument("--refuse-infer", default="",
                    help="refuse every ModelInfer: 'unavailable', "
                         "'would-miss-deadline' or 'pushback=VALUE' (see above)")
    args = ap.parse_args()
    kind = args.refuse_infer.partition("=")[0]
    if kind not in ("", "unavailable", "would-miss-deadline", "pushback"):
        ap.error("unknown --refuse-infer %r" % args.refuse_infer)
    return args


from stubs import load_stubs  # noqa: E402  (beside this script)
from status_error import StatusError as InferError  # noqa: E402
from triton_examples import (SequenceModel, decode_bytes, encode_bytes,  # noqa: E402
                             repeat_int32, simple_identity, simple_string)
from triton_shm import SharedMemoryManager, placement  # noqa: E402

ARGS = parse_args()
mc_pb2, pb2, pb2_grpc = load_stubs(ARGS.proto_dir, ARGS.gen_dir)

import grpc  # noqa: E402
import numpy as np  # noqa: E402


# KServe datatype string -> (numpy dtype, model_config DataType, typed field)
DTYPES = {
    "INT32": (np.dtype("<i4"), mc_pb2.TYPE_INT32, "int_contents"),
    "FP32": (np.dtype("<f4"), mc_pb2.TYPE_FP32, "fp32_contents"),
    "UINT32": (np.dtype("<u4"), mc_pb2.TYPE_UINT32, "uint_contents"),
    "BYTES": (np.dtype(object), mc_pb2.TYPE_STRING, "bytes_contents"),
}
TYPED_FIELDS = ("bool_contents", "int_contents", "int64_contents",
                "uint_contents", "uint64_contents", "fp32_contents",
                "fp64_contents", "bytes_contents")


def _varint(value):
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _length_delimited(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def status_details(code, message, reason, domain="sonic"):
    """A serialized google.rpc.Status whose one detail is a google.rpc.ErrorInfo
    (reason = 1, domain = 2), wrapped in a google.protobuf.Any."""
    info = _length_delimited(1, reason.encode()) + \
        _length_delimited(2, domain.encode())
    detail = _length_delimited(
        1, b"type.googleapis.com/google.rpc.ErrorInfo") + \
        _length_delimited(2, info)
    return (_varint(1 << 3 | 0) + _varint(code) +
            _length_delimited(2, message.encode()) +
            _length_delimited(3, detail))


class ModelError(Exception):
    """An InferError raised once a decoupled model has begun to answer."""

    def __init__(self, error):
        super().__init__(error.message)
        self.error = error


class Model:
    def __init__(self, name, inputs, outputs, compute, delay_s=0.0,
                 decoupled=False, max_batch_size=0):
        self.name = name
        # > 0: shapes begin with the batch dimension (-1), which the config's dims leave
        # out, as Triton's do; a request's batch may not pass it.
        self.max_batch_size = max_batch_size
        # A decoupled model's compute returns an iterable of responses (dicts).
        self.decoupled = decoupled
        self.version = "1"
        self.inputs = inputs    # list of (name, datatype, shape)
        self.outputs = outputs  # list of (name, datatype, shape)
        self.compute = compute  # dict name->array  ->  dict name->array
        self.delay_s = delay_s
        self.ready = True
        self.lock = threading.Lock()
        self.last_inference_ms = 0
        self.inference_count = 0
        self.execution_count = 0
        self.success = [0, 0]
        self.fail = [0, 0]
        self.queue = [0, 0]
        self.compute_input = [0, 0]
        self.compute_infer = [0, 0]
        self.compute_output = [0, 0]
        self.batch = {}  # batch size -> [count, in_ns, infer_ns, out_ns]

    def record_success(self, total, t_in, t_infer, t_out, batch_size=1):
        with self.lock:
            self.last_inference_ms = int(time.time() * 1000)
            self.inference_count += batch_size
            self.execution_count += 1
            for acc, ns in ((self.success, total), (self.queue, 0),
                            (self.compute_input, t_in),
                            (self.compute_infer, t_infer),
                            (self.compute_output, t_out)):
                acc[0] += 1
                acc[1] += max(ns, 1)
            b = self.batch.setdefault(batch_size, [0, 0, 0, 0])
            b[0] += 1
            b[1] += max(t_in, 1)
            b[2] += max(t_infer, 1)
            b[3] += max(t_out, 1)

    def record_failure(self, total):
        with self.lock:
            self.fail[0] += 1
            self.fail[1] += max(total, 1)

    def statistics(self):
        def dur(acc):
            return pb2.StatisticDuration(count=acc[0], ns=acc[1])

        with self.lock:
            st = pb2.ModelStatistics(
                name=self.name, version=self.version,
                last_inference=self.last_inference_ms,
                inference_count=self.inference_count,
                execution_count=self.execution_count)
            s = st.inference_stats
            s.success.CopyFrom(dur(self.success))
            s.fail.CopyFrom(dur(self.fail))
            s.queue.CopyFrom(dur(self.queue))
            s.compute_input.CopyFrom(dur(self.compute_input))
            s.compute_infer.CopyFrom(dur(self.compute_infer))
            s.compute_output.CopyFrom(dur(self.compute_output))
            s.cache_hit.CopyFrom(dur([0, 0]))
            s.cache_miss.CopyFrom(dur([0, 0]))
            for size in sorted(self.batch):
                c, i, n, o = self.batch[size]
                st.batch_stats.add(
                    batch_size=size,
                    compute_input=pb2.StatisticDuration(count=c, ns=i),
                    compute_infer=pb2.StatisticDuration(count=c, ns=n),
                    compute_output=pb2.StatisticDuration(count=c, ns=o))
        return st

    def metadata(self):
        md = pb2.ModelMetadataResponse(name=self.name,
                                       versions=[self.version],
                                       platform="sonic_python")
        for n, dt, shape in self.inputs:
            md.inputs.add(name=n, datatype=dt, shape=shape)
        for n, dt, shape in self.outputs:
            md.outputs.add(name=n, datatype=dt, shape=shape)
        return md

    def config(self):
        cfg = mc_pb2.ModelConfig(name=self.name, platform="sonic_python",
                                 backend="python", max_batch_size=self.max_batch_size)
        first = 1 if self.max_batch_size > 0 else 0
        for n, dt, shape in self.inputs:
            cfg.input.add(name=n, data_type=DTYPES[dt][1], dims=shape[first:])
        for n, dt, shape in self.outputs:
            cfg.output.add(name=n, data_type=DTYPES[dt][1], dims=shape[first:])
        cfg.instance_group.add(name=self.name, kind=mc_pb2.
                               ModelInstanceGroup.KIND_CPU, count=1)
        if self.decoupled:
            cfg.model_transaction_policy.decoupled = True
        return cfg


def _simple(t, params):
    a, b = t["INPUT0"], t["INPUT1"]
    with np.errstate(over="ignore"):
        return {"OUTPUT0": (a + b).astype("<i4"),
                "OUTPUT1": (a - b).astype("<i4")}


def _identity(t, params):
    return {"OUTPUT0": t["INPUT0"]}


def make_models():
    vec = [-1, 16]
    var = [-1, -1]
    models = [
        Model("simple",
              [("INPUT0", "INT32", vec), ("INPUT1", "INT32", vec)],
              [("OUTPUT0", "INT32", vec), ("OUTPUT1", "INT32", vec)],
              _simple, max_batch_size=8),
        Model("identity_fp32", [("INPUT0", "FP32", var)],
              [("OUTPUT0", "FP32", var)], _identity),
        Model("slow", [("INPUT0", "FP32", var)],
              [("OUTPUT0", "FP32", var)], _identity, delay_s=2.0),
        # Triton's example models (triton_examples.py).
        Model("simple_string",
              [("INPUT0", "BYTES", vec), ("INPUT1", "BYTES", vec)],
              [("OUTPUT0", "BYTES", vec), ("OUTPUT1", "BYTES", vec)],
              simple_string, max_batch_size=8),
        Model("simple_identity", [("INPUT0", "BYTES", var)],
              [("OUTPUT0", "BYTES", var)], simple_identity, max_batch_size=8),
        Model("simple_sequence", [("INPUT", "INT32", [-1, 1])],
              [("OUTPUT", "INT32", [-1, 1])], SequenceModel(), max_batch_size=8),
        Model("repeat_int32",
              [("IN", "INT32", [-1]), ("DELAY", "UINT32", [-1]),
               ("WAIT", "UINT32", [1])],
              [("OUT", "INT32", [1]), ("IDX", "UINT32", [1])],
              repeat_int32, decoupled=True),
    ]
    return {m.name: m for m in models}


def shape_str(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


class Servicer(pb2_grpc.GRPCInferenceServiceServicer):
    def __init__(self):
        self.models = make_models()
        self.shm = SharedMemoryManager()

    # -- helpers ----------------------------------------------------------

    def lookup(self, name, version):
        """Return the model or raise InferError."""
        m = self.models.get(name)
        if m is None:
            raise InferError(grpc.StatusCode.NOT_FOUND,
                             "Request for unknown model: '%s' is not found" % name)
        if version not in ("", m.version):
            raise InferError(grpc.StatusCode.NOT_FOUND,
                             "unknown version %s of model: %s" %
                             (version, name))
        return m

    @staticmethod
    def abort(context, err):
        context.abort(err.code, err.message)

    def decode_inputs(self, m, req):
        # As Triton's InferGRPCToInput: raw_input_contents hold, in order, the inputs that
        # are neither in shared memory nor given as typed contents.
        bad = grpc.StatusCode.INVALID_ARGUMENT
        raw = list(req.raw_input_contents)
        next_raw = 0
        spec = {n: (dt, shape) for n, dt, shape in m.inputs}
        tensors = {}
        for t in req.inputs:
            if t.name not in spec:
                raise InferError(bad, "unexpected inference input '%s' for model '%s'"
                                 % (t.name, m.name))
            if t.name in tensors:
                raise InferError(bad, "input '%s' given more than once" %
                                 t.name)
            dt, want = spec[t.name]
            if t.datatype != dt:
                raise InferError(bad, "input '%s': datatype %s, expected %s"
                                 % (t.name, t.datatype or "<empty>", dt))
            shape = list(t.shape)
            if (len(shape) != len(want) or any(d < 0 for d in shape) or
                    any(w >= 0 and d != w for d, w in zip(shape, want))):
                raise InferError(bad, "input '%s': shape %s does not match "
                                 "model shape %s" % (t.name, shape_str(shape),
                                                     shape_str(want)))
            if m.max_batch_size and shape[0] > m.max_batch_size:
                # Triton's core (infer_request.cc).
                raise InferError(bad, "inference request batch-size must be <= %d for '%s'"
                                 % (m.max_batch_size, m.name))
            npdt, _, typed_field = DTYPES[dt]
            count = 1
            for d in shape:
                count *= d
            has_contents = t.HasField("contents")
            where = placement(t)
            if where is not None:
                if has_contents:
                    raise InferError(bad, "unexpected 'content' provided when using "
                                     "shared memory for input tensor '%s' for model "
                                     "'%s'" % (t.name, m.name))
                data = self.shm.read(*where)
            elif has_contents and raw:
                raise InferError(bad, "contents field must not be specified when "
                                 "using raw_input_contents for '%s' for model '%s'"
                                 % (t.name, m.name))
            elif has_contents:
                data = None
            elif next_raw < len(raw):
                data = raw[next_raw]
                next_raw += 1
            else:
                raise InferError(bad, "unable to find data for input tensor '%s' for "
                                 "model '%s' in request." % (t.name, m.name))
            if data is not None and dt == "BYTES":
                items = decode_bytes(data, count)
                if items is None:
                    raise InferError(bad, "input '%s': malformed BYTES contents for "
                                     "shape %s" % (t.name, shape_str(shape)))
                arr = np.empty(count, dtype=object)
                arr[:] = items
            elif data is not None:
                if len(data) != count * npdt.itemsize:
                    raise InferError(bad, "input '%s': %d raw bytes, expected "
                                     "%d for shape %s" %
                                     (t.name, len(data),
                                      count * npdt.itemsize,
                                      shape_str(shape)))
                arr = np.frombuffer(data, dtype=npdt)
            else:
                c = t.contents
                for f in TYPED_FIELDS:
                    if f != typed_field and len(getattr(c, f)):
                        raise InferError(bad, "input '%s': %s given for "
                                         "datatype %s" % (t.name, f, dt))
                vals = getattr(c, typed_field)
                if len(vals) != count:
                    raise InferError(bad, "input '%s': %d %s elements, "
                                     "expected %d for shape %s" %
                                     (t.name, len(vals), typed_field, count,
                                      shape_str(shape)))
                if dt == "BYTES":
                    arr = np.empty(count, dtype=object)
                    arr[:] = list(vals)
                else:
                    arr = np.asarray(vals, dtype=npdt)
            tensors[t.name] = arr.reshape(shape)
        if next_raw != len(raw):
            raise InferError(bad, "%d raw_input_contents given for %d inputs that "
                             "need them" % (len(raw), next_raw))
        missing = [n for n, _, _ in m.inputs if n not in tensors]
        if missing:
            raise InferError(bad, "missing input(s) %s for model '%s'" %
                             (", ".join(missing), m.name))
        return tensors

    @staticmethod
    def check_request_options(req):
        """Triton's checks of the parameters it reserves (SetInferenceRequestMetadata in
        src/grpc/infer_handler.cc), with its words."""
        bad = grpc.StatusCode.INVALID_ARGUMENT
        allowed = {
            "sequence_id": ("int64_param", "string_param"),
            "sequence_start": ("bool_param",),
            "sequence_end": ("bool_param",),
            "priority": ("int64_param", "uint64_param"),
            "timeout": ("int64_param",),
        }
        for name, p in req.parameters.items():
            which = p.WhichOneof("parameter_choice")
            if name in allowed and which not in allowed[name]:
                raise InferError(bad, "invalid value type for '%s' parameter, expected %s."
                                 % (name, " or ".join(allowed[name])))
            if name == "priority" and which == "int64_param" and p.int64_param < 0:
                raise InferError(bad, "invalid value for 'priority', expected value >= 0.")
            if (name.startswith("triton_") and
                    name != "triton_enable_empty_final_response"):
                raise InferError(bad, "parameter keys starting with 'triton_' are reserved "
                                 "for Triton usage.")

    def infer(self, req, context):
        """Run one request; return ModelInferResponse or raise InferError."""
        m = self.lookup(req.model_name, req.model_version)
        if m.decoupled:
            # Triton's code (UNSUPPORTED) and words, in src/grpc/infer_handler.cc.
            raise InferError(grpc.StatusCode.UNIMPLEMENTED,
                             "ModelInfer RPC doesn't support models with decoupled "
                             "transaction policy")
        return next(self.responses(req, context))

    def responses(self, req, context):
        """Run one request; a generator of its ModelInferResponses (one unless the
        model is decoupled). InferError before the first is the request's error;
        after it (the model ran), ModelError wraps it."""
        m = self.lookup(req.model_name, req.model_version)
        self.check_request_options(req)
        if not m.ready:
            raise InferError(grpc.StatusCode.UNAVAILABLE,
                             "model is not ready: %s" % m.name)
        t0 = time.monotonic_ns()
        try:
            bad = grpc.StatusCode.INVALID_ARGUMENT
            tensors = self.decode_inputs(m, req)
            out_names = [o for o, _, _ in m.outputs]
            out_dt = {o: dt for o, dt, _ in m.outputs}
            placed = {}  # output name -> (region, offset, byte_size)
            if req.outputs:
                wanted = []
                for o in req.outputs:
                    if o.name not in out_dt:
                        raise InferError(bad, "unknown output '%s' for model "
                                         "'%s'" % (o.name, m.name))
                    where = placement(o)
                    if where is not None:
                        self.shm.check(*where)
                        placed[o.name] = where
                    if o.name in wanted:
                        raise InferError(bad, "output '%s' requested more "
                                         "than once" % o.name)
                    wanted.append(o.name)
                out_names = wanted
            t1 = time.monotonic_ns()
            if m.delay_s > 0:
                end = time.monotonic() + m.delay_s
                while time.monotonic() < end:
                    if context is not None and not context.is_active():
                        raise InferError(grpc.StatusCode.CANCELLED,
                                         "request cancelled")
                    time.sleep(min(0.05, max(0.0, end - time.monotonic())))
            results = m.compute(tensors, req.parameters)
            t2 = time.monotonic_ns()
        except InferError:
            m.record_failure(time.monotonic_ns() - t0)
            raise
        if not m.decoupled:
            resp = self.make_response(m, req, results, out_names, out_dt, placed,
                                      context)
            t3 = time.monotonic_ns()
            m.record_success(t3 - t0, t1 - t0, t2 - t1, t3 - t2)
            yield resp
            return
        try:
            for each in results:
                yield self.make_response(m, req, each, out_names, out_dt, placed,
                                         context)
        except InferError as e:
            m.record_failure(time.monotonic_ns() - t0)
            raise ModelError(e)
        t3 = time.monotonic_ns()
        m.record_success(t3 - t0, t1 - t0, t2 - t1, t3 - t2)

    def make_response(self, m, req, results, out_names, out_dt, placed, context):
        """A ModelInferResponse holding `results` (output name -> array)."""
        resp = pb2.ModelInferResponse(model_name=m.name,
                                      model_version=m.version,
                                      id=req.id)
        for n in out_names:
            if out_dt[n] == "BYTES":
                arr = np.asarray(results[n], dtype=object)
                data = encode_bytes(list(arr.ravel()))
            else:
                arr = np.ascontiguousarray(results[n],
                                           dtype=DTYPES[out_dt[n]][0])
                data = arr.tobytes()
            resp.outputs.add(name=n, datatype=out_dt[n],
                             shape=list(arr.shape))
            if n in placed:  # Triton: an empty entry, and no parameters
                self.shm.write(n, *placed[n], data)
                resp.raw_output_contents.append(b"")
            else:
                resp.raw_output_contents.append(data)
        p = req.parameters.get("echo_metadata")
        if (p is not None and p.WhichOneof("parameter_choice") ==
                "bool_param" and p.bool_param and context is not None):
            echoed = {}
            for key, value in context.invocation_metadata():
                if not key.startswith("x-sonic-"):
                    continue
                if isinstance(value, bytes):
                    value = base64.b64encode(value).decode("ascii")
                echoed.setdefault(key, []).append(value)
            for key, values in echoed.items():
                resp.parameters[key].string_param = ",".join(values)
        return resp

    # -- health -----------------------------------------------------------

    def ServerLive(self, request, context):
        return pb2.ServerLiveResponse(live=True)

    def ServerReady(self, request, context):
        return pb2.ServerReadyResponse(ready=True)

    def ModelReady(self, request, context):
        m = self.models.get(request.name)
        ok = (m is not None and m.ready and
              request.version in ("", m.version))
        return pb2.ModelReadyResponse(ready=ok)

    # -- metadata ---------------------------------------------------------

    def ServerMetadata(self, request, context):
        return pb2.ServerMetadataResponse(
            name="sonic-python-test-server", version="1.0.0",
            extensions=["model_configuration", "statistics", "parameters",
                        "model_repository", "system_shared_memory"])

    def ModelMetadata(self, request, context):
        try:
            return self.lookup(request.name, request.version).metadata()
        except InferError as e:
            self.abort(context, e)

    def ModelConfig(self, request, context):
        try:
            m = self.lookup(request.name, request.version)
        except InferError as e:
            self.abort(context, e)
        return pb2.ModelConfigResponse(config=m.config())

    def ModelStatistics(self, request, context):
        resp = pb2.ModelStatisticsResponse()
        if request.name == "":
            for name in sorted(self.models):
                m = self.models[name]
                if request.version in ("", m.version):
                    resp.model_stats.append(m.statistics())
            return resp
        try:
            m = self.lookup(request.name, request.version)
        except InferError as e:
            self.abort(context, e)
        resp.model_stats.append(m.statistics())
        return resp

    # -- inference --------------------------------------------------------

    def refuse(self, request, context):
        """Refuses a ModelInfer as --refuse-infer says."""
        m = self.models.get(request.model_name)
        if m is not None:
            m.record_failure(1)
        kind, _, value = ARGS.refuse_infer.partition("=")
        if kind == "pushback":
            context.set_trailing_metadata((("grpc-retry-pushback-ms", value),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          "the server is overloaded: try again later")
        message = "the server is overloaded"
        if kind == "would-miss-deadline":
            message = ("the wait in the model's queue exceeds the request's "
                       "remaining deadline")
            context.set_trailing_metadata((("grpc-status-details-bin", status_details(
                grpc.StatusCode.UNAVAILABLE.value[0], message,
                "WOULD_MISS_DEADLINE")),))
        context.abort(grpc.StatusCode.UNAVAILABLE, message)

    def ModelInfer(self, request, context):
        if ARGS.refuse_infer:
            self.refuse(request, context)
        # Triton sets its compression level on ModelInfer's server context only
        # (infer_handler.cc); grpcio then compresses the answer if it shrinks.
        if ARGS.infer_response_compression != "none":
            context.set_compression(
                grpc.Compression.Gzip if ARGS.infer_response_compression == "gzip"
                else grpc.Compression.Deflate)
        try:
            return self.infer(request, context)
        except InferError as e:
            self.abort(context, e)

    def ModelStreamInfer(self, request_iterator, context):
        # As Triton's stream_infer_handler.cc; requests are taken one at a time, so
        # the answers of a model that is not decoupled come in the requests' order.
        for req in request_iterator:
            decoupled = req.model_name in self.models and \
                self.models[req.model_name].decoupled
            try:
                for resp in self.responses(req, context):
                    resp.parameters["triton_final_response"].bool_param = \
                        not decoupled
                    yield pb2.ModelStreamInferResponse(infer_response=resp)
            except InferError as e:
                # Refused before it ran: the response names the request's id.
                yield pb2.ModelStreamInferResponse(
                    error_message=e.message,
                    infer_response=pb2.ModelInferResponse(id=req.id))
                continue
            except ModelError as e:
                yield self.stream_final(req, e.error.message)
                continue
            if decoupled:
                p = req.parameters.get("triton_enable_empty_final_response")
                if p is not None and p.WhichOneof("parameter_choice") == \
                        "bool_param" and p.bool_param:
                    yield self.stream_final(req, "")

    @staticmethod
    def stream_final(req, error_message):
        """A request's last response without outputs: the empty one a decoupled
        model's request asks for, or (with `error_message`) one whose model
        failed, naming its id, model and version."""
        resp = pb2.ModelInferResponse(id=req.id, model_name=req.model_name,
                                      model_version=req.model_version)
        resp.parameters["triton_final_response"].bool_param = True
        return pb2.ModelStreamInferResponse(error_message=error_message,
                                            infer_response=resp)

    # -- system shared memory (triton_shm.py) -------------------------------

    def SystemSharedMemoryRegister(self, request, context):
        try:
            self.shm.register(request.name, request.key, request.offset,
                              request.byte_size)
        except InferError as e:
            context.abort(e.code, e.message)
        return pb2.SystemSharedMemoryRegisterResponse()

    def SystemSharedMemoryStatus(self, request, context):
        resp = pb2.SystemSharedMemoryStatusResponse()
        try:
            regions = self.shm.status(request.name)
        except InferError as e:
            context.abort(e.code, e.message)
        for r in regions:
            status = resp.regions[r.name]
            status.name = r.name
            status.key = r.key
            status.offset = r.offset
            status.byte_size = r.byte_size
        return resp

    def SystemSharedMemoryUnregister(self, request, context):
        self.shm.unregister(request.name)
        return pb2.SystemSharedMemoryUnregisterResponse()

    # -- CUDA shared memory, as on a Triton built without GPUs ---------------

    def CudaSharedMemoryRegister(self, request, context):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      "failed to register CUDA shared memory region: '%s', GPUs not "
                      "supported" % request.name)

    def CudaSharedMemoryStatus(self, request, context):
        try:
            self.shm.cuda_status(request.name)
        except InferError as e:
            context.abort(e.code, e.message)
        return pb2.CudaSharedMemoryStatusResponse()

    def CudaSharedMemoryUnregister(self, request, context):
        return pb2.CudaSharedMemoryUnregisterResponse()

    # -- model repository -------------------------------------------------

    def RepositoryIndex(self, request, context):
        resp = pb2.RepositoryIndexResponse()
        for name in sorted(self.models):
            m = self.models[name]
            if request.ready and not m.ready:
                continue
            resp.models.add(name=name, version=m.version,
                            state="READY" if m.ready else "UNAVAILABLE",
                            reason="" if m.ready else "unloaded")
        return resp

    # Triton's grpc_server.cc (the parameters) and model_repository_manager.cc (the rest).
    def RepositoryModelLoad(self, request, context):
        if request.repository_name:
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          "'repository_name' specification is not supported")
        for key, value in request.parameters.items():
            kind = value.WhichOneof("parameter_choice")
            if key == "config" and kind != "string_param":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid value type for load "
                              "parameter 'config', expected string_param.")
            if key.startswith("file:") and kind != "bytes_param":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid value type for load "
                              "parameter '%s', expected bytes_param." % key)
            if key != "config" and not key.startswith("file:"):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "unrecognized load parameter '%s'." % key)
        m = self.models.get(request.model_name)
        if m is None:
            context.abort(grpc.StatusCode.INTERNAL, "failed to load '%s', failed to poll from "
                          "model repository" % request.model_name)
        m.ready = True
        return pb2.RepositoryModelLoadResponse()

    def RepositoryModelUnload(self, request, context):
        if request.repository_name:
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          "'repository_name' specification is not supported")
        flag = request.parameters.get("unload_dependents")
        if flag is not None and flag.WhichOneof("parameter_choice") != "bool_param":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid value type for "
                          "'unload_dependents' parameter, expected bool_param.")
        m = self.models.get(request.model_name)
        if m is not None:  # Triton unloads a model it does not have without a word
            m.ready = False
        return pb2.RepositoryModelUnloadResponse()


def main():
    options = [
        ("grpc.max_receive_message_length", GIB),
        ("grpc.max_send_message_length", GIB),
        ("grpc.so_reuseport", 0),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=ARGS.workers),
        options=options)
    pb2_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
    host = ARGS.host
    bind_host = "[%s]" % host if ":" in host else host
    port = server.add_insecure_port("%s:%d" % (bind_host, ARGS.port))
    if port == 0:
        raise SystemExit("failed to bind %s:%d" % (host, ARGS.port))
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    print("listening on %s:%d" % (host, port), flush=True)
    stop.wait(ARGS.max_seconds)
    server.stop(grace=1.0).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
