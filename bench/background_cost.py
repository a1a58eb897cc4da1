#!/usr/bin/env python3
"""What a background response costs over the same request in the foreground
(docs/api.md, Background responses). One-token /v1/responses through the
official openai client against one outpost serve, 4 sessions:

  fg          a plain request, answered whole
  fg_stream   the same, streamed to its last event
  bg_stream   background=True, streamed to its last event (the queued record,
              its in_progress update, a thread per run)
  bg_create   background=True, the create's answer only (checked, stored queued)

Medians of `--n` requests per mode, per round. llama-server has no background
mode, so the peer is Outpost's own foreground path in the same run.

    bench/background_cost.py [--model .deps/models/default.gguf] [--rounds 3] [--n 40]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import openai

from benchlib import free_port, stop, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    port = free_port()
    state = tempfile.mkdtemp(prefix="outpost-bench-state-")
    cmd = [args.bin, "serve", "--model", args.model, "--port", str(port), "--parallel", "4",
           "--ctx-size", "1024", "--state-dir", state]
    log = open("/tmp/background-cost-outpost.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base + "/ready", proc)
        c = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
        m = c.models.list().data[0].id
        req = dict(model=m, input="Hi", max_output_tokens=1)

        def fg():
            c.responses.create(**req)

        def fg_stream():
            for _ in c.responses.create(**req, stream=True):
                pass

        def bg_stream():
            for _ in c.responses.create(**req, stream=True, background=True):
                pass

        def bg_create():
            c.responses.create(**req, background=True)

        modes = (fg, fg_stream, bg_stream, bg_create)
        for f in modes:
            f()  # warm-up
        for r in range(args.rounds):
            row = []
            for f in modes:
                xs = []
                for _ in range(args.n):
                    t0 = time.perf_counter()
                    f()
                    xs.append(time.perf_counter() - t0)
                row.append(f"{f.__name__} {statistics.median(xs) * 1000:.1f} ms")
                time.sleep(0.5)  # the background runs of bg_create end
            print(f"round {r + 1}/{args.rounds}: " + " | ".join(row), flush=True)
    finally:
        stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
