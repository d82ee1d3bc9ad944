"""A real Prometheus (Debian's `prometheus`) scrapes sonic-server's metrics port on loopback while
clients load it, and evaluates SuperSONIC's scaling expressions through Prometheus' HTTP API to
numbers that move with the load.

SuperSONIC's Helm chart (fastmachinelearning/SuperSONIC, helm/supersonic/templates) scales
replicas with KEDA on a PromQL expression over Triton's metrics, selected by a `release` label its
scrape configuration adds. Two forms are read here:
- the chart's earlier default (_scaling-metric.tpl): the queue time per execution, in ms, over
  15 s: sum by (release) (rate(nv_inference_queue_duration_us[15s])) /
  sum by (release) (rate(nv_inference_exec_count[15s]) * 1000 + 0.001);
- the Triton half of its current default (_helpers/_scaling-metric.tpl): the mean number of
  requests executing, (sum(rate(nv_inference_request_duration_us)) -
  sum(rate(nv_inference_queue_duration_us))) / 1e6 (the other half reads Envoy's counters).
"""

import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

import sonic
from conftest import Server, stop_process

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus (Debian's package)")

QUEUE_PER_EXECUTION_MS = (
    'sum by (release) (rate(nv_inference_queue_duration_us{release=~"sonic"}[15s]))'
    ' / sum by (release) ((rate(nv_inference_exec_count{release=~"sonic"}[15s]) * 1000) + 0.001)')
REQUESTS_EXECUTING = (
    '(sum(rate(nv_inference_request_duration_us{release=~"sonic"}[15s]))'
    ' - sum(rate(nv_inference_queue_duration_us{release=~"sonic"}[15s]))) / 1e6')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expression):
    """The value of an instant query, or None when it has no sample."""
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        port, urllib.parse.urlencode({"query": expression}))
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.25)


def test_prometheus_scrapes_and_the_scaling_expressions_move_with_load(tmp_path):
    server = Server("--metrics-port", "0")
    prometheus = None
    try:
        found = wait_for(lambda: re.search(r"^sonic-server metrics listening on .*:(\d+)$",
                                           open(server.log.name).read(), re.M), 10,
                         "the metrics port")
        metrics_port = int(found.group(1))
        web_port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: sonic\n    static_configs:\n"
            "      - targets: ['127.0.0.1:%d']\n        labels: {release: sonic}\n" % metrics_port)
        log = open(tmp_path / "prometheus.log", "w")
        prometheus = subprocess.Popen(
            [PROMETHEUS, "--config.file", str(config), "--storage.tsdb.path",
             str(tmp_path / "data"), "--web.listen-address", "127.0.0.1:%d" % web_port],
            stdout=log, stderr=subprocess.STDOUT)

        def scraped():
            try:
                return query(web_port, 'up{job="sonic"}') == 1
            except OSError:
                return False
        wait_for(scraped, 30, "Prometheus to scrape sonic-server: " +
                 open(tmp_path / "prometheus.log").read()[-2000:])
        # Idle: a few scrapes of unmoving counters.
        time.sleep(3)
        assert query(web_port, QUEUE_PER_EXECUTION_MS) == 0
        assert query(web_port, REQUESTS_EXECUTING) == 0

        stop = threading.Event()

        def load():
            with sonic.Client(server.grpc) as client:
                inputs = {"INPUT0": np.ones((1, 16), np.int32),
                          "INPUT1": np.ones((1, 16), np.int32)}
                while not stop.is_set():
                    client.infer("simple", inputs)
        clients = [threading.Thread(target=load) for _ in range(4)]
        for thread in clients:
            thread.start()
        try:
            executing = wait_for(lambda: query(web_port, REQUESTS_EXECUTING), 20,
                                 "requests executing to rise")
            assert executing > 0
            per_execution = wait_for(lambda: query(web_port, QUEUE_PER_EXECUTION_MS), 20,
                                     "queue time per execution to rise")
            assert per_execution > 0
            successes = query(web_port, 'sum(nv_inference_request_success{model="simple"})')
            assert successes > 0
        finally:
            stop.set()
            for thread in clients:
                thread.join()
    finally:
        if prometheus is not None:
            stop_process(prometheus)
        server.stop()
