#!/usr/bin/env python3
"""Staggered traffic: clients in a closed loop, requests of different lengths.

The sweeps in bench.py send every client's request at the same moment, so
the requests start and end together and run on neighbouring slots. Real
users do not: each client here sends its next request the moment its last
one ends, asks for a random number of tokens (8-96, seeded) and opens with
one of a few phrasings, so requests start and finish at different times and
a new one finds a scattered set of slots busy — and, on both servers,
cached prompts in every idle slot.

That matters because llama.cpp runs a batch over one KV stream per
sequence once per run of consecutive sequence ids (engine::BatchPasses):
four requests on slots 0-3 are one pass over the weights, on slots 0, 5, 9
and 12 four. Outpost keeps running requests on neighbouring slots;
llama-server picks slots by prompt similarity and age.

Servers side by side (idle while another is measured), same model, threads,
slots and context: Outpost (and any --also builds) and llama-server from the
same pinned llama.cpp. For each client count, --rounds rounds of --seconds
each, the servers taking turns round by round (run one after another, this
box's drift alone moved llama-server's 8-client TTFT p99 from 0.37 to 0.51 s
between runs of the same code); medians of aggregate tokens/s and
TTFT p50/p99 (streaming /v1/completions, temperature 0, ignore_eos).

Writes bench/results/<date>-closed-loop.json and .svg and prints the
markdown table.
"""
import argparse
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
from benchlib import stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPENINGS = ("Tell me", "Write me", "Give me", "Compose for me", "Draft me", "Make me",
            "Please write me", "Now write me")


def log(msg):
    print(f"[closed-loop] {msg}", file=sys.stderr, flush=True)


def closed_loop(base, clients, seconds, seed, think=0.0):
    """Each client sends its next request when its last one ends (after a think
    time drawn from an exponential distribution of mean `think` seconds, none
    when 0), for `seconds`."""
    stop_at = time.perf_counter() + seconds
    results, lock = [], threading.Lock()

    def client(i):
        rnd = random.Random(seed * 1000 + i)
        n = 0
        while time.perf_counter() < stop_at:
            prompt = (f"{rnd.choice(OPENINGS)} ({i}-{n}-{seed}) a short story about a "
                      "lighthouse keeper")
            r = base_bench.stream_one(base, rnd.randint(8, 96), prompt)
            n += 1
            if think > 0:
                time.sleep(min(rnd.expovariate(1 / think), max(0.0, stop_at - time.perf_counter())))
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttfts = sorted(r[0] for r in results)
    # Time per output token after the first (what a reader of a stream sees);
    # with think time the offered load, not the server, sets tok/s.
    tpots = sorted((r[3] - r[2]) / (r[1] - 1) for r in results if r[1] > 1)
    return {"agg_tps": sum(r[1] for r in results) / wall, "requests": len(results),
            "ttft_p50": base_bench.percentile(ttfts, 50), "ttft_p99": base_bench.percentile(ttfts, 99),
            "tpot_p50": base_bench.percentile(tpots, 50) if tpots else 0.0}


def measure(servers, args):
    """All servers run side by side; each round of each client count visits them
    in turn, so the drift of a shared, noisy machine (minutes of faster or slower
    cores) falls on every server alike instead of on whichever ran last."""
    procs = []
    try:
        bases = base_bench.start_side_by_side(servers, procs)
        out = {name: {} for name in bases}
        for c in args.clients:
            rs = {name: [] for name in bases}
            for k in range(args.rounds):
                for name, base in bases.items():
                    rs[name].append(closed_loop(base, c, args.seconds, seed=k + 1, think=args.think))
                    r = rs[name][-1]
                    log(f"{name} clients={c} round {k + 1}/{args.rounds}: {r['agg_tps']:.1f} tok/s, "
                        f"{r['requests']} requests, TTFT p50 {r['ttft_p50']:.2f} s p99 {r['ttft_p99']:.2f} s, "
                        f"{1000 * r['tpot_p50']:.1f} ms/token")
            for name in bases:
                out[name][c] = {m: statistics.median(r[m] for r in rs[name])
                                for m in ("agg_tps", "ttft_p50", "ttft_p99", "tpot_p50")}
        return out
    finally:
        for proc in procs:
            stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    base_bench.add_side_by_side_args(ap, ctx=512)
    ap.add_argument("--clients", default="4,8")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--think", type=float, default=0.0,
                    help="mean think time in seconds between a client's requests (exponential; 0 = none)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "slots": args.slots, "seconds": args.seconds,
              "rounds": args.rounds, "think_s": args.think, "ctx": args.ctx, "servers": {}}
    servers = base_bench.side_by_side_servers(ap, args)
    result["servers"] = measure(servers, args)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{stamp}-closed-loop.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    base_bench.svg_sweep(path.replace(".json", ".svg"), result["servers"], args.clients)
    ls = result["servers"]["llama-server"]
    print("| server | " + " | ".join(f"{c} clients: tok/s (vs llama-server), TTFT p50 / p99, ms/token p50"
                                    for c in args.clients) + " |")
    print("|---" * (len(args.clients) + 1) + "|")
    for name, r in result["servers"].items():
        cells = [f"{r[c]['agg_tps']:.1f} ({r[c]['agg_tps'] / ls[c]['agg_tps']:.2f}×), "
                 f"{r[c]['ttft_p50']:.2f} / {r[c]['ttft_p99']:.2f} s, {1000 * r[c]['tpot_p50']:.1f}"
                 for c in args.clients]
        print(f"| {name} | " + " | ".join(cells) + " |")
    log(f"wrote {path} and .svg")


if __name__ == "__main__":
    main()
