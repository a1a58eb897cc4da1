"""The audit log end to end: a real `outpost serve` on the default model with
--audit-dir writes one chained record per request (no prompt text), sends its
signed checkpoints up the uplink to a real receiver process, and
`outpost audit verify` catches tampering with a copy — including a truncation
that only the centre's checkpoint can reveal."""
import json
import os
import shutil
import subprocess
import sys

import httpx
import pytest

from outpost_harness import BIN, chat_body, free_port, serve
from test_uplink import Receiver, events, wait_for


def audit(*args):
    return subprocess.run([BIN, "audit", *args], capture_output=True, text=True, timeout=60)


def checkpoints_at(rx):
    out = []
    for (body,) in rx.query("SELECT body FROM applied WHERE kind='event' ORDER BY arrival"):
        rec = json.loads(body)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
        if rec["eventName"] == "outpost.audit.checkpoint":
            out.append({a["key"]: a["value"]["stringValue"] for a in rec["attributes"]})
    return out


def test_requests_are_audited_checkpoints_reach_the_centre_and_tampering_is_caught(tmp_path):
    adir = str(tmp_path / "audit")
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    try:
        with serve("--audit-dir", adir, "--audit-checkpoint-every", "3", "--box-id", "site-9",
                   "--uplink-url", f"http://127.0.0.1:{rx.port}", "--uplink-interval", "500ms",
                   "--state-dir", str(tmp_path / "state")) as s:
            secret = "The patient in bed 12 is called Ada Lovelace"
            for _ in range(4):
                r = s.post("/v1/chat/completions", json=chat_body(secret, max_tokens=6))
                assert r.status_code == 200
            bad = s.post("/v1/chat/completions", json={"messages": []})
            assert bad.status_code == 400  # refused by the parser: not dispatched, not audited
            assert s.metric("outpost_audit_records_total") >= 5  # start + 4 requests + checkpoint
            wait_for(lambda: checkpoints_at(rx), 30, "a checkpoint at the centre")
            request_id, served_model = r.json()["id"], r.json()["model"]
        # One record per request, with what was served and no content.
        tail = audit("tail", "--dir", adir, "--type", "request", "--json", "-n", "0")
        assert tail.returncode == 0, tail.stderr
        recs = [json.loads(line) for line in tail.stdout.splitlines()]
        assert len(recs) == 4
        last = recs[-1]
        assert last["request_id"] == request_id and last["status"] == 200
        assert last["route"] == "local" and last["finish_reason"] in ("stop", "length")
        assert last["prompt_tokens"] > 5 and 0 < last["completion_tokens"] <= 6
        assert last["model"] == served_model
        for f in os.listdir(adir):
            if f.endswith(".jsonl"):
                assert "Lovelace" not in open(os.path.join(adir, f)).read()
        table = audit("tail", "--dir", adir, "-n", "2")
        assert "checkpoint of" in table.stdout or "route=local" in table.stdout
        admin = audit("tail", "--dir", adir, "--type", "admin", "--json")
        assert [json.loads(l)["action"] for l in admin.stdout.splitlines()] == ["serve.start", "serve.stop"], (
            f"stopped by {s.stopped_by}, exit code {s.returncode}; the server's log ends:\n{s.final_log[-4000:]}")

        ok = audit("verify", "--dir", adir)
        assert ok.returncode == 0 and ok.stdout.startswith("PASS"), ok.stdout + ok.stderr

        # The centre holds signed checkpoints; the last one verifies against the log.
        cps = checkpoints_at(rx)
        cp = cps[-1]
        assert cp["box"] == "site-9" and len(cp["head"]) == 64
        ok = audit("verify", "--dir", adir, "--checkpoint", f"{cp['count']}:{cp['head']}")
        assert ok.returncode == 0, ok.stdout

        # Tampering with a copy: each is named at its first bad line.
        files = sorted(f for f in os.listdir(adir) if f.endswith(".jsonl"))
        copy = tmp_path / "copy"
        shutil.copytree(adir, copy)
        path = copy / files[0]
        lines = path.read_text().splitlines()

        def tampered(new_lines, *extra):
            path.write_text("\n".join(new_lines) + "\n")
            return audit("verify", "--dir", str(copy), *extra)

        edited = json.loads(lines[2])
        edited["completion_tokens"] += 100
        for new, kind, line_no in [
            (lines[:2] + [json.dumps(edited, separators=(",", ":"), sort_keys=True)] + lines[3:], "modified", 3),
            (lines[:1] + lines[2:], "deleted", 2),
            (lines[:2] + [lines[1]] + lines[2:], "inserted/reordered", 3),
            ([lines[0], lines[2], lines[1]] + lines[3:], "inserted/reordered", 2),
        ]:
            p = tampered(new)
            assert p.returncode == 1, p.stdout
            assert f"{path}:{line_no}: seq" in p.stdout and kind in p.stdout, p.stdout
        # Deleting the tail passes alone, and fails against the centre's checkpoint.
        cut = int(cp["count"]) - 1
        assert tampered(lines[:cut]).returncode == 0
        p = tampered(lines[:cut], "--checkpoint", f"{cp['count']}:{cp['head']}")
        assert p.returncode == 1 and "truncated" in p.stdout, p.stdout
        # A crash mid-write: a torn last line is a warning; the rest verifies.
        p = tampered(lines[:-1] + [lines[-1][:30]])
        path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])
        p = audit("verify", "--dir", str(copy))
        assert p.returncode == 0 and "incomplete last record" in p.stdout, p.stdout
    finally:
        rx.kill()


@pytest.mark.parametrize("args,message", [
    (["verify", "--dir", "/nonexistent"], "no audit files"),
    (["verify", "--checkpoint", "12"], "COUNT:HEAD"),
    (["verify", "--checkpoint", "x:" + "0" * 64], "COUNT:HEAD"),
    (["verify", "--public-key", "/nonexistent.pem", "--dir", "/tmp"], "cannot read"),
    (["tail", "--since", "yesterday", "--dir", "/tmp"], "--since must be"),
    (["tail", "--type", "secret"], "type"),
    (["tail", "-n", "-3"], "lines"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_audit_flags_are_usage_errors(args, message):
    p = audit(*args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert message in p.stderr + p.stdout


def test_a_second_server_on_the_same_audit_dir_is_refused(tmp_path):
    adir = str(tmp_path / "audit")
    with serve("--audit-dir", adir):
        p = subprocess.run([BIN, "serve", "--port", str(free_port()), "--audit-dir", adir],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2
        assert "another process writes this audit log" in p.stderr
