"""TLS between sonic and software it did not write: Google's grpcio (the stack Triton's Python
clients use) against `sonic-server --tls-cert`, with and without client certificates, and
Python's ssl module (OpenSSL, configured by hand) for the protocol versions the server takes.
sonic's own Python client speaks grpcs:// and tcp+tls:// to the same server."""

import os
import socket
import ssl
import subprocess
import warnings

import grpc
import numpy as np
import pytest

import sonic
from conftest import Server
from test_http import http_port


INPUTS = {"INPUT0": np.full((1, 16), 2, np.int32), "INPUT1": np.full((1, 16), 3, np.int32)}


def tls_server(certificates, *more, env=None):
    return Server("--tls-cert", str(certificates / "server.pem"),
                  "--tls-key", str(certificates / "server.key"), *more, env=env)


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def grpcio_channel(certificates, port, client_certificate=False):
    credentials = grpc.ssl_channel_credentials(
        root_certificates=(certificates / "ca.pem").read_bytes(),
        private_key=(certificates / "client.key").read_bytes() if client_certificate else None,
        certificate_chain=(certificates / "client.pem").read_bytes()
        if client_certificate else None)
    return grpc.secure_channel("127.0.0.1:%d" % port, credentials)


def test_grpcio_speaks_grpcs_to_sonic_server(certificates, stubs):
    grpc_service_pb2, grpc_service_pb2_grpc = stubs
    server = tls_server(certificates)
    try:
        with grpcio_channel(certificates, port_of(server.grpc)) as channel:
            stub = grpc_service_pb2_grpc.GRPCInferenceServiceStub(channel)
            metadata = stub.ServerMetadata(grpc_service_pb2.ServerMetadataRequest(), timeout=10)
            assert metadata.name == "sonic-server"
            assert stub.ModelReady(grpc_service_pb2.ModelReadyRequest(name="simple"),
                                   timeout=10).ready
        # A plaintext grpcio channel gets nothing from it.
        with grpc.insecure_channel("127.0.0.1:%d" % port_of(server.grpc)) as channel:
            stub = grpc_service_pb2_grpc.GRPCInferenceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                stub.ServerMetadata(grpc_service_pb2.ServerMetadataRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop()


def test_grpcio_with_and_without_a_client_certificate(certificates, stubs):
    grpc_service_pb2, grpc_service_pb2_grpc = stubs
    server = tls_server(certificates, "--tls-client-ca", str(certificates / "ca.pem"))
    try:
        with grpcio_channel(certificates, port_of(server.grpc), client_certificate=True) as ch:
            stub = grpc_service_pb2_grpc.GRPCInferenceServiceStub(ch)
            assert stub.ServerLive(grpc_service_pb2.ServerLiveRequest(), timeout=10).live
        with grpcio_channel(certificates, port_of(server.grpc)) as ch:
            stub = grpc_service_pb2_grpc.GRPCInferenceServiceStub(ch)
            with pytest.raises(grpc.RpcError) as refused:
                stub.ServerLive(grpc_service_pb2.ServerLiveRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop()


def handshake(port, version, alpn=None):
    """The protocol a TLS `version`-only client negotiates with 127.0.0.1:port (and ALPN's
    choice), or the ssl.SSLError it meets."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():  # the point is to offer the deprecated versions
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = version
        context.maximum_version = version
    context.set_ciphers("ALL:@SECLEVEL=0")  # let OpenSSL offer old versions at all
    if alpn:
        context.set_alpn_protocols(alpn)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            with context.wrap_socket(raw) as secure:
                return secure.version(), secure.selected_alpn_protocol()
        except ssl.SSLError as e:
            return e


def test_the_server_takes_tls_1_2_and_later_only_and_offers_h2(certificates, tmp_path):
    # Debian's /etc/ssl/openssl.cnf sets MinProtocol = TLSv1.2, and OpenSSL 3's default security
    # level refuses TLS 1.0 and 1.1 too. The server runs with a configuration that allows them
    # both, so that the refusal checked is sonic's own.
    (tmp_path / "openssl.cnf").write_text(
        "openssl_conf = conf\n[conf]\nssl_conf = ssl\n[ssl]\nsystem_default = permissive\n"
        "[permissive]\nMinProtocol = TLSv1\nCipherString = ALL:@SECLEVEL=0\n")
    server = tls_server(certificates, env={"OPENSSL_CONF": str(tmp_path / "openssl.cnf")})
    try:
        grpc_port, tcp_port = port_of(server.grpc), port_of(server.tcp)
        assert handshake(grpc_port, ssl.TLSVersion.TLSv1_3, ["h2"]) == ("TLSv1.3", "h2")
        assert handshake(grpc_port, ssl.TLSVersion.TLSv1_2, ["h2"]) == ("TLSv1.2", "h2")
        assert handshake(tcp_port, ssl.TLSVersion.TLSv1_3) == ("TLSv1.3", None)
        for old in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            assert isinstance(handshake(grpc_port, old), ssl.SSLError), old
            assert isinstance(handshake(tcp_port, old), ssl.SSLError), old
        # A client that offers only HTTP/1.1 could not speak gRPC: refused in the handshake.
        assert isinstance(handshake(grpc_port, ssl.TLSVersion.TLSv1_3, ["http/1.1"]),
                          ssl.SSLError)
    finally:
        server.stop()


def test_sonic_python_client_over_every_tls_scheme(certificates):
    server = tls_server(certificates)
    try:
        for url in (server.grpc.replace("grpc://", "grpcs://"),
                    server.tcp.replace("tcp://", "tcp+tls://"),
                    server.tcp.replace("tcp://", "tcp+zstd+tls://"),
                    "https://127.0.0.1:%d" % http_port(server)):
            with sonic.Client(url, tls_ca_file=str(certificates / "ca.pem")) as client:
                assert client.infer("simple", INPUTS)["OUTPUT0"][0, 0] == 5
            with sonic.Client(url, tls_ca_file=str(certificates / "other-ca.pem"),
                              max_attempts=1) as stranger:
                with pytest.raises(sonic.Unavailable, match="unable to get local issuer"):
                    stranger.infer("simple", INPUTS)
    finally:
        server.stop()


def test_tls_authorities_given_as_pem_text(certificates):
    """tls_ca_pem: the authority's PEM text itself, for programs that hold it in memory (a
    secret store, a notebook) rather than in a file. The wrong one fails the handshake."""
    server = tls_server(certificates)
    try:
        url = server.grpc.replace("grpc://", "grpcs://")
        ca = (certificates / "ca.pem").read_text()
        with sonic.Client(url, tls_ca_pem=ca) as client:
            assert client.infer("simple", INPUTS)["OUTPUT0"][0, 0] == 5
        other = (certificates / "other-ca.pem").read_text()
        with sonic.Client(url, tls_ca_pem=other, max_attempts=1) as stranger:
            with pytest.raises(sonic.Unavailable, match="unable to get local issuer"):
                stranger.infer("simple", INPUTS)
    finally:
        server.stop()


def test_the_readme_tls_and_token_commands(certificates, tmp_path):
    """The README's "Security and deployment" commands, as written there: sonic-server with TLS
    and a token, sonic-infer with the authority and the token file."""
    token = tmp_path / "token"
    token.write_text("readme-s3cret\n")
    server = tls_server(certificates, "--auth-token-file", str(token))
    infer = os.path.join(os.path.dirname(os.environ["SONIC_SERVER"]), "sonic-infer")
    url = server.grpc.replace("grpc://", "grpcs://")
    try:
        listed = subprocess.run(
            [infer, "-u", url, "--tls-ca", str(certificates / "ca.pem"), "--token-file",
             str(token), "--list"], capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0, listed.stderr
        assert "simple" in listed.stdout
        anonymous = subprocess.run([infer, "-u", url, "--tls-ca", str(certificates / "ca.pem"),
                                    "--list"], capture_output=True, text=True, timeout=30)
        assert anonymous.returncode == 1 and "UNAUTHENTICATED" in anonymous.stderr
    finally:
        server.stop()
