#!/usr/bin/env python3
"""Cost of grammar-constrained decoding (response_format json_schema) against
unconstrained decoding, on Outpost and on llama-server built from the same
llama.cpp, in the same run, same model, same threads, one session each.

For every prompt, each server answers twice: plain, and constrained by a JSON
schema. The measure is decode speed (completion tokens per second of the
stream after the first token), so answers of different lengths compare fairly.
Medians over prompts x rounds; ratios constrained/plain and Outpost/llama-server.

--schema defect: enums, an integer range, bounded strings (what both servers
enforce alike). --schema order: numbers with multipleOf (a price in cents,
boxes by the half dozen, a discount in steps of 5, a weight in quarter kilos),
which Outpost keeps with its own grammar rules and llama-server drops (its
grammar there is the looser one, so the comparison shows what keeping them
costs).

    bench/grammar_cost.py [--model .deps/models/default.gguf] [--rounds 3]
                          [--schema defect|order] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import httpx

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = {
    "type": "object",
    "properties": {
        "part": {"type": "string", "maxLength": 60},
        "defect": {"type": "string", "enum": ["scratch", "dent", "crack", "stain", "missing"]},
        "severity": {"type": "string", "enum": ["low", "medium", "high"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 99},
        "note": {"type": "string", "maxLength": 120},
    },
    "required": ["part", "defect", "severity", "count", "note"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "item": {"type": "string", "maxLength": 60},
        "unit_price": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 9999.99},
        "boxes": {"type": "integer", "multipleOf": 6, "exclusiveMinimum": 0},
        "discount_percent": {"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 50},
        "weight_kg": {"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 500},
    },
    "required": ["item", "unit_price", "boxes", "discount_percent", "weight_kg"],
    "additionalProperties": False,
}
ORDER_PROMPTS = [
    "Write this order as JSON: 12 boxes of M4 bolts at 3.45 dollars each, 5 percent off, 2 kg.",
    "Write this order as JSON: 30 boxes of wood screws at 7.10 dollars, no discount, 9.5 kg.",
    "Write this order as JSON: 6 boxes of hinges at 12.99 dollars, 10 percent off, 4.25 kg.",
    "Write this order as JSON: 48 boxes of washers at 1.05 dollars, 20 percent off, 3 kg.",
    "Write this order as JSON: 18 boxes of wall plugs at 2.50 dollars, 15 percent off, 1.75 kg.",
    "Write this order as JSON: 24 boxes of nails at 4.80 dollars, 5 percent off, 12 kg.",
]
PROMPTS = [
    "Report this defect as JSON: two deep scratches on the left door panel.",
    "Report this defect as JSON: a small dent in the roof near the antenna.",
    "Report this defect as JSON: a crack across the windscreen, about 20 cm.",
    "Report this defect as JSON: the rear badge is missing.",
    "Report this defect as JSON: an oil stain on the driver's seat.",
    "Report this defect as JSON: three chips in the paint of the bonnet.",
]


def one(base, prompt, constrained, seed, schema=SCHEMA):
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 96, "stream": True,
            "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": seed}
    if constrained:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "answer", "strict": True, "schema": schema}}
    t0 = time.perf_counter()
    first = None
    pieces = 0
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=300) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if ev.get("choices") and ev["choices"][0]["delta"].get("content"):
                pieces += 1
                if first is None:
                    first = time.perf_counter()
    end = time.perf_counter()
    if first is None or pieces < 4:
        return None
    # Each content chunk is one token on both servers (UTF-8 holdback aside).
    return (pieces - 1) / (end - first), first - t0


def run_server(name, cmd, base, rounds, schema=SCHEMA, prompts=PROMPTS):
    log = open(f"/tmp/grammar-cost-{name}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    out = {"plain": [], "constrained": [], "ttft_plain": [], "ttft_constrained": []}
    try:
        wait_ready(base + ("/ready" if name == "outpost" else "/health"), proc)  # outpost: /health answers before the model loads
        one(base, prompts[0], False, 0)  # warm-up
        one(base, prompts[0], True, 0, schema)
        for r in range(rounds):
            for i, p in enumerate(prompts):
                for constrained in (False, True):
                    m = one(base, p, constrained, 100 * r + i, schema)
                    if m is None:
                        continue
                    key = "constrained" if constrained else "plain"
                    out[key].append(m[0])
                    out["ttft_" + key].append(m[1])
                print(f"[grammar-cost] {name}: round {r + 1}/{rounds} done", file=sys.stderr)
    finally:
        stop(proc)
    return {k: statistics.median(v) for k, v in out.items() if v}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin/llama-server"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schema", choices=["defect", "order"], default="defect")
    ap.add_argument("--json")
    a = ap.parse_args()
    schema, prompts = (ORDER, ORDER_PROMPTS) if a.schema == "order" else (SCHEMA, PROMPTS)
    po, pl = free_port(), free_port()
    res = {
        "outpost": run_server("outpost", [a.outpost, "serve", "--model", a.model, "--port", str(po),
                                          "--threads", str(a.threads), "--parallel", "1", "--ctx-size", "1024"],
                              f"http://127.0.0.1:{po}", a.rounds, schema, prompts),
        "llama-server": run_server("llama-server", [a.llama_server, "-m", a.model, "--port", str(pl),
                                                    "-t", str(a.threads), "-np", "1", "-c", "1024"],
                                   f"http://127.0.0.1:{pl}", a.rounds, schema, prompts),
    }
    print(f"{'server':<14}{'plain tok/s':>13}{'schema tok/s':>14}{'schema/plain':>14}"
          f"{'TTFT plain':>12}{'TTFT schema':>13}")
    for name, r in res.items():
        r["ratio"] = r["constrained"] / r["plain"]
        print(f"{name:<14}{r['plain']:>13.1f}{r['constrained']:>14.1f}{r['ratio']:>14.2f}"
              f"{r['ttft_plain'] * 1000:>10.0f}ms{r['ttft_constrained'] * 1000:>11.0f}ms")
    o, l = res["outpost"], res["llama-server"]
    print(f"Outpost / llama-server: plain {o['plain'] / l['plain']:.2f}, "
          f"constrained {o['constrained'] / l['constrained']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
