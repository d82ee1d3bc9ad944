"""A KServe v2 REST server that answers as Triton's HTTP frontend does, for testing sonic's
http:// client against behaviour sonic did not write. Built on the standard library's
http.server (HTTP/1.1 keep-alive) and numpy; it runs in a thread of the test process.

What it follows, from Triton's server (src/http_server.cc) and its protocol documents
(docs/protocol/extension_binary_data.md, extension_model_repository.md,
extension_statistics.md, extension_shared_memory.md):
- health (live, ready, model ready): an empty 200, or 400 when not;
- errors: a JSON body {"error": "..."} with the status HttpCodeFromError gives the error's code:
  NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, INTERNAL 500, every other 400;
- inference: JSON inputs ("data") or binary ones (an input's binary_data_size, the JSON's
  length in Inference-Header-Content-Length); outputs as JSON "data" unless the request asks
  for binary ("binary_data_output" for all, an output's "binary_data" for one), and then the
  answer carries Inference-Header-Content-Length and each output's binary_data_size, its bytes
  following the JSON in the outputs' order;
- compression: a request body with Content-Encoding gzip or deflate is inflated (the
  Inference-Header-Content-Length measures the inflated JSON), and an inference answer is
  compressed when the request's Accept-Encoding lists gzip or deflate;
- the model's configuration at .../config is the ModelConfig itself (no wrapper), with int64
  fields as JSON numbers; statistics as {"model_stats": [...]}; the repository index (POST) as a
  JSON array; load and unload as empty 200s;
- system shared memory (shared_memory_manager.cc): register ({"key", "offset", "byte_size"})
  maps the POSIX object, ALREADY_EXISTS for a name in use; unregister (one, or all) and status
  (a JSON array of {name, key, offset, byte_size}); an input or output whose parameters name a
  shared_memory_region (with shared_memory_byte_size, shared_memory_offset) is read from or
  written to the region, NOT_FOUND "Unable to find shared memory region: 'NAME'" for an unknown
  one, INVALID_ARG for an offset or size outside it; an output written to a region is answered
  with its name, datatype and shape alone (its OutputInfo::SHM kind adds no data, no
  binary_data_size and no parameters);
- trace settings (global and per model) and log settings read and changed (null resets a
  trace setting).

Models (version "1"): simple (INT32 INPUT0 + INPUT1 and INPUT0 - INPUT1, [-1,16]),
identity_fp32 (FP32 [-1,-1]), simple_identity (BYTES [-1,-1]), slow (identity_fp32 after
`slow_seconds`).

Test hooks: `connections` counts the TCP connections accepted, `open_connections` those not yet
closed, `encodings` lists each
inference request's Content-Encoding ("" for none); a request with the header
"x-test-close: 1" is answered with "Connection: close" and the connection closed, as a server
with a keep-alive limit does.
"""

import gzip
import http.server
import json
import mmap
import socketserver
import struct
import threading
import time
import urllib.parse
import zlib

import numpy as np

NUMPY = {"INT32": np.dtype("<i4"), "FP32": np.dtype("<f4"), "INT64": np.dtype("<i8"),
         "FP64": np.dtype("<f8"), "UINT8": np.dtype("u1"), "BOOL": np.dtype("?")}
CONFIG_TYPES = {"INT32": "TYPE_INT32", "FP32": "TYPE_FP32", "BYTES": "TYPE_STRING"}


# Triton's defaults of the trace and log settings, as its routes answer them.
TRACE_SETTINGS = {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
                  "log_frequency": "0", "trace_file": "", "trace_mode": "triton"}
LOG_SETTINGS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
                "log_verbose_level": 0, "log_format": "default"}


class TritonError(Exception):
    """An error with Triton's code name (NOT_FOUND, INVALID_ARG, UNAVAILABLE, ...)."""

    STATUS = {"NOT_FOUND": 404, "UNAVAILABLE": 503, "UNSUPPORTED": 501, "INTERNAL": 500}

    def __init__(self, code, message):
        super().__init__(message)
        self.status = self.STATUS.get(code, 400)


def decode_bytes(raw):
    """BYTES elements: each a 4-byte little-endian length and its bytes."""
    out, at = [], 0
    while at < len(raw):
        (n,) = struct.unpack_from("<I", raw, at)
        out.append(bytes(raw[at + 4:at + 4 + n]))
        at += 4 + n
    return np.array(out, dtype=object)


def encode_bytes(array):
    return b"".join(struct.pack("<I", len(e)) + e for e in array.reshape(-1))


class Model:
    def __init__(self, name, inputs, outputs, compute, delay=0.0, max_batch_size=0):
        self.name, self.inputs, self.outputs = name, inputs, outputs
        self.compute, self.delay = compute, delay
        # > 0: shapes begin with the batch dimension, which the config's dims leave out.
        self.max_batch_size = max_batch_size
        self.ready = True
        self.successes = 0

    def metadata(self):
        def tensors(specs):
            return [{"name": n, "datatype": d, "shape": s} for n, d, s in specs]
        return {"name": self.name, "versions": ["1"], "platform": "python_test",
                "inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    def config(self):
        def tensors(specs):
            first = 1 if self.max_batch_size else 0
            return [{"name": n, "data_type": CONFIG_TYPES[d], "dims": s[first:]}
                    for n, d, s in specs]
        return {"name": self.name, "platform": "python_test", "backend": "python",
                "max_batch_size": self.max_batch_size, "input": tensors(self.inputs),
                "output": tensors(self.outputs)}


def make_models(slow_seconds):
    vec, var = [-1, 16], [-1, -1]  # simple as Triton publishes it: max_batch_size 8

    def simple(t):
        with np.errstate(over="ignore"):
            return {"OUTPUT0": (t["INPUT0"] + t["INPUT1"]).astype("<i4"),
                    "OUTPUT1": (t["INPUT0"] - t["INPUT1"]).astype("<i4")}

    def identity(t):
        return {"OUTPUT0": t["INPUT0"]}

    models = [
        Model("simple", [("INPUT0", "INT32", vec), ("INPUT1", "INT32", vec)],
              [("OUTPUT0", "INT32", vec), ("OUTPUT1", "INT32", vec)], simple, max_batch_size=8),
        Model("identity_fp32", [("INPUT0", "FP32", var)], [("OUTPUT0", "FP32", var)], identity),
        Model("simple_identity", [("INPUT0", "BYTES", var)], [("OUTPUT0", "BYTES", var)],
              identity),
        Model("slow", [("INPUT0", "FP32", var)], [("OUTPUT0", "FP32", var)], identity,
              delay=slow_seconds),
    ]
    return {m.name: m for m in models}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Triton's libevhtp frontend

    def log_message(self, *args):
        pass

    # ---- replies ------------------------------------------------------------------------
    def reply(self, status, body=b"", content_type="application/json", headers=()):
        close = self.headers.get("x-test-close") == "1"
        self.send_response(status)
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def reply_json(self, value, status=200):
        self.reply(status, json.dumps(value).encode())

    def reply_error(self, error):
        self.reply_json({"error": str(error)}, error.status)

    # ---- routing ------------------------------------------------------------------------
    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def route(self, method):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        encoding = self.headers.get("Content-Encoding", "")
        if self.path.endswith("/infer"):
            self.server.encodings.append(encoding)
        if encoding in ("gzip", "deflate"):
            body = gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body)
        parts = [urllib.parse.unquote(p) for p in self.path.split("?")[0].split("/") if p]
        try:
            self.serve(method, parts, body)
        except TritonError as error:
            self.reply_error(error)

    def model(self, parts):
        """(model, action) of v2/models/NAME[/versions/V][/ACTION]."""
        models = self.server.models
        name = parts[2]
        if name not in models:
            raise TritonError("NOT_FOUND", "Request for unknown model: '%s' is not found" % name)
        rest = parts[3:]
        if rest[:1] == ["versions"]:
            if rest[1:2] != ["1"]:
                raise TritonError("NOT_FOUND", "Request for unknown model: '%s' version %s is "
                                  "not found" % (name, rest[1] if len(rest) > 1 else ""))
            rest = rest[2:]
        return models[name], (rest[0] if rest else "")

    def serve(self, method, parts, body):
        server = self.server
        if parts[:2] == ["v2", "health"]:
            return self.reply(200 if server.live else 400)
        if parts == ["v2"]:
            return self.reply_json({"name": "triton", "version": "2.50.0",
                                    "extensions": ["classification", "sequence",
                                                   "model_repository", "schedule_policy",
                                                   "model_configuration",
                                                   "system_shared_memory", "binary_tensor_data",
                                                   "statistics"]})
        if parts == ["v2", "models", "stats"]:
            return self.reply_json({"model_stats": [self.stats(m) for m in server.models.values()]})
        if parts == ["v2", "repository", "index"] and method == "POST":
            ready = json.loads(body or b"{}").get("ready", False)
            return self.reply_json([
                {"name": m.name, "version": "1", "state": "READY"} if m.ready else
                {"name": m.name, "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}
                for m in server.models.values() if m.ready or not ready])
        if parts[:3] == ["v2", "repository", "models"] and method == "POST":
            model = server.models.get(parts[3])
            if model is None:
                raise TritonError("INTERNAL", "failed to load '%s', failed to poll from model "
                                  "repository" % parts[3])
            model.ready = parts[4] == "load"
            return self.reply(200)
        if parts[:2] == ["v2", "systemsharedmemory"]:
            return self.shared_memory(method, parts, body)
        if parts in (["v2", "trace", "setting"], ["v2", "logging"]) or (
                parts[:2] == ["v2", "models"] and parts[3:] == ["trace", "setting"]):
            return self.settings(method, parts, body)
        if parts[:2] == ["v2", "models"] and len(parts) >= 3 and parts[-1] == "ready":
            # InferenceServer::ModelIsReady answers "not ready", not an error, for a model it
            # does not know; the frontend then answers 400.
            try:
                model, _ = self.model(parts)
                return self.reply(200 if model.ready else 400)
            except TritonError:
                return self.reply(400)
        if parts[:2] == ["v2", "models"] and len(parts) >= 3:
            model, action = self.model(parts)
            if not model.ready:
                raise TritonError("UNAVAILABLE", "Request for unknown model: '%s' has no "
                                  "available versions" % model.name)
            if action == "":
                return self.reply_json(model.metadata())
            if action == "config":
                return self.reply_json(model.config())
            if action == "stats":
                return self.reply_json({"model_stats": [self.stats(model)]})
            if action == "infer" and method == "POST":
                return self.infer(model, body)
        raise TritonError("INVALID_ARG", "Not Found")  # Triton: 400 for a route it lacks

    def stats(self, model):
        count = model.successes
        duration = {"count": count, "ns": count * 1000}
        return {"name": model.name, "version": "1", "last_inference": 0,
                "inference_count": count, "execution_count": count,
                "inference_stats": {k: duration for k in ("success", "queue", "compute_input",
                                                          "compute_infer", "compute_output")},
                "batch_stats": []}

    # ---- trace and log settings (Triton's HandleTrace, HandleLogging) ---------------------
    def settings(self, method, parts, body):
        server = self.server
        if parts[1] == "logging":
            current, defaults = server.log_settings, LOG_SETTINGS
        else:
            model = parts[2] if parts[1] == "models" else ""
            current = server.trace_settings.setdefault(model, dict(TRACE_SETTINGS))
            defaults = TRACE_SETTINGS
        if method == "POST":
            for key, value in json.loads(body or b"{}").items():
                if key not in defaults:
                    raise TritonError("INVALID_ARG", "unknown setting '%s'" % key)
                current[key] = defaults[key] if value is None else value
        return self.reply_json(current)

    # ---- system shared memory (Triton's HandleSystemSharedMemory, SharedMemoryManager) ---
    def shared_memory(self, method, parts, body):
        regions = self.server.regions
        name = parts[3] if len(parts) == 5 and parts[2] == "region" else ""
        action = parts[-1]
        if action == "status" and method == "GET":
            if name and name not in regions:
                raise TritonError("NOT_FOUND",
                                  "Unable to find system shared memory region: '%s'" % name)
            return self.reply_json([
                {"name": n, "key": r["key"], "offset": r["offset"], "byte_size": r["byte_size"]}
                for n, r in regions.items() if not name or n == name])
        if action == "register" and method == "POST":
            request = json.loads(body)
            if name in regions:
                raise TritonError("ALREADY_EXISTS",
                                  "shared memory region '%s' already in manager" % name)
            try:  # shm_open(key) is a file in /dev/shm on Linux
                with open("/dev/shm/" + request["key"].lstrip("/"), "r+b") as f:
                    mapping = mmap.mmap(f.fileno(), 0)
            except OSError:
                raise TritonError("INTERNAL", "Unable to open shared memory region: '%s'"
                                  % request["key"])
            regions[name] = {"key": request["key"], "offset": request.get("offset", 0),
                             "byte_size": request["byte_size"], "mapping": mapping}
            return self.reply(200)
        if action == "unregister" and method == "POST":
            for n in ([name] if name else list(regions)):
                regions.pop(n, None)
            return self.reply(200)
        raise TritonError("INVALID_ARG", "Not Found")

    def region_view(self, parameters):
        """(mapping, start, byte_size) that a tensor's shared_memory_* parameters name, checked
        as SharedMemoryManager::GetMemoryInfo checks them."""
        name = parameters["shared_memory_region"]
        region = self.server.regions.get(name)
        if region is None:
            raise TritonError("NOT_FOUND", "Unable to find shared memory region: '%s'" % name)
        offset = parameters.get("shared_memory_offset", 0)
        size = parameters.get("shared_memory_byte_size", 0)
        if offset >= region["byte_size"]:
            raise TritonError("INVALID_ARG",
                              "Invalid offset for shared memory region: '%s'" % name)
        if offset + size > region["byte_size"]:
            raise TritonError("INVALID_ARG",
                              "Invalid offset + byte size for shared memory region: '%s'" % name)
        return region["mapping"], region["offset"] + offset, size

    # ---- inference ----------------------------------------------------------------------
    def infer(self, model, body):
        header_length = self.headers.get("Inference-Header-Content-Length")
        json_length = int(header_length) if header_length is not None else len(body)
        request = json.loads(body[:json_length])
        binary, at = body[json_length:], 0
        specs = {n: (d, s) for n, d, s in model.inputs}
        tensors = {}
        for entry in request["inputs"]:
            name, datatype, shape = entry["name"], entry["datatype"], entry["shape"]
            if name not in specs:
                raise TritonError("INVALID_ARG", "unexpected inference input '%s' for model "
                                  "'%s'" % (name, model.name))
            if datatype != specs[name][0]:
                raise TritonError("INVALID_ARG", "inference input '%s' data-type is '%s', but "
                                  "model '%s' expects '%s'" % (name, datatype, model.name,
                                                               specs[name][0]))
            size = entry.get("parameters", {}).get("binary_data_size")
            if "shared_memory_region" in entry.get("parameters", {}):
                mapping, start, size = self.region_view(entry["parameters"])
                raw = bytes(mapping[start:start + size])
                array = (decode_bytes(raw) if datatype == "BYTES"
                         else np.frombuffer(raw, NUMPY[datatype]))
            elif size is not None:
                raw = binary[at:at + size]
                at += size
                array = (decode_bytes(raw) if datatype == "BYTES"
                         else np.frombuffer(raw, NUMPY[datatype]))
            elif datatype == "BYTES":
                array = np.array([e.encode() for e in entry["data"]], dtype=object)
            else:
                array = np.array(entry["data"], NUMPY[datatype])
            expected = int(np.prod(shape))
            if array.size != expected:
                raise TritonError("INVALID_ARG", "unexpected shape for input '%s' for model '%s'"
                                  % (name, model.name))
            tensors[name] = array.reshape(shape)
        missing = [name for name in specs if name not in tensors]
        if missing:  # Triton's InferenceRequest::Normalize
            raise TritonError("INVALID_ARG", "expected %d inputs but got %d inputs for model "
                              "'%s'. Got input(s) %s, but missing required input(s) %s. Please "
                              "provide all required input(s)." % (
                                  len(specs), len(tensors), model.name,
                                  ",".join("'%s'" % n for n in tensors),
                                  ",".join("'%s'" % n for n in missing)))
        time.sleep(model.delay)
        outputs = model.compute(tensors)
        all_binary = request.get("parameters", {}).get("binary_data_output", False)
        asked = request.get("outputs") or [{"name": n} for n, _, _ in model.outputs]
        entries, blobs = [], []
        for output in asked:
            array = outputs[output["name"]]
            datatype = dict((n, d) for n, d, _ in model.outputs)[output["name"]]
            entry = {"name": output["name"], "datatype": datatype, "shape": list(array.shape)}
            if "shared_memory_region" in output.get("parameters", {}):
                mapping, start, size = self.region_view(output["parameters"])
                blob = (encode_bytes(array) if datatype == "BYTES"
                        else np.ascontiguousarray(array).tobytes())
                if len(blob) > size:
                    raise TritonError("INTERNAL", "shared memory size specified with the request "
                                      "for output '%s' (%d bytes) should be at least %d bytes to "
                                      "hold the results" % (output["name"], size, len(blob)))
                mapping[start:start + len(blob)] = blob
            elif output.get("parameters", {}).get("binary_data", all_binary):
                blob = (encode_bytes(array) if datatype == "BYTES"
                        else np.ascontiguousarray(array).tobytes())
                entry["parameters"] = {"binary_data_size": len(blob)}
                blobs.append(blob)
            else:
                entry["data"] = ([e.decode() for e in array.reshape(-1)] if datatype == "BYTES"
                                 else array.reshape(-1).tolist())
            entries.append(entry)
        answer = {"model_name": model.name, "model_version": "1", "outputs": entries}
        if "id" in request:
            answer["id"] = request["id"]
        text = json.dumps(answer).encode()
        model.successes += 1
        headers = [("Inference-Header-Content-Length", str(len(text)))] if blobs else []
        body = text + b"".join(blobs)
        accepted = self.headers.get("Accept-Encoding", "")
        for name, compress in (("gzip", gzip.compress), ("deflate", zlib.compress)):
            if name in accepted:
                body = compress(body)
                headers.append(("Content-Encoding", name))
                break
        self.reply(200, body, "application/octet-stream" if blobs else "application/json",
                   headers)


class TritonHttpServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self, slow_seconds=2.0):
        super().__init__(("127.0.0.1", 0), Handler)
        self.models = make_models(slow_seconds)
        self.live = True
        self.lock = threading.Lock()
        self.connections = 0
        self.open_connections = 0
        self.encodings = []
        self.regions = {}  # system shared memory: name -> {"key", "offset", "byte_size"}
        self.trace_settings = {}  # model ("": global) -> settings
        self.log_settings = dict(LOG_SETTINGS)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def get_request(self):
        accepted = super().get_request()
        with self.lock:
            self.connections += 1
            self.open_connections += 1
        return accepted

    def shutdown_request(self, request):
        # Runs once a connection's handler is done: the client closed it (or it was told to).
        super().shutdown_request(request)
        with self.lock:
            self.open_connections -= 1

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
