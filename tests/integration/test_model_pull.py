"""`outpost model pull` over a flaky link, against a real HTTP server started
here (Range, If-Range and ETag as a CDN serves them) that injects the faults a
site's uplink has: a connection reset mid-body, a stall, a body cut short, a
file that changed between tries, a server that ignores Range. Each pull must
end with the exact bytes (the pinned sha256) or a clear error; a kill -9 in the
middle resumes from the partial file (its prefix re-hashed), not from zero;
the bandwidth cap holds; and a table of bad input."""
import hashlib
import http.server
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from outpost_harness import BIN, MODEL


class Faulty(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, path):
        super().__init__(("127.0.0.1", 0), Handler)
        self.data = open(os.path.realpath(path), "rb").read()
        self.etag = '"v1"'
        self.faults = []  # per request, in order: None, ("reset", at), ("stall", at, s), ("cut", at), "norange"
        self.requests = []  # (range header, if-range header)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/models/smollm2.gguf"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        srv = self.server
        if self.path != "/models/smollm2.gguf":
            self.send_error(404)
            return
        fault = srv.faults.pop(0) if srv.faults else None
        rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
        srv.requests.append((rng, if_range))
        start = 0
        if rng and fault != "norange" and (if_range is None or if_range == srv.etag):
            start = int(re.match(r"bytes=(\d+)-", rng).group(1))
        body = srv.data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(srv.data) - 1}/{len(srv.data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", srv.etag)
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        at = fault[1] if isinstance(fault, tuple) else len(body)
        view = memoryview(body)
        sent = 0
        try:
            while sent < min(at, len(body)):
                n = min(1 << 16, min(at, len(body)) - sent)
                self.wfile.write(view[sent:sent + n])
                sent += n
            if isinstance(fault, tuple) and fault[0] == "stall":
                time.sleep(fault[2])
            if isinstance(fault, tuple) and fault[0] == "change":
                srv.etag = '"v2"'  # the file is replaced on the server while the client is away
            if isinstance(fault, tuple):
                self.wfile.flush()
                self.connection.shutdown(2)  # reset / cut / after the stall: the rest never comes
                self.close_connection = True
        except OSError:
            pass


def model(store, *args, timeout=300, env=None):
    return subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def sha():
    return hashlib.sha256(open(os.path.realpath(MODEL), "rb").read()).hexdigest()


def test_pull_survives_reset_stall_cut_and_a_range_ignoring_server(tmp_path, sha):
    srv = Faulty(MODEL)
    size = len(srv.data)
    srv.faults = [("reset", size // 5), ("cut", size // 10), ("stall", size // 10, 6), "norange"]
    t0 = time.monotonic()
    p = model(tmp_path / "m", "pull", srv.url, "smollm2:1", "--sha256", sha, "--json", "--stall-timeout", "2s")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["state"] == "verified" and v["digest"] == "sha256:" + sha and v["size"] == size, v
    assert v["source"] == srv.url
    # Resumed with Range + If-Range after the reset, the cut and the stall (the
    # 2 s stall timeout fired before the server's 6 s pause ended); started
    # over when the range was ignored.
    ranges = [r for r, _ in srv.requests]
    assert len(ranges) == 4 and ranges[0] is None and all(ranges[1:]), srv.requests
    assert "starting over" in p.stderr and "again in" in p.stderr, p.stderr
    assert all(ir == '"v1"' for r, ir in srv.requests if r), srv.requests
    assert "pulling" in p.stderr and "(100%)" in p.stderr
    print(f"pull with 4 faults: {time.monotonic() - t0:.1f} s, {len(srv.requests)} requests")
    # The store has no partial file left.
    assert not [f for f in os.listdir(tmp_path / "m" / "blobs" / "sha256") if f.startswith(".")]
    srv.shutdown()


def test_a_killed_pull_resumes_from_its_partial_file(tmp_path, sha):
    srv = Faulty(MODEL)
    store = tmp_path / "m"
    proc = subprocess.Popen([BIN, "model", "--store", str(store), "pull", srv.url, "smollm2:1", "--sha256", sha,
                             "--max-rate", "8MiB"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    resume = store / "blobs" / "sha256" / f".resume-{sha}"
    deadline = time.time() + 60
    while time.time() < deadline and (not resume.exists() or resume.stat().st_size < 20 << 20):
        time.sleep(0.1)
    t_rate = time.monotonic()
    got = resume.stat().st_size
    time.sleep(1.0)
    rate = (resume.stat().st_size - got) / (time.monotonic() - t_rate)
    assert rate < 8.5 * (1 << 20), rate  # the cap holds (8 MiB/s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = resume.stat().st_size
    assert 20 << 20 <= kept < len(srv.data)
    p = model(store, "list")
    assert "smollm2:1" in p.stdout and "failed" in p.stdout and "interrupted" in p.stdout, p.stdout
    srv.requests.clear()
    p = model(store, "pull", srv.url, "smollm2:1", "--sha256", sha)
    assert p.returncode == 0, p.stderr
    assert srv.requests[0] == (f"bytes={kept}-", '"v1"'), srv.requests  # from where it stopped
    p = model(store, "verify", "smollm2:1")
    assert p.returncode == 0, p.stderr
    print(f"killed at {kept >> 20} MiB, resumed from there; measured rate {rate / (1 << 20):.1f} MiB/s under an 8 MiB/s cap")
    srv.shutdown()


def test_a_changed_file_or_a_wrong_digest_is_refused(tmp_path, sha):
    srv = Faulty(MODEL)
    store = tmp_path / "m"
    # A first try that breaks off, then the file changes on the server (new ETag).
    srv.faults = [("reset", len(srv.data) // 4)]
    bad = "0" * 64
    p = model(store, "pull", srv.url, "smollm2:1", "--sha256", bad)
    assert p.returncode == 1 and "digest mismatch" in p.stderr and bad in p.stderr, p.stderr
    assert "smollm2:1" not in json.loads(open(store / "index.json").read()).__repr__()
    assert not [f for f in os.listdir(store / "blobs" / "sha256") if f.startswith(".resume")]
    # The file changes on the server between two tries: the resume names the
    # file it had (If-Range "v1"), the server sends the new one whole, the
    # pull starts over.
    srv.faults = [("change", len(srv.data) // 3)]
    srv.requests.clear()
    p = model(store, "pull", srv.url, "smollm2:2", "--sha256", sha)
    assert p.returncode == 0, p.stderr
    assert srv.requests[1] == (f"bytes={len(srv.data) // 3}-", '"v1"'), srv.requests
    assert "starting over" in p.stderr, p.stderr
    # The same bytes again under another name: nothing is downloaded.
    srv.requests.clear()
    p = model(store, "pull", srv.url, "smollm2:3", "--sha256", sha)
    assert p.returncode == 0 and srv.requests == [], (p.stderr, srv.requests)
    srv.shutdown()


BAD = [
    (["pull", "ftp://x/m.gguf", "m:1", "--sha256", "a" * 64], 1, "http:// or https://"),
    (["pull", "http://127.0.0.1:9/m.gguf", "m:1", "--sha256", "xyz"], 1, "64 lowercase hex"),
    (["pull", "http://127.0.0.1:9/m.gguf", "Bad:1", "--sha256", "a" * 64], 2, "lowercase"),
    (["pull", "http://127.0.0.1:9/m.gguf", "m:1"], 2, "--sha256 is required"),
    (["pull", "http://127.0.0.1:9/m.gguf", "m:1", "--sha256", "a" * 64, "--max-rate", "fast"], 2, "--max-rate"),
    (["pull", "http://127.0.0.1:9/m.gguf", "m:1", "--sha256", "a" * 64, "--stall-timeout", "x"], 2,
     "--stall-timeout"),
]


@pytest.mark.parametrize("args,code,words", BAD)
def test_bad_pull_input(tmp_path, args, code, words):
    p = model(tmp_path / "m", *args)
    assert p.returncode == code and words in p.stderr, (p.returncode, p.stderr)


def test_http_errors_name_the_status(tmp_path, sha):
    srv = Faulty(MODEL)
    p = model(tmp_path / "m", "pull", srv.url.replace("smollm2", "nosuch"), "m:1", "--sha256", sha)
    assert p.returncode == 1 and "HTTP 404" in p.stderr, p.stderr
    srv.shutdown()
    # Nobody listening: retries with backoff, then gives up, the state says why.
    p = model(tmp_path / "m", "pull", "http://127.0.0.1:9/m.gguf", "m:2", "--sha256", sha, "--attempts", "3",
              timeout=60)
    assert p.returncode == 1 and "gave up after 3 tries" in p.stderr, p.stderr
    assert "again in 1000 ms" in p.stderr and "again in 2000 ms" in p.stderr, p.stderr  # backing off
    p = model(tmp_path / "m", "list")
    assert "m:2" in p.stdout and "failed" in p.stdout and "gave up" in p.stdout, p.stdout


def test_a_running_server_pulls_then_activates(tmp_path, sha):
    from outpost_harness import serve
    import httpx
    store = tmp_path / "m"
    assert model(store, "import", MODEL, "smollm2:1").returncode == 0
    q8 = tmp_path / "smollm2-q8_0.gguf"  # a second version: other bytes than the first
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([os.path.join(root, ".deps", "llama.cpp-build", "bin", "llama-quantize"), "--allow-requantize",
                    MODEL, str(q8), "Q8_0"], check=True, capture_output=True, timeout=300)
    sha = hashlib.sha256(q8.read_bytes()).hexdigest()
    srv = Faulty(str(q8))
    srv.faults = [("reset", len(srv.data) // 2)]
    key = "pull-admin-key-0123456789"
    with serve("--model-store", str(store), models=["smollm2:1"], env={"OUTPOST_ADMIN_KEY": key}) as s:
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(s.base + "/admin/models/pull", headers=auth, timeout=300,
                       json={"url": srv.url, "model": "smollm2:2", "sha256": sha, "max_rate": "64MiB"})
        assert r.status_code == 200 and r.json()["state"] == "verified", r.text
        assert len(srv.requests) == 2 and srv.requests[1][0], srv.requests  # resumed after the reset
        for body, param in (({"url": srv.url, "model": "smollm2:3"}, "sha256"),
                            ({"url": srv.url, "model": "smollm2:3", "sha256": sha, "max_rate": "x"}, "max_rate"),
                            ({"url": "file:///etc/passwd", "model": "smollm2:3", "sha256": sha}, "source"),
                            ({"source": "oci://127.0.0.1:9/x:1", "model": "smollm2:3", "username": "u"}, "password"),
                            ({"source": "oci://127.0.0.1:9/x:1", "model": "smollm2:3", "plain_http": "yes"}, "plain_http"),
                            ({"source": "oci://h/Bad", "model": "smollm2:3"}, "source")):
            r = httpx.post(s.base + "/admin/models/pull", headers=auth, json=body, timeout=60)
            assert r.status_code == 400 and r.json()["error"]["param"] == param, (body, r.text)
        r = httpx.post(s.base + "/admin/models/activate", headers=auth, json={"model": "smollm2:2"}, timeout=300)
        assert r.status_code == 200 and r.json()["to"] == "2", r.text
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
    srv.shutdown()


def test_a_pull_moves_bytes_only_inside_its_window(tmp_path, sha):
    from datetime import datetime, timedelta
    srv = Faulty(MODEL)
    now = datetime.now()
    hhmmss = lambda t: t.strftime("%H:%M:%S")  # noqa: E731
    # A window that opens 3-4 s from now (HH:MM:SS drops the fraction, so the
    # opening is a whole second): the pull waits for it, and finishes only
    # after the wall clock has passed the opening.
    opens = (now + timedelta(seconds=4)).replace(microsecond=0)
    p = model(tmp_path / "m", "pull", srv.url, "smollm2:1", "--sha256", sha, "--window",
              f"{hhmmss(opens)}-{hhmmss(now + timedelta(hours=1))}")
    assert p.returncode == 0, p.stderr
    assert datetime.now() >= opens, (datetime.now(), opens)
    assert "outside its window" in p.stderr and "open; resuming" in p.stderr, p.stderr
    # A window that closes 2 s from now, with a cap that makes the download
    # last longer: it pauses, the partial file stops growing; a later pull
    # (the window open) resumes from it with a range.
    now = datetime.now()
    window = f"{hhmmss(now - timedelta(hours=1))}-{hhmmss(now + timedelta(seconds=2))}"
    err = open(tmp_path / "err.txt", "w")
    proc = subprocess.Popen([BIN, "model", "--store", str(tmp_path / "m2"), "pull", srv.url, "smollm2:1", "--sha256",
                             sha, "--window", window, "--max-rate", "8MiB"], stdout=subprocess.DEVNULL, stderr=err)
    blobs = tmp_path / "m2" / "blobs" / "sha256"
    deadline = time.monotonic() + 30
    while "paused" not in (tmp_path / "err.txt").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    log = (tmp_path / "err.txt").read_text()
    assert "closed at" in log and "paused" in log and "outside its window" in log, log
    resume = [f for f in os.listdir(blobs) if f.startswith(".resume-") and not f.endswith(".validator")]
    size = os.path.getsize(blobs / resume[0])
    time.sleep(1.5)
    assert os.path.getsize(blobs / resume[0]) == size and 0 < size < len(srv.data), size
    assert proc.poll() is None  # waiting for tomorrow's window
    proc.kill()
    proc.wait()
    requests_before = len(srv.requests)
    p = model(tmp_path / "m2", "pull", srv.url, "smollm2:1", "--sha256", sha)
    assert p.returncode == 0, p.stderr
    assert srv.requests[requests_before][0] == f"bytes={size}-", srv.requests
    p = model(tmp_path / "m3", "pull", srv.url, "smollm2:1", "--sha256", sha, "--window", "22:00")
    assert p.returncode == 2 and "HH:MM-HH:MM" in p.stderr, p.stderr
    srv.shutdown()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_refused_up_front_and_caught_midway(tmp_path, sha):
    """On a filesystem the test mounts: too small for the model, the pull is
    refused before the first byte; a disk that fills during the download
    (another writer) fails it cleanly, and once there is room the next pull
    resumes from what was written."""
    srv = Faulty(MODEL)
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=60m", "tmpfs", str(mnt)], check=True)
    try:
        p = model(mnt / "store", "pull", srv.url, "smollm2:1", "--sha256", sha)
        assert p.returncode == 1 and "not enough disk" in p.stderr, p.stderr
        assert srv.requests and all(r is None for r, _ in srv.requests)  # asked, read only the head
        blobs = mnt / "store" / "blobs" / "sha256"
        assert not [f for f in os.listdir(blobs) if f.startswith(".resume-") and not f.endswith(".validator")
                    and os.path.getsize(blobs / f) > 0]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", str(mnt)], check=True)
    try:
        err = open(tmp_path / "err.txt", "w")
        proc = subprocess.Popen([BIN, "model", "--store", str(mnt / "store"), "pull", srv.url, "smollm2:1",
                                 "--sha256", sha, "--max-rate", "16MiB"], stdout=subprocess.DEVNULL, stderr=err)
        time.sleep(1.5)
        with open(mnt / "filler", "wb") as f:  # another writer takes every free byte
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        assert proc.wait(120) == 1
        log = (tmp_path / "err.txt").read_text()
        assert "disk full" in log, log
        listing = subprocess.run([BIN, "model", "--store", str(mnt / "store"), "list"], capture_output=True,
                                 text=True).stdout
        # "failed" when SQLite could still write that down, else still
        # "fetching" (a full disk takes the database's journal too): either
        # way not served, and the next pull takes it up.
        assert "verified" not in listing and ("failed" in listing or "fetching" in listing), listing
        os.remove(mnt / "filler")
        before = len(srv.requests)
        p = model(mnt / "store", "pull", srv.url, "smollm2:1", "--sha256", sha, "--json")
        assert p.returncode == 0 and json.loads(p.stdout)["state"] == "verified", p.stderr
        assert srv.requests[before][0] and srv.requests[before][0] != "bytes=0-", srv.requests  # resumed
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        srv.shutdown()
