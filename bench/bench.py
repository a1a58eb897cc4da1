#!/usr/bin/env python3
"""Outpost vs llama.cpp, same model, same threads, same slots, same prompts.

1. memory bandwidth (build/membw) — the decode ceiling for context
2. single stream: llama-bench token generation vs Outpost's HTTP streaming path
3. the engine's own ceiling: llama-batched-bench's aggregate decode at the
   largest client count (8-token prompts, the same new tokens)
4. concurrency sweep (clients 1,4,8,16): Outpost vs llama-server, aggregate
   tokens/s and time-to-first-token p50/p99, median of --rounds rounds

Writes bench/results/<date>-<model>.json, prints a markdown table for
docs/performance.md and draws bench/results/<date>-<model>-sweep.svg.
"""
import argparse
import itertools
import random
import concurrent.futures as cf
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

import httpx

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "Write a short story about a lighthouse keeper"  # 8 words


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def start(cmd, port, ready_path):
    # A fresh connection pool per server: a new server may reuse an old port.
    global CLIENT
    CLIENT.close()
    CLIENT = new_client()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(f"http://127.0.0.1:{port}{ready_path}", proc, timeout=180)
    return proc


def add_side_by_side_args(ap, ctx):
    """Flags of the benchmarks that run Outpost, older Outpost builds (--also)
    and llama-server side by side on the same model, threads, slots and context."""
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=ctx, help="context tokens per slot (every server)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=BINARY",
                    help="another outpost binary to run the same way (e.g. an older build), repeatable")


def side_by_side_servers(ap, args):
    """[(name, cmd(port), ready path)]: Outpost, each --also build, llama-server."""
    outpost_at = lambda binary: lambda port: [binary, "serve", "--model", args.model, "--port", str(port),
                                              "--threads", str(args.threads), "--parallel", str(args.slots),
                                              "--ctx-size", str(args.ctx)]
    llama = lambda port: [os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--port", str(port),
                          "-t", str(args.threads), "-tb", str(args.threads), "-np", str(args.slots),
                          "-c", str(args.ctx * args.slots), "--no-webui"]
    servers = [("outpost", outpost_at(args.outpost), "/ready")]
    for spec in args.also:
        name, _, binary = spec.partition("=")
        if not binary:
            ap.error(f"--also wants NAME=BINARY, got {spec!r}")
        servers.append((name, outpost_at(binary), "/ready"))
    servers.append(("llama-server", llama, "/health"))
    return servers


def start_side_by_side(servers, procs):
    """Starts every server (appending its process to `procs`, for the caller
    to stop) and sends each one short request; returns {name: base URL}."""
    bases = {}
    for name, cmd, ready in servers:
        port = free_port()
        log(f"{name}: starting")
        procs.append(start(cmd(port), port, ready))
        bases[name] = f"http://127.0.0.1:{port}"
    for base in bases.values():
        stream_one(base, 8)
    return bases


# One client with a connection pool shared by all bench threads: creating an
# httpx client per request costs tens of ms of CPU (TLS context) and would
# stagger the "simultaneous" clients.
def new_client():
    return httpx.Client(timeout=600, limits=httpx.Limits(max_connections=256, max_keepalive_connections=256))


CLIENT = new_client()
# --sampling: what every request asks for. "sampled" is llama-server's default
# chain (what a client gets that sets only a temperature).
SAMPLING = {"greedy": {"temperature": 0},
            "sampled": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05}}
REQUEST_SAMPLING = SAMPLING["greedy"]
SEQ = itertools.count(random.randrange(10**6))


def stream_one(base, n_tokens, prompt=None):
    """One streaming /v1/completions request. Returns (ttft_s, tokens, t_first, t_last, t_start)."""
    # A distinct prefix per request by default: llama-server would otherwise
    # answer repeated identical prompts from its prompt cache and measure no
    # prefill at all.
    if prompt is None:
        prompt = f"[{next(SEQ)}] {PROMPT}"
    body = {"prompt": prompt, "max_tokens": n_tokens, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}, **REQUEST_SAMPLING}
    t0 = time.perf_counter()
    first = last = None
    tokens = None
    # Connection: close — llama-server may close a kept-alive connection after a
    # stream, and a pooled client would then send the next request into it.
    with CLIENT.stream("POST", base + "/v1/completions", json=body, headers={"Connection": "close"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            now = time.perf_counter()
            if '"usage"' in line:
                usage = json.loads(line[6:]).get("usage")
                if usage:
                    tokens = usage["completion_tokens"]
            if '"text":""' in line.replace(" ", "") or '"text"' not in line:
                continue
            if first is None:
                first = now
            last = now
    if tokens is None:
        raise RuntimeError("no usage chunk")
    return first - t0, tokens, first, last, t0


def sweep_point(base, clients, n_tokens, make_prompt=lambda: None):
    with cf.ThreadPoolExecutor(clients) as ex:
        # Threads start first and wait on a barrier, so all requests leave together.
        barrier = threading.Barrier(clients + 1)

        def client(_):
            barrier.wait()
            return stream_one(base, n_tokens, make_prompt())

        futures = [ex.submit(client, i) for i in range(clients)]
        barrier.wait()
        t0 = time.perf_counter()
        results = [f.result() for f in futures]
        wall = time.perf_counter() - t0
    total = sum(r[1] for r in results)
    ttfts = sorted(r[0] for r in results)
    return {"agg_tps": total / wall, "ttft_p50": percentile(ttfts, 50), "ttft_p99": percentile(ttfts, 99)}


def percentile(xs, p):
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median_of(rounds, key):
    return statistics.median(r[key] for r in rounds)


def run_sweep(name, base, clients_list, n_tokens, rounds):
    out = {}
    stream_one(base, 8)  # warm-up
    for c in clients_list:
        rs = []
        for i in range(rounds):
            rs.append(sweep_point(base, c, n_tokens))
            log(f"{name} clients={c} round {i + 1}/{rounds}: {rs[-1]['agg_tps']:.1f} tok/s, "
                f"TTFT p50 {rs[-1]['ttft_p50'] * 1000:.0f} ms")
        out[c] = {k: median_of(rs, k) for k in ("agg_tps", "ttft_p50", "ttft_p99")}
    return out


def single_stream(base, n_tokens, rounds):
    rates = []
    stream_one(base, 8)
    for _ in range(rounds):
        _, tokens, first, last, _ = stream_one(base, n_tokens)
        rates.append((tokens - 1) / (last - first))
    return statistics.median(rates)


def svg_sweep(path, res, clients_list):
    w, h, pad = 640, 360, 50
    ymax = max(max(v["agg_tps"] for v in res[s].values()) for s in res) * 1.15
    xs = {c: pad + i * (w - 2 * pad) / max(1, len(clients_list) - 1) for i, c in enumerate(clients_list)}
    y = lambda v: h - pad - v / ymax * (h - 2 * pad)
    colors = {"outpost": "#1f77b4", "llama-server": "#d62728"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">Aggregate decode tokens/s vs concurrent clients</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>']
    for c, x in xs.items():
        parts.append(f'<text x="{x}" y="{h - pad + 18}" text-anchor="middle">{c}</text>')
    for i in range(5):
        v = ymax * i / 4
        parts.append(f'<text x="{pad - 6}" y="{y(v) + 4}" text-anchor="end">{v:.0f}</text>')
    for k, (name, series) in enumerate(res.items()):
        pts = " ".join(f"{xs[c]},{y(series[c]['agg_tps'])}" for c in clients_list)
        parts.append(f'<polyline fill="none" stroke="{colors.get(name, "gray")}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{w - pad - 100}" y="{pad + 16 * k}" fill="{colors.get(name, "gray")}">{name}</text>')
    parts.append(f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">clients</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--membw", default=os.path.join(ROOT, "build/membw"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--clients", default="1,4,8,16")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    ap.add_argument("--sampling", choices=sorted(SAMPLING), default="greedy",
                    help="greedy (default), or sampled: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05")
    args = ap.parse_args()
    global REQUEST_SAMPLING
    REQUEST_SAMPLING = SAMPLING[args.sampling]
    clients_list = [int(c) for c in args.clients.split(",")]
    slots = max(clients_list)
    ctx = 512
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    result = {"date": stamp, "machine": platform.node(), "cpu": cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "tokens": args.tokens, "rounds": args.rounds,
              "sampling": REQUEST_SAMPLING}

    log("memory bandwidth (membw)")
    result["membw"] = json.loads(subprocess.check_output([args.membw, "--threads", str(args.threads)]))

    log("llama-bench token generation")
    lb = json.loads(subprocess.check_output(
        [os.path.join(args.llama_bin, "llama-bench"), "-m", args.model, "-t", str(args.threads),
         "-p", "0", "-n", str(args.tokens), "-r", str(args.rounds), "-o", "json"], stderr=subprocess.DEVNULL))
    result["llama_bench_tg_tps"] = lb[0]["avg_ts"]

    log(f"llama-batched-bench at {slots} sequences")
    bb = subprocess.run(
        [os.path.join(args.llama_bin, "llama-batched-bench"), "-m", args.model, "-t", str(args.threads),
         "-tb", str(args.threads), "-c", str(slots * (8 + args.tokens + 8)), "-b", "2048", "-ub", "512",
         "-npp", "8", "-ntg", str(args.tokens), "-npl", f"1,{slots}", "--output-format", "jsonl"],
        capture_output=True, text=True, check=True)
    rows = [json.loads(l) for l in (bb.stdout + bb.stderr).splitlines() if l.startswith("{")]
    result["batched_bench_tg_tps"] = {r["pl"]: r["speed_tg"] for r in rows}

    port = free_port()
    proc = start([args.outpost, "serve", "--model", args.model, "--port", str(port), "--threads",
                  str(args.threads), "--parallel", str(slots), "--ctx-size", str(ctx)], port, "/ready")
    try:
        base = f"http://127.0.0.1:{port}"
        log("outpost single stream")
        result["outpost_single_tps"] = single_stream(base, args.tokens, args.rounds)
        sweep = {"outpost": run_sweep("outpost", base, clients_list, args.tokens, args.rounds)}
    finally:
        stop(proc)

    port = free_port()
    proc = start([os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--port", str(port),
                  "-t", str(args.threads), "-tb", str(args.threads), "-np", str(slots), "-c", str(ctx * slots),
                  "--no-webui"], port, "/health")
    try:
        base = f"http://127.0.0.1:{port}"
        log("llama-server single stream")
        result["llama_server_single_tps"] = single_stream(base, args.tokens, args.rounds)
        sweep["llama-server"] = run_sweep("llama-server", base, clients_list, args.tokens, args.rounds)
    finally:
        stop(proc)
    result["sweep"] = sweep

    name = f"{stamp}-{os.path.splitext(os.path.basename(args.model))[0]}"
    if args.sampling != "greedy":
        name += f"-{args.sampling}"
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=2)
    svg_sweep(os.path.join(args.out, f"{name}-sweep.svg"), sweep, clients_list)
    print(markdown(result, clients_list))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def markdown(r, clients_list):
    o, l = r["sweep"]["outpost"], r["sweep"]["llama-server"]
    lines = [
        f"Machine: {r['cpu']}, {r['threads']} threads; model {os.path.basename(r['model'])}; "
        f"{r['tokens']} new tokens; sampling {r.get('sampling')}; median of {r['rounds']} rounds; {r['date']}.",
        "",
        f"Memory bandwidth (membw, {r['membw']['threads']} threads): read {r['membw']['read_gbps']:.1f} GB/s, "
        f"triad {r['membw']['triad_gbps']:.1f} GB/s.",
        "",
        "| single stream | tokens/s | ratio to llama-bench |",
        "|---|---|---|",
        f"| llama-bench tg{r['tokens']} | {r['llama_bench_tg_tps']:.1f} | 1.00 |",
        f"| Outpost (HTTP streaming) | {r['outpost_single_tps']:.1f} | {r['outpost_single_tps'] / r['llama_bench_tg_tps']:.2f} |",
        f"| llama-server (HTTP streaming) | {r['llama_server_single_tps']:.1f} | {r['llama_server_single_tps'] / r['llama_bench_tg_tps']:.2f} |",
        "",
        "| clients | Outpost tok/s | llama-server tok/s | ratio | Outpost TTFT p50 / p99 ms | llama-server TTFT p50 / p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for c in clients_list:
        lines.append(f"| {c} | {o[c]['agg_tps']:.1f} | {l[c]['agg_tps']:.1f} | {o[c]['agg_tps'] / l[c]['agg_tps']:.2f} | "
                     f"{o[c]['ttft_p50'] * 1000:.0f} / {o[c]['ttft_p99'] * 1000:.0f} | "
                     f"{l[c]['ttft_p50'] * 1000:.0f} / {l[c]['ttft_p99'] * 1000:.0f} |")
    top = max(clients_list)
    bb = r.get("batched_bench_tg_tps", {}).get(top) or r.get("batched_bench_tg_tps", {}).get(str(top))
    if bb:
        lines += ["", f"llama-batched-bench at {top} sequences (decode only, the engine's ceiling): {bb:.1f} tok/s; "
                      f"Outpost at {top} clients {o[top]['agg_tps'] / bb:.2f}x, llama-server {l[top]['agg_tps'] / bb:.2f}x."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
