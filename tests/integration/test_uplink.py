"""The uplink end to end: a real `outpost serve` on the default model sends
summaries and events to a real receiver process (deploy/central/outpost_intake.py: strict
OTLP decoding with the reference protos, an exactly-once ledger in SQLite)
through outages, kill -9 of either side, and a full disk — and at the end
every sequence number is accounted for: applied once at the receiver (alone,
folded into a merged summary, or inside a gap record) or still in the spool."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import httpx
import pytest

from outpost_harness import BIN, MODEL, chat_body, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER = os.path.join(HERE, "..", "..", "deploy", "central", "outpost_intake.py")


class Receiver:
    def __init__(self, port, ledger, delay_ms=0, victoriametrics=None, extra=()):
        self.port, self.ledger = port, ledger
        cmd = [sys.executable, RECEIVER, str(port), ledger, *extra]
        if delay_ms:
            cmd += ["--delay-ms", str(delay_ms)]
        if victoriametrics:
            cmd += ["--victoriametrics", victoriametrics]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert "otlp receiver" in self.proc.stdout.readline()

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def query(self, sql, *args):
        db = sqlite3.connect(self.ledger)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()


class Box:
    """An `outpost serve` that a test may kill -9 and start again on the same state."""

    def __init__(self, state_dir, receiver_port, *flags):
        self.state_dir, self.receiver_port, self.flags = state_dir, receiver_port, flags
        self.scheme = "http"
        self.port = free_port()
        self.proc = None
        self.logs = []

    def start(self):
        log = tempfile.NamedTemporaryFile(prefix="outpost-uplink-", suffix=".log", delete=False)
        self.logs.append(log.name)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--model", MODEL, "--port", str(self.port), "--threads", "2",
             "--uplink-url", f"{self.scheme}://127.0.0.1:{self.receiver_port}", "--state-dir", self.state_dir,
             "--box-id", "site-1", "--uplink-max-backoff", "1s", *self.flags],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.log()
            time.sleep(0.2)
        raise AssertionError("not ready: " + self.log())

    def log(self):
        return "".join(open(p, errors="replace").read() for p in self.logs)

    def metric(self, name, default=None):
        """The sum of the metric's series. A labelled counter has no series until its first
        count (Prometheus practice), so a caller that polls before then passes a default."""
        values = [float(line.rsplit(" ", 1)[1])
                  for line in httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=10).text.splitlines()
                  if line.startswith(name + " ") or line.startswith(name + "{")]
        if not values:
            if default is not None:
                return default
            raise KeyError(name)
        return sum(values)

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def spool_state(state_dir):
    db = sqlite3.connect(os.path.join(state_dir, "uplink-spool.db"))
    try:
        next_seq = int(db.execute("SELECT value FROM meta WHERE key='next_seq'").fetchone()[0])
        pending = db.execute("SELECT seq, first_seq, kind, body FROM records").fetchall()
        return next_seq, pending
    finally:
        db.close()


def account(receiver, state_dir):
    """Every sequence number 1..newest: applied at the receiver (alone, in a
    merged summary's range, or in a gap's range) or pending in the spool.
    Returns the applied rows."""
    next_seq, pending = spool_state(state_dir)
    covered = set()
    rows = receiver.query("SELECT seq, first_seq, kind, attrs FROM applied WHERE box='site-1'")
    for seq, first, kind, attrs in rows:
        covered.update(range(first, seq + 1))
        a = json.loads(attrs)
        if kind == "gap":
            pass  # ranges are in the log record's attributes, read below
    for (body,) in receiver.query("SELECT body FROM applied WHERE kind='gap'"):
        rec = json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
        ga = {x["key"]: x["value"] for x in rec["attributes"]}
        if "outpost.gap.from_seq" in ga:
            covered.update(range(int(ga["outpost.gap.from_seq"]["intValue"]),
                                 int(ga["outpost.gap.to_seq"]["intValue"]) + 1))
    for seq, first, kind, body in pending:
        covered.update(range(first, seq + 1))
        if kind == "gap" and "from_seq" in json.loads(body):
            g = json.loads(body)
            covered.update(range(g["from_seq"], g["to_seq"] + 1))
    missing = sorted(set(range(1, next_seq)) - covered)
    assert not missing, f"sequence numbers lost without a gap record: {missing[:20]}"
    return rows


def events(receiver):
    out = []
    for (body,) in receiver.query("SELECT body FROM applied WHERE kind='event' ORDER BY arrival"):
        out.append(json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["eventName"])
    return out


def latest_summary(receiver):
    rows = receiver.query("SELECT body FROM applied WHERE kind='summary' ORDER BY seq DESC LIMIT 1")
    if not rows:
        return None
    metrics = json.loads(rows[0][0])["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    return {m["name"]: m for m in metrics}


def summary_counting_all_tokens(rx, box, timeout=30):
    """The newest summary once one carries every token the box has generated."""
    tokens = box.metric("outpost_completion_tokens_total")

    def caught_up():
        s = latest_summary(rx)
        if not s or "outpost_completion_tokens_total" not in s:
            return None
        v = sum(p["asDouble"] for p in s["outpost_completion_tokens_total"]["sum"]["dataPoints"])
        return s if v == tokens else None
    return wait_for(caught_up, timeout, "a summary with this run's token count")


def test_summaries_reach_a_strict_receiver_and_say_what_happened(tmp_path):
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    box = Box(str(tmp_path / "state"), rx.port, "--uplink-interval", "1s")
    try:
        box.start()
        secret = "Name three colors of the flag of Zanzibar"
        for _ in range(3):
            r = httpx.post(f"http://127.0.0.1:{box.port}/v1/chat/completions",
                           json=chat_body(secret, max_tokens=8, temperature=0), timeout=120)
            assert r.status_code == 200, r.text
        s = summary_counting_all_tokens(rx, box)
        dur = s["gen_ai.server.request.duration"]["histogram"]
        assert dur["aggregationTemporality"] == 2
        assert sum(int(p["count"]) for p in dur["dataPoints"]) >= 3
        assert "outpost.window.time_to_first_token" in s
        assert rx.query("SELECT * FROM violations") == []
        names = events(rx)
        assert "outpost.started" in names and "outpost.model.activated" in names
        # Summaries, not raw data: no prompt text leaves the box.
        assert rx.query("SELECT COUNT(*) FROM applied WHERE body LIKE '%Zanzibar%'") == [(0,)]
        # The bytes sent are counted as they went: gzip-compressed, a fraction
        # of the JSON the receiver decoded.
        sent = box.metric("outpost_uplink_sent_bytes_total")
        box.stop()
        received = rx.query("SELECT COUNT(*), SUM(duplicate) FROM arrivals")[0]
        assert received[0] > 0 and received[1] == 0
        decoded = rx.query("SELECT SUM(LENGTH(body)) FROM applied")[0][0]
        assert 0 < sent < 0.3 * decoded, (sent, decoded)
        print(f"uplink: {sent:.0f} bytes sent for {decoded} bytes of OTLP JSON in {received[0]} records")
        account(rx, box.state_dir)
    finally:
        box.stop()
        rx.kill()


def test_outage_and_kill9_on_both_sides_lose_nothing_and_apply_each_record_once(tmp_path):
    ledger = str(tmp_path / "ledger.db")
    rx = Receiver(free_port(), ledger)
    state = str(tmp_path / "state")
    box = Box(state, rx.port, "--uplink-interval", "500ms")
    try:
        box.start()
        wait_for(lambda: rx.query("SELECT COUNT(*) FROM applied WHERE kind='summary'")[0][0] >= 2,
                 30, "two summaries")
        # The link goes: the receiver dies. The box spools, and is killed in the outage.
        rx.kill()
        wait_for(lambda: box.metric("outpost_uplink_up") == 0 and box.metric("outpost_spool_records") >= 4,
                 30, "the link marked down and four records spooled")
        box.kill9()
        box.start()  # same state: the spool and its sequence numbers survive
        wait_for(lambda: box.metric("outpost_spool_records") >= 8, 30, "eight records spooled")
        before = rx.query("SELECT MAX(n) FROM arrivals")[0][0]
        # The receiver comes back slow; the box is killed in the middle of the backfill.
        rx = Receiver(rx.port, ledger, delay_ms=300)
        wait_for(lambda: rx.query("SELECT COUNT(*) FROM arrivals WHERE n > ?", before)[0][0] >= 4,
                 30, "the backfill to start")
        first_back = rx.query("SELECT seq, present FROM arrivals WHERE n > ? ORDER BY n LIMIT 1", before)[0]
        assert first_back[1] == 1, "after an outage the newest record goes first"
        box.kill9()
        box.start()
        wait_for(lambda: box.metric("outpost_spool_records") <= 1, 120, "the backfill to finish")
        assert box.metric("outpost_uplink_up") == 1
        box.stop()
        rows = account(rx, state)
        assert rx.query("SELECT * FROM violations") == []
        # Exactly once: each record applied once; replays (the record in
        # flight at a kill -9) are the only duplicate arrivals.
        dups = rx.query("SELECT COUNT(*) FROM arrivals WHERE duplicate = 1")[0][0]
        assert dups <= 2, dups
        assert len(rows) == len({r[0] for r in rows})
        # In order: apart from the newest-first records, the backlog arrived oldest first.
        order = [s for s, p in rx.query("SELECT seq, present FROM applied WHERE box='site-1' ORDER BY arrival") if not p]
        assert order == sorted(order), order
        names = events(rx)
        assert "outpost.link.lost" in names and "outpost.link.restored" in names
        boots = rx.query("SELECT COUNT(DISTINCT boot) FROM applied")[0][0]
        assert boots == 3
    finally:
        box.stop()
        rx.kill()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_leaves_gap_records_and_the_box_keeps_serving(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    # Room for the other stores in the state dir (batches, responses,
    # conversations: ~72 KB each while open, shared memory included; their WALs
    # are checkpointed empty at open)
    # and the spool's 128 KB reserve, and little more: the spool meets the end.
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=464k", "tmpfs", str(mnt)], check=True)
    rx_port = free_port()
    box = Box(str(mnt), rx_port, "--uplink-interval", "100ms")
    rx = None
    try:
        box.start()  # nobody listens yet: everything spools
        wait_for(lambda: box.metric("outpost_spool_dropped_total") > 0, 60,
                 "the spool to meet the full disk and drop its oldest records")
        time.sleep(1)
        r = httpx.post(f"http://127.0.0.1:{box.port}/v1/chat/completions",
                       json=chat_body("Say hi", max_tokens=4), timeout=120)
        assert r.status_code == 200, "a full disk must not stop serving"
        rx = Receiver(rx_port, str(tmp_path / "ledger.db"))
        # Drained, the gap records included (under load a gap can be among the
        # last records still to send when the spool is nearly empty).
        wait_for(lambda: box.metric("outpost_spool_records") <= 2
                 and rx.query("SELECT COUNT(*) FROM applied WHERE kind='gap'")[0][0] > 0,
                 120, "the spool to drain and its gap records to arrive")
        box.stop()
        account(rx, str(mnt))
        reasons = set()
        for (body,) in rx.query("SELECT body FROM applied WHERE kind='gap'"):
            rec = json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
            reasons.add(next(a["value"]["stringValue"] for a in rec["attributes"]
                             if a["key"] == "outpost.gap.reason"))
        assert "disk_full" in reasons, reasons
        assert rx.query("SELECT * FROM violations") == []
    finally:
        box.stop()
        if rx:
            rx.kill()
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_the_central_intake_puts_each_summary_into_victoriametrics_once(tmp_path):
    vm_port = free_port()
    vm = subprocess.Popen(["victoria-metrics", f"-httpListenAddr=127.0.0.1:{vm_port}",
                           f"-storageDataPath={tmp_path / 'vm'}", "-retentionPeriod=1d"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    vm_url = f"http://127.0.0.1:{vm_port}"
    rx = None
    box = None
    try:
        def vm_up():
            assert vm.poll() is None, "victoria-metrics exited"
            try:
                return httpx.get(vm_url + "/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False
        wait_for(vm_up, 30, "VictoriaMetrics")
        rx = Receiver(free_port(), str(tmp_path / "ledger.db"), victoriametrics=vm_url)
        box = Box(str(tmp_path / "state"), rx.port, "--uplink-interval", "1s")
        box.start()
        for _ in range(2):
            r = httpx.post(f"http://127.0.0.1:{box.port}/v1/chat/completions",
                           json=chat_body("Say hi", max_tokens=6), timeout=120)
            assert r.status_code == 200
        tokens = box.metric("outpost_completion_tokens_total")

        def in_vm():
            httpx.get(vm_url + "/internal/force_flush", timeout=5)
            r = httpx.get(vm_url + "/api/v1/export",
                          params={"match[]": 'outpost_completion_tokens_total{box="site-1"}'}, timeout=5)
            series = [json.loads(line) for line in r.text.splitlines() if line.strip()]
            return series if series and max(max(s["values"]) for s in series) == tokens else None
        series = wait_for(in_vm, 60, "the token count in VictoriaMetrics")
        assert all(s["metric"]["boot"] for s in series)
        # Each summary once: one sample per summary time stamp.
        stamps = [t for s in series for t in s["timestamps"]]
        assert len(stamps) == len(set(stamps))
        r = httpx.get(vm_url + "/api/v1/export",
                      params={"match[]": 'gen_ai_server_request_duration_seconds_count{box="site-1"}'}, timeout=5)
        assert r.status_code == 200 and r.text.strip(), "the GenAI histogram under its Prometheus name"
        assert rx.query("SELECT * FROM violations") == []
    finally:
        if box:
            box.stop()
        if rx:
            rx.kill()
        vm.terminate()
        vm.wait(timeout=30)


def test_https_with_a_bearer_token_and_a_wrong_token_is_refused_not_retried(tmp_path):
    from test_tls import make_cert
    cert, key = make_cert(tmp_path, "127.0.0.1")
    token = tmp_path / "token"
    token.write_text("s3cret-uplink\n")
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"),
                  extra=["--tls-cert", str(cert), "--tls-key", str(key), "--token-file", str(token)])
    box = Box(str(tmp_path / "state"), rx.port, "--uplink-interval", "500ms",
              "--uplink-tls-ca-file", str(cert))
    box.scheme = "https"
    try:
        # Right token over HTTPS, the CA from the file: delivered.
        os.environ["OUTPOST_UPLINK_TOKEN"] = "s3cret-uplink"
        box.start()
        wait_for(lambda: rx.query("SELECT COUNT(*) FROM applied WHERE kind='summary'")[0][0] >= 2, 30,
                 "summaries over HTTPS")
        assert rx.query("SELECT * FROM violations") == []
        box.stop()
        # A wrong token: 401 is a refusal (OTLP: never retried), counted and logged.
        os.environ["OUTPOST_UPLINK_TOKEN"] = "wrong"
        box.start()
        # The box is ready before its first POST; until then the counter has no series.
        wait_for(lambda: box.metric('outpost_uplink_attempts_total{code="401"}', default=0) >= 3, 30,
                 "three refused attempts")
        time.sleep(1)
        assert "the centre refused seq" in box.log() and "HTTP 401" in box.log()
        violations = rx.query("SELECT problem FROM violations")
        assert violations and all(v[0] == "missing or wrong bearer token" for v in violations)
    finally:
        os.environ.pop("OUTPOST_UPLINK_TOKEN", None)
        box.stop()
        rx.kill()


@pytest.mark.parametrize("flags,words", [
    (["--uplink-url", "http://127.0.0.1:9", "--state-dir", "/proc/outpost-state"], "state_dir /proc/outpost-state"),
    (["--uplink-url", "ftp://centre"], "uplink_url"),
    (["--uplink-url", "http://127.0.0.1:9", "--uplink-spool-size", "1KiB"], "uplink_spool_size"),
    (["--uplink-format", "kafka"], "uplink_format"),
    (["--box-id", "site one"], "box_id"),
    (["--audit-dir", "/proc/outpost-audit"], "audit_dir /proc/outpost-audit"),
])
def test_unusable_uplink_and_audit_settings_stop_the_start(flags, words):
    p = subprocess.run([BIN, "serve", "--model", MODEL, "--port", str(free_port()), *flags],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr[-2000:]
    assert words in p.stderr, p.stderr[-2000:]


def test_a_batch_yielding_to_users_is_no_failure_in_the_summaries(tmp_path):
    """Batch lines preempted by arriving users run again: the summaries (and the
    failure-rate spike event) must not count those attempts as failed requests."""
    import openai

    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    box = Box(str(tmp_path / "state"), rx.port, "--uplink-interval", "1s", "--parallel", "2",
              "--ctx-size", "512")
    try:
        box.start()
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{box.port}/v1", api_key="x", max_retries=0)
        model = client.models.list().data[0].id
        data = "".join(json.dumps({"custom_id": f"l{i}", "method": "POST", "url": "/v1/completions",
                                   "body": {"prompt": f"Story number {i}:", "max_tokens": 48,
                                            "ignore_eos": True}}) + "\n" for i in range(12))
        f = client.files.create(file=("lines.jsonl", data.encode()), purpose="batch")
        b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions", completion_window="1h")
        users = 0
        while client.batches.retrieve(b.id).status == "in_progress":
            r = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8,
                                          temperature=0)
            assert "Paris" in r.choices[0].text
            users += 1
            time.sleep(0.1)
        done = client.batches.retrieve(b.id)
        assert done.status == "completed" and done.request_counts.completed == 12, done
        preempted = box.metric('outpost_requests_rejected_total{model="%s",reason="preempted"}' % model,
                               default=0)
        assert preempted > 0, "no batch line was preempted: the test did not exercise it"
        assert box.metric('outpost_requests_finished_total{model="%s",finish_reason="preempted"}' % model) \
            == preempted
        assert box.metric('outpost_batch_lines_total{outcome="refused"}') >= preempted
        # Neither the request counter nor the standard duration histogram saw a failure.
        metrics = httpx.get(f"http://127.0.0.1:{box.port}/metrics", timeout=10).text
        bad = [x for x in metrics.splitlines()
               if x.startswith('outpost_requests_total{endpoint="/v1/completions",status="5')
               or "error_type=" in x]
        assert not bad, bad
        s = summary_counting_all_tokens(rx, box)
        for p in s["gen_ai.server.request.duration"]["histogram"]["dataPoints"]:
            assert "error.type" not in [a["key"] for a in p["attributes"]], p
        served = {}
        for p in s["gen_ai.server.request.duration"]["histogram"]["dataPoints"]:
            tier = {a["key"]: a["value"]["stringValue"] for a in p["attributes"]}["openai.response.service_tier"]
            served[tier] = served.get(tier, 0) + int(p["count"])
        # The users and the lines, each once, told apart (the window's latencies are the users').
        assert served == {"default": users, "batch": 12}, (served, users)
        assert "outpost.failure_rate.spike" not in events(rx)
        failure = [p["asDouble"] for p in s["outpost.window.failure_rate"]["gauge"]["dataPoints"]]
        assert failure == [0.0], failure
    finally:
        box.stop()
        rx.kill()
