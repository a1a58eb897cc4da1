"""systemd integration and graceful shutdown, as systemd (or Kubernetes) drives them.

The notify protocol is exercised for real: the test binds the unix datagram
socket systemd would, passes it as NOTIFY_SOCKET with WATCHDOG_USEC, and reads
what the server sends. Shutdown: SIGTERM lets a stream in flight finish, refuses
new connections, and exits 0; drain_timeout bounds it.
"""
import json
import os
import signal
import socket
import tempfile
import threading
import time

import httpx
import pytest
from outpost_harness import serve


class Notify:
    """The receiving end of NOTIFY_SOCKET."""

    def __init__(self):
        self.path = os.path.join(tempfile.mkdtemp(), "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            self.messages.append((time.time(), data.decode()))

    def wait_for(self, key, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for t, m in self.messages:
                if key in m.split("\n"):
                    return t, m
            time.sleep(0.05)
        raise AssertionError(f"no {key} from the server; got {self.messages}")

    def count(self, key, since=0):
        return sum(1 for t, m in self.messages if t >= since and key in m.split("\n"))

    def close(self):
        self._stop = True
        self._thread.join()
        self.sock.close()


def _stream(server, out, max_tokens):
    """Streams a chat answer into `out`: events, [DONE], and any error."""
    body = {"messages": [{"role": "user", "content": "Tell me a long story about a lighthouse."}],
            "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True}
    try:
        with httpx.stream("POST", server.base + "/v1/chat/completions", json=body, timeout=120) as r:
            out["status"] = r.status_code
            for line in r.iter_lines():
                if line == "data: [DONE]":
                    out["done"] = True
                elif line.startswith("data: "):
                    out.setdefault("events", []).append(json.loads(line[6:]))
    except httpx.HTTPError as e:
        out["error"] = repr(e)


def _wait_first_event(out, timeout=60):
    deadline = time.time() + timeout
    while not out.get("events") and time.time() < deadline and "error" not in out:
        time.sleep(0.02)
    assert out.get("events"), out


def _connect_refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def test_ready_watchdog_and_a_drain_that_finishes_the_stream():
    n = Notify()
    try:
        env = {"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": "600000"}
        with serve("--parallel", "2", env=env) as s:
            t_ready, ready = n.wait_for("READY=1")
            assert "STATUS=serving 'SmolLM2-135M-Instruct.Q4_1'" in ready, ready
            time.sleep(1.5)
            # Half the 600 ms interval: about 5 pings in 1.5 s.
            assert n.count("WATCHDOG=1", since=t_ready) >= 3, n.messages
            assert "systemd watchdog: pinging every 300 ms" in s.log()

            out = {}
            t = threading.Thread(target=_stream, args=(s, out, 96))
            t.start()
            _wait_first_event(out)
            s.proc.send_signal(signal.SIGTERM)
            n.wait_for("STOPPING=1", timeout=10)
            time.sleep(0.3)
            assert _connect_refused(s.port), "new connections must be refused while draining"
            t.join(timeout=60)
            assert out.get("done"), out  # the stream in flight ran to its end
            assert out["events"][-1]["choices"][0]["finish_reason"] == "length", out["events"][-1]
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in out["events"])
            assert len(text) > 100, text
            assert s.proc.wait(timeout=30) == 0
            log = s.log()
            assert "draining 1 request(s) in flight" in log, log
            assert "drained in" in log, log
    finally:
        n.close()


def test_drain_timeout_cuts_what_does_not_finish():
    with serve("--parallel", "2", "--drain-timeout", "1s") as s:
        out = {}
        t = threading.Thread(target=_stream, args=(s, out, 3000))
        t.start()
        _wait_first_event(out)
        start = time.time()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=30) == 0
        took = time.time() - start
        t.join(timeout=30)
        assert 0.9 <= took < 10, took
        # A 3000-token stream cannot finish in a 1 s drain: it ends with an
        # error event the client can act on, not a silent cut.
        assert out["events"][-1].get("error", {}).get("message") == "the server is shutting down", \
            out["events"][-1]
        assert len(out["events"]) < 3000
        assert "drain_timeout: cutting 1 request(s)" in s.log()


def test_no_notify_socket_is_a_quiet_no_op():
    # Outside systemd nothing is sent and nothing fails; a bad NOTIFY_SOCKET
    # (not a path) is ignored too.
    with serve(env={"NOTIFY_SOCKET": "not-a-socket", "WATCHDOG_USEC": "garbage"}) as s:
        r = s.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}],
                                                   "max_tokens": 4})
        assert r.status_code == 200
        assert "systemd watchdog" not in s.log()
