#!/usr/bin/env python3
"""A hole between running requests, and what it costs the ones still running.

Three streams start one after another (each once the one before streams),
so a server with free slots puts them on slots 0, 1 and 2. The middle one
ends after --short tokens; the other two go on for --long. llama.cpp runs a
batch over one KV stream per sequence once per run of consecutive sequence
ids (engine::BatchPasses), so until an arrival fills the hole the two
running sequences on slots 0 and 2 cost two passes over the weights per
step, where on neighbouring slots they cost one. Outpost moves the request
on slot 2 into slot 1 (scheduler/slot_moves.cc); llama-server, and Outpost
before that change (--also), leave the hole.

Measured: the time per token of the two long streams after the middle one
ended (the mean of the two), per server and round. Servers run side by side,
idle while another is measured, visited in a rotating order round by round
so that no server always goes first; medians of --rounds. Same model,
threads, slots and context on every server.

Writes bench/results/<date>-slot-holes.json and .svg and prints the table.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import threading
import time

import bench as base_bench
from benchlib import stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPTS = ("Write the history of a lighthouse on a northern cape",
           "List three colours",
           "Describe how a bakery makes bread each morning")


def log(msg):
    print(f"[slot-holes] {msg}", file=sys.stderr, flush=True)


def stream(base, prompt, n_tokens, times, first):
    """Streams one greedy completion (ignore_eos); appends each token's arrival time."""
    body = {"prompt": prompt, "max_tokens": n_tokens, "ignore_eos": True, "temperature": 0,
            "stream": True}
    with base_bench.CLIENT.stream("POST", base + "/v1/completions", json=body,
                                  headers={"Connection": "close"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            if '"text":""' in line.replace(" ", "") or '"text"' not in line:
                continue
            times.append(time.perf_counter())
            first.set()


def one_round(base, tag, short, long):
    times = [[], [], []]
    threads = []
    for k, n in enumerate((long, short, long)):
        first = threading.Event()
        t = threading.Thread(target=stream, args=(base, f"[{tag}-{k}] {PROMPTS[k]}", n, times[k], first))
        t.start()
        threads.append(t)
        if not first.wait(120):
            raise RuntimeError(f"stream {k} sent no token")
    for t in threads:
        t.join()
    hole_from = times[1][-1]
    per_token = []
    for k in (0, 2):
        after = [t for t in times[k] if t > hole_from]
        if len(after) < 2:
            raise RuntimeError("a long stream ended before the short one: raise --long")
        per_token.append((after[-1] - after[0]) / (len(after) - 1))
    return statistics.mean(per_token)


def svg(path, medians, baseline):
    names = list(medians)
    top = max(medians.values()) * 1.15
    w, h, bar = 560, 60 + 40 * len(names), 26
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           'font-size="12">',
           f'<text x="10" y="20" font-size="14">Time per token of two running streams after a hole '
           f'opened between them (ms, lower is better)</text>']
    for i, name in enumerate(names):
        y = 40 + 40 * i
        v = medians[name]
        bw = (w - 220) * v / top
        out.append(f'<text x="10" y="{y + 17}">{name}</text>')
        out.append(f'<rect x="140" y="{y}" width="{bw:.1f}" height="{bar}" fill="#4a7ebb"/>')
        out.append(f'<text x="{145 + bw:.1f}" y="{y + 17}">{1000 * v:.1f} ms '
                   f'({v / medians[baseline]:.2f}×)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    base_bench.add_side_by_side_args(ap, ctx=4096)
    ap.add_argument("--short", type=int, default=16, help="tokens of the middle stream")
    ap.add_argument("--long", type=int, default=256, help="tokens of the other two")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    servers = base_bench.side_by_side_servers(ap, args)
    procs = []
    rounds = {name: [] for name, _, _ in servers}
    try:
        bases = base_bench.start_side_by_side(servers, procs)
        names = list(bases)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                # Between rounds every slot is idle again: the server's own
                # choice puts the three streams on its first free slots.
                v = one_round(bases[name], f"{r}", args.short, args.long)
                rounds[name].append(v)
                log(f"{name} round {r + 1}/{args.rounds}: {1000 * v:.2f} ms/token")
    finally:
        for proc in procs:
            stop(proc)
    medians = {name: statistics.median(v) for name, v in rounds.items()}
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "slots": args.slots, "ctx": args.ctx,
              "short": args.short, "long": args.long, "rounds": rounds, "median_s_per_token": medians}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{stamp}-slot-holes.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    svg(path.replace(".json", ".svg"), medians, "llama-server")
    print("| server | ms/token after the hole opened (median) | vs llama-server | rounds |")
    print("|---|---|---|---|")
    for name, v in medians.items():
        print(f"| {name} | {1000 * v:.2f} | {v / medians['llama-server']:.2f}× | "
              + ", ".join(f"{1000 * x:.1f}" for x in rounds[name]) + " |")
    log(f"wrote {path} and .svg")


if __name__ == "__main__":
    main()
