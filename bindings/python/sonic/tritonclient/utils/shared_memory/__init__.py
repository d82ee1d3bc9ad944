"""tritonclient.utils.shared_memory for sonic: POSIX shared memory regions a client fills with
inputs and reads outputs from, once registered with the server (register_system_shared_memory).

A region is a POSIX shared memory object (shm_open's key, "/input_simple") mapped into this
process. Handles, functions and errors are tritonclient's; arrays from get_contents_as_numpy()
view the region without a copy, and stay valid after destroy_shared_memory_region() until they
are freed (the mapping lives as long as they do).
"""

import mmap
import os
import struct
import warnings

import numpy as np

try:
    import _posixshmem  # CPython's shm_open/shm_unlink, which multiprocessing.shared_memory uses
except ImportError:  # a platform without POSIX shared memory
    _posixshmem = None

__all__ = ["SharedMemoryException", "SharedMemoryRegion", "create_shared_memory_region",
           "set_shared_memory_region", "get_contents_as_numpy", "mapped_shared_memory_regions",
           "destroy_shared_memory_region"]


class SharedMemoryException(Exception):
    """A shared memory region could not be created, written or released."""


class SharedMemoryRegion:
    """The handle create_shared_memory_region() returns: a mapping of the object `shm_key`,
    registered with servers as `triton_shm_name`."""

    def __init__(self, triton_shm_name, shm_key, mapping):
        self._triton_shm_name = triton_shm_name
        self._shm_key = shm_key
        self._mapping = mapping

    def __repr__(self):
        return "SharedMemoryRegion(%r, %r, %d bytes)" % (
            self._triton_shm_name, self._shm_key, len(self._mapping) if self._mapping else 0)


# Keys mapped by this process: {key: {"needs_unlink": created here, "handles": open handles}}.
# The object is unlinked when the last handle of a key this process created is destroyed.
_mapped = {}


def _object_name(key):
    # POSIX names shared memory objects "/name"; glibc takes the name with or without the
    # slash, for one and the same /dev/shm entry, and so do servers that shm_open the key.
    return key if key.startswith("/") else "/" + key


def _open(key, create, byte_size):
    if _posixshmem is None:
        raise SharedMemoryException("POSIX shared memory is not available on this platform")
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    descriptor = _posixshmem.shm_open(_object_name(key), flags, mode=0o600)
    try:
        if create:
            os.ftruncate(descriptor, byte_size)
        size = os.fstat(descriptor).st_size
        return mmap.mmap(descriptor, size) if size else None
    finally:
        os.close(descriptor)


def create_shared_memory_region(triton_shm_name, shm_key, byte_size, create_only=False):
    """A handle of the system shared memory object `shm_key` of `byte_size` bytes, created
    unless it exists already (then it is reused as it is, with a warning when it is smaller
    than asked; with create_only=True an existing object is an error)."""
    created = False
    try:
        try:
            mapping = _open(shm_key, create=True, byte_size=byte_size)
            created = True
        except FileExistsError:
            if create_only:
                raise
            mapping = _open(shm_key, create=False, byte_size=byte_size)
    except OSError as failure:
        raise SharedMemoryException("unable to create the shared memory region") from failure
    size = len(mapping) if mapping is not None else 0
    if byte_size > size:
        warnings.warn("shared memory object '%s' exists with %d bytes, fewer than the %d "
                      "asked for: reusing it" % (shm_key, size, byte_size))
    state = _mapped.setdefault(shm_key, {"needs_unlink": False, "handles": 0})
    state["needs_unlink"] = state["needs_unlink"] or created
    state["handles"] += 1
    return SharedMemoryRegion(triton_shm_name, shm_key, mapping)


def set_shared_memory_region(shm_handle, input_values, offset=0):
    """Copies numpy arrays into the region one after another from `offset` (bytes): each in
    row-major order, or for an object array (serialize_byte_tensor()'s answer) the bytes it
    holds."""
    if not isinstance(input_values, (list, tuple)):
        raise SharedMemoryException(
            "input_values must be specified as a list/tuple of numpy arrays")
    for value in input_values:
        if not isinstance(value, np.ndarray):
            raise SharedMemoryException("each element of input_values must be a numpy array")
    try:
        for value in input_values:
            if value.dtype == np.object_:
                data = value.item()
                shm_handle._mapping[offset:offset + len(data)] = data
                offset += len(data)
            else:
                target = _view(shm_handle, value.dtype, value.shape, offset)
                target[...] = value
                offset += value.nbytes
    except Exception as failure:
        raise SharedMemoryException("unable to set the shared memory region") from failure


def _view(shm_handle, datatype, shape, offset):
    # Through a memoryview, which the array keeps as its base: the mapping cannot be unmapped
    # while the array lives (an ndarray made on the mapping itself would not hold it).
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(memoryview(shm_handle._mapping), dtype=datatype, count=count,
                         offset=offset).reshape(shape)


def get_contents_as_numpy(shm_handle, datatype, shape, offset=0):
    """The region's bytes at `offset` as an array of `datatype` (a numpy type) and `shape`,
    viewing the region (no copy); for np.object_ or np.bytes_, the BYTES elements found there
    (4-byte little-endian length, then the bytes), as an object array."""
    shape = [int(dim) for dim in shape]
    if datatype != np.object_ and datatype != np.bytes_:
        return _view(shm_handle, datatype, shape, offset)
    count = max(int(np.prod(shape)), 1)  # tritonclient reads one element of an empty shape
    items = []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", shm_handle._mapping, offset)
        offset += 4
        items.append(bytes(shm_handle._mapping[offset:offset + length]))
        offset += length
    return np.array(items, dtype=np.object_).reshape(shape)


def mapped_shared_memory_regions():
    """The keys of the regions this process mapped and has not destroyed."""
    return list(_mapped)


def destroy_shared_memory_region(shm_handle):
    """Releases the handle; the last handle of an object this process created unlinks it."""
    if shm_handle._mapping is not None:
        try:
            shm_handle._mapping.close()
        except BufferError:
            # Arrays of get_contents_as_numpy() still view it: the mapping goes with them.
            pass
        shm_handle._mapping = None
    state = _mapped.get(shm_handle._shm_key)
    if state is None:
        return
    state["handles"] -= 1
    if state["handles"] > 0:
        return
    del _mapped[shm_handle._shm_key]
    if state["needs_unlink"]:
        try:
            _posixshmem.shm_unlink(_object_name(shm_handle._shm_key))
        except FileNotFoundError:
            pass
        except OSError as failure:
            raise SharedMemoryException("unable to unlink the shared memory region") \
                from failure
