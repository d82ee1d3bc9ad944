#!/usr/bin/python3
# Over 500 lines: one check per method of the service, run against two servers.
"""Interop test: the stock python3-grpcio client against a KServe v2 server.

Starts the server as a child process, waits for its `listening on HOST:PORT`
line on stdout, then exercises the KServe v2 gRPC API with stubs generated at
run time from the repository's .proto files, so the wire format under test is
the one sonic compiles. CI runs it against sonic-server and against
python_server.py (which behaves as Triton does), holding both to one behaviour.

Usage:
    /usr/bin/python3 tests/interop/python_client.py \
        --server-binary build/sonic-server --proto-dir proto \
        --gen-dir build/interop-gen

The server is started as `BINARY [--server-arg ...] --host 127.0.0.1 --port 0`. Every check
runs even if an earlier one failed; a summary line is printed per group and
overall. Exit status: 0 when every check passed, 1 otherwise (including a
server that does not start within 10 s, or the whole run exceeding 60 s).
The child is always stopped: SIGTERM, then SIGKILL after 5 s.
"""

import argparse
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

from shm_checks import SharedMemoryChecks  # noqa: E402  (beside this script)
from stream_checks import StreamChecks  # noqa: E402
from stubs import load_stubs  # noqa: E402

GIB = 1 << 30
TOTAL_BUDGET_S = 60
STARTUP_TIMEOUT_S = 10.0
RPC_TIMEOUT_S = 10.0
BIG_RPC_TIMEOUT_S = 30.0
LISTEN_RE = re.compile(r"listening on (\S+):(\d+)\s*$")


class GlobalTimeout(BaseException):
    """Raised from SIGALRM when the whole run exceeds its budget.

    Derives from BaseException so per-check handlers do not swallow it.
    """


# ---------------------------------------------------------------------------
# Child process handling


class ServerProcess:
    def __init__(self, command):
        self.lines = queue.Queue()
        self.proc = subprocess.Popen(
            command + ["--host", "127.0.0.1", "--port", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=None, bufsize=1, universal_newlines=True,
            errors="replace")
        # Keep draining stdout for the whole run so the child never blocks
        # on a full pipe; echo it to our stderr for diagnosis.
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        for line in self.proc.stdout:
            sys.stderr.write("[server] " + line)
            sys.stderr.flush()
            self.lines.put(line)
        self.lines.put(None)  # EOF

    def wait_for_address(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("server did not print its listening line "
                                   "within %.0f s" % timeout)
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError("server closed stdout before listening "
                                   "(exit status %s)" % self.proc.poll())
            m = LISTEN_RE.search(line.strip())
            if m:
                host = m.group(1).strip("[]")
                return host, int(m.group(2))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                sys.stderr.write("server ignored SIGTERM for 5 s; killing\n")
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


# ---------------------------------------------------------------------------
# Check bookkeeping


class Checks:
    def __init__(self):
        self.group = None
        self.groups = []  # [name, passed, failed]
        self.failures = []

    def start_group(self, name):
        self.groups.append([name, 0, 0])
        print("== %s" % name, flush=True)

    def end_group(self):
        name, p, f = self.groups[-1]
        print("%s: %d passed, %d failed" % (name, p, f), flush=True)

    def run(self, name, fn):
        g = self.groups[-1]
        try:
            fn()
        except AssertionError as e:
            g[2] += 1
            self.failures.append(name)
            print("FAIL %s: %s" % (name, e), flush=True)
        except grpc.RpcError as e:
            g[2] += 1
            self.failures.append(name)
            print("FAIL %s: unexpected RPC error %s: %s" %
                  (name, e.code(), e.details()), flush=True)
        except Exception:  # noqa: BLE001 -- report and continue
            g[2] += 1
            self.failures.append(name)
            print("FAIL %s: exception\n%s" % (name, traceback.format_exc()),
                  flush=True)
        else:
            g[1] += 1
            print("PASS %s" % name, flush=True)

    def totals(self):
        return (sum(g[1] for g in self.groups), sum(g[2] for g in self.groups))


def expect_status(fn, code, what):
    """Call fn(); assert it fails with grpc status `code`."""
    try:
        fn()
    except grpc.RpcError as e:
        assert e.code() == code, "%s: expected %s, got %s (%s)" % (
            what, code, e.code(), e.details())
        return e
    raise AssertionError("%s: expected %s, but the call succeeded" %
                         (what, code))


# ---------------------------------------------------------------------------
# The tests


class Suite:
    def __init__(self, channel):
        self.channel = channel
        self.stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        self.simple_ok = 0  # successful ModelInfer calls on "simple"
        self.simple_ok_lock = threading.Lock()

    # -- helpers ----------------------------------------------------------

    def count_simple(self, n=1):
        with self.simple_ok_lock:
            self.simple_ok += n

    @staticmethod
    def simple_request(a, b, rid="", typed=False, outputs=()):
        req = pb2.ModelInferRequest(model_name="simple", id=rid)
        for name, arr in (("INPUT0", a), ("INPUT1", b)):
            t = req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            if typed:
                t.contents.int_contents.extend(int(v) for v in arr.ravel())
            else:
                req.raw_input_contents.append(
                    np.ascontiguousarray(arr, dtype="<i4").tobytes())
        for o in outputs:
            req.outputs.add(name=o)
        return req

    @staticmethod
    def output(resp, name, dtype):
        """Return (array, tensor) for output `name` of resp."""
        idx = [i for i, o in enumerate(resp.outputs) if o.name == name]
        assert len(idx) == 1, "output %s appears %d times in %s" % (
            name, len(idx), [o.name for o in resp.outputs])
        i = idx[0]
        t = resp.outputs[i]
        if len(resp.raw_output_contents):
            assert len(resp.raw_output_contents) == len(resp.outputs), (
                "%d raw_output_contents for %d outputs" %
                (len(resp.raw_output_contents), len(resp.outputs)))
            arr = np.frombuffer(resp.raw_output_contents[i], dtype=dtype)
        elif np.dtype(dtype) == np.dtype("<i4"):
            arr = np.asarray(t.contents.int_contents, dtype=dtype)
        else:
            arr = np.asarray(t.contents.fp32_contents, dtype=dtype)
        return arr, t

    def check_simple(self, resp, a, b, rid, outputs=("OUTPUT0", "OUTPUT1")):
        assert resp.model_name == "simple", (
            "model_name %r" % resp.model_name)
        assert resp.id == rid, "id not echoed: sent %r, got %r" % (
            rid, resp.id)
        got = [o.name for o in resp.outputs]
        assert sorted(got) == sorted(outputs), (
            "outputs %s, expected %s" % (got, list(outputs)))
        with np.errstate(over="ignore"):
            want = {"OUTPUT0": (a + b).astype("<i4"),
                    "OUTPUT1": (a - b).astype("<i4")}
        for name in outputs:
            arr, t = self.output(resp, name, "<i4")
            assert t.datatype == "INT32", "%s datatype %r" % (
                name, t.datatype)
            assert list(t.shape) == [1, 16], "%s shape %s" % (
                name, list(t.shape))
            assert arr.size == 16, "%s has %d elements" % (name, arr.size)
            assert np.array_equal(arr, want[name].ravel()), (
                "%s wrong: got %s, expected %s" %
                (name, arr.tolist(), want[name].ravel().tolist()))

    # -- health -----------------------------------------------------------

    def server_live(self):
        r = self.stub.ServerLive(pb2.ServerLiveRequest(),
                                 timeout=RPC_TIMEOUT_S)
        assert r.live is True, "ServerLive.live is false"

    def server_ready(self):
        r = self.stub.ServerReady(pb2.ServerReadyRequest(),
                                  timeout=RPC_TIMEOUT_S)
        assert r.ready is True, "ServerReady.ready is false"

    def server_metadata(self):
        r = self.stub.ServerMetadata(pb2.ServerMetadataRequest(),
                                     timeout=RPC_TIMEOUT_S)
        assert r.name, "ServerMetadata.name is empty"

    def model_ready_simple(self):
        r = self.stub.ModelReady(pb2.ModelReadyRequest(name="simple"),
                                 timeout=RPC_TIMEOUT_S)
        assert r.ready is True, "ModelReady(simple).ready is false"

    def model_ready_unknown(self):
        try:
            r = self.stub.ModelReady(pb2.ModelReadyRequest(name="nope"),
                                     timeout=RPC_TIMEOUT_S)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.NOT_FOUND, (
                "ModelReady(nope): expected ready=false or NOT_FOUND, got "
                "%s (%s)" % (e.code(), e.details()))
            return
        assert r.ready is False, "ModelReady(nope).ready is true"

    # -- metadata ---------------------------------------------------------

    def model_metadata_simple(self):
        r = self.stub.ModelMetadata(pb2.ModelMetadataRequest(name="simple"),
                                    timeout=RPC_TIMEOUT_S)
        assert r.name == "simple", "name %r" % r.name
        inputs = {t.name: t for t in r.inputs}
        assert sorted(inputs) == ["INPUT0", "INPUT1"], (
            "inputs %s" % [t.name for t in r.inputs])
        for name, t in inputs.items():
            assert t.datatype == "INT32", "%s datatype %r" % (
                name, t.datatype)
            # Triton's published simple: max_batch_size 8, dims [16].
            assert list(t.shape) == [-1, 16], "%s shape %s" % (
                name, list(t.shape))
        outputs = {t.name: t for t in r.outputs}
        assert sorted(outputs) == ["OUTPUT0", "OUTPUT1"], (
            "outputs %s" % [t.name for t in r.outputs])
        for name, t in outputs.items():
            assert t.datatype == "INT32", "%s datatype %r" % (
                name, t.datatype)

    def model_metadata_identity(self):
        r = self.stub.ModelMetadata(
            pb2.ModelMetadataRequest(name="identity_fp32"),
            timeout=RPC_TIMEOUT_S)
        assert [(t.name, t.datatype, list(t.shape)) for t in r.inputs] == [
            ("INPUT0", "FP32", [-1, -1])], "inputs %s" % r.inputs
        assert [(t.name, t.datatype) for t in r.outputs] == [
            ("OUTPUT0", "FP32")], "outputs %s" % r.outputs

    def model_metadata_unknown(self):
        expect_status(lambda: self.stub.ModelMetadata(
            pb2.ModelMetadataRequest(name="nope"), timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.NOT_FOUND, "ModelMetadata(nope)")

    def model_config_simple(self):
        r = self.stub.ModelConfig(pb2.ModelConfigRequest(name="simple"),
                                  timeout=RPC_TIMEOUT_S)
        c = r.config
        assert c.name == "simple", "config.name %r" % c.name
        assert sorted(i.name for i in c.input) == ["INPUT0", "INPUT1"], (
            "config inputs %s" % [i.name for i in c.input])
        assert sorted(o.name for o in c.output) == ["OUTPUT0", "OUTPUT1"], (
            "config outputs %s" % [o.name for o in c.output])
        for t in list(c.input) + list(c.output):
            assert t.data_type == mc_pb2.TYPE_INT32, (
                "%s data_type %s" % (t.name,
                                     mc_pb2.DataType.Name(t.data_type)))

    # -- inference --------------------------------------------------------

    def infer_raw(self):
        a = np.arange(16, dtype="<i4").reshape(1, 16)
        b = np.full((1, 16), 3, dtype="<i4")
        resp = self.stub.ModelInfer(self.simple_request(a, b, "raw-1"),
                                    timeout=RPC_TIMEOUT_S)
        self.count_simple()
        self.check_simple(resp, a, b, "raw-1")

    def infer_typed(self):
        a = np.array([[(-7) ** (i % 5) * (i + 1) for i in range(16)]],
                     dtype="<i4")
        b = np.array([[1000 - 37 * i for i in range(16)]], dtype="<i4")
        resp = self.stub.ModelInfer(
            self.simple_request(a, b, "typed-1", typed=True),
            timeout=RPC_TIMEOUT_S)
        self.count_simple()
        self.check_simple(resp, a, b, "typed-1")

    def infer_requested_output(self):
        a = np.arange(100, 116, dtype="<i4").reshape(1, 16)
        b = np.arange(16, dtype="<i4").reshape(1, 16) * 2
        resp = self.stub.ModelInfer(
            self.simple_request(a, b, "only-out1", outputs=["OUTPUT1"]),
            timeout=RPC_TIMEOUT_S)
        self.count_simple()
        self.check_simple(resp, a, b, "only-out1", outputs=("OUTPUT1",))

    def infer_identity_16mib(self):
        n = (16 << 20) // 4
        rng = np.random.default_rng(1234)
        data = rng.standard_normal((1, n)).astype("<f4")
        payload = data.tobytes()
        req = pb2.ModelInferRequest(model_name="identity_fp32", id="big")
        req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, n])
        req.raw_input_contents.append(payload)
        resp = self.stub.ModelInfer(req, timeout=BIG_RPC_TIMEOUT_S)
        assert resp.id == "big", "id %r" % resp.id
        assert [o.name for o in resp.outputs] == ["OUTPUT0"], (
            "outputs %s" % [o.name for o in resp.outputs])
        t = resp.outputs[0]
        assert t.datatype == "FP32", "datatype %r" % t.datatype
        assert list(t.shape) == [1, n], "shape %s" % list(t.shape)
        if len(resp.raw_output_contents):
            got = resp.raw_output_contents[0]
        else:
            got = np.asarray(t.contents.fp32_contents, dtype="<f4").tobytes()
        assert len(got) == len(payload), "%d bytes back, sent %d" % (
            len(got), len(payload))
        assert got == payload, "payload bytes differ"

    def infer_compressed(self, compression):
        """A request grpcio compresses (gzip or deflate, as Triton's clients
        offer with compression_algorithm) is inflated and answered right."""
        n = 262144  # 1 MiB of FP32 that compresses
        data = (np.arange(n, dtype="<i4") % 64).astype("<f4").reshape(1, n)
        req = pb2.ModelInferRequest(model_name="identity_fp32", id="zipped")
        req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, n])
        req.raw_input_contents.append(data.tobytes())
        resp = self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S,
                                    compression=compression)
        assert resp.id == "zipped", "id %r" % resp.id
        assert resp.raw_output_contents[0] == data.tobytes(), "payload bytes differ"

    def infer_concurrent(self):
        n = 64
        cases = []
        for i in range(n):
            a = (np.arange(16, dtype="<i4") * (i + 1)).reshape(1, 16)
            b = np.full((1, 16), i - 32, dtype="<i4")
            rid = "concurrent-%d" % i
            fut = self.stub.ModelInfer.future(
                self.simple_request(a, b, rid), timeout=RPC_TIMEOUT_S)
            cases.append((fut, a, b, rid))
        errors = []
        for fut, a, b, rid in cases:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                errors.append("%s: %s %s" % (rid, e.code(), e.details()))
                continue
            self.count_simple()
            try:
                self.check_simple(resp, a, b, rid)
            except AssertionError as e:
                errors.append("%s: %s" % (rid, e))
        assert not errors, "%d of %d concurrent calls failed: %s" % (
            len(errors), n, "; ".join(errors[:5]))

    # -- errors -----------------------------------------------------------

    def error_unknown_model(self):
        a = np.zeros((1, 16), dtype="<i4")
        req = self.simple_request(a, a, "unknown")
        req.model_name = "nope"
        e = expect_status(
            lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.NOT_FOUND, "ModelInfer(nope)")
        # Triton's words, which its clients and users look for.
        want = "Request for unknown model: 'nope' is not found"
        assert e.details().startswith(want), e.details()

    def error_wrong_datatype(self):
        req = pb2.ModelInferRequest(model_name="simple", id="bad-dtype")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="FP32", shape=[1, 16])
            req.raw_input_contents.append(
                np.ones((1, 16), dtype="<f4").tobytes())
        expect_status(lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
                      grpc.StatusCode.INVALID_ARGUMENT,
                      "FP32 data for INT32 inputs")

    def error_byte_size_mismatch(self):
        a = np.zeros((1, 16), dtype="<i4")
        req = self.simple_request(a, a, "bad-size")
        req.raw_input_contents[0] = req.raw_input_contents[0][:60]
        expect_status(lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
                      grpc.StatusCode.INVALID_ARGUMENT,
                      "60 raw bytes for a [1,16] INT32 input")

    def error_shape_mismatch(self):
        req = pb2.ModelInferRequest(model_name="simple", id="bad-shape")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 8])
            req.raw_input_contents.append(
                np.ones((1, 8), dtype="<i4").tobytes())
        expect_status(lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
                      grpc.StatusCode.INVALID_ARGUMENT,
                      "shape [1,8] for [1,16] inputs")

    def _open_stream(self, method, first_request):
        """Calls `method` as a stream that sends `first_request` and stays open,
        as Triton's clients keep ModelStreamInfer open; returns the call."""
        release = threading.Event()

        def requests():
            yield first_request
            release.wait(RPC_TIMEOUT_S)

        call = self.channel.stream_stream(
            "/inference.GRPCInferenceService/" + method,
            request_serializer=pb2.ModelInferRequest.SerializeToString,
            response_deserializer=pb2.ModelStreamInferResponse.FromString,
        )(requests(), timeout=5.0)
        return call, release

    def error_unknown_method_at_once(self):
        a = np.zeros((1, 16), dtype="<i4")
        call, release = self._open_stream("NoSuchMethod",
                                          self.simple_request(a, a))
        try:
            expect_status(lambda: next(call), grpc.StatusCode.UNIMPLEMENTED,
                          "an unknown method on a stream left open")
        finally:
            release.set()

    # -- statistics -------------------------------------------------------

    def statistics_simple(self):
        r = self.stub.ModelStatistics(
            pb2.ModelStatisticsRequest(name="simple"), timeout=RPC_TIMEOUT_S)
        stats = [s for s in r.model_stats if s.name == "simple"]
        assert stats, "no statistics for simple (got %s)" % [
            s.name for s in r.model_stats]
        s = stats[0]
        assert s.inference_count >= self.simple_ok, (
            "inference_count %d < %d successful simple inferences sent" %
            (s.inference_count, self.simple_ok))
        succ = s.inference_stats.success
        assert succ.count > 0, "inference_stats.success.count is 0"
        assert succ.ns > 0, "inference_stats.success.ns is 0"


def run_suite(channel):
    s = Suite(channel)
    stub = s.stub
    c = Checks()
    plan = [
        ("health", [
            ("ServerLive", s.server_live),
            ("ServerReady", s.server_ready),
            ("ServerMetadata has a name", s.server_metadata),
            ("ModelReady(simple)", s.model_ready_simple),
            ("ModelReady(nope) false or NOT_FOUND", s.model_ready_unknown),
        ]),
        ("metadata", [
            ("ModelMetadata(simple)", s.model_metadata_simple),
            ("ModelMetadata(identity_fp32)", s.model_metadata_identity),
            ("ModelMetadata(nope) NOT_FOUND", s.model_metadata_unknown),
            ("ModelConfig(simple)", s.model_config_simple),
        ]),
        ("inference", [
            ("simple raw contents", s.infer_raw),
            ("simple typed contents", s.infer_typed),
            ("simple requested OUTPUT1 only", s.infer_requested_output),
            ("identity_fp32 16 MiB", s.infer_identity_16mib),
            ("simple 64 concurrent futures", s.infer_concurrent),
            ("identity_fp32 1 MiB, gzip request",
             lambda: s.infer_compressed(grpc.Compression.Gzip)),
            ("identity_fp32 1 MiB, deflate request",
             lambda: s.infer_compressed(grpc.Compression.Deflate)),
        ]),
        ("errors", [
            ("unknown model NOT_FOUND", s.error_unknown_model),
            ("wrong datatype INVALID_ARGUMENT", s.error_wrong_datatype),
            ("byte size mismatch INVALID_ARGUMENT",
             s.error_byte_size_mismatch),
            ("shape mismatch INVALID_ARGUMENT", s.error_shape_mismatch),
            ("an unknown method on an open stream: UNIMPLEMENTED at once",
             s.error_unknown_method_at_once),
        ]),
        ("statistics", [
            ("ModelStatistics(simple)", s.statistics_simple),
        ]),
        SharedMemoryChecks(pb2, stub, expect_status).plan(),
        StreamChecks(pb2, channel, stub, expect_status).plan(),
    ]
    for group, checks in plan:
        c.start_group(group)
        for name, fn in checks:
            c.run(name, fn)
        c.end_group()
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server-binary", required=True,
                    help="the server program (sonic-server, or python3)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="an argument for the server program (repeatable)")
    ap.add_argument("--proto-dir", required=True,
                    help="directory holding grpc_service.proto")
    ap.add_argument("--gen-dir", required=True,
                    help="directory for generated Python stubs")
    args = ap.parse_args()

    def on_alarm(signum, frame):
        raise GlobalTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TOTAL_BUDGET_S)

    global mc_pb2, pb2, pb2_grpc, grpc, np
    mc_pb2, pb2, pb2_grpc = load_stubs(args.proto_dir, args.gen_dir)
    import grpc
    import numpy as np

    server = None
    channel = None
    ok = False
    try:
        server = ServerProcess([args.server_binary] + args.server_arg)
        host, port = server.wait_for_address(STARTUP_TIMEOUT_S)
        target = ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)
        print("server at %s" % target, flush=True)
        channel = grpc.insecure_channel(target, options=[
            ("grpc.max_receive_message_length", GIB),
            ("grpc.max_send_message_length", GIB),
        ])
        grpc.channel_ready_future(channel).result(timeout=STARTUP_TIMEOUT_S)
        checks = run_suite(channel)
        passed, failed = checks.totals()
        print("total: %d passed, %d failed" % (passed, failed), flush=True)
        if failed:
            print("failed checks: %s" % ", ".join(checks.failures),
                  flush=True)
        ok = failed == 0
    except GlobalTimeout:
        print("FAIL: interop test exceeded %d s" % TOTAL_BUDGET_S, flush=True)
    except grpc.FutureTimeoutError:
        print("FAIL: could not connect to the server within %.0f s" %
              STARTUP_TIMEOUT_S, flush=True)
    except Exception:  # noqa: BLE001 -- report as a failure
        print("FAIL: %s" % traceback.format_exc(), flush=True)
    finally:
        signal.alarm(0)
        if channel is not None:
            channel.close()
        if server is not None:
            rc = server.stop()
            print("server exited with status %s" % rc, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
