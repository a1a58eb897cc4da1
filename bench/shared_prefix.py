#!/usr/bin/env python3
"""A shared system prompt in front of every request: Outpost's prefix cache
against llama-server's prompt cache, same model, threads and slots, one run.

The normal case for a site application: the same ~300-word instruction block,
then a short question that differs per request. Three servers in turn:
Outpost (prefix cache on, the default), Outpost with --prefix-cache false, and
llama-server from the same pinned llama.cpp (cache_prompt on, its default).
For each client count, --rounds rounds of that many simultaneous streaming
/v1/completions requests (temperature 0, ignore_eos, --tokens new tokens);
medians of aggregate tokens/s and TTFT p50/p99. The servers are warmed with
one request first (steady state: the block has been seen once).

Phase `cold` (--phases): a burst of --cold-clients requests on a freshly
started server that has never been asked anything (a shift start: every
terminal at once; a restart), --rounds fresh servers each: Outpost, Outpost
with the block pinned in its config (`pinned_prompts`, computed at the first
start and read back from <state_dir>/pinned at the later ones), and
llama-server.

Writes bench/results/<date>-shared-prefix.json and -shared-prefix.svg and
prints the markdown table for docs/performance.md.
"""
import argparse
import datetime
import itertools
import json
import os
import platform
import random
import statistics
import sys
import tempfile


from benchlib import free_port, stop, wait_ready
import bench as base_bench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = (
    "You are the assistant of the bottling line at the Harbour Street plant. Operators ask about "
    "line speed, cap torque, label alignment, fill levels, changeovers and stoppages. The line runs "
    "three shifts. Line speed is set between 300 and 420 bottles per minute depending on the bottle "
    "size; the 0.5 litre bottle runs at 420, the 1 litre at 360 and the 1.5 litre at 300. Cap torque "
    "is 12 to 16 inch-pounds for the standard 28 millimetre cap and must be checked with the torque "
    "tester every two hours and after every changeover. Labels must sit within 1.5 millimetres of the "
    "mould seam; drift beyond that usually comes from a worn glue roller, a loose star wheel or a "
    "change of label reel with a different core. Fill level is measured 40 millimetres below the "
    "neck finish and may vary by at most 3 millimetres. A stoppage longer than five minutes is "
    "logged with its cause, the time it began, the time it ended and the operator's initials. "
    "Changeovers follow the checklist on the line terminal: clear the line, swap change parts, set "
    "the filler height, run ten bottles, check fill, torque and labels, then release. Safety comes "
    "first: never reach into the capper or the labeller while it runs, and lock out before any "
    "adjustment. Answer in one or two short sentences, with the number the operator needs. ")
QUESTIONS = ["What speed for the 1 litre bottle?", "How often do we check torque?",
             "Why would labels drift?", "What fill variation is allowed?", "What do we log for a stoppage?",
             "What is the first step of a changeover?"]
SEQ = itertools.count(random.randrange(10**6))


def log(msg):
    print(f"[shared-prefix] {msg}", file=sys.stderr, flush=True)


def shared_prompt():
    """The block, then a question that differs per request."""
    n = next(SEQ)
    return f"{SHARED}\nQuestion {n}: {QUESTIONS[n % len(QUESTIONS)]}\nAnswer:"


def point(url, clients, n_tokens):
    return base_bench.sweep_point(url, clients, n_tokens, shared_prompt)


def sweep(name, url, clients_list, n_tokens, rounds):
    base_bench.stream_one(url, 4, shared_prompt())  # warm-up: the block has been seen once
    out = {}
    for c in clients_list:
        rs = []
        for i in range(rounds):
            rs.append(point(url, c, n_tokens))
            log(f"{name} clients={c} round {i + 1}/{rounds}: {rs[-1]['agg_tps']:.1f} tok/s, "
                f"TTFT p50 {rs[-1]['ttft_p50']:.2f} s p99 {rs[-1]['ttft_p99']:.2f} s")
        out[c] = {k: statistics.median(r[k] for r in rs) for k in ("agg_tps", "ttft_p50", "ttft_p99")}
    return out


def cold_burst(name, cmd_for_port, ready, clients, n_tokens, rounds):
    rs = []
    for i in range(rounds):
        port = free_port()
        proc = base_bench.start(cmd_for_port(port), port, ready)
        try:
            rs.append(point(f"http://127.0.0.1:{port}", clients, n_tokens))
        finally:
            stop(proc)
        log(f"{name} cold burst of {clients}, round {i + 1}/{rounds}: {rs[-1]['agg_tps']:.1f} tok/s, "
            f"TTFT p50 {rs[-1]['ttft_p50']:.2f} s p99 {rs[-1]['ttft_p99']:.2f} s")
    return {k: statistics.median(r[k] for r in rs) for k in ("agg_tps", "ttft_p50", "ttft_p99")}


def run_server(cmd, port, ready, name, clients_list, args):
    proc = base_bench.start(cmd, port, ready)
    try:
        return sweep(name, f"http://127.0.0.1:{port}", clients_list, args.tokens, args.rounds)
    finally:
        stop(proc)


def svg(path, res, clients_list):
    """Grouped bars: TTFT p50 (solid) and p99 (outline) per client count, per server, log-free seconds."""
    names = list(res)
    colours = {"outpost": "#1f77b4", "outpost-no-cache": "#9ecae1", "llama-server": "#d62728"}
    w, h, left, bottom, top = 760, 360, 60, 50, 40
    vmax = max(res[n][c]["ttft_p99"] for n in names for c in clients_list)
    step = 1 if vmax <= 8 else 2 if vmax <= 16 else 5 if vmax <= 40 else 10
    ymax = step * (int(vmax / step) + 1)
    plot_h = h - bottom - top
    group_w = (w - left - 20) / len(clients_list)
    bar_w = group_w / (len(names) + 1)
    y = lambda v: top + plot_h * (1 - v / ymax)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">Time to first token with a shared '
             f'300-word system prompt (bar: p50, box: p99)</text>']
    for k in range(0, int(ymax / step) + 1):
        v = k * step
        parts.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v} s</text>')
    for gi, c in enumerate(clients_list):
        gx = left + gi * group_w
        parts.append(f'<text x="{gx + group_w / 2:.1f}" y="{h - bottom + 18}" text-anchor="middle">'
                     f'{c} client{"s" if c > 1 else ""}</text>')
        for ni, n in enumerate(names):
            x = gx + bar_w * (ni + 0.5)
            p50, p99 = res[n][c]["ttft_p50"], res[n][c]["ttft_p99"]
            col = colours.get(n, "#555")
            parts.append(f'<rect x="{x:.1f}" y="{y(p50):.1f}" width="{bar_w * 0.9:.1f}" '
                         f'height="{y(0) - y(p50):.1f}" fill="{col}"/>')
            parts.append(f'<rect x="{x:.1f}" y="{y(p99):.1f}" width="{bar_w * 0.9:.1f}" '
                         f'height="{y(0) - y(p99):.1f}" fill="none" stroke="{col}"/>')
    for ni, n in enumerate(names):
        lx = left + 10 + ni * 200
        parts.append(f'<rect x="{lx}" y="{h - 22}" width="12" height="12" fill="{colours.get(n, "#555")}"/>')
        parts.append(f'<text x="{lx + 18}" y="{h - 12}">{n}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    ap.add_argument("--phases", default="warm,cold")
    ap.add_argument("--cold-clients", default="1,16", help="burst sizes of the cold phase")
    args = ap.parse_args()
    phases = args.phases.split(",")
    clients_list = [int(c) for c in args.clients.split(",")]
    slots, ctx = max(clients_list), 1024
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d")
    outpost_cmd = lambda port, *extra: [args.outpost, "serve", "--model", args.model, "--port", str(port),
                                        "--threads", str(args.threads), "--parallel", str(slots),
                                        "--ctx-size", str(ctx), *extra]
    llama_cmd = lambda port: [os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--port", str(port),
                              "-t", str(args.threads), "-tb", str(args.threads), "-np", str(slots),
                              "-c", str(ctx * slots), "--no-webui"]
    result = {"date": stamp, "machine": platform.node(), "cpu": base_bench.cpu_name(), "threads": args.threads,
              "model": os.path.realpath(args.model), "tokens": args.tokens, "rounds": args.rounds}
    if "cold" in phases:
        state = tempfile.mkdtemp(prefix="outpost-pinned-")
        cfg = os.path.join(state, "pinned.yaml")
        with open(cfg, "w") as f:  # a JSON string is a YAML double-quoted scalar
            f.write(f"state_dir: {state}\npinned_prompts:\n  - prompt: {json.dumps(SHARED)}\n")
        result["cold_burst"] = {}
        print("| cold burst | Outpost TTFT p50 / p99 | pinned | llama-server | pinned p99 / llama-server p99 |")
        print("|---|---|---|---|---|")
        for c in [int(x) for x in args.cold_clients.split(",")]:
            cold = {"outpost": cold_burst("outpost", outpost_cmd, "/ready", c, args.tokens, args.rounds),
                    "outpost-pinned": cold_burst("outpost-pinned", lambda port: outpost_cmd(port, "--config", cfg),
                                                 "/ready", c, args.tokens, args.rounds),
                    "llama-server": cold_burst("llama-server", llama_cmd, "/health", c, args.tokens, args.rounds)}
            result["cold_burst"][str(c)] = cold
            o, p, ls = cold["outpost"], cold["outpost-pinned"], cold["llama-server"]
            print(f"| {c} client{'s' if c > 1 else ''} | {o['ttft_p50']:.2f} / {o['ttft_p99']:.2f} s | "
                  f"{p['ttft_p50']:.2f} / {p['ttft_p99']:.2f} s | {ls['ttft_p50']:.2f} / {ls['ttft_p99']:.2f} s | "
                  f"{p['ttft_p99'] / ls['ttft_p99']:.2f} |")
    if "warm" not in phases:
        with open(os.path.join(args.out, f"{stamp}-shared-prefix-cold.json"), "w") as f:
            json.dump(result, f, indent=2)
        return
    res = {}
    for name, extra in [("outpost", []), ("outpost-no-cache", ["--prefix-cache", "false"])]:
        port = free_port()
        res[name] = run_server(outpost_cmd(port, *extra), port, "/ready", name, clients_list, args)
    port = free_port()
    res["llama-server"] = run_server(llama_cmd(port), port, "/health", "llama-server", clients_list, args)
    result["results"] = res
    with open(os.path.join(args.out, f"{stamp}-shared-prefix.json"), "w") as f:
        json.dump(result, f, indent=2)
    svg(os.path.join(args.out, f"{stamp}-shared-prefix.svg"), res, clients_list)
    o, nc, ls = res["outpost"], res["outpost-no-cache"], res["llama-server"]
    print("| clients | Outpost tok/s | no cache | llama-server | ratio | Outpost TTFT p50 / p99 | no cache | "
          "llama-server | p99 ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in clients_list:
        print(f"| {c} | {o[c]['agg_tps']:.1f} | {nc[c]['agg_tps']:.1f} | {ls[c]['agg_tps']:.1f} | "
              f"{o[c]['agg_tps'] / ls[c]['agg_tps']:.2f} | {o[c]['ttft_p50']:.2f} / {o[c]['ttft_p99']:.2f} s | "
              f"{nc[c]['ttft_p50']:.2f} / {nc[c]['ttft_p99']:.2f} s | {ls[c]['ttft_p50']:.2f} / "
              f"{ls[c]['ttft_p99']:.2f} s | {o[c]['ttft_p99'] / ls[c]['ttft_p99']:.2f} |")


if __name__ == "__main__":
    main()
