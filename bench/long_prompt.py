#!/usr/bin/env python3
"""A long prompt arrives while others stream: how long do their tokens stall?

--streams clients stream long answers (/v1/completions, temperature 0,
ignore_eos). Once they are decoding, one more client sends a --prompt-words
prompt (distinct each round, so no cache answers it). Measured per round: the
streams' median gap between tokens before the long prompt (their normal
inter-token time), the longest gap any stream saw while the long prompt was
prefilled, and the long prompt's time to first token. Medians over --rounds.

Servers, one after another, same model, threads and slots: Outpost with its
fixed prefill chunk (the default), Outpost with --step-budget for each value
of --budgets, and llama-server from the same pinned llama.cpp (its defaults:
the whole prompt in batches of 2048, micro-batches of 512).

Writes bench/results/<date>-long-prompt.json and -long-prompt.svg and prints
the markdown table for docs/performance.md.
"""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import random
import statistics
import sys
import threading
import time

import bench as base_bench
from benchlib import free_port, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("line speed cap torque label alignment fill level changeover stoppage shift operator bottle "
         "filler capper labeller conveyor reel glue roller star wheel neck finish checklist release "
         "lock out adjustment terminal plant harbour street pressure valve sensor alarm").split()


def log(msg):
    print(f"[long-prompt] {msg}", file=sys.stderr, flush=True)


def stream_times(base, prompt, n_tokens, out, key):
    """Streams one answer; appends the arrival time of every text chunk to out[key]."""
    body = {"prompt": prompt, "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True}
    times = out.setdefault(key, [])
    with base_bench.CLIENT.stream("POST", base + "/v1/completions", json=body,
                                  headers={"Connection": "close"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]" and '"text"' in line:
                times.append(time.perf_counter())


def one_round(base, streams, n_tokens, prompt_words, rng):
    out = {}
    with cf.ThreadPoolExecutor(streams + 1) as ex:
        futs = [ex.submit(stream_times, base, f"[{rng.randrange(10**9)}] Tell a long story about a ship.",
                          n_tokens, out, i) for i in range(streams)]
        # Wait until every stream has produced 20 tokens: all are decoding.
        deadline = time.time() + 60
        while time.time() < deadline and not all(len(out.get(i, [])) >= 20 for i in range(streams)):
            time.sleep(0.005)
        long_prompt = f"[{rng.randrange(10**9)}] " + " ".join(rng.choice(WORDS) for _ in range(prompt_words))
        t0 = time.perf_counter()
        long = ex.submit(stream_times, base, long_prompt + "\nSummary:", 2, out, "long")
        long.result()
        for f in futs:
            f.result()
    first = out["long"][0]
    before, during = [], []
    for i in range(streams):
        ts = out[i]
        for a, b in zip(ts, ts[1:]):
            if b <= t0:
                before.append(b - a)
            elif a < first:
                during.append(b - a)  # a gap that overlaps the long prompt's prefill
    return {"itl_before_ms": 1000 * statistics.median(before),
            "max_stall_ms": 1000 * max(during) if during else 0.0,
            "long_ttft_s": first - t0}


def run_server(name, cmd, port, ready, args):
    proc = base_bench.start(cmd, port, ready)
    rng = random.Random(7)
    rs = []
    try:
        base = f"http://127.0.0.1:{port}"
        one_round(base, args.streams, 40, 50, rng)  # warm-up
        for i in range(args.rounds):
            rs.append(one_round(base, args.streams, args.tokens, args.prompt_words, rng))
            r = rs[-1]
            log(f"{name} round {i + 1}/{args.rounds}: ITL {r['itl_before_ms']:.1f} ms before, longest stall "
                f"{r['max_stall_ms']:.0f} ms, long prompt TTFT {r['long_ttft_s']:.2f} s")
    finally:
        stop(proc)
    return {k: statistics.median(r[k] for r in rs) for k in rs[0]} | {"rounds": rs}


def svg(path, res):
    names = list(res)
    w, h, left, top, bottom = 720, 300, 200, 40, 40
    vmax = max(res[n]["max_stall_ms"] for n in names) or 1
    bar_h = (h - top - bottom) / len(names)
    x = lambda v: left + (w - left - 80) * v / vmax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
             f'font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">Longest stall of a streaming answer '
             f'while a long prompt is prefilled (median of rounds)</text>']
    for i, n in enumerate(names):
        y = top + i * bar_h
        col = "#d62728" if n == "llama-server" else "#1f77b4"
        v = res[n]["max_stall_ms"]
        parts.append(f'<text x="{left - 8}" y="{y + bar_h / 2 + 4:.1f}" text-anchor="end">{n}</text>')
        parts.append(f'<rect x="{left}" y="{y + 4:.1f}" width="{x(v) - left:.1f}" height="{bar_h - 8:.1f}" '
                     f'fill="{col}"/>')
        parts.append(f'<text x="{x(v) + 6:.1f}" y="{y + bar_h / 2 + 4:.1f}">{v:.0f} ms (TTFT of the long '
                     f'prompt {res[n]["long_ttft_s"]:.2f} s)</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--streams", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=300, help="tokens each stream generates")
    ap.add_argument("--prompt-words", type=int, default=1200)
    ap.add_argument("--budgets", default="60ms,30ms", help="--step-budget values for Outpost")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    slots, ctx = args.streams + 1, 4096
    outpost_cmd = lambda port, *extra: [args.outpost, "serve", "--model", args.model, "--port", str(port),
                                        "--threads", str(args.threads), "--parallel", str(slots),
                                        "--ctx-size", str(ctx), *extra]
    llama_cmd = lambda port: [os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--port",
                              str(port), "-t", str(args.threads), "-tb", str(args.threads), "-np", str(slots),
                              "-c", str(ctx * slots), "--no-webui"]
    res = {}
    port = free_port()
    res["outpost"] = run_server("outpost", outpost_cmd(port), port, "/ready", args)
    for b in args.budgets.split(","):
        port = free_port()
        name = f"outpost --step-budget {b}"
        res[name] = run_server(name, outpost_cmd(port, "--step-budget", b), port, "/ready", args)
    port = free_port()
    res["llama-server"] = run_server("llama-server", llama_cmd(port), port, "/health", args)
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "streams": args.streams, "tokens": args.tokens,
              "prompt_words": args.prompt_words, "rounds": args.rounds, "results": res}
    with open(os.path.join(args.out, f"{stamp}-long-prompt.json"), "w") as f:
        json.dump(result, f, indent=2)
    svg(os.path.join(args.out, f"{stamp}-long-prompt.svg"), res)
    ls = res["llama-server"]
    print("| server | ITL before (ms) | longest stall (ms) | vs llama-server | long prompt TTFT (s) | vs llama-server |")
    print("|---|---|---|---|---|---|")
    for n, r in res.items():
        print(f"| {n} | {r['itl_before_ms']:.1f} | {r['max_stall_ms']:.0f} | "
              f"{r['max_stall_ms'] / ls['max_stall_ms']:.2f} | {r['long_ttft_s']:.2f} | "
              f"{r['long_ttft_s'] / ls['long_ttft_s']:.2f} |")


if __name__ == "__main__":
    main()
