"""Custom metrics of triton_python_backend_utils (which imports them): pb_utils.MetricFamily and
its Metric, with the arguments, checks and errors of Triton's (python_backend src/pb_stub.cc,
metric_family.cc, metric.cc). The values live in the server (sonic/custom_metrics.hpp), so that a
model's instances count into one metric, and are served on its metrics port; each call asks the
server, which answers during initialize(), auto_complete_config() and while a request is under
way (sonic_stub_channel.Channel.metric)."""

import numbers
import sys


def _channel():
    channel = sys.modules["triton_python_backend_utils"]._channel
    if channel is None:
        raise _exception()("metrics need the stub's connection to the server")
    return channel


def _exception():
    return sys.modules["triton_python_backend_utils"].TritonModelException


def _number(value, what):
    # Triton takes a double (pybind11): ints and floats, not bools' words or strings.
    if not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number, not %s" % (what, type(value).__name__))
    return repr(float(value))  # text: JSON numbers carry neither inf nor nan


class MetricFamily:
    """A family of metrics: MetricFamily(name, description, kind), kind one of COUNTER, GAUGE,
    HISTOGRAM. A family of the same name, kind and description is the same family, in this
    instance, the model's other instances and other models."""

    COUNTER = "COUNTER"
    GAUGE = "GAUGE"
    HISTOGRAM = "HISTOGRAM"

    def __init__(self, name, description, kind):
        for argument, value in (("name", name), ("description", description)):
            if not isinstance(value, str):
                raise TypeError("MetricFamily: %s must be a str, not %s"
                                % (argument, type(value).__name__))
        if kind not in (MetricFamily.COUNTER, MetricFamily.GAUGE, MetricFamily.HISTOGRAM):
            raise _exception()("Unknown metric kind")
        self._name = name
        self._kind = kind
        try:
            answer = _channel().metric({"op": "family", "name": name,
                                        "description": description, "kind": kind})
        except _exception() as failure:
            raise _exception()("Error when creating MetricFamily: %s" % failure) from None
        self._handle = answer["handle"]

    def Metric(self, labels=None, buckets=None):  # noqa: N802 (Triton's name)
        """The metric of this family with `labels` (a dict of str), made if none has them;
        `buckets` (a list of upper bounds) for a HISTOGRAM and for nothing else."""
        if labels is not None:
            if not isinstance(labels, dict):
                raise _exception()("Failed to create metric. Labels must be a dictionary.")
            for key, value in labels.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise _exception()("Failed to create metric. Labels must be strings.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise _exception()("Failed to create metric. Buckets must be a list.")
            if self._kind != MetricFamily.HISTOGRAM:
                raise _exception()("Failed to create metric. Unexpected buckets found.")
            buckets = [_number(bound, "a bucket boundary") for bound in buckets]
        elif self._kind == MetricFamily.HISTOGRAM:
            raise _exception()("Failed to create metric. Missing required buckets.")
        return Metric(self, labels or {}, buckets)


class Metric:
    """One metric of a family (MetricFamily.Metric makes it): increment() (COUNTER by a
    non-negative value, GAUGE), set() (GAUGE), observe() (HISTOGRAM), value() (COUNTER,
    GAUGE)."""

    def __init__(self, family, labels, buckets):
        try:
            answer = _channel().metric({"op": "metric", "family": family._handle,
                                        "labels": labels, "buckets": buckets})
        except _exception() as failure:
            raise _exception()("Error when creating Metric: %s" % failure) from None
        self._handle = answer["handle"]

    def __del__(self):
        # As Triton removes a metric when its object is deleted: the server hears of it with
        # the model's next metric call (a deletion may come at any point, on any thread, when
        # nothing reads the stub's messages).
        try:
            _channel().released.append(self._handle)
        except Exception:  # noqa: BLE001 (the interpreter is ending, or no handle was made)
            pass

    def _run(self, op, value, failed):
        header = {"op": op, "metric": self._handle}
        if value is not None:
            header["value"] = _number(value, "value")
        try:
            return _channel().metric(header)
        except _exception() as failure:
            raise _exception()("%s: %s" % (failed, failure)) from None

    def increment(self, value):
        self._run("increment", value, "Failed to increment metric value")

    def set(self, value):  # noqa: A003 (Triton's name)
        self._run("set", value, "Failed to set metric value")

    def observe(self, value):
        self._run("observe", value, "Failed to observe metric value")

    def value(self):
        return float(self._run("value", None, "Failed to get metric value")["value"])
