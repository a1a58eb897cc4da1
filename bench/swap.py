#!/usr/bin/env python3
"""Changing the served model under load: Outpost's activate/rollback against
llama-server's only way, a restart with the other file.

Two versions of the default model: the bootstrap's GGUF (v1) and a Q8_0 copy
made by the pinned llama.cpp's llama-quantize (v2). --clients threads stream
chat completions (24 tokens) the whole time. Per round:

  Outpost (hot standby on):  activate v2, then rollback to v1 (from standby)
  Outpost (hot standby off): activate v2, then rollback to v1 (from disk)
  llama-server:              SIGTERM, start on v2, wait for /health; then back to v1

Measured per change: the time the operation took, the streams cut and the
requests refused while it ran (a client retries half a second after either),
and the longest time a client waited between two chunks or for a connection.
Cut and refused are totals over every change; times are medians. Medians over
--rounds. Writes bench/results/<date>-swap.json unless --no-write; prints a
markdown table for docs/performance.md.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, stop, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "bench-swap-admin-key-0123456789"


def log(msg):
    print(f"[swap] {msg}", file=sys.stderr, flush=True)


class Load:
    """Streaming clients; counts failures and gaps inside a marked window."""

    def __init__(self, base, clients):
        self.base, self.stop_flag = base, threading.Event()
        self.lock = threading.Lock()
        self.window = None  # [streams cut, requests refused, longest gap, completed]
        self.threads = [threading.Thread(target=self.worker, args=(i,)) for i in range(clients)]
        for t in self.threads:
            t.start()

    def note(self, cut=False, refused=False, gap=0.0, done=False):
        with self.lock:
            if self.window is not None:
                self.window[0] += cut
                self.window[1] += refused
                self.window[2] = max(self.window[2], gap)
                self.window[3] += done

    def worker(self, i):
        n = 0
        while not self.stop_flag.is_set():
            n += 1
            body = {"model": "smollm2", "stream": True, "max_tokens": 24, "temperature": 0,
                    "messages": [{"role": "user", "content": f"Name {2 + (i + n) % 4} fruits."}]}
            last, ok, started = time.monotonic(), False, False
            try:
                with httpx.stream("POST", self.base() + "/v1/chat/completions", json=body, timeout=60) as r:
                    if r.status_code == 200:
                        started = True
                        for line in r.iter_lines():
                            now = time.monotonic()
                            self.note(gap=now - last)
                            last = now
                            ok = ok or line.strip() == "data: [DONE]"
            except httpx.HTTPError:
                pass
            self.note(cut=started and not ok, refused=not started, gap=time.monotonic() - last, done=ok)
            if not ok:
                time.sleep(0.5)  # refused or cut: the client retries after half a second

    def measure(self, fn):
        with self.lock:
            self.window = [0, 0, 0.0, 0]
        t0 = time.monotonic()
        fn()
        took = time.monotonic() - t0
        time.sleep(1.0)  # the requests that straddled the change finish
        with self.lock:
            cut, refused, gap, done = self.window
            self.window = None
        return {"seconds": took, "cut": cut, "refused": refused, "longest_gap_s": gap, "completed": done}

    def close(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join()


def admin(base, path, body):
    r = httpx.post(base + path, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=600)
    r.raise_for_status()
    return r.json()


def outpost_rounds(args, store, hot):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "OUTPOST_ADMIN_KEY": KEY}
    proc = subprocess.Popen([args.outpost, "serve", "--model", "smollm2:1", "--model-store", store, "--port",
                             str(port), "--threads", str(args.threads), "--parallel", "4",
                             "--model-hot-standby", "true" if hot else "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    out = []
    try:
        wait_ready(base + "/ready", proc)
        load = Load(lambda: base, args.clients)
        try:
            time.sleep(2)
            for r in range(args.rounds):
                a = load.measure(lambda: admin(base, "/admin/models/activate", {"model": "smollm2:2"}))
                b = load.measure(lambda: admin(base, "/admin/models/rollback", {"model": "smollm2"}))
                log(f"outpost hot_standby={hot} round {r + 1}: activate {a['seconds']:.2f} s, rollback "
                    f"{b['seconds'] * 1000:.0f} ms, cut {a['cut'] + b['cut']}, refused {a['refused'] + b['refused']}")
                out.append({"activate": a, "rollback": b})
                # v2 is retired by the rollback; activating it again is allowed.
        finally:
            load.close()
    finally:
        stop(proc)
    return out


def llama_rounds(args, v1, v2):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    state = {"proc": None}

    def start(model):
        state["proc"] = subprocess.Popen(
            [os.path.join(args.llama_bin, "llama-server"), "-m", model, "--port", str(port), "-t",
             str(args.threads), "-tb", str(args.threads), "-np", "4", "-c", "16384", "--no-webui"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(base + "/health", state["proc"])

    def restart(model):
        # llama-server does not exit on SIGTERM while streams run; an operator
        # would not wait long either: SIGKILL after 2 s.
        stop(state["proc"], timeout=2)
        start(model)

    out = []
    start(v1)
    load = Load(lambda: base, args.clients)
    try:
        time.sleep(2)
        for r in range(args.rounds):
            a = load.measure(lambda: restart(v2))
            b = load.measure(lambda: restart(v1))
            log(f"llama-server round {r + 1}: restart {a['seconds']:.2f} s / {b['seconds']:.2f} s, cut "
                f"{a['cut'] + b['cut']}, refused {a['refused'] + b['refused']}")
            out.append({"activate": a, "rollback": b})
    finally:
        load.close()
        stop(state["proc"])
    return out


def med(rounds, step, key):
    return statistics.median(r[step][key] for r in rounds)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outpost", default=os.path.join(ROOT, "build", "outpost"))
    p.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps", "llama.cpp-build", "bin"))
    p.add_argument("--model", default=os.path.join(ROOT, ".deps", "models", "default.gguf"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="outpost-swap-")
    v2 = os.path.join(work, "v2-q8_0.gguf")
    log("making v2 with llama-quantize (Q8_0)")
    subprocess.run([os.path.join(args.llama_bin, "llama-quantize"), "--allow-requantize", args.model, v2,
                    "Q8_0"], check=True, capture_output=True)
    store = os.path.join(work, "models")
    for f, ref in ((args.model, "smollm2:1"), (v2, "smollm2:2")):
        subprocess.run([args.outpost, "model", "--store", store, "import", f, ref], check=True,
                       capture_output=True)
    result = {"date": datetime.date.today().isoformat(), "rounds": args.rounds, "clients": args.clients,
              "model": os.path.realpath(args.model)}
    log("outpost, hot standby on")
    result["outpost_hot"] = outpost_rounds(args, store, True)
    log("outpost, hot standby off")
    result["outpost_cold"] = outpost_rounds(args, store, False)
    log("llama-server restarts")
    result["llama_server"] = llama_rounds(args, os.path.realpath(args.model), v2)

    rows = [("Outpost, hot standby", "outpost_hot"), ("Outpost, no standby", "outpost_cold"),
            ("llama-server restart", "llama_server")]
    print("| server | change to v2 (s) | back to v1 (s) | streams cut | requests refused | "
          "longest client wait (s) |")
    print("|---|---|---|---|---|---|")
    for label, k in rows:
        r = result[k]
        changes = [x[s] for x in r for s in ("activate", "rollback")]
        cut = sum(c["cut"] for c in changes)
        refused = sum(c["refused"] for c in changes)
        gap = statistics.median(c["longest_gap_s"] for c in changes)
        print(f"| {label} | {med(r, 'activate', 'seconds'):.2f} | {med(r, 'rollback', 'seconds'):.3f} | "
              f"{cut} in {len(changes)} changes | {refused} | {gap:.2f} |")
    if not args.no_write:
        out = os.path.join(ROOT, "bench", "results", f"{result['date']}-swap.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
        log(f"wrote {out}")


if __name__ == "__main__":
    main()
