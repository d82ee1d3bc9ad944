"""The metrics port (Triton's --metrics-port): the page read by independent clients (http.client,
and prometheus_client's text parser from Debian), the counters moved by inferences by the right
amounts, HTTP's answers, and hostile clients cut off while the port keeps serving."""

import http.client
import re
import socket
import time

import numpy as np
import pytest

import sonic
from conftest import Server

parser = pytest.importorskip("prometheus_client.parser")

MODEL_FAMILIES = {
    "nv_inference_request_success": "counter",
    "nv_inference_request_failure": "counter",
    "nv_inference_count": "counter",
    "nv_inference_exec_count": "counter",
    "nv_inference_request_duration_us": "counter",
    "nv_inference_queue_duration_us": "counter",
    "nv_inference_compute_input_duration_us": "counter",
    "nv_inference_compute_infer_duration_us": "counter",
    "nv_inference_compute_output_duration_us": "counter",
    "nv_inference_pending_request_count": "gauge",
}
HOST_FAMILIES = {
    "nv_cpu_utilization": "gauge",
    "nv_cpu_memory_total_bytes": "gauge",
    "nv_cpu_memory_used_bytes": "gauge",
}


@pytest.fixture(scope="module")
def metrics_server():
    """A sonic-server with a free metrics port; a head must arrive within 1 s."""
    started = Server("--metrics-port", "0", "--handshake-timeout", "1")
    deadline = time.monotonic() + 10
    found = None
    while time.monotonic() < deadline and not found:
        found = re.search(r"^sonic-server metrics listening on .*:(\d+)$",
                          open(started.log.name).read(), re.M)
        time.sleep(0.02)
    if not found:
        started.stop()
        raise RuntimeError("no metrics port: " + open(started.log.name).read())
    started.metrics_port = int(found.group(1))
    yield started
    started.stop()


def get(port, path="/metrics", method="GET", connection=None):
    """(status, headers, body) of one request; `connection` is reused when given."""
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        if own:
            connection.close()


def scrape(port):
    """{family name: (type, {(model, version[, reason]) or (): value})} of the page."""
    status, headers, body = get(port)
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    page = {}
    for family in parser.text_string_to_metric_families(body):
        values = {}
        for sample in family.samples:
            key = tuple(sample.labels[k] for k in ("model", "version", "reason")
                        if k in sample.labels)
            values[key] = sample.value
        page[family.name] = (family.type, values)
    return page


def test_the_page_has_triton_families_types_and_labels(metrics_server):
    page = scrape(metrics_server.metrics_port)
    for name, kind in {**MODEL_FAMILIES, **HOST_FAMILIES}.items():
        assert name in page, name
        assert page[name][0] == kind, name
    # Every model version the server serves, labelled as Triton labels it.
    with sonic.Client(metrics_server.grpc) as client:
        served = {(m["name"], m["version"] or "1") for m in client.repository_index()
                  if m["state"] == "READY"}
    assert ("identity_fp32", "1") in page["nv_inference_count"][1]
    assert served <= set(page["nv_inference_count"][1])
    assert 0 <= page["nv_cpu_utilization"][1][()] <= 1
    total = page["nv_cpu_memory_total_bytes"][1][()]
    assert 0 < page["nv_cpu_memory_used_bytes"][1][()] <= total


def test_counters_move_by_what_was_sent(metrics_server):
    key = ("identity_fp32", "1")
    before = scrape(metrics_server.metrics_port)
    with sonic.Client(metrics_server.grpc, validate_inputs=False) as client:
        for _ in range(5):
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)})
        with pytest.raises(sonic.InvalidArgument):  # the server refuses the wrong type
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.int32)})
    with sonic.Client(metrics_server.tcp) as client:
        for _ in range(3):
            client.infer("identity_fp32", {"INPUT0": np.ones((1, 4), np.float32)})
    after = scrape(metrics_server.metrics_port)

    def moved(name):
        return after[name][1][key] - before[name][1][key]

    assert moved("nv_inference_request_success") == 8
    # Refused by the model's configuration before it ran: Triton's reason OTHER.
    failures = {reason: after["nv_inference_request_failure"][1][key + (reason,)]
                - before["nv_inference_request_failure"][1][key + (reason,)]
                for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER")}
    assert failures == {"REJECTED": 0, "CANCELED": 0, "BACKEND": 0, "OTHER": 1}
    assert after["nv_inference_pending_request_count"][1][key] == 0
    assert moved("nv_inference_count") == 8
    assert moved("nv_inference_exec_count") == 8
    assert moved("nv_inference_request_duration_us") > 0
    # The phases are parts of the requests' time.
    assert moved("nv_inference_request_duration_us") >= moved("nv_inference_compute_infer_duration_us")
    # A model not asked for did not move.
    other = ("simple", "1")
    assert after["nv_inference_request_success"][1][other] == \
        before["nv_inference_request_success"][1][other]


def test_http_answers(metrics_server):
    port = metrics_server.metrics_port
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:  # keep-alive: several requests on one connection, errors included
        assert get(port, connection=connection)[0] == 200
        assert get(port, "/other", connection=connection)[0] == 404
        status, headers, _ = get(port, method="POST", connection=connection)
        assert status == 405 and "GET" in headers["Allow"]
        status, headers, body = get(port, "/metrics?x=1", method="HEAD", connection=connection)
        assert status == 200 and body == "" and int(headers["Content-Length"]) > 0
        assert get(port, connection=connection)[0] == 200
    finally:
        connection.close()
    # Two requests sent at once (pipelined) are answered in order.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n"
                    b"Connection: close\r\n\r\n")
        answer = read_all(raw)
    assert answer.startswith(b"HTTP/1.1 404 ")
    assert b"HTTP/1.1 200 OK" in answer and b"nv_inference_count" in answer


def read_all(sock, limit=5.0):
    """What the server sends until it closes the connection (fails after `limit` seconds)."""
    sock.settimeout(limit)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_hostile_clients_are_cut_off_and_the_port_keeps_serving(metrics_server):
    port = metrics_server.metrics_port
    # A head larger than the port takes: 431, then the connection closes.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /metrics HTTP/1.1\r\n" + b"X-Big: " + b"a" * 20000)
        assert read_all(raw).startswith(b"HTTP/1.1 431 ")
    # A request with a body is refused.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        assert read_all(raw).startswith(b"HTTP/1.1 413 ")
    # An idle connection, and one that sends its head a byte at a time, are closed after the
    # head timeout (1 s here) with nothing answered.
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
        assert read_all(idle) == b""
    assert time.monotonic() - started < 4
    with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
        started = time.monotonic()
        closed = False
        for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n":
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.2)
        if not closed:
            assert read_all(slow) == b""
        assert time.monotonic() - started < 4
    # More connections than the port holds at once (64), none of which sends a request: the
    # oldest makes room, so that a fresh scrape is answered whatever stalled ones hold.
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(64)]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
            started = time.monotonic()
            extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = read_all(extra, limit=2)
            assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:80]
            assert time.monotonic() - started < 0.9  # not after the head timeout
        assert read_all(held[0], limit=2) == b""  # the oldest was closed to make room
    finally:
        for sock in held:
            sock.close()
    # Still serving.
    deadline = time.monotonic() + 5
    while True:
        try:
            assert "nv_inference_count" in scrape(port)
            break
        except (AssertionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert metrics_server.process.poll() is None
