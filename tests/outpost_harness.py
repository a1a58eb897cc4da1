"""Starts a real `outpost serve` process for tests and talks to it over HTTP.

Shared by tests/integration and tests/e2e (both add this directory to sys.path
through their conftest.py). Uses httpx, which the openai client depends on.
"""
import contextlib
import os
import shutil
import signal
import sys
import subprocess
import tempfile
import time

import httpx
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from benchlib import free_port  # noqa: E402,F401  (one copy, shared with the benchmarks)

BIN = os.environ.get("OUTPOST_BIN", "build/outpost")
MODEL = os.environ.get("OUTPOST_MODEL", ".deps/models/default.gguf")  # SmolLM2 135M Instruct
GEMMA = os.environ.get("OUTPOST_GEMMA", ".deps/models/gemma-3-270m.gguf")  # base model, 262k vocab
# Chat templates for tests (tests/data/templates); qwen2.5-tools.jinja declares
# tools, so a model served with it gets llama.cpp's native tool-call format.
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "templates")


class Server:
    def __init__(self, proc, port, log_path):
        self.proc = proc
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = log_path

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def get(self, path, **kw):
        return httpx.get(self.base + path, timeout=kw.pop("timeout", 60), **kw)

    def post(self, path, **kw):
        return httpx.post(self.base + path, timeout=kw.pop("timeout", 300), **kw)

    def ready(self):
        return self.get("/ready").json()

    def metric(self, name, **labels):
        """Sum of a metric's series in /metrics, over those whose labels include
        `labels` (series are labelled by model, route, ...)."""
        total, found = 0.0, False
        for line in self.get("/metrics").text.splitlines():
            if line.startswith("#") or not (line.startswith(name + " ") or line.startswith(name + "{")):
                continue
            series, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
                found = True
        if not found:
            raise KeyError(name)
        return total

    def rss_peak_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM")


@contextlib.contextmanager
def serve(*flags, wait_ready=True, timeout=120, port=None, models=None, env=None, threads="2",
          wrap=()):
    """Runs `outpost serve --model M... --port P *flags` until the block ends;
    `models` (--model values) defaults to [MODEL]; `env` adds to the environment;
    `threads` None leaves --threads to its default; `wrap` goes in front of
    the command (e.g. taskset -c 0). Its state directory is a new temporary
    one unless `flags` has --state-dir.
    At the end: SIGTERM (the server drains requests in flight), and a second
    SIGTERM after 5 s cuts a drain short."""
    port = port or free_port()
    log = tempfile.NamedTemporaryFile(prefix="outpost-", suffix=".log", delete=False)
    model_flags = [a for m in (models or [MODEL]) for a in ("--model", m)]
    thread_flags = ("--threads", threads) if threads is not None else ()
    cmd = [*wrap, BIN, "serve", *model_flags, "--port", str(port), *thread_flags, *flags]
    # Its own state (batches, stored responses, spool) unless a test names
    # one: servers running side by side never contend for one store.
    state_home = tempfile.mkdtemp(prefix="outpost-state-")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "XDG_STATE_HOME": state_home, **(env or {})})
    server = Server(proc, port, log.name)
    try:
        if wait_ready:
            deadline = time.time() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"outpost exited with {proc.returncode}:\n{server.log()}")
                try:
                    if httpx.get(server.base + "/ready", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.time() > deadline:
                    raise RuntimeError(f"outpost not ready after {timeout}s:\n{server.log()}")
                time.sleep(0.05)  # a server is ready in ~1.3 s; a coarse poll adds to every test
        yield server
    finally:
        server.stopped_by = None
        if proc.poll() is None:
            server.stopped_by = "SIGTERM"
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.stopped_by = "SIGTERM twice"
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=25)
                except subprocess.TimeoutExpired:
                    server.stopped_by = "SIGKILL after two SIGTERMs"
                    proc.kill()
                    proc.wait()
        # For assertions made after the block: how it ended, and its log.
        server.returncode = proc.returncode
        server.final_log = server.log()
        report = sanitizer_report(server.final_log) if os.environ.get("OUTPOST_SANITIZED") else None
        os.unlink(log.name)
        shutil.rmtree(state_home, ignore_errors=True)
        # A sanitized build (make asan) must have run clean, leaks included.
        assert report is None, report


LLAMA_SERVER = os.environ.get("OUTPOST_LLAMA_SERVER", ".deps/llama.cpp-build/bin/llama-server")


@contextlib.contextmanager
def llama_server(*flags, model=None, timeout=120):
    """llama.cpp's own server (built by scripts/bootstrap from the pinned
    source) on `model` (default MODEL) with `flags`, until the block ends;
    yields its base URL once /health answers."""
    assert os.access(LLAMA_SERVER, os.X_OK), f"{LLAMA_SERVER} missing: scripts/bootstrap builds it"
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    proc = subprocess.Popen([LLAMA_SERVER, "-m", model or MODEL, "--host", "127.0.0.1",
                             "--port", str(port), *flags], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            assert proc.poll() is None, open(log.name, errors="replace").read()[-3000:]
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "llama-server did not become healthy"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        os.unlink(log.name)


# For the tests that measure the release build itself (resident memory against
# the plan, decode speed, image size, memory drift): under a sanitizer (make
# asan) ASan's shadow memory and slowdown make those numbers meaningless.
release_build_only = pytest.mark.skipif(
    bool(os.environ.get("OUTPOST_SANITIZED")),
    reason="measures the release build's memory, speed or size; meaningless under a sanitizer")


def v1_cgroup(controller, name):
    """A fresh cgroup v1 directory below this process's own in `controller`'s
    hierarchy, or skip where there is none or it cannot be made (v2 hosts,
    unprivileged containers)."""
    path = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, p = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                path = p
    base = f"/sys/fs/cgroup/{controller}"
    if path is None or not os.path.isdir(base):
        pytest.skip(f"no cgroup v1 {controller} hierarchy")
    parent = os.path.join(base, path.lstrip("/"))
    if not os.path.isdir(parent):
        parent = base  # a container without a cgroup namespace sees its own cgroup at the root
    d = os.path.join(parent, f"{name}-{os.getpid()}")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        pytest.skip(f"cannot make a cgroup here: {e}")
    return d


def sanitizer_report(text):
    """The first ASan/LSan/UBSan report in a server log, or None."""
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        i = text.find(marker)
        if i >= 0:
            return text[max(0, i - 200):i + 4000]
    return None


def yaml_file(text):
    """Writes text to a temporary .yaml file (routing files, configs); returns its path."""
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


def wait_upstream(server, healthy, name=None, timeout=15):
    """Waits until `server`'s /ready reports upstream `name` (default: the first)
    healthy == `healthy`; returns the seconds it took, raises AssertionError on timeout."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        ups = server.ready().get("upstreams", [])
        ups = [u for u in ups if name is None or u["name"] == name]
        if ups and ups[0]["healthy"] == healthy:
            return time.time() - t0
        time.sleep(0.05)
    raise AssertionError(f"upstream {name or '#1'} never became healthy={healthy}: {server.ready()}")


def chat_body(content="Name three colors.", **kw):
    body = {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": 24}
    body.update(kw)
    return body


def stream_events(server, path, body, timeout=300):
    """POSTs a streaming request; returns the parsed JSON events and whether [DONE] came."""
    import json

    events, done = [], False
    with httpx.stream("POST", server.base + path, json=body, timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if not line:
                continue
            assert line.startswith("data: "), line
            data = line[len("data: "):]
            if data == "[DONE]":
                done = True
                continue
            events.append(json.loads(data))
    return events, done
