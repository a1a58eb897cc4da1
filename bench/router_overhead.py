#!/usr/bin/env python3
"""Router overhead: latency Outpost adds when it relays a request to central,
compared with calling central directly, at several client concurrencies; the
LiteLLM proxy measured the same way as a peer when it is installed
(bench/run_router.sh installs it into .deps/bench-venv), and nginx as a bare
reverse proxy (keep-alive upstream, no policy, no body inspection) — the floor
for one more HTTP hop on this machine — when it is on PATH.

"Central" is build/router_load's canned server (answers instantly, keep-alive),
and the load comes from build/router_load too (one keep-alive connection per
client thread), so the numbers isolate the proxy path — HTTP parse, policy,
upstream call on a pooled connection, relay — from model time and from any
Python interpreter. Prints a markdown table (medians of --rounds rounds),
writes JSON and an SVG chart next to --out.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"[router-bench] {msg}", file=sys.stderr, flush=True)


def measure(load_bin, base, model, requests, concurrency):
    out = subprocess.run([load_bin, "load", "--url", base, "--model", model, "--requests", str(requests),
                          "--concurrency", str(concurrency)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"load against {base} failed: {out.stdout} {out.stderr}")
    return json.loads(out.stdout)


def svg(path, res, concurrencies):
    """Grouped bars of p99 added per proxy, on a log scale (LiteLLM's overhead is
    two orders of magnitude above the others)."""
    import math
    w, h, pad = 640, 360, 56
    names = [n for n in res if n != "direct"]
    added = {n: [max(res[n][c]["p99_ms"] - res["direct"][c]["p99_ms"], 0.001) for c in concurrencies] for n in names}
    lo = 10 ** math.floor(math.log10(min(min(v) for v in added.values())))
    hi = 10 ** math.ceil(math.log10(max(max(v) for v in added.values())))
    colors = {"outpost": "#1f77b4", "litellm": "#d62728", "nginx": "#2ca02c"}
    group = (w - 2 * pad) / len(concurrencies)
    bar = group / (len(names) + 1)
    y = lambda v: h - pad - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (h - 2 * pad)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">p99 latency added vs calling central directly (ms, log scale)</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>']
    v = lo
    while v <= hi * 1.0001:
        parts.append(f'<text x="{pad - 6}" y="{y(v) + 4}" text-anchor="end">{v:g}</text>')
        parts.append(f'<line x1="{pad}" y1="{y(v)}" x2="{w - pad}" y2="{y(v)}" stroke="#ddd"/>')
        v *= 10
    if lo <= 1 <= hi:
        parts.append(f'<line x1="{pad}" y1="{y(1)}" x2="{w - pad}" y2="{y(1)}" stroke="#999" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{pad + 4}" y="{y(1) - 4}" fill="#666">1 ms target</text>')
    for gi, c in enumerate(concurrencies):
        x0 = pad + gi * group + bar / 2
        parts.append(f'<text x="{x0 + bar * len(names) / 2}" y="{h - pad + 18}" text-anchor="middle">{c} clients</text>')
        for k, n in enumerate(names):
            v = added[n][gi]
            parts.append(f'<rect x="{x0 + k * bar}" y="{y(v)}" width="{bar * 0.9}" height="{h - pad - y(v)}" '
                         f'fill="{colors.get(n, "gray")}"><title>{n}: {v:+.3f} ms</title></rect>')
            parts.append(f'<text x="{x0 + k * bar + bar * 0.45}" y="{y(v) - 4}" text-anchor="middle" font-size="10">{v:+.2f}</text>')
    for k, n in enumerate(names):
        parts.append(f'<text x="{pad + 10}" y="{pad + 16 * k}" fill="{colors.get(n, "gray")}">{n}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--load", default=os.path.join(ROOT, "build/router_load"), help="router_load binary")
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--requests", type=int, default=3000, help="per round and path (default 3000)")
    ap.add_argument("--litellm-requests", type=int, default=300, help="per round through LiteLLM (slower)")
    ap.add_argument("--concurrency", default="1,4,8", help="comma-separated client counts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="", help="write <out>.json and <out>.svg")
    ap.add_argument("--replot", default="", help="redraw <replot>.svg from <replot>.json and exit")
    ap.add_argument("--litellm", default=shutil.which("litellm") or os.path.join(ROOT, ".deps/bench-venv/bin/litellm"))
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot + ".json") as f:
            saved = json.load(f)
        res = {n: {int(c): v for c, v in r.items()} for n, r in saved["results"].items()}
        svg(args.replot + ".svg", res, saved["concurrency"])
        return
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    for b in (args.outpost, args.load):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} is missing: build first (make)")

    procs = []
    cport, oport = free_port(), free_port()
    procs.append(subprocess.Popen([args.load, "central", "--port", str(cport)]))
    wait_ready(f"http://127.0.0.1:{cport}/v1/models", procs[-1])
    routing = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    routing.write(f"upstreams:\n  - {{name: hq, kind: central, url: 'http://127.0.0.1:{cport}', models: [central-model]}}\n"
                  f"policy: {{aliases: {{large: hq}}}}\n")
    routing.close()
    procs.append(subprocess.Popen([args.outpost, "serve", "--model", args.model, "--port", str(oport), "--parallel", "1",
                                   "--ctx-size", "256", "--log-level", "warn", "--routing-file", routing.name],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_ready(f"http://127.0.0.1:{oport}/ready", procs[-1])
    paths = {"direct": (f"http://127.0.0.1:{cport}", "central-model", args.requests),
             "outpost": (f"http://127.0.0.1:{oport}", "large", args.requests)}
    if os.path.exists(args.nginx):
        nport = free_port()
        d = tempfile.mkdtemp(prefix="router-bench-nginx-")
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"""worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d};
  proxy_temp_path {d};
  upstream central {{ server 127.0.0.1:{cport}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{nport};
    location / {{ proxy_pass http://central; proxy_http_version 1.1; proxy_set_header Connection ""; }}
  }}
}}
""")
        procs.append(subprocess.Popen([args.nginx, "-c", os.path.join(d, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_ready(f"http://127.0.0.1:{nport}/v1/models", procs[-1])
        paths["nginx"] = (f"http://127.0.0.1:{nport}", "central-model", args.requests)
    else:
        log(f"nginx not found at {args.nginx}; measuring without it")
    if os.path.exists(args.litellm):
        lport = free_port()
        cfg = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        cfg.write("model_list:\n  - model_name: large\n    litellm_params:\n      model: openai/central-model\n"
                  f"      api_base: http://127.0.0.1:{cport}/v1\n      api_key: sk-x\n")
        cfg.close()
        procs.append(subprocess.Popen([args.litellm, "--config", cfg.name, "--port", str(lport), "--num_workers", "1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        log("starting LiteLLM (takes a while)")
        wait_ready(f"http://127.0.0.1:{lport}/health/liveliness", procs[-1], timeout=180)
        paths["litellm"] = (f"http://127.0.0.1:{lport}", "large", args.litellm_requests)
    else:
        log(f"LiteLLM not found at {args.litellm}; measuring without it")
    res = {name: {} for name in paths}
    try:
        for c in concurrencies:
            # Rounds interleave the paths so that drift on a noisy box hits all alike.
            rounds = {name: [] for name in paths}
            for i in range(args.rounds):
                for name, (base, model, n) in paths.items():
                    r = measure(args.load, base, model, n, c)
                    rounds[name].append(r)
                    log(f"{c} clients, {name} round {i + 1}/{args.rounds}: p50 {r['p50_ms']:.3f} ms, "
                        f"p99 {r['p99_ms']:.3f} ms")
            for name in paths:
                res[name][c] = {k: statistics.median(r[k] for r in rounds[name]) for k in ("p50_ms", "p99_ms")}
    finally:
        for p in procs:
            stop(p, timeout=20)
    print(f"{args.requests} requests per round ({args.litellm_requests} through LiteLLM) x {args.rounds} rounds, "
          f"loopback, instant central; medians of rounds.\n")
    print("| clients | path | p50 ms | p99 ms | added p50 ms | added p99 ms |\n|---|---|---|---|---|---|")
    for c in concurrencies:
        d = res["direct"][c]
        for name in paths:
            r = res[name][c]
            added = "—" if name == "direct" else f"{r['p50_ms'] - d['p50_ms']:+.3f}"
            added99 = "—" if name == "direct" else f"{r['p99_ms'] - d['p99_ms']:+.3f}"
            print(f"| {c} | {name} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {added} | {added99} |")
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump({"concurrency": concurrencies, "requests": args.requests, "rounds": args.rounds,
                       "results": {n: {str(c): v for c, v in r.items()} for n, r in res.items()}}, f, indent=1)
        svg(args.out + ".svg", res, concurrencies)
        log(f"wrote {args.out}.json and {args.out}.svg")


if __name__ == "__main__":
    main()
