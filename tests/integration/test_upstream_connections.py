"""Upstream connections with real processes on loopback: TLS to central
(verified against a CA file, rejected without it, accepted with verify off),
keep-alive reuse from the connection pool, and the one retry on a fresh
connection when a pooled one turns out closed.

"Central" is a small Python HTTP/1.1 server that records which connection
carried each request; certificates come from the openssl command line.
"""
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time

import pytest
from outpost_harness import chat_body, serve, wait_upstream, yaml_file

CHAT = "/v1/chat/completions"
ANSWER = json.dumps({
    "id": "chatcmpl-c", "object": "chat.completion", "created": 0, "model": "central-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "from central"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()


class Central(http.server.BaseHTTPRequestHandler):
    """Answers every POST with ANSWER on a keep-alive connection. Records
    (connection id, path) per POST. With drop_reused, a connection that
    already answered one POST closes when the next arrives, unanswered — as a
    server does when its idle or per-connection limit passed."""
    protocol_version = "HTTP/1.1"
    posts = []
    paths = []
    drop_reused = False
    lock = threading.Lock()
    connections = 0

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        self.answered = 0
        with Central.lock:
            Central.connections += 1
            self.conn = Central.connections

    def reply(self, body, ctype="application/json"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with Central.lock:
            Central.paths.append(("GET", self.path))
        self.reply(b'{"status":"ok"}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Central.lock:
            Central.paths.append(("POST", self.path))
            Central.posts.append((self.conn, self.answered))
        if Central.drop_reused and self.answered >= 1:
            self.close_connection = True  # closes without a response
            return
        self.answered += 1
        self.reply(ANSWER)


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def run(cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs():
    """A CA, a server certificate for 127.0.0.1 signed by it, and an unrelated CA."""
    d = tempfile.mkdtemp(prefix="outpost-tls-")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=Outpost Test CA"], d)
    run(["openssl", "req", "-x509", *ec, "-keyout", "other.key", "-out", "other-ca.pem", "-days", "2",
         "-subj", "/CN=Some Other CA"], d)
    run(["openssl", "req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1"], d)
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf"], d)
    return d


def start_central(tls_dir=None, drop_reused=False):
    Central.posts = []
    Central.paths = []
    Central.drop_reused = drop_reused
    srv = ThreadingServer(("127.0.0.1", 0), Central)
    if tls_dir:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(tls_dir, "srv.pem"), os.path.join(tls_dir, "srv.key"))
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def routing_file(url, extra=""):
    """extra: one more key of the upstream (tls settings, a timeout)."""
    return yaml_file(f"""
upstreams:
  - name: hq
    kind: central
    url: {url}
    models: [central-model]
    health_check: {{interval: 200ms, timeout: 1s, unhealthy_threshold: 1, healthy_threshold: 1}}
    {extra}
policy:
  aliases: {{large: hq}}
""")


@pytest.mark.parametrize("tls,reaches", [
    ("tls: {verify: true, ca_file: CA}", True),      # verified against our CA
    ("tls: {verify: false}", True),                  # verification off
    ("", False),                                     # system CAs do not know ours
    ("tls: {verify: true, ca_file: OTHER}", False),  # a CA that did not sign it
])
def test_tls_central(certs, tls, reaches):
    tls = tls.replace("OTHER", os.path.join(certs, "other-ca.pem")).replace("CA", os.path.join(certs, "ca.pem"))
    srv = start_central(tls_dir=certs)
    try:
        url = f"https://127.0.0.1:{srv.server_address[1]}"
        with serve("--parallel", "1", "--ctx-size", "256", "--routing-file", routing_file(url, tls)) as edge:
            wait_upstream(edge, reaches, timeout=10)
            r = edge.post(CHAT, json=chat_body(model="large"), timeout=30)
            if reaches:
                assert r.status_code == 200, r.text
                assert r.headers["X-Outpost-Route"] == "central:hq"
                assert r.json()["choices"][0]["message"]["content"] == "from central"
                assert len(Central.posts) == 1
            else:
                # An upstream whose certificate does not verify is never used.
                assert r.status_code == 503, r.text
                assert "hq" in r.json()["error"]["message"]
                assert Central.posts == []
            assert edge.post(CHAT, json=chat_body()).status_code == 200  # local unaffected
    finally:
        srv.shutdown()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_pool_reuses_connections(certs, scheme):
    srv = start_central(tls_dir=certs if scheme == "https" else None)
    try:
        url = f"{scheme}://127.0.0.1:{srv.server_address[1]}"
        tls = f"tls: {{ca_file: {os.path.join(certs, 'ca.pem')}}}" if scheme == "https" else ""
        with serve("--parallel", "1", "--ctx-size", "256", "--routing-file", routing_file(url, tls)) as edge:
            wait_upstream(edge, True, timeout=10)
            for _ in range(8):
                r = edge.post(CHAT, json=chat_body(model="large"), timeout=30)
                assert r.status_code == 200, r.text
            conns = {c for c, _ in Central.posts}
            print(f"{scheme}: 8 sequential relayed requests used {len(conns)} connection(s)")
            assert len(Central.posts) == 8
            assert len(conns) == 1  # one pooled keep-alive connection (one TLS handshake)
            assert edge.metric("outpost_upstream_connections_opened_total") == 1
    finally:
        srv.shutdown()


def test_path_in_the_url_prefixes_every_request():
    srv = start_central()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/gw/"
        with serve("--parallel", "1", "--ctx-size", "256", "--routing-file", routing_file(url)) as edge:
            wait_upstream(edge, True, timeout=10)
            assert edge.ready()["upstreams"][0]["url"] == url.rstrip("/")
            assert edge.post(CHAT, json=chat_body(model="large")).status_code == 200
            assert edge.post(CHAT, json=chat_body(model="large", stream=True)).status_code == 200
            assert ("GET", "/gw/health") in Central.paths
            assert [p for m, p in Central.paths if m == "POST"] == ["/gw/v1/chat/completions"] * 2
    finally:
        srv.shutdown()


def test_closed_pooled_connection_is_retried_once_on_a_fresh_one():
    srv = start_central(drop_reused=True)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        with serve("--parallel", "1", "--ctx-size", "256", "--routing-file", routing_file(url)) as edge:
            wait_upstream(edge, True, timeout=10)
            for i in range(3):
                r = edge.post(CHAT, json=chat_body(model="large"), timeout=30)
                assert r.status_code == 200, f"request {i}: {r.text}"
                assert r.headers["X-Outpost-Route"] == "central:hq"
            # Request 1 opened a connection; requests 2 and 3 each found the pooled
            # one closed on arrival and went again on a fresh connection.
            assert [n for _, n in Central.posts] == [0, 1, 0, 1, 0]
            assert len({c for c, _ in Central.posts}) == 3
    finally:
        srv.shutdown()


class RawCentral(socketserver.StreamRequestHandler):
    """Answers with exact bytes, to pin down how the relay reads each framing.
    GETs (health checks) get a plain 200."""
    mode = "chunked"

    def handle(self):
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                c = self.rfile.read(1)
                if not c:
                    return
                head += c
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.rfile.read(length)
            if head.startswith(b"GET"):
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            w = self.wfile.write
            if RawCentral.mode == "chunked":
                w(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                for i in range(0, len(ANSWER), 17):
                    part = ANSWER[i:i + 17]
                    w(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.flush()
                w(b"0\r\n\r\n")
            elif RawCentral.mode == "close_delimited":
                w(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + ANSWER)
                return
            elif RawCentral.mode == "interim":
                w(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))
            elif RawCentral.mode == "dribble":
                w(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
                for _ in range(100):
                    w(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
                return
            elif RawCentral.mode == "malformed":
                w(b"HTTP/1.1 abc\r\n\r\n")
                return
            self.wfile.flush()


@pytest.mark.parametrize("mode,status,part", [
    ("chunked", 200, "from central"),
    ("close_delimited", 200, "from central"),
    ("interim", 200, "from central"),
    ("dribble", 502, "total timeout"),
    ("malformed", 503, "malformed response"),
])
def test_response_framing(mode, status, part):
    RawCentral.mode = mode
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), RawCentral)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        routing = routing_file(url, "total_timeout: 2s")
        with serve("--parallel", "1", "--ctx-size", "256", "--routing-file", routing) as edge:
            wait_upstream(edge, True, timeout=10)
            for _ in range(2):  # the second request reuses the connection where the framing allows
                t0 = time.time()
                r = edge.post(CHAT, json=chat_body(model="large"), timeout=30)
                elapsed = time.time() - t0
                assert r.status_code == status, r.text
                assert part in r.text, r.text
                assert elapsed < 5, f"{mode}: answered after {elapsed:.1f}s"
            assert edge.post(CHAT, json=chat_body()).status_code == 200  # still serving locally
    finally:
        srv.shutdown()
        srv.server_close()
