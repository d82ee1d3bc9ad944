"""System shared memory as Triton's server does it, for python_server.py.

Facts from Triton's server (src/shared_memory_manager.cc, src/grpc/infer_handler.cc), which
this module reproduces so that sonic's client is tested against Triton's behaviour rather
than sonic-server's:

- Registrations are global to the server (any connection may use or unregister any region)
  and are lost when it restarts. An empty name in Unregister removes every region.
- Register: a name already registered is ALREADY_EXISTS "shared memory region 'NAME' already
  in manager"; a key that cannot be opened is INTERNAL "Unable to open shared memory region:
  'KEY'"; offset + byte_size beyond the object is INVALID_ARGUMENT "failed to register shared
  memory region 'NAME': invalid args".
- A request naming an unknown region is NOT_FOUND "Unable to find shared memory region:
  'NAME'"; an offset or size outside the region is INVALID_ARGUMENT.
- The response carries exactly one raw_output_contents entry per output, in order, left empty
  for an output written to shared memory, and no parameters on outputs.
- An output larger than the space its request gave it is INTERNAL "shared memory size
  specified with the request for output 'X' (N bytes) should be at least M bytes to hold the
  results".

CUDA shared memory as a Triton built without GPUs answers it (src/grpc/grpc_server.cc, the
#else of TRITON_ENABLE_GPU; src/shared_memory_manager.cc GetStatus and UnregisterHelper): the
three calls exist, registration is INVALID_ARGUMENT "failed to register CUDA shared memory
region: 'NAME', GPUs not supported", status lists no region (a name is NOT_FOUND, in the words
GetStatus uses for both kinds: "Unable to find system shared memory region: 'NAME'", or "The
region named 'NAME' is registered as system shared memory, not CUDA shared memory"), and
unregistering a name it does not hold succeeds.
"""

import mmap
import os
import threading

import grpc

from status_error import StatusError

REGION = "shared_memory_region"
BYTE_SIZE = "shared_memory_byte_size"
OFFSET = "shared_memory_offset"


class Region:
    def __init__(self, name, key, offset, byte_size, mapping):
        self.name = name
        self.key = key
        self.offset = offset
        self.byte_size = byte_size
        self.mapping = mapping  # the whole object; this region is [offset, offset + byte_size)


def _param(tensor, key, kind):
    """A placement parameter of `tensor`, or None; a wrong type is INVALID_ARGUMENT."""
    if key not in tensor.parameters:
        return None
    p = tensor.parameters[key]
    which = p.WhichOneof("parameter_choice")
    if which != kind:
        raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                       "invalid value type for '%s' parameter for '%s', expected %s."
                       % (key, tensor.name, kind))
    return getattr(p, kind)


def placement(tensor):
    """(region name, offset, byte_size) when `tensor` names a region, else None."""
    name = _param(tensor, REGION, "string_param")
    if name is None:
        return None
    size = _param(tensor, BYTE_SIZE, "int64_param")
    if size is None:
        raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                       "'%s' is missing for '%s'" % (BYTE_SIZE, tensor.name))
    offset = _param(tensor, OFFSET, "int64_param") or 0
    return name, offset, size


class SharedMemoryManager:
    def __init__(self):
        self._lock = threading.Lock()
        self._regions = {}

    def register(self, name, key, offset, byte_size):
        with self._lock:
            if name in self._regions:
                raise StatusError(grpc.StatusCode.ALREADY_EXISTS,
                               "shared memory region '%s' already in manager" % name)
            try:
                fd = os.open("/dev/shm/" + key.lstrip("/"), os.O_RDWR)
            except OSError:
                raise StatusError(grpc.StatusCode.INTERNAL,
                               "Unable to open shared memory region: '%s'" % key)
            try:
                size = os.fstat(fd).st_size
                if offset + byte_size > size or byte_size == 0:
                    raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                                   "failed to register shared memory region '%s': "
                                   "invalid args" % name)
                mapping = mmap.mmap(fd, size)
            finally:
                os.close(fd)
            self._regions[name] = Region(name, key, offset, byte_size, mapping)

    def unregister(self, name):
        with self._lock:
            names = list(self._regions) if name == "" else [name]
            for n in names:
                region = self._regions.pop(n, None)
                if region is not None:
                    region.mapping.close()

    def status(self, name):
        with self._lock:
            if name == "":
                return list(self._regions.values())
            if name not in self._regions:
                raise StatusError(grpc.StatusCode.NOT_FOUND,
                               "Unable to find system shared memory region: '%s'" % name)
            return [self._regions[name]]

    def cuda_status(self, name):
        """CudaSharedMemoryStatus on a server without GPUs: no CUDA region is ever held."""
        with self._lock:
            if name == "":
                return []
            if name in self._regions:
                raise StatusError(grpc.StatusCode.NOT_FOUND,
                                  "The region named '%s' is registered as system shared "
                                  "memory, not CUDA shared memory" % name)
            raise StatusError(grpc.StatusCode.NOT_FOUND,
                              "Unable to find system shared memory region: '%s'" % name)

    def _span(self, name, offset, byte_size):
        region = self._regions.get(name)
        if region is None:
            raise StatusError(grpc.StatusCode.NOT_FOUND,
                           "Unable to find shared memory region: '%s'" % name)
        if offset < 0 or byte_size < 0 or offset + byte_size > region.byte_size:
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT,
                           "Invalid offset + byte size for shared memory region: '%s'"
                           % name)
        start = region.offset + offset
        return region, start

    def read(self, name, offset, byte_size):
        """The bytes of a request's input, copied out of the region."""
        with self._lock:
            region, start = self._span(name, offset, byte_size)
            return bytes(region.mapping[start:start + byte_size])

    def check(self, name, offset, byte_size):
        """Raises what a request naming this space for an output gets before it runs."""
        with self._lock:
            self._span(name, offset, byte_size)

    def write(self, output, name, offset, byte_size, data):
        """Writes an output's bytes into the space its request gave it."""
        if len(data) > byte_size:
            raise StatusError(grpc.StatusCode.INTERNAL,
                           "shared memory size specified with the request for output "
                           "'%s' (%d bytes) should be at least %d bytes to hold the "
                           "results" % (output, byte_size, len(data)))
        with self._lock:
            region, start = self._span(name, offset, byte_size)
            region.mapping[start:start + len(data)] = data
