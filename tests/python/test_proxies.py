"""sonic's client through the proxies deployments put in front of inference servers: nginx
(grpc_pass) and HAProxy (HTTP/2 mode), each started here on loopback from Debian's packages
(nginx-light, haproxy) in front of two sonic-servers that require a bearer token, in
plaintext and terminating TLS (grpcs:// to the proxy, HTTP/2 in plaintext behind it). Requests
spread over the replicas; a replica killed behind the proxy costs no request (what the proxy
answers for the calls it had sent there, an HTTP 502 page or a reset, is UNAVAILABLE to sonic,
which retries); the token crosses the proxy as call metadata."""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

import sonic
from conftest import Server, stop_process

TOKEN = "proxy-s3cret"
INPUTS = {"INPUT0": np.ones((1, 16), np.int32), "INPUT1": np.ones((1, 16), np.int32)}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def nginx_config(work, port, replicas, tls):
    servers = "".join("    server 127.0.0.1:%d;\n" % p for p in replicas)
    listen = ("ssl http2;\n    ssl_certificate {0}/server.pem;\n"
              "    ssl_certificate_key {0}/server.key;".format(tls) if tls else "http2;")
    return """
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {work}/body;
  upstream sonic {{
{servers}  }}
  server {{
    listen 127.0.0.1:{port} {listen}
    location / {{ grpc_pass grpc://sonic; }}
  }}
}}
""".format(work=work, port=port, servers=servers, listen=listen)


def haproxy_config(work, port, replicas, tls):
    servers = "".join("  server s%d 127.0.0.1:%d proto h2\n" % (i, p)
                      for i, p in enumerate(replicas))
    bind = "proto h2"
    if tls:
        # HAProxy takes the certificate and its key in one file.
        combined = os.path.join(work, "server-and-key.pem")
        with open(combined, "w") as f:
            f.write(open(os.path.join(tls, "server.pem")).read())
            f.write(open(os.path.join(tls, "server.key")).read())
        bind = "ssl crt %s alpn h2" % combined
    return """
global
  maxconn 256
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 2
frontend grpc
  bind 127.0.0.1:{port} {bind}
  default_backend sonic
backend sonic
  balance roundrobin
  retry-on conn-failure empty-response
{servers}""".format(port=port, servers=servers, bind=bind)


class Proxy:
    """`kind` ("nginx" or "haproxy") on a loopback port, in front of `replicas` (ports);
    terminating TLS with the certificates in directory `tls` when given."""

    def __init__(self, kind, replicas, tls=None):
        program = shutil.which(kind, path=os.environ.get("PATH", "") + ":/usr/sbin")
        if not program:
            raise RuntimeError("%s is not installed: scripts/install-deps.sh installs it (Debian "
                               "packages nginx-light and haproxy)" % kind)
        self.work = tempfile.mkdtemp(prefix="sonic-%s-" % kind)
        self.port = free_port()
        config = os.path.join(self.work, kind + ".conf")
        write = nginx_config if kind == "nginx" else haproxy_config
        with open(config, "w") as f:
            f.write(write(self.work, self.port, replicas, tls))
        command = ([program, "-p", self.work, "-c", config] if kind == "nginx"
                   else [program, "-db", "-f", config])
        self.log = open(os.path.join(self.work, "out.log"), "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("%s did not start: %s" % (kind, open(self.log.name).read()))
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            time.sleep(0.05)
        self.url = "%s://127.0.0.1:%d" % ("grpcs" if tls else "grpc", self.port)
        # What a client of the proxy needs: the authority that signed its certificate.
        self.client_options = {"tls_ca_file": os.path.join(tls, "ca.pem")} if tls else {}

    def stop(self):
        stop_process(self.process)
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return str(path)


@pytest.fixture(params=["nginx", "haproxy", "nginx+tls", "haproxy+tls"])
def deployment(request, token_file, certificates):
    """Two token-checking sonic-servers behind one proxy."""
    replicas = [Server("--auth-token-file", token_file) for _ in range(2)]
    ports = [int(r.grpc.rsplit(":", 1)[1]) for r in replicas]
    kind, _, tls = request.param.partition("+")
    proxy = Proxy(kind, ports, str(certificates) if tls else None)
    yield proxy, replicas
    proxy.stop()
    for replica in replicas:
        replica.stop()


def executions(replica):
    with sonic.Client(replica.grpc, bearer_token=TOKEN) as direct:
        (stats,) = direct.model_statistics("simple")
    return int(stats["inference_count"])


def test_the_token_crosses_the_proxy_and_requests_spread(deployment, token_file):
    proxy, replicas = deployment
    with sonic.Client(proxy.url, max_attempts=1, **proxy.client_options) as anonymous:
        with pytest.raises(sonic.Unauthenticated):
            anonymous.infer("simple", INPUTS)
    with sonic.Client(proxy.url, token_file=token_file, **proxy.client_options) as client:
        for _ in range(40):
            assert client.infer("simple", INPUTS)["OUTPUT0"][0, 0] == 2
    served = [executions(r) for r in replicas]
    assert all(n > 0 for n in served), "requests per replica: %s" % served


def test_a_replica_killed_behind_the_proxy_costs_no_request(deployment, token_file):
    proxy, replicas = deployment
    failures, done = [], []
    stop = threading.Event()

    def send(client):
        while not stop.is_set():
            try:
                client.infer("simple", INPUTS, timeout=10)
                done.append(1)
            except sonic.Error as e:
                failures.append(repr(e))

    with sonic.Client(proxy.url, token_file=token_file, max_attempts=5,
                      **proxy.client_options) as client:
        threads = [threading.Thread(target=send, args=(client,)) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        replicas[1].process.kill()  # mid-load: calls on their way there fail at the proxy
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(30)
        retries = client.stats()["retries"]
    assert len(done) > 100
    assert failures == [], "%d of %d failed, the first: %s" % (
        len(failures), len(done) + len(failures), failures[:1])
    print("%d requests, %d retried after the kill" % (len(done), retries))
