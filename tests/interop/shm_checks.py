"""System shared memory used the way Triton's own clients use it, for python_client.py.

What Triton's clients rely on (client src/c++/library/grpc_client.cc, src/python/library/
tritonclient/grpc/_infer_result.py): raw_output_contents has one entry per output, in the
order of `outputs`, so that entry i is output i's bytes (empty when the output was written to
shared memory); inputs in shared memory send no raw_input_contents entry. Every combination
of `simple`'s two inputs and two outputs, in shared memory or inline, is checked, with the
errors Triton gives: NOT_FOUND for a region it does not know, INTERNAL for an output larger
than its space.

CUDA shared memory on a server that cannot use it (no GPU, or not built with CUDA) is answered
as Triton built without GPUs answers it (server src/grpc/grpc_server.cc, the #else branch of
TRITON_ENABLE_GPU, and src/shared_memory_manager.cc): registration INVALID_ARGUMENT naming the
region and "GPUs not supported", no regions in the status, NOT_FOUND for a name, and an
unregistration that succeeds and leaves the system regions alone.
"""

import itertools
import mmap
import os

import grpc
import numpy as np

RPC_TIMEOUT_S = 10.0
SLOT = 64  # bytes of one [1,16] INT32 tensor


class SharedMemoryChecks:
    def __init__(self, pb2, stub, expect_status):
        self.pb2 = pb2
        self.stub = stub
        self.expect_status = expect_status
        self.key = "/sonic-interop-%d" % os.getpid()
        self.name = "interop_region"
        self.mapping = None

    def _placement(self, tensor, offset, byte_size):
        p = tensor.parameters
        p["shared_memory_region"].string_param = self.name
        p["shared_memory_byte_size"].int64_param = byte_size
        p["shared_memory_offset"].int64_param = offset

    def register(self):
        path = "/dev/shm" + self.key
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, 4 * SLOT)
            self.mapping = mmap.mmap(fd, 4 * SLOT)
        finally:
            os.close(fd)
        self.stub.SystemSharedMemoryRegister(
            self.pb2.SystemSharedMemoryRegisterRequest(
                name=self.name, key=self.key, offset=0, byte_size=4 * SLOT),
            timeout=RPC_TIMEOUT_S)
        status = self.stub.SystemSharedMemoryStatus(
            self.pb2.SystemSharedMemoryStatusRequest(name=self.name),
            timeout=RPC_TIMEOUT_S)
        assert self.name in status.regions, "status lists %s" % list(
            status.regions)
        assert status.regions[self.name].byte_size == 4 * SLOT

    def every_combination(self):
        """Slots: 0 INPUT0, 1 INPUT1, 2 OUTPUT0, 3 OUTPUT1 (64 bytes each)."""
        failures = []
        for in0, in1, out0, out1 in itertools.product((False, True), repeat=4):
            label = "inputs %s/%s, outputs %s/%s" % tuple(
                "shm" if x else "inline" for x in (in0, in1, out0, out1))
            try:
                self._one_combination(in0, in1, out0, out1)
            except AssertionError as e:
                failures.append("%s: %s" % (label, e))
        assert not failures, "; ".join(failures)

    def _one_combination(self, in0, in1, out0, out1):
        seed = int(in0) + 2 * int(in1) + 4 * int(out0) + 8 * int(out1)
        a = (np.arange(16, dtype="<i4") * 3 + seed).reshape(1, 16)
        b = (np.arange(16, dtype="<i4") - 7 * seed).reshape(1, 16)
        self.mapping[:] = b"\xee" * (4 * SLOT)
        req = self.pb2.ModelInferRequest(model_name="simple")
        for slot, (name, arr, in_shm) in enumerate(
                (("INPUT0", a, in0), ("INPUT1", b, in1))):
            t = req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            if in_shm:
                self.mapping[slot * SLOT:(slot + 1) * SLOT] = arr.tobytes()
                self._placement(t, slot * SLOT, SLOT)
            else:
                req.raw_input_contents.append(arr.tobytes())
        for slot, (name, in_shm) in enumerate(
                (("OUTPUT0", out0), ("OUTPUT1", out1)), start=2):
            o = req.outputs.add(name=name)
            if in_shm:
                self._placement(o, slot * SLOT, SLOT)
        resp = self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S)
        want = {"OUTPUT0": (a + b).ravel(), "OUTPUT1": (a - b).ravel()}
        placed = {"OUTPUT0": out0, "OUTPUT1": out1}
        assert len(resp.raw_output_contents) == len(resp.outputs) == 2, (
            "%d raw_output_contents for %d outputs (Triton's clients index "
            "them by output)" % (len(resp.raw_output_contents),
                                 len(resp.outputs)))
        for i, out in enumerate(resp.outputs):
            assert len(out.parameters) == 0, (
                "output %s carries parameters %s" % (out.name,
                                                     list(out.parameters)))
            raw = resp.raw_output_contents[i]
            if placed[out.name]:
                assert raw == b"", "%s in shm but %d raw bytes" % (out.name,
                                                                   len(raw))
                slot = 2 if out.name == "OUTPUT0" else 3
                got = np.frombuffer(
                    self.mapping[slot * SLOT:(slot + 1) * SLOT], dtype="<i4")
            else:
                got = np.frombuffer(raw, dtype="<i4")
            assert np.array_equal(got, want[out.name]), (
                "%s wrong: %s" % (out.name, got.tolist()))

    def output_too_small(self):
        a = np.ones((1, 16), dtype="<i4")
        req = self.pb2.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(a.tobytes())
        self._placement(req.outputs.add(name="OUTPUT0"), 2 * SLOT, SLOT // 2)
        e = self.expect_status(
            lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.INTERNAL, "OUTPUT0 given 32 bytes of shm")
        assert "should be at least 64 bytes" in e.details(), e.details()

    def unknown_region(self):
        a = np.ones((1, 16), dtype="<i4")
        req = self.pb2.ModelInferRequest(model_name="simple")
        t = req.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 16])
        t.parameters["shared_memory_region"].string_param = "no_such_region"
        t.parameters["shared_memory_byte_size"].int64_param = SLOT
        req.inputs.add(name="INPUT1", datatype="INT32", shape=[1, 16])
        req.raw_input_contents.append(a.tobytes())
        e = self.expect_status(
            lambda: self.stub.ModelInfer(req, timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.NOT_FOUND, "an unregistered region")
        want = "Unable to find shared memory region: 'no_such_region'"
        assert want in e.details(), e.details()

    def cuda_without_gpus(self):
        metadata = self.stub.ServerMetadata(self.pb2.ServerMetadataRequest(),
                                            timeout=RPC_TIMEOUT_S)
        if "cuda_shared_memory" in metadata.extensions:
            return  # a server with a usable GPU: tests/shm/test_cuda_shm.cpp's case
        e = self.expect_status(
            lambda: self.stub.CudaSharedMemoryRegister(
                self.pb2.CudaSharedMemoryRegisterRequest(
                    name="interop_gpu", raw_handle=bytes(64), device_id=0,
                    byte_size=4096),
                timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.INVALID_ARGUMENT, "CUDA registration without GPUs")
        want = "failed to register CUDA shared memory region: 'interop_gpu'"
        assert want in e.details() and "GPUs not supported" in e.details(), e.details()
        status = self.stub.CudaSharedMemoryStatus(
            self.pb2.CudaSharedMemoryStatusRequest(), timeout=RPC_TIMEOUT_S)
        assert len(status.regions) == 0, "lists %s" % list(status.regions)
        e = self.expect_status(
            lambda: self.stub.CudaSharedMemoryStatus(
                self.pb2.CudaSharedMemoryStatusRequest(name="interop_gpu"),
                timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.NOT_FOUND, "status of a CUDA region never registered")
        assert "'interop_gpu'" in e.details(), e.details()
        e = self.expect_status(
            lambda: self.stub.CudaSharedMemoryStatus(
                self.pb2.CudaSharedMemoryStatusRequest(name=self.name),
                timeout=RPC_TIMEOUT_S),
            grpc.StatusCode.NOT_FOUND, "CUDA status of a system region")
        want = "registered as system shared memory, not CUDA shared memory"
        assert want in e.details(), e.details()
        for name in ("interop_gpu", ""):
            self.stub.CudaSharedMemoryUnregister(
                self.pb2.CudaSharedMemoryUnregisterRequest(name=name),
                timeout=RPC_TIMEOUT_S)
        status = self.stub.SystemSharedMemoryStatus(
            self.pb2.SystemSharedMemoryStatusRequest(name=self.name),
            timeout=RPC_TIMEOUT_S)
        assert self.name in status.regions, "the system region went with the CUDA ones"

    def unregister(self):
        try:
            self.stub.SystemSharedMemoryUnregister(
                self.pb2.SystemSharedMemoryUnregisterRequest(name=self.name),
                timeout=RPC_TIMEOUT_S)
            status = self.stub.SystemSharedMemoryStatus(
                self.pb2.SystemSharedMemoryStatusRequest(),
                timeout=RPC_TIMEOUT_S)
            assert self.name not in status.regions, "still registered"
        finally:
            if self.mapping is not None:
                self.mapping.close()
            try:
                os.unlink("/dev/shm" + self.key)
            except FileNotFoundError:
                pass

    def plan(self):
        return ("shared memory, as Triton's clients use it", [
            ("SystemSharedMemoryRegister and Status", self.register),
            ("simple: 16 combinations of inputs and outputs in shm",
             self.every_combination),
            ("an output larger than its space: INTERNAL", self.output_too_small),
            ("an unknown region: NOT_FOUND", self.unknown_region),
            ("CUDA shared memory without GPUs, as Triton answers it",
             self.cuda_without_gpus),
            ("SystemSharedMemoryUnregister", self.unregister),
        ])
