#!/usr/bin/env python3
"""Soak: mixed traffic against `outpost serve` on the default model for a long
time, watching for leaks and for anything but clean answers.

Traffic, from --clients threads at once: streaming and non-streaming chat
completions, clients that cancel a stream half-way, clients that hang up before
the answer, bad requests (broken JSON, bad fields, an unknown model), and every
--burst-every seconds a burst of --burst simultaneous streams, past sessions
plus queue, which must be refused with 503 + Retry-After. Every --sample
seconds: requests by outcome since the start, resident memory (VmRSS) and open
file descriptors of the server process.

Targets (issue 11): memory drift under 1% and no growth in descriptors other
than open client connections between the first and the last ten minutes (for a
short run: the first and last tenth), as many descriptors once the traffic
has stopped and its connections closed as before it started, no
5xx but 503 with Retry-After, and no malformed answer. Exits 1 if one is
missed. Writes bench/results/<date>-soak.json and -soak.svg (memory and
descriptors over time) unless --no-write.
"""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, stop, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUESTIONS = ["Name three colors.", "What is 2 + 2?", "Say hello to the team.",
             "List two fruits.", "Give a short greeting.", "Name a planet."]
BAD = [
    (b"{not json", 400),
    (json.dumps({"messages": []}).encode(), 400),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}).encode(), 400),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).encode(), 400),
    (json.dumps({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}).encode(), 404),
]


def log(msg):
    print(f"[soak] {msg}", file=sys.stderr, flush=True)


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = Counter()
        self.problems = []

    def add(self, key, problem=None):
        with self.lock:
            self.c[key] += 1
            if problem and len(self.problems) < 50:
                self.problems.append(problem)

    def snapshot(self):
        with self.lock:
            return dict(self.c)


def body(stream, max_tokens):
    return {"messages": [{"role": "user", "content": random.choice(QUESTIONS)}],
            "max_tokens": max_tokens, "stream": stream, "temperature": 0.7}


def check_status(tally, kind, r):
    if r.status_code == 503:
        ok = r.headers.get("retry-after", "").isdigit()
        tally.add(f"{kind} 503" if ok else f"{kind} 503 without Retry-After",
                  None if ok else f"{kind}: 503 without Retry-After")
        return False
    if r.status_code != 200:
        tally.add(f"{kind} {r.status_code}", f"{kind}: HTTP {r.status_code}")
        return False
    return True


def one_stream(client, base, tally, cancel_after=None):
    kind = "cancel" if cancel_after else "stream"
    with client.stream("POST", base + "/v1/chat/completions", json=body(True, 64)) as r:
        if not check_status(tally, kind, r):
            r.read()
            return
        events, done = 0, False
        for line in r.iter_lines():
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                json.loads(line[6:])  # a malformed event raises
                events += 1
                if cancel_after and events >= cancel_after:
                    tally.add("cancel 200 (cut)")
                    return  # closing the response hangs up mid-stream
        tally.add("stream 200" if done else "stream 200 without [DONE]",
                  None if done else "stream ended without [DONE]")


def one_plain(client, base, tally):
    r = client.post(base + "/v1/chat/completions", json=body(False, 48))
    if not check_status(tally, "plain", r):
        return
    j = r.json()
    ok = j["choices"][0]["message"]["content"] is not None and j["usage"]["completion_tokens"] >= 1
    tally.add("plain 200" if ok else "plain 200 malformed", None if ok else f"malformed: {j}")


def one_hangup(base, tally):
    try:
        httpx.post(base + "/v1/chat/completions", json=body(False, 200), timeout=0.2)
        tally.add("hangup answered")
    except httpx.TimeoutException:
        tally.add("hangup")


def one_bad(client, base, tally):
    data, want = random.choice(BAD)
    r = client.post(base + "/v1/chat/completions", content=data,
                    headers={"Content-Type": "application/json"})
    ok = r.status_code == want and "error" in r.json()
    tally.add(f"bad {r.status_code}", None if ok else f"bad request got {r.status_code}: {r.text[:120]}")


def one_raw_garbage(port, tally):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(random.choice([b"\x16\x03\x01garbage\r\n\r\n", b"GET / HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n"]))
        head = s.recv(64)
    tally.add("garbage " + (head[9:12].decode() if head.startswith(b"HTTP/1.1") else "closed"))


def worker(base, port, tally, stop_at):
    client = httpx.Client(timeout=120)
    while time.time() < stop_at:
        x = random.random()
        try:
            if x < 0.35:
                one_stream(client, base, tally)
            elif x < 0.60:
                one_plain(client, base, tally)
            elif x < 0.70:
                one_stream(client, base, tally, cancel_after=random.randint(1, 8))
            elif x < 0.77:
                one_hangup(base, tally)
            elif x < 0.95:
                one_bad(client, base, tally)
            else:
                one_raw_garbage(port, tally)
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            tally.add("client error", f"{type(e).__name__}: {e}")
    client.close()


def burster(base, tally, stop_at, every, n):
    while time.time() + every < stop_at:
        time.sleep(every)
        with cf.ThreadPoolExecutor(n) as ex:
            list(ex.map(lambda _: burst_one(base, tally), range(n)))


def burst_one(base, tally):
    try:
        with httpx.Client(timeout=120) as c:
            one_stream(c, base, tally)
    except Exception as e:  # noqa: BLE001
        tally.add("client error", f"burst: {type(e).__name__}: {e}")


def proc_sample(pid, base):
    """(resident bytes, open descriptors, open HTTP connections, C heap bytes in
    use) of the server. Descriptors minus connections is what must not grow:
    each client connection holds one while it is open, however much traffic
    there is. The heap in use (outpost_heap_bytes) tells a leak, which grows
    it, from the allocator keeping freed memory, which grows only resident
    memory."""
    conns, heap = 0, -1
    try:
        for line in httpx.get(base + "/metrics", timeout=30).text.splitlines():
            if line.startswith("outpost_http_connections "):
                conns = int(float(line.split()[1])) - 1  # less this scrape's own
            elif line.startswith('outpost_heap_bytes{state="in_use"} '):
                heap = int(float(line.split()[1]))
    except httpx.HTTPError:
        conns = -1
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, conns, heap


def quiet_fds(pid, base, timeout=15):
    """Descriptors once no client connection is open (waits up to timeout s):
    the least of 5 counts 200 ms apart. One count can catch a descriptor that
    lives for a moment (the sample's own /metrics connection being closed, a
    sensor file being read); a leaked descriptor is in every count."""
    deadline = time.time() + timeout
    while True:
        rss, fds, conns, _ = proc_sample(pid, base)
        if conns == 0 or time.time() > deadline:
            counts = [fds]
            for _ in range(4):
                time.sleep(0.2)
                counts.append(len(os.listdir(f"/proc/{pid}/fd")))
            return min(counts), conns
        time.sleep(0.5)


def svg(path, samples, title):
    w, h, pad = 720, 320, 56
    t = [s["t"] for s in samples]
    rss = [s["rss_mib"] for s in samples]
    fds = [s["fds"] for s in samples]
    tmax = max(t[-1], 1)
    lo, hi = min(rss) * 0.98, max(rss) * 1.02
    fhi = max(max(fds) * 1.2, 1)
    X = lambda v: pad + v / tmax * (w - 2 * pad)
    Y = lambda v: h - pad - (v - lo) / max(hi - lo, 1e-9) * (h - 2 * pad)
    YF = lambda v: h - pad - v / fhi * (h - 2 * pad)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{w - pad}" y1="{pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>']
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        parts.append(f'<text x="{pad - 6}" y="{Y(v) + 4}" text-anchor="end" fill="#1f77b4">{v:.0f}</text>')
        fv = fhi * i / 4
        parts.append(f'<text x="{w - pad + 6}" y="{YF(fv) + 4}" fill="#d62728">{fv:.0f}</text>')
        tv = tmax * i / 4
        parts.append(f'<text x="{X(tv)}" y="{h - pad + 18}" text-anchor="middle">{tv / 60:.0f}</text>')
    parts.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{" ".join(f"{X(a)},{Y(b)}" for a, b in zip(t, rss))}"/>')
    parts.append(f'<polyline fill="none" stroke="#d62728" stroke-width="2" points="{" ".join(f"{X(a)},{YF(b)}" for a, b in zip(t, fds))}"/>')
    parts.append(f'<text x="{pad + 8}" y="{pad - 8}" fill="#1f77b4">resident memory, MiB</text>')
    parts.append(f'<text x="{w - pad - 8}" y="{pad - 8}" text-anchor="end" fill="#d62728">open descriptors</text>')
    parts.append(f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">minutes</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--queue", type=int, default=8)
    ap.add_argument("--burst", type=int, default=24)
    ap.add_argument("--burst-every", type=float, default=120)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [a.outpost, "serve", "--model", a.model, "--port", str(port), "--threads", str(a.threads),
           "--parallel", str(a.parallel), "--queue-length", str(a.queue), "--ctx-size", "1024",
           "--log-level", "warn"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(base + "/ready", proc, timeout=180)
        log(f"serving on {base}; {a.minutes:g} min of mixed traffic from {a.clients} clients, "
            f"bursts of {a.burst} every {a.burst_every:g} s")
        fds_before, _ = quiet_fds(proc.pid, base)
        tally = Tally()
        t0 = time.time()
        stop_at = t0 + a.minutes * 60
        threads = [threading.Thread(target=worker, args=(base, port, tally, stop_at), daemon=True)
                   for _ in range(a.clients)]
        threads.append(threading.Thread(target=burster, args=(base, tally, stop_at, a.burst_every, a.burst),
                                        daemon=True))
        for th in threads:
            th.start()
        samples = []
        while True:
            now = time.time()
            rss, fds, conns, heap = proc_sample(proc.pid, base)
            samples.append({"t": round(now - t0, 1), "rss_mib": round(rss / 2**20, 2),
                            "heap_in_use_mib": round(heap / 2**20, 2), "fds": fds,
                            "connections": conns, "other_fds": fds - max(conns, 0),
                            "outcomes": tally.snapshot()})
            done = sum(v for k, v in samples[-1]["outcomes"].items())
            log(f"{(now - t0) / 60:5.1f} min  rss {rss / 2**20:7.1f} MiB  heap {heap / 2**20:7.1f} MiB  "
                f"fds {fds:4d} "
                f"(connections {conns:3d})  requests {done}")
            if now >= stop_at:
                break
            time.sleep(min(a.sample, max(0.0, stop_at - now)))
        for th in threads:
            th.join(timeout=180)
        fds_after, conns_after = quiet_fds(proc.pid, base, timeout=60)
        if conns_after:
            # What is still open, for the report: the server's side of each.
            ss = subprocess.run(["ss", "-tnpo", "state", "all", f"( sport = :{port} )"],
                                capture_output=True, text=True)
            log(f"{conns_after} connection(s) still open after the traffic:\n{ss.stdout}")
        rss, fds, conns, heap = proc_sample(proc.pid, base)
        samples.append({"t": round(time.time() - t0, 1), "rss_mib": round(rss / 2**20, 2),
                        "heap_in_use_mib": round(heap / 2**20, 2), "fds": fds,
                        "connections": conns, "other_fds": fds - max(conns, 0),
                        "outcomes": tally.snapshot()})
        ready = httpx.get(base + "/ready", timeout=10).json()["models"][0]
        alive = proc.poll() is None
    finally:
        stop(proc)

    # Drift: the first and the last ten minutes, or tenths of a shorter run;
    # the first sample (before any traffic) and the warm-up minute are left out.
    window = min(600, a.minutes * 6)
    span = samples[-1]["t"]
    first = [s for s in samples if 60 <= s["t"] <= 60 + window] or samples[1:3]
    last = [s for s in samples if s["t"] >= span - window] or samples[-2:]
    m0, m1 = statistics.median(s["rss_mib"] for s in first), statistics.median(s["rss_mib"] for s in last)
    # The median of each window: the descriptor count and the connection count
    # (the front's gauge) are not one atomic reading — a connection that opens
    # or closes between the two reads makes a sample one low or high (the floor
    # once read 6 where the quiet count was 7) — while a leak moves the median
    # for good. The exact check is the quiet one:
    # descriptors before the traffic against after it, with no connection open.
    f0 = statistics.median(s["other_fds"] for s in first)
    f1 = statistics.median(s["other_fds"] for s in last)
    drift = (m1 - m0) / m0 * 100
    # Not a target: read beside the drift, it says whether resident memory grew
    # with the memory in use (a leak) or apart from it (the allocator).
    h0 = statistics.median(s["heap_in_use_mib"] for s in first)
    h1 = statistics.median(s["heap_in_use_mib"] for s in last)
    outcomes = samples[-1]["outcomes"]
    server_errors = {k: v for k, v in outcomes.items() if any(c in k for c in (" 500", " 502", " 504"))
                     or "without" in k or "malformed" in k or k == "client error"}
    result = {
        "date": datetime.date.today().isoformat(), "minutes": a.minutes, "clients": a.clients,
        "parallel": a.parallel, "queue": a.queue, "burst": a.burst, "outcomes": outcomes,
        "rss_mib_first": m0, "rss_mib_last": m1, "rss_drift_percent": round(drift, 2),
        "heap_in_use_mib_first": h0, "heap_in_use_mib_last": h1,
        "other_fds_first": f0, "other_fds_last": f1,
        "fds_before_traffic": fds_before, "fds_after_traffic": fds_after,
        "connections_after_traffic": conns_after,
        "idle_after": {"active": ready["active"], "queued": ready["queued"]},
        "problems": tally.problems, "samples": samples, "alive": alive,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    if not a.no_write:
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        stem = os.path.join(ROOT, f"bench/results/{result['date']}-soak")
        with open(stem + ".json", "w") as f:
            json.dump(result, f, indent=1)
        svg(stem + ".svg", samples, f"Soak: {a.minutes:g} min of mixed traffic, default model")
        log(f"wrote {stem}.json and .svg")
    failures = []
    if abs(drift) >= 1.0:
        failures.append(f"memory drift {drift:.2f}% (first {m0:.1f} MiB, last {m1:.1f} MiB; "
                        f"C heap in use {h0:.1f} then {h1:.1f} MiB)")
    # The in-run estimate needs full windows: with the 2-3 samples per window of
    # CI's 10-minute run a burst inside a window moved its median by 3 while the
    # exact check below read 8 descriptors before and 8 after. Short runs rely
    # on the exact check (quiet, before against after, no tolerance); the hour
    # soak (20 samples per window) applies both.
    if min(len(first), len(last)) >= 10 and f1 > f0:
        failures.append(f"descriptors other than connections grew from {f0} to {f1}")
    if fds_after > fds_before:
        failures.append(f"{fds_after} descriptors open after the traffic, {fds_before} before "
                        f"({conns_after} connections still open)")
    if server_errors:
        failures.append(f"bad outcomes: {server_errors}")
    if ready["active"] or ready["queued"]:
        failures.append(f"sessions still busy after the traffic: {ready}")
    if not alive:
        failures.append("the server died")
    for f in failures:
        log("MISSED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
