#!/usr/bin/env python3
"""Code completion as an editor asks for it while someone types: POST /infill
(llama-server's endpoint, as llama.vscode and llama.vim call it) once per
keystroke, on Outpost and on llama-server built from the same llama.cpp, in
the same run, same model, same threads, one session each.

The "current file" is a 150-line Python module with two other files sent as
input_extra; the cursor sits in the middle of it, and a line is typed there
a character at a time: each request carries the lines before the cursor
(input_prefix), the typed part of the line (prompt) and the lines after
(input_suffix), as llama.vscode sends them. Between keystrokes only the typed
part grows, so a server that keeps the prompt's prefix computes a few tokens
per request; one that does not computes the whole prompt every time.

The model is the default model with three unused control tokens named as its
fill-in-the-middle markers (no code model is available offline): its middles
are not code, but the prompt's size, its layout (the same on both servers)
and the work per keystroke are those of a real code model of its size.

Reported per server, medians over every keystroke of every round: the
request's latency (sent → answer), the prompt tokens it computed
(timings.prompt_n) and read from cache (tokens_cached); and the first
keystroke of each round (a new cursor position: nothing cached) apart.

    bench/infill_typing.py [--rounds 3] [--keys 20] [--n-predict 16] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import httpx

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import gguf_edit  # noqa: E402

FILE = "".join(
    f"def step_{i}(state, x):\n    \"\"\"Advance the machine by one step ({i}).\"\"\"\n"
    f"    y = state.value * {i} + x\n    return state.update(y)\n\n\n"
    for i in range(25))  # 150 lines
EXTRA = [
    {"filename": "state.py", "text": "class State:\n    def __init__(self):\n        self.value = 0\n\n"
     "    def update(self, y):\n        self.value = y\n        return self\n"},
    {"filename": "config.py", "text": "STEPS = 25\nSCALE = 1.5\nNAME = \"machine\"\n"},
]
LINES = [  # typed at the cursor, one per round
    "    total = sum(step(state, x) for step in steps)",
    "    result = state.value * SCALE + offset",
    "    if state.value > limit: return state.reset()",
    "    log.info(\"step %d of %d\", index, STEPS)",
]


def keystroke(base, prefix, typed, suffix, n_predict):
    body = {"input_prefix": prefix, "prompt": typed, "input_suffix": suffix, "input_extra": EXTRA,
            "n_predict": n_predict, "temperature": 0, "cache_prompt": True}
    t0 = time.perf_counter()
    r = httpx.post(base + "/infill", json=body, timeout=300)
    elapsed = time.perf_counter() - t0
    r.raise_for_status()
    got = r.json()
    return {"ms": elapsed * 1000, "evaluated": got["tokens_evaluated"],
            "computed": got["timings"]["prompt_n"], "cached": got.get("tokens_cached", 0)}


def run_server(name, cmd, base, rounds, keys, n_predict):
    log = open(os.path.join(tempfile.gettempdir(), f"infill-typing-{name}.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    lines = FILE.splitlines(keepends=True)
    first, rest = [], []
    try:
        wait_ready(base + ("/ready" if name == "outpost" else "/health"), proc)
        keystroke(base, "x = ", "", "\n", 4)  # warm-up
        for r in range(rounds):
            cursor = 40 + 25 * r  # a new place in the file each round
            prefix, suffix = "".join(lines[:cursor]), "".join(lines[cursor:])
            text = LINES[r % len(LINES)]
            for k in range(1, keys + 1):
                m = keystroke(base, prefix, text[:k], suffix, n_predict)
                (first if k == 1 else rest).append(m)
            print(f"[infill-typing] {name}: round {r + 1}/{rounds} done", file=sys.stderr)
    finally:
        stop(proc)

    def med(rows, key):
        return statistics.median(m[key] for m in rows)
    return {"first_ms": med(first, "ms"), "first_computed": med(first, "computed"),
            "ms": med(rest, "ms"), "p90_ms": sorted(m["ms"] for m in rest)[int(0.9 * len(rest))],
            "computed": med(rest, "computed"), "cached": med(rest, "cached"),
            "evaluated": med(rest, "evaluated"), "keystrokes": len(first) + len(rest)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin/llama-server"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keys", type=int, default=20, help="keystrokes per round")
    ap.add_argument("--n-predict", type=int, default=16)
    ap.add_argument("--json")
    a = ap.parse_args()
    model = os.path.join(tempfile.mkdtemp(prefix="infill-typing-"), "fim.gguf")
    print(f"[infill-typing] writing {model} (the model with FIM markers)", file=sys.stderr)
    gguf_edit.copy_with_fim_markers(a.model, model)
    po, pl = free_port(), free_port()
    res = {
        "outpost": run_server("outpost", [a.outpost, "serve", "--model", model, "--port", str(po),
                                          "--threads", str(a.threads), "--parallel", "1",
                                          "--ctx-size", "4096"],
                              f"http://127.0.0.1:{po}", a.rounds, a.keys, a.n_predict),
        "llama-server": run_server("llama-server", [a.llama_server, "-m", model, "--port", str(pl),
                                                    "-t", str(a.threads), "-np", "1", "-c", "4096"],
                                   f"http://127.0.0.1:{pl}", a.rounds, a.keys, a.n_predict),
    }
    os.unlink(model)
    print(f"{'server':<14}{'prompt':>8}{'computed':>10}{'cached':>8}{'latency p50':>13}"
          f"{'p90':>8}{'first key':>11}{'(computed)':>12}")
    for name, r in res.items():
        print(f"{name:<14}{r['evaluated']:>8.0f}{r['computed']:>10.0f}{r['cached']:>8.0f}"
              f"{r['ms']:>11.0f}ms{r['p90_ms']:>6.0f}ms{r['first_ms']:>9.0f}ms{r['first_computed']:>12.0f}")
    o, l = res["outpost"], res["llama-server"]
    print(f"Outpost / llama-server latency: per keystroke {o['ms'] / l['ms']:.2f}, "
          f"first keystroke {o['first_ms'] / l['first_ms']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
