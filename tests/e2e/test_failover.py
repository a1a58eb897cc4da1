"""Failover with real processes: nodes A and B list each other as peers, with a
central behind both. The official openai client keeps a steady load on A, whose
single session overflows to B. B is SIGKILLed mid-load: in-flight streams
through B end with a clear error (no hang), A's health check notices, and new
requests see no failure."""
import concurrent.futures as cf
import signal
import threading
import time

import openai
from outpost_harness import free_port, serve, yaml_file


def routing(peer_port, central_port):
    return yaml_file(f"""
upstreams:
  - name: peer
    kind: peer
    url: http://127.0.0.1:{peer_port}
    health_check: {{path: /ready, timeout: 1s}}
  - name: hq
    kind: central
    url: http://127.0.0.1:{central_port}
    models: [central-model]
policy:
  latency_budget: 100ms
""")


def test_sigkill_peer_under_openai_load():
    pa, pb, pc = free_port(), free_port(), free_port()
    small = ("--parallel", "1", "--queue-length", "1", "--ctx-size", "512")
    with serve("--model-id", "central-model", "--parallel", "4", "--ctx-size", "512", port=pc), \
         serve(*small, "--routing-file", routing(pa, pc), port=pb) as b, \
         serve(*small, "--routing-file", routing(pb, pc), port=pa) as a:
        deadline = time.time() + 15
        while time.time() < deadline and not all(u["healthy"] for u in a.ready()["upstreams"]):
            time.sleep(0.05)
        assert all(u["healthy"] for u in a.ready()["upstreams"]), a.ready()
        client = openai.OpenAI(base_url=a.base + "/v1", api_key="x", max_retries=0, timeout=60)
        model = client.models.list().data[0].id
        stop = threading.Event()
        killed_at = []
        outcomes = []  # (started_at, ok, route or error)

        def worker(i):
            while not stop.is_set():
                started = time.time()
                try:
                    raw = client.chat.completions.with_raw_response.create(
                        model=model, stream=True, max_tokens=16, temperature=0,
                        messages=[{"role": "user", "content": f"Worker {i}: describe a harbour."}])
                    route = raw.headers.get("x-outpost-route")
                    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
                    outcomes.append((started, True, route or ""))
                    assert text
                except openai.APIError as e:
                    outcomes.append((started, False, str(e)))

        with cf.ThreadPoolExecutor(4) as ex:
            futs = [ex.submit(worker, i) for i in range(4)]
            # Kill B once it has answered through A at least once (on a loaded
            # 2-core box the first answers may all come from central or A).
            serving = time.time() + 60
            while time.time() < serving and not any(r.startswith("peer:") for _, _, r in outcomes):
                time.sleep(0.1)
            time.sleep(1)
            b.proc.send_signal(signal.SIGKILL)
            b.proc.wait()
            killed_at.append(time.time())
            t0 = time.time()
            while any(u["name"] == "peer" and u["healthy"] for u in a.ready()["upstreams"]):
                time.sleep(0.02)
            detected = time.time() - t0
            # Keep the load on until several requests started after detection have ended.
            settle = time.time() + 120
            while time.time() < settle and sum(1 for s, _, _ in outcomes if s > t0 + detected) < 4:
                time.sleep(0.2)
            stop.set()
            for f in futs:
                f.result(timeout=120)  # no worker hung

        kill = killed_at[0]
        print(f"peer loss noticed by A's health check after {detected:.2f}s")
        # B was really used before it died (answered, or was streaming when killed).
        assert any(s < kill and ("peer:" in r or "upstream peer" in r) for s, ok, r in outcomes), outcomes
        # Requests in flight on B end with a clear error naming it, never a hang.
        for s, ok, r in outcomes:
            if not ok:
                assert "upstream peer" in r, r
        after = [(ok, r) for s, ok, r in outcomes if s > kill + detected]
        assert len(after) >= 2, "too few requests after detection"
        assert all(ok for ok, _ in after), [r for ok, r in after if not ok]
        assert not any(r.startswith("peer:") for ok, r in after)
        failed = [r for s, ok, r in outcomes if not ok]
        print(f"{len(outcomes)} requests, {len(failed)} failed (in flight on B when it died): {failed[:2]}")
