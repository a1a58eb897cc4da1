#!/usr/bin/env python3
"""N-gram speculation: faster where answers copy their input, no slower elsewhere?

Two workloads, each at --clients concurrent streams (/v1/completions,
temperature 0, ignore_eos, --tokens each, a distinct tag per request so no
cache answers it):

  echo    a shift log followed by "The same log again, word for word:" and
          its start — the model copies spans of its input
  random  "Write a short story about a lighthouse keeper" — nothing to copy

Servers one after another, same model, threads and slots: Outpost without
speculation, Outpost with --speculative-draft (default 4), llama-server from
the same pinned llama.cpp without speculation, and llama-server with its own
draftless n-gram speculation (--spec-type ngram-simple, lookup n-grams of 4
like Outpost's longest, --draft tokens), which drafts for every slot at
every load. Aggregate tokens/s, medians of --rounds; the
issue's targets: speculation faster at 1-4 clients on echo, and no more than
3% slower at 16 clients on either.

Writes bench/results/<date>-speculation.json and prints the markdown table.
"""
import argparse
import datetime
import itertools
import json
import os
import platform
import sys

import bench as base_bench
from benchlib import free_port, stop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ITEMS = ("valve 12 pressure low; capper head 3 torque alarm; labeller glue roller cleaned; "
         "filler level low on valve 7; conveyor stopped by operator; reel splice at labeller")
SEQ = itertools.count()
WORKLOADS = {
    "echo": lambda: f"[{next(SEQ)}] Shift log: {ITEMS}.\nThe same log again, word for word: {ITEMS[:40]}",
    "random": lambda: f"[{next(SEQ)}] {base_bench.PROMPT}",
}


def log(msg):
    print(f"[speculation] {msg}", file=sys.stderr, flush=True)


def measure(name, cmd, port, ready, args):
    log(f"{name}: starting")
    proc = base_bench.start(cmd, port, ready)
    base = f"http://127.0.0.1:{port}"
    try:
        base_bench.stream_one(base, 8)
        out = {}
        for w, make in WORKLOADS.items():
            out[w] = {}
            for c in args.clients:
                rs = [base_bench.sweep_point(base, c, args.tokens, make) for _ in range(args.rounds)]
                out[w][c] = base_bench.median_of(rs, "agg_tps")
                log(f"{name} {w} clients={c}: {out[w][c]:.1f} tok/s")
        return out
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--draft", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    slots, ctx = max(args.clients), 512
    outpost = lambda port, *extra: [args.outpost, "serve", "--model", args.model, "--port", str(port),  # noqa: E731
                                    "--threads", str(args.threads), "--parallel", str(slots), "--ctx-size",
                                    str(ctx), "--batch-parallel", "0", *extra]
    res = {}
    port = free_port()
    res["outpost"] = measure("outpost", outpost(port), port, "/ready", args)
    port = free_port()
    name = f"outpost --speculative-draft {args.draft}"
    res[name] = measure(name, outpost(port, "--speculative-draft", str(args.draft)), port, "/ready", args)
    port = free_port()
    llama = lambda port, *extra: [os.path.join(args.llama_bin, "llama-server"), "-m", args.model,  # noqa: E731
                                  "--port", str(port), "-t", str(args.threads), "-tb", str(args.threads),
                                  "-np", str(slots), "-c", str(ctx * slots), "--no-webui", *extra]
    res["llama-server"] = measure("llama-server", llama(port), port, "/health", args)
    port = free_port()
    name = f"llama-server --spec-type ngram-simple, {args.draft} drafted"
    res[name] = measure(name, llama(port, "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "4",
                                    "--spec-ngram-simple-size-m", str(args.draft),
                                    "--spec-draft-n-max", str(args.draft)), port, "/health", args)
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "args": vars(args), "results": res}
    path = os.path.join(args.out, f"{stamp}-speculation.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    cols = [f"{w} {c}" for w in WORKLOADS for c in args.clients]
    print("| server | " + " | ".join(f"{c} clients" for c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    plain = res["outpost"]
    for n, r in res.items():
        cells = []
        for w in WORKLOADS:
            for c in args.clients:
                v = r[w][c]
                cells.append(f"{v:.1f}" + (f" ({v / plain[w][c]:.2f}×)" if n != "outpost" else ""))
        print(f"| {n} | " + " | ".join(cells) + " |")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
