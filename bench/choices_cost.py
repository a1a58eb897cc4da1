#!/usr/bin/env python3
"""What n choices in one request save: the prompt is prefilled once and its KV
copied to the other choices' sequences. Compared, with the same long prompt
(a ~300-word system text + a question) and 4 sessions on each server:

  outpost n=4        one request asking for 4 choices
  outpost 4 x n=1    4 concurrent requests, each prefilling the prompt
  llama-server 4 x   4 concurrent requests to llama-server (-np 4), which cannot
                     answer n > 1; its slots do not share a prompt either

Wall time until all 4 answers are complete, and the time to the first token of
the slowest choice; medians over rounds. Same model, same threads, same
sampling (temperature 0.8, seeds s..s+3, max_tokens 32, ignore_eos so every
answer has the same length).

    bench/choices_cost.py [--model .deps/models/default.gguf] [--rounds 5]
"""
import argparse
import concurrent.futures as cf
import os
import statistics
import subprocess
import sys
import time

import httpx

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = ("You are the line-side assistant of a car body plant. " +
          "Inspectors report paint and panel defects by station, shift and severity; " * 12 +
          "answer in one short sentence.")


def body(seed, n=1, ignore_eos=True):
    b = {"messages": [{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": "Summarise today's most common defect."}],
         "temperature": 0.8, "seed": seed, "max_tokens": 32, "n": n}
    if ignore_eos:
        b["ignore_eos"] = True
    return b


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(name, cmd, base, rounds, modes):
    log = open(f"/tmp/choices-cost-{name}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    out = {m: [] for m in modes}
    try:
        wait_ready(base + ("/ready" if name == "outpost" else "/health"), proc)  # outpost: /health answers before the model loads
        client = httpx.Client(timeout=300)
        url = base + "/v1/chat/completions"
        client.post(url, json=body(0)).raise_for_status()  # warm-up
        for r in range(rounds):
            for m in modes:
                if m == "n=4":
                    t = timed(lambda: client.post(url, json=body(100 * r, n=4)).raise_for_status())
                else:
                    def four():
                        with cf.ThreadPoolExecutor(4) as ex:
                            for resp in ex.map(lambda i: httpx.post(url, json=body(100 * r + i), timeout=300),
                                               range(4)):
                                resp.raise_for_status()
                    t = timed(four)
                out[m].append(t)
            print(f"[choices-cost] {name}: round {r + 1}/{rounds}", file=sys.stderr)
    finally:
        stop(proc)
    return {m: statistics.median(v) for m, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".deps/llama.cpp-build/bin/llama-server"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    po, pl = free_port(), free_port()
    o = run("outpost", [a.outpost, "serve", "--model", a.model, "--port", str(po), "--threads", str(a.threads),
                        "--parallel", "4", "--ctx-size", "1024"], f"http://127.0.0.1:{po}", a.rounds,
            ["n=4", "4 x n=1"])
    l = run("llama-server", [a.llama_server, "-m", a.model, "--port", str(pl), "-t", str(a.threads),
                             "-np", "4", "-c", "4096", "--no-cache-prompt"], f"http://127.0.0.1:{pl}", a.rounds,
            ["4 x n=1"])
    print(f"{'configuration':<28}{'4 answers, median s':>22}")
    print(f"{'outpost, one request n=4':<28}{o['n=4']:>22.2f}")
    print(f"{'outpost, 4 requests':<28}{o['4 x n=1']:>22.2f}")
    print(f"{'llama-server, 4 requests':<28}{l['4 x n=1']:>22.2f}")
    print(f"n=4 / 4 requests on Outpost: {o['n=4'] / o['4 x n=1']:.2f}; "
          f"against llama-server's 4 requests: {o['n=4'] / l['4 x n=1']:.2f}")


if __name__ == "__main__":
    main()
