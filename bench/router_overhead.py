#!/usr/bin/env python3
"""Router overhead: latency Outpost adds when it relays a request to central,
compared with calling central directly, under concurrent load; LiteLLM's proxy
measured the same way as a peer when it is installed (bench/run_router.sh
installs it into .deps/bench-venv).

"Central" here answers instantly with a canned chat completion, so the numbers
isolate the proxy path (HTTP parse, policy, upstream call, relay) from model
time. Prints a markdown table; medians of --rounds rounds.
"""
import argparse
import concurrent.futures as cf
import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANSWER = json.dumps({
    "id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "central-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}).encode()


class Central(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def reply(self, body):
        # Head and body in one write: separate writes would meet Nagle's
        # algorithm and delayed ACKs (a 40 ms stall) and drown the signal.
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.wfile.write(head + body)

    def do_GET(self):
        self.reply(b'{"status":"ok","object":"list","data":[{"id":"central-model","object":"model"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(ANSWER)


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 refuses connections under load


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(url, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not up")


def measure(base, n, concurrency, model):
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=concurrency * 2))
    lat = []

    def one(_):
        t0 = time.perf_counter()
        r = client.post(base + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer sk-x"})
        r.raise_for_status()
        return time.perf_counter() - t0

    for _ in range(20):
        one(0)
    with cf.ThreadPoolExecutor(concurrency) as ex:
        lat = list(ex.map(one, range(n)))
    client.close()
    lat.sort()
    return {"p50_ms": lat[len(lat) // 2] * 1000, "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outpost", default=os.path.join(ROOT, "build/outpost"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".deps/models/default.gguf"))
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--litellm", default=shutil.which("litellm") or os.path.join(ROOT, ".deps/bench-venv/bin/litellm"))
    args = ap.parse_args()

    central = ThreadingServer(("127.0.0.1", 0), Central)
    threading.Thread(target=central.serve_forever, daemon=True).start()
    cport = central.server_address[1]
    routing = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    routing.write(f"upstreams:\n  - {{name: hq, kind: central, url: 'http://127.0.0.1:{cport}', models: [central-model]}}\n"
                  f"policy: {{aliases: {{large: hq}}}}\n")
    routing.close()
    oport = free_port()
    procs = [subprocess.Popen([args.outpost, "serve", "--model", args.model, "--port", str(oport), "--parallel", "1",
                               "--ctx-size", "256", "--log-level", "warn", "--routing-file", routing.name],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    wait(f"http://127.0.0.1:{oport}/ready")
    paths = {"direct": (f"http://127.0.0.1:{cport}", "central-model"),
             "outpost": (f"http://127.0.0.1:{oport}", "large")}
    if os.path.exists(args.litellm):
        lport = free_port()
        cfg = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        cfg.write("model_list:\n  - model_name: large\n    litellm_params:\n      model: openai/central-model\n"
                  f"      api_base: http://127.0.0.1:{cport}/v1\n      api_key: sk-x\n")
        cfg.close()
        procs.append(subprocess.Popen([args.litellm, "--config", cfg.name, "--port", str(lport), "--num_workers", "1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait(f"http://127.0.0.1:{lport}/health/liveliness", timeout=180)
        paths["litellm"] = (f"http://127.0.0.1:{lport}", "large")
    else:
        print(f"[router-bench] LiteLLM not found at {args.litellm}; measuring without it", file=sys.stderr)
    try:
        res = {}
        for name, (base, model) in paths.items():
            rounds = []
            for i in range(args.rounds):
                rounds.append(measure(base, args.requests, args.concurrency, model))
                print(f"[router-bench] {name} round {i + 1}: p50 {rounds[-1]['p50_ms']:.2f} ms, "
                      f"p99 {rounds[-1]['p99_ms']:.2f} ms", file=sys.stderr)
            res[name] = {k: statistics.median(r[k] for r in rounds) for k in ("p50_ms", "p99_ms")}
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        central.shutdown()
    d = res["direct"]
    print(f"{args.requests} requests x {args.rounds} rounds, {args.concurrency} concurrent, loopback, "
          f"instant central; medians of rounds.\n")
    print("| path | p50 ms | p99 ms | added p50 ms | added p99 ms |\n|---|---|---|---|---|")
    for name, r in res.items():
        print(f"| {name} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['p50_ms'] - d['p50_ms']:+.2f} | "
              f"{r['p99_ms'] - d['p99_ms']:+.2f} |")


if __name__ == "__main__":
    main()
