"""The shipped Grafana fleet dashboard (deploy/grafana/outpost-fleet.json):
it is what make_dashboard.py writes, it is well-formed for Grafana, and every
panel's query runs in a real Prometheus (Debian's) scraping a real Outpost
under load — the core panels with data, none with an error."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import httpx
import pytest

from outpost_harness import free_port, serve
from test_dashboard import _load
from test_telemetry_metrics import fake_sysfs
from test_uplink import Receiver

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
GRAFANA = os.path.join(ROOT, "deploy", "grafana")
RULES = os.path.join(ROOT, "deploy", "prometheus", "outpost-recording.yml")

MUST_HAVE_DATA = {
    "Boxes up", "Requests/s", "Failure rate", "Tokens/s generated", "Sessions in use",
    "Time to first token p95 by box", "Time per output token p50 by box", "Tokens/s by box",
    "Queue by box", "Finish reasons", "Models loaded", "Hottest sensor by box",
    "Power by box (largest rail)", "Resident memory", "Since the last uplink success", "Spool fill",
    "Uplink bytes/s", "Audit records/s",
}  # not "Energy per token": the fake sysfs has power sensors but no energy counter


def test_the_committed_json_is_what_the_generator_writes(tmp_path):
    out = tmp_path / "fleet.json"
    subprocess.run([sys.executable, os.path.join(GRAFANA, "make_dashboard.py"), str(out)], check=True,
                   capture_output=True)
    with open(os.path.join(GRAFANA, "outpost-fleet.json")) as f:
        assert json.load(f) == json.loads(out.read_text()), "run deploy/grafana/make_dashboard.py"


def panels():
    with open(os.path.join(GRAFANA, "outpost-fleet.json")) as f:
        d = json.load(f)
    assert d["uid"] and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
    return [p for p in d["panels"] if p["type"] != "row"]


def test_every_panel_query_runs_in_prometheus_against_a_live_outpost(tmp_path):
    root = fake_sysfs()
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    prom = None
    try:
        with serve("--parallel", "2", "--uplink-url", f"http://127.0.0.1:{rx.port}", "--uplink-interval", "1s",
                   "--state-dir", str(tmp_path / "state"), "--audit-dir", str(tmp_path / "audit"),
                   env={"OUTPOST_SYSFS_ROOT": root}) as s:
            port = free_port()
            cfg = tmp_path / "prometheus.yml"
            # The rules as shipped, evaluated every second instead of every minute.
            (tmp_path / os.path.basename(RULES)).write_text(open(RULES).read().replace("interval: 1m", "interval: 1s"))
            cfg.write_text(
                "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                f"rule_files: [{os.path.basename(RULES)}]\n"
                "scrape_configs:\n"
                f"  - job_name: outpost\n    static_configs: [{{targets: ['127.0.0.1:{s.port}']}}]\n")
            prom = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'data'}",
                                     f"--web.listen-address=127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            api = f"http://127.0.0.1:{port}/api/v1/query"
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    # Until its storage is open Prometheus answers 503 "Service Unavailable".
                    r = httpx.get(api, params={"query": 'up{job="outpost"}'}, timeout=5)
                    if r.status_code == 200 and r.json()["data"]["result"]:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            else:
                pytest.fail("Prometheus did not scrape Outpost within 60 s")
            _load(s, 8, clients=2)
            time.sleep(4)  # a few more scrapes and rule evaluations
            empty, failed = [], []
            for p in panels():
                for t in p["targets"]:
                    q = t["expr"].replace("$__rate_interval", "20s").replace('"$instance"', '".*"')
                    r = httpx.get(api, params={"query": q}, timeout=10).json()
                    if r["status"] != "success":
                        failed.append((p["title"], r.get("error")))
                    elif not r["data"]["result"] and p["title"] in MUST_HAVE_DATA:
                        empty.append(p["title"])
            assert not failed, failed
            assert not empty, f"panels without data: {empty}"
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        rx.kill()
        shutil.rmtree(root)
