"""The live dashboard (GET /) as an operator sees it: headless Chromium against
a live server under load; the numbers the page renders are checked against
/metrics, the charts are drawn, and a screenshot is kept as a test artifact
(build/test-artifacts/dashboard.png)."""
import html
import os
import re
import shutil
import subprocess
import threading
import time

import httpx
from outpost_harness import BIN, free_port, serve
from report_pages import chromium
from test_telemetry_metrics import fake_sysfs, parse
from test_uplink import Receiver

ARTIFACTS = os.path.join(os.path.dirname(os.path.abspath(BIN)), "test-artifacts")


def _load(server, seconds, clients=3):
    stop = time.time() + seconds

    def worker(i):
        while time.time() < stop:
            body = {"messages": [{"role": "user", "content": f"Name {i + 2} animals."}],
                    "max_tokens": 24, "stream": True}
            with httpx.stream("POST", server.base + "/v1/chat/completions", json=body, timeout=60) as r:
                for _ in r.iter_lines():
                    pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _dom(url, width=1280):
    p = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", f"--window-size={width},1400", "--virtual-time-budget=6000",
                        "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert "data-rendered" in p.stdout, p.stderr[-1000:]
    return p.stdout


def _text(dom, element_id):
    m = re.search(rf'id="{element_id}"[^>]*>(.*?)</', dom, re.S)
    assert m, element_id
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()


def test_dashboard_shows_the_live_numbers(tmp_path):
    root = fake_sysfs()
    rx = Receiver(free_port(), str(tmp_path / "ledger.db"))
    # A 60 s uplink interval: the start-up events go at once and no summary is
    # due while the test runs, so the spool is quiet (0 records) both when
    # /metrics is read and when the page renders — with 1 s a summary could be
    # appended between the two reads.
    try:
        with serve("--parallel", "4", "--history-interval", "1s", "--uplink-url", f"http://127.0.0.1:{rx.port}",
                   "--uplink-interval", "60s", "--state-dir", str(tmp_path / "state"),
                   env={"OUTPOST_SYSFS_ROOT": root}) as s:
            page = s.get("/")
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert "http://" not in page.text and "https://" not in page.text  # nothing from outside
            _load(s, 6)
            time.sleep(2.5)  # two more intervals: the last requests are in a point
            hist = s.get("/dashboard/history").json()
            assert hist["interval_s"] == 1
            pts = hist["points"]
            assert len(pts) >= 5, pts
            assert max(p["tokens_per_s"] for p in pts) > 5
            assert any(p["ttft_p95_s"] for p in pts)
            assert max(p["sessions_used"] for p in pts) >= 1
            metrics = parse(s.get("/metrics").text)
            dom = _dom(s.base + "/")
            os.makedirs(ARTIFACTS, exist_ok=True)
            shot = os.path.join(ARTIFACTS, "dashboard.png")
            subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--window-size=1280,1100", "--virtual-time-budget=6000", "--screenshot=" + shot,
                            s.base + "/"], capture_output=True, timeout=120)
            assert os.path.getsize(shot) > 30_000
            print("dashboard screenshot:", shot)
    finally:
        shutil.rmtree(root)
        rx.kill()

    def total(name, **labels):
        return sum(v for (n, l), v in metrics.items()
                   if n == name and all((k, x) in l for k, x in labels.items()))

    assert _text(dom, "status") == "ready"
    assert int(_text(dom, "sessions-max")) == total("outpost_max_sessions") == 4
    assert int(_text(dom, "sessions-used")) == 0 and int(_text(dom, "queued")) == 0
    requests = total("gen_ai_server_request_duration_seconds_count")
    assert requests >= 3  # at least one per client
    assert _text(dom, "requests-total") == str(int(requests))
    tokens = total("outpost_completion_tokens_total")
    shown = _text(dom, "tokens-total")
    assert shown == (str(int(tokens)) if tokens < 1e4 else f"{tokens / 1e3:.1f}k"), (shown, tokens)
    hottest = max(v for (n, l), v in metrics.items() if n == "outpost_hw_temperature_celsius")
    assert _text(dom, "hottest") == f"{hottest:.1f} °C"
    assert "SmolLM2-135M-Instruct.Q4_1" in _text(dom, "models")
    assert re.search(r'id="chart-tokens"><svg[^>]*>.*<path d="M', dom, re.S), "no tokens/s line"
    assert re.search(r'id="chart-ttft"><svg[^>]*>.*<circle', dom, re.S), "no TTFT points"
    assert "ina3221/VDD_IN" in dom  # the sensors table
    # The uplink: up, its spool as /metrics has it (the receiver keeps up, so empty).
    m = re.search(r'id="uplink"[^>]*>(.*?)</div>', dom, re.S)
    uplink = html.unescape(re.sub(r"<[^>]+>", " ", m.group(1))).strip()
    assert uplink.startswith("up") and f"to http://127.0.0.1:{rx.port}" in uplink, uplink
    assert int(_text(dom, "uplink-records")) == total("outpost_spool_records") == 0
    assert total("outpost_uplink_up") == 1


def test_dashboard_page_is_open_but_its_data_follows_the_metrics_rule():
    with serve("--api-key", "secret") as s:
        assert s.get("/").status_code == 200
        assert s.get("/dashboard/history").status_code == 200  # like /metrics by default
    with serve("--api-key", "secret", "--metrics-require-key", "true") as s:
        assert s.get("/").status_code == 200
        assert s.get("/dashboard/history").status_code == 401
        assert s.get("/dashboard/history", headers={"Authorization": "Bearer secret"}).status_code == 200
