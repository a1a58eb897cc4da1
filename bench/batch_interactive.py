#!/usr/bin/env python3
"""A 1,000-line batch next to interactive users: does their first token wait?

Interactive load: --clients users, each in a loop streaming a short
/v1/completions answer (--interactive-tokens) and pausing --think seconds.
Measured per server, in one run, same model, threads and slots:

  alone       the interactive load for --seconds, nothing else running
  with batch  the same load for --seconds while --lines batch lines
              (--batch-tokens each, a shared instruction block in front of a
              distinct item) run; then the batch is run to its end

Outpost runs the lines through its Batch API (/v1/files, /v1/batches:
lowest admission class, --batch-parallel at once, preempted by interactive
requests). llama-server has no batch API, so the lines go the way one runs a
batch against it: a client keeps --batch-parallel of them in flight as plain
requests. Outpost runs once per --variant (by default with its defaults, and
with --batch-yield 0: batch work not rationed while users are active). Reported: interactive TTFT p50 / p99 in each phase and their ratio
(the issue's target: p99 with the batch within 1.10 × alone), and the batch's
time and lines per second.

Writes bench/results/<date>-batch-interactive.json and .svg and prints the
markdown table for docs/performance.md.
"""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import sys
import tempfile
import threading
import time

import httpx

import bench as base_bench
from benchlib import free_port, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTRUCTION = ("You label events from a bottling line for the shift report. Read the event and answer "
               "with one short label such as jam, changeover, stoppage, quality hold or normal. Event: ")
ITEMS = ("capper torque alarm on head 3", "labeller glue roller cleaned", "filler level low on valve 12",
         "star wheel changeover to 0.5 l", "conveyor stopped by operator", "reel splice at labeller")


def log(msg):
    print(f"[batch-interactive] {msg}", file=sys.stderr, flush=True)


def line_prompt(i):
    return f"{INSTRUCTION}{ITEMS[i % len(ITEMS)]} (#{i})\nLabel:"


def interactive(base, clients, seconds, n_tokens, think):
    """Each client streams, pauses, streams again until `seconds` pass. Returns TTFTs (s)."""
    stop_at = time.perf_counter() + seconds
    ttfts, lock = [], threading.Lock()

    def user(_):
        while time.perf_counter() < stop_at:
            ttft = base_bench.stream_one(base, n_tokens)[0]
            with lock:
                ttfts.append(ttft)
            time.sleep(think)

    with cf.ThreadPoolExecutor(clients) as ex:
        list(ex.map(user, range(clients)))
    return sorted(ttfts)


def summary(ttfts):
    return {"requests": len(ttfts), "ttft_p50": base_bench.percentile(ttfts, 50),
            "ttft_p99": base_bench.percentile(ttfts, 99), "ttfts": ttfts}


def outpost_batch(base, args):
    """Starts the batch through the Batch API; returns a function that waits for it."""
    lines = "".join(json.dumps({"custom_id": f"l{i}", "method": "POST", "url": "/v1/completions",
                                "body": {"prompt": line_prompt(i), "max_tokens": args.batch_tokens,
                                         "temperature": 0, "ignore_eos": True}}) + "\n"
                    for i in range(args.lines))
    f = httpx.post(base + "/v1/files", files={"file": ("lines.jsonl", lines.encode())},
                   data={"purpose": "batch"}, timeout=60).json()
    t0 = time.perf_counter()
    b = httpx.post(base + "/v1/batches", json={"input_file_id": f["id"], "endpoint": "/v1/completions",
                                                "completion_window": "24h"}, timeout=60).json()
    assert b["status"] == "in_progress", b

    def wait():
        while True:
            got = httpx.get(f"{base}/v1/batches/{b['id']}", timeout=60).json()
            if got["status"] not in ("in_progress", "finalizing"):
                break
            time.sleep(0.5)
        wall = time.perf_counter() - t0
        assert got["status"] == "completed" and got["request_counts"]["completed"] == args.lines, got
        return wall

    return wait


def client_batch(base, args):
    """The batch as plain requests, --batch-parallel in flight; returns a function that waits."""
    t0 = time.perf_counter()
    ex = cf.ThreadPoolExecutor(args.batch_parallel)
    client = httpx.Client(timeout=600)

    def one(i):
        r = client.post(base + "/v1/completions", json={"prompt": line_prompt(i), "max_tokens": args.batch_tokens,
                                                        "temperature": 0, "ignore_eos": True})
        r.raise_for_status()

    futures = [ex.submit(one, i) for i in range(args.lines)]

    def wait():
        for f in futures:
            f.result()
        wall = time.perf_counter() - t0
        ex.shutdown()
        client.close()
        return wall

    return wait


def run_server(name, cmd, port, ready, start_batch, args):
    log(f"{name}: starting")
    proc = base_bench.start(cmd, port, ready)
    base = f"http://127.0.0.1:{port}"
    try:
        base_bench.stream_one(base, 4)  # warm
        log(f"{name}: interactive load alone, {args.seconds} s")
        alone = summary(interactive(base, args.clients, args.seconds, args.interactive_tokens, args.think))
        log(f"{name}: {args.lines}-line batch started; the same load beside it")
        wait = start_batch(base, args)
        beside = summary(interactive(base, args.clients, args.seconds, args.interactive_tokens, args.think))
        log(f"{name}: waiting for the batch to finish")
        wall = wait()
        res = {"alone": alone, "with_batch": beside, "batch_seconds": wall,
               "batch_lines_per_second": args.lines / wall,
               "p99_ratio": beside["ttft_p99"] / alone["ttft_p99"],
               "p50_ratio": beside["ttft_p50"] / alone["ttft_p50"]}
        log(f"{name}: {json.dumps(res)}")
        return res
    finally:
        stop(proc)


def svg(path, res):
    names = list(res)
    w, h, left, top, bar = 640, 60 + 70 * len(names), 170, 40, 22
    vmax = max(max(r["alone"]["ttft_p99"], r["with_batch"]["ttft_p99"]) for r in res.values()) * 1.15
    x = lambda v: left + (w - left - 30) * v / vmax  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="20" font-weight="bold">Interactive TTFT p99 (ms): alone vs beside a batch</text>']
    for i, n in enumerate(names):
        y = top + 70 * i
        out.append(f'<text x="10" y="{y + 26}">{n}</text>')
        for j, (key, col) in enumerate((("alone", "#9ecae1"), ("with_batch", "#1f77b4" if n != "llama-server"
                                                                 else "#d62728"))):
            v = res[n][key]["ttft_p99"]
            yy = y + j * (bar + 4)
            out.append(f'<rect x="{left}" y="{yy}" width="{x(v) - left:.1f}" height="{bar}" fill="{col}"/>')
            label = "alone" if key == "alone" else "with batch"
            out.append(f'<text x="{x(v) + 4:.1f}" y="{yy + 15}">{v * 1000:.0f} ms ({label})</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--clients", type=int, default=2, help="interactive users")
    ap.add_argument("--interactive-tokens", type=int, default=32)
    ap.add_argument("--think", type=float, default=0.5, help="seconds a user pauses between requests")
    ap.add_argument("--seconds", type=float, default=45, help="length of each interactive phase")
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--batch-tokens", type=int, default=16)
    ap.add_argument("--batch-parallel", type=int, default=4)
    ap.add_argument("--variant", action="append", metavar="NAME=FLAGS",
                    help="an Outpost run with these extra serve flags (repeatable); default: "
                         "'outpost=' (the defaults) and 'outpost, no ration=--batch-yield 0'")
    ap.add_argument("--no-llama-server", action="store_true", help="leave the peer out")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    variants = args.variant or ["outpost=", "outpost, no ration=--batch-yield 0"]
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    ctx = 1024
    res = {}
    for v in variants:
        name, _, flags = v.partition("=")
        port = free_port()
        res[name] = run_server(
            name, [args.outpost, "serve", "--model", args.model, "--port", str(port), "--threads",
                   str(args.threads), "--parallel", str(args.slots), "--ctx-size", str(ctx),
                   "--batch-parallel", str(args.batch_parallel),
                   "--state-dir", tempfile.mkdtemp(prefix="outpost-bench-state-")] + flags.split(),
            port, "/ready", outpost_batch, args)
    if not args.no_llama_server:
        port = free_port()
        res["llama-server"] = run_server(
            "llama-server", [os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--port",
                             str(port), "-t", str(args.threads), "-tb", str(args.threads), "-np",
                             str(args.slots), "-c", str(ctx * args.slots), "--no-webui"],
            port, "/health", client_batch, args)
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "args": vars(args), "results": res}
    path = os.path.join(args.out, f"{stamp}-batch-interactive")
    with open(path + ".json", "w") as f:
        json.dump(result, f, indent=2)
    svg(path + ".svg", res)
    print("| server | TTFT p50 / p99 alone (ms) | with the batch (ms) | p99 ratio | batch of "
          f"{args.lines}: time (s) | lines/s |")
    print("|---|---|---|---|---|---|")
    for n, r in res.items():
        a, b = r["alone"], r["with_batch"]
        print(f"| {n} | {a['ttft_p50'] * 1000:.0f} / {a['ttft_p99'] * 1000:.0f} | "
              f"{b['ttft_p50'] * 1000:.0f} / {b['ttft_p99'] * 1000:.0f} | {r['p99_ratio']:.2f} | "
              f"{r['batch_seconds']:.0f} | {r['batch_lines_per_second']:.2f} |")
    log(f"wrote {path}.json and .svg")


if __name__ == "__main__":
    main()
