"""Loads the fallback's model backends (ONNX through ONNX Runtime, TorchScript through libtorch,
Triton's Python models in python3 processes) on first use, so that `import sonic` never pays for
libtorch."""

import ctypes
import glob
import os

_NAMES = ("onnx", "torch", "python_backend")
_loaded = {}


def _candidates(name):
    here = os.path.dirname(os.path.abspath(__file__))
    # An installed package holds the libraries next to the extension.
    found = sorted(glob.glob(os.path.join(here, "libsonic_%s.so*" % name)))
    if found:
        return found[:1]
    try:  # the build tree: CMake wrote where it built them
        from . import _build_paths
    except ImportError:
        return []
    path = _build_paths.BACKENDS.get(name)
    return [path] if path else []


def load_backends():
    """Loads every backend library present; returns {name: None or why it failed}. A missing
    one is not an error here: the fallback then names the backend a model needs."""
    for name in _NAMES:
        if name in _loaded:
            continue
        _loaded[name] = "not built"
        for path in _candidates(name):
            try:
                ctypes.CDLL(path)
                _loaded[name] = None
            except OSError as failure:
                _loaded[name] = str(failure)
    return dict(_loaded)
