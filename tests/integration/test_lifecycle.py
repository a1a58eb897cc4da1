"""The model lifecycle as an operator drives it: two real versions of the
default model in the store (the bootstrap's Q4_1 and a Q8_0 copy made by the
pinned llama.cpp's llama-quantize), `outpost serve --model NAME` serving the
active one, a swap to the other under continuous streaming load from the
official `openai` client (zero failed requests, no stream changing version
half-way, the longest stall measured), a rollback from hot standby, a damaged
copy refused at warm-up while the active version keeps serving, a kill -9 and a
restart serving what the store says is active, and a table of bad admin input."""
import json
import re
import os
import signal
import subprocess
import threading
import time

import httpx
import openai
import pytest

from outpost_harness import BIN, MODEL, free_port, serve
from test_dashboard import _dom

KEY = "lifecycle-admin-key-0123456789"


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quantize_tool():
    here = os.path.join(ROOT, ".deps", "llama.cpp-build", "bin", "llama-quantize")
    assert os.path.exists(here), "scripts/bootstrap builds llama-quantize"
    return here


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("lifecycle")
    q8 = d / "smollm2-q8_0.gguf"
    subprocess.run([quantize_tool(), "--allow-requantize", MODEL, str(q8), "Q8_0"], check=True,
                   capture_output=True, timeout=300)
    damaged = d / "damaged.gguf"
    data = bytearray(open(os.path.realpath(MODEL), "rb").read())
    data[len(data) // 4:] = bytes(len(data) - len(data) // 4)  # weights zeroed: the header is intact
    damaged.write_bytes(bytes(data))
    s = d / "models"
    for f, ref in ((MODEL, "smollm2:1"), (str(q8), "smollm2:2"), (str(damaged), "smollm2:bad")):
        p = subprocess.run([BIN, "model", "--store", str(s), "import", f, ref], capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "model", "--store", str(s), "activate", "smollm2:1"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "smollm2:1 is active" in p.stdout, p.stderr
    return s


def admin(server, method, path, body=None, key=KEY, timeout=300):
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return httpx.request(method, server.base + path, json=body, headers=headers, timeout=timeout)


def fingerprint(server):
    r = httpx.post(server.base + "/v1/chat/completions", timeout=120,
                   json={"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}],
                         "max_tokens": 2})
    assert r.status_code == 200, r.text
    return r.json()["system_fingerprint"]


def stream_load(base, stop, results, clients=3):
    """Streaming chats until `stop` is set; each result: (ok, fingerprints, gaps, error)."""
    def worker(i):
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        n = 0
        while not stop.is_set():
            n += 1
            fps, gaps, finish = set(), [], None
            last = time.monotonic()
            try:
                stream = client.chat.completions.create(
                    model="smollm2", stream=True, max_tokens=24, temperature=0,
                    messages=[{"role": "user", "content": f"Name {2 + (i + n) % 4} fruits."}])
                for chunk in stream:
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
                    if chunk.system_fingerprint:
                        fps.add(chunk.system_fingerprint)
                    if chunk.choices and chunk.choices[0].finish_reason:
                        finish = chunk.choices[0].finish_reason
                results.append((finish in ("stop", "length"), fps, gaps, None if finish else "no finish"))
            except Exception as e:  # noqa: BLE001 - every failure counts
                results.append((False, fps, gaps, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    return threads


def load_running(results, timeout=60):
    """Waits until the load has answered (3 s at least; longer under a
    sanitizer on a busy box); returns how many streams had finished."""
    time.sleep(3)
    deadline = time.monotonic() + timeout
    while not results and time.monotonic() < deadline:
        time.sleep(0.2)
    return len(results)


def test_swap_under_load_rollback_and_refusals(store):
    with serve("--model-store", str(store), "--parallel", "4", models=["smollm2"],
               env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        models = httpx.get(s.base + "/v1/models").json()["data"]
        assert [m["id"] for m in models] == ["smollm2"]
        fp1 = fingerprint(s)
        loaded = admin(s, "GET", "/admin/models").json()["loaded"]
        assert [(l["version"], l["role"]) for l in loaded] == [("1", "active")]

        # The swap, under load: nothing fails, no stream changes version.
        stop, results = threading.Event(), []
        threads = stream_load(s.base, stop, results)
        before = load_running(results)
        t0 = time.monotonic()
        r = admin(s, "POST", "/admin/models/activate", {"model": "smollm2:2"})
        activate_s = time.monotonic() - t0
        assert r.status_code == 200, r.text
        swap = r.json()
        assert swap["from"] == "1" and swap["to"] == "2" and not swap["from_standby"]
        assert swap["warmup"].strip(), swap  # the candidate answered before it got traffic
        time.sleep(4)
        stop.set()
        for t in threads:
            t.join()
        failures = [x for x in results if not x[0]]
        assert not failures, failures[:3]
        assert before >= 1 and len(results) > before, (before, len(results))
        assert all(len(fps) == 1 for _, fps, _, _ in results), [fps for _, fps, _, _ in results]
        seen = set().union(*(fps for _, fps, _, _ in results))
        fp2 = fingerprint(s)
        assert fp2 != fp1 and seen == {fp1, fp2}, (fp1, fp2, seen)
        stall = max(g for _, _, gaps, _ in results for g in gaps)
        print(f"swap under load: {len(results)} streams, 0 failed; activate took {activate_s:.2f} s "
              f"(load+warm-up {swap['load_s']:.2f} s, switch {swap['switch_ms']:.2f} ms); "
              f"longest gap between chunks {stall * 1000:.0f} ms")

        # The new version answers sensibly.
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"model": "smollm2", "prompt": "The capital of France is", "temperature": 0,
                             "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
        loaded = {(l["version"], l["role"]) for l in admin(s, "GET", "/admin/models").json()["loaded"]}
        assert loaded == {("2", "active"), ("1", "standby")}, loaded
        metrics = httpx.get(s.base + "/metrics").text
        assert 'outpost_model_version_info{model="smollm2",version="2",role="active"} 1' in metrics
        assert 'outpost_model_swaps_total{model="smollm2",action="activate",result="ok"} 1' in metrics

        # A damaged copy: refused at warm-up, the active version untouched.
        r = admin(s, "POST", "/admin/models/activate", {"model": "smollm2:bad"})
        assert r.status_code == 400 and "warm-up" in r.json()["error"]["message"], r.text
        assert fingerprint(s) == fp2

        # Rollback from hot standby: well under a second.
        t0 = time.monotonic()
        r = admin(s, "POST", "/admin/models/rollback", {"model": "smollm2", "reason": "test"})
        rollback_s = time.monotonic() - t0
        assert r.status_code == 200, r.text
        assert r.json()["from_standby"] and r.json()["to"] == "1"
        assert rollback_s < 1.0, rollback_s
        print(f"rollback from hot standby: {rollback_s * 1000:.1f} ms over HTTP "
              f"(switch {r.json()['switch_ms']:.2f} ms)")
        assert fingerprint(s) == fp1
        versions = {v["ref"]: v for v in admin(s, "GET", "/admin/models").json()["versions"]}
        assert versions["smollm2:1"]["state"] == "active"
        assert versions["smollm2:2"]["state"] == "retired" and "test" in versions["smollm2:2"]["error"]
        r = admin(s, "POST", "/admin/models/rollback", {"model": "smollm2"})
        assert r.status_code == 404 and "nothing to roll" in r.json()["error"]["message"], r.text

        # The CLI against the running server; the store itself is held by it.
        env = {**os.environ, "OUTPOST_ADMIN_KEY": KEY}
        p = subprocess.run([BIN, "model", "--server", s.base, "activate", "smollm2:2"], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "smollm2 now serves version 2 (was 1)" in p.stdout, p.stderr
        p = subprocess.run([BIN, "model", "--store", str(store), "list"], capture_output=True, text=True)
        assert p.returncode == 1 and "--server" in p.stderr, p.stderr
        assert "lifecycle-admin-key" not in s.log()  # the key is never logged


BAD_ADMIN = [
    # (method, path, body, key, status, words in the message, param)
    ("GET", "/admin/models", None, None, 401, "needs 'Authorization: Bearer", None),
    ("GET", "/admin/models", None, "wrong-key-wrong-key", 401, "not valid", None),
    ("GET", "/admin/models", None, "api-key-for-v1-only", 401, "not valid", None),
    ("POST", "/admin/models/activate", "not json", KEY, 400, "the body is not valid JSON", None),
    ("POST", "/admin/models/activate", "[1]", KEY, 400, "the body must be a JSON object", None),
    ("POST", "/admin/models/activate", {}, KEY, 400, "'model' is required", "model"),
    ("POST", "/admin/models/activate", {"model": 5}, KEY, 400, "must be a string", "model"),
    ("POST", "/admin/models/activate", {"model": "smollm2:2", "force": "yes"}, KEY, 400,
     "'force' must be true or false", "force"),
    ("POST", "/admin/models/activate", {"model": "smollm2"}, KEY, 400, "NAME:VERSION", "model"),
    ("POST", "/admin/models/activate", {"model": "Bad Name:1"}, KEY, 400, "lowercase", "model"),
    ("POST", "/admin/models/activate", {"model": "smollm2:9"}, KEY, 404, "smollm2:9", None),
    ("POST", "/admin/models/activate", {"model": "smollm2:1"}, KEY, 400, "already the served", "model"),
    ("POST", "/admin/models/rollback", {"model": "smollm2:1"}, KEY, 400, "not a version", "model"),
    ("GET", "/admin/models/activate", None, KEY, 400, "use POST", "method"),
    ("DELETE", "/admin/models/smollm2:1", None, KEY, 400, "is loaded", "model"),
    ("PUT", "/admin/models/smollm2:1", None, KEY, 400, "not allowed", "method"),
    ("GET", "/admin/nothing", None, KEY, 404, "no admin route", None),
]


def test_admin_bad_input_table_and_restart(store):
    port = free_port()
    env = {"OUTPOST_ADMIN_KEY": KEY, "OUTPOST_API_KEY": "api-key-for-v1-only"}
    with serve("--model-store", str(store), models=["smollm2:1"], port=port, env=env) as s:
        for method, path, body, key, status, words, param in BAD_ADMIN:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            if isinstance(body, str):
                r = httpx.request(method, s.base + path, content=body, headers=headers, timeout=60)
            else:
                r = httpx.request(method, s.base + path, json=body, headers=headers, timeout=60)
            assert r.status_code == status, (method, path, body, r.status_code, r.text)
            err = r.json()["error"]
            assert words in err["message"], (path, body, err)
            assert err.get("param") == param, (path, body, err)
        # Still serving, and the API key still works for /v1 (and only there).
        r = httpx.post(s.base + "/v1/chat/completions", headers={"Authorization": "Bearer api-key-for-v1-only"},
                       json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}, timeout=60)
        assert r.status_code == 200, r.text
        # Activate, then kill -9 right after: the store names the version that serves.
        assert admin(s, "POST", "/admin/models/activate", {"model": "smollm2:2"}).status_code == 200
        fp2 = httpx.post(s.base + "/v1/chat/completions", headers={"Authorization": "Bearer api-key-for-v1-only"},
                         json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2},
                         timeout=60).json()["system_fingerprint"]
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
    audit = store.parent / "audit-restart"
    with serve("--model-store", str(store), "--audit-dir", str(audit), models=["smollm2"], env=env) as s:
        r = httpx.post(s.base + "/v1/chat/completions", headers={"Authorization": "Bearer api-key-for-v1-only"},
                       json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}, timeout=60)
        assert r.json()["system_fingerprint"] == fp2
        admin(s, "GET", "/admin/models/smollm2:2")
        loaded = admin(s, "GET", "/admin/models").json()["loaded"]
        assert [(l["version"], l["role"]) for l in loaded] == [("2", "active")]
    records = [json.loads(line) for f in sorted(os.listdir(audit)) if f.endswith(".jsonl")
               for line in open(audit / f)]
    requests = [r for r in records if r.get("type") == "request"]
    assert requests and requests[-1]["model"] == "smollm2" and requests[-1]["version"] == "2", requests
    # Without an admin key, /admin/ is off (403), whatever is presented.
    with serve("--model-store", str(store), models=["smollm2"]) as s:
        r = admin(s, "GET", "/admin/models")
        assert r.status_code == 403 and "admin API is off" in r.json()["error"]["message"], r.text


def test_serve_refuses_a_store_reference_it_cannot_serve(tmp_path):
    for ref, words in (("nosuch", "no active version of 'nosuch'"), ("nosuch:1", "nosuch:1")):
        p = subprocess.run([BIN, "serve", "--model", ref, "--model-store", str(tmp_path / "m"),
                            "--port", str(free_port())], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and words in p.stderr + p.stdout, p.stderr + p.stdout


def test_canary_is_sticky_then_promoted_and_a_rollback_ends_one(store):
    with serve("--model-store", str(store), "--parallel", "4", models=["smollm2:1"],
               env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        fp1 = fingerprint(s)
        env = {**os.environ, "OUTPOST_ADMIN_KEY": KEY}
        p = subprocess.run([BIN, "model", "--server", s.base, "canary", "smollm2:2", "--steps", "50",
                            "--bake", "30s", "--min-requests", "8", "--max-ttft-ratio", "100", "--json"], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        c = json.loads(p.stdout)
        assert (c["version"], c["baseline"], c["percent"]) == ("2", "1", 50), c
        # A 30 s step: the requests below all run inside it (a promotion
        # moves every conversation to the canary, so stickiness is checked
        # before). The TTFT margin is wide: this checks the flow, not the
        # two models' speeds.
        r = admin(s, "GET", "/admin/models").json()
        assert r["canaries"][0]["version"] == "2"
        ready = httpx.get(s.base + "/ready").json()["models"][0]  # visible without the admin key
        assert ready["version"] == "1" and ready["canary"]["version"] == "2", ready
        assert ready["canary"]["percent"] == 50 and ready["canary"]["baseline"] == "1", ready
        assert {(l["version"], l["role"]) for l in r["loaded"]} == {("1", "active"), ("2", "canary")}
        # The live page shows the version and the canary's progress (Chromium).
        table = re.search(r'id="model-table"[^>]*>(.*?)</table>', _dom(s.base + "/"), re.S)
        models_cell = re.sub(r"<[^>]+>", " ", table.group(1)) if table else ""
        assert "smollm2 v1" in models_cell and "canary v2 at 50%" in models_cell, models_cell
        seen = {}
        for round_ in range(2):
            for u in range(12):
                r = httpx.post(s.base + "/v1/chat/completions", timeout=120,
                               json={"model": "smollm2", "user": f"user-{u}", "max_tokens": 2,
                                     "messages": [{"role": "user", "content": "Hi"}]})
                assert r.status_code == 200, r.text
                seen.setdefault(u, set()).add(r.json()["system_fingerprint"])
        assert all(len(fps) == 1 for fps in seen.values()), seen  # one user, one version
        versions = {next(iter(fps)) for fps in seen.values()}
        assert len(versions) == 2 and fp1 in versions, versions  # both got a share
        fp2 = (versions - {fp1}).pop()
        # A session id wins over the user field: same session, same version.
        by_session = {httpx.post(s.base + "/v1/chat/completions", timeout=120,
                                 headers={"X-Session-Id": "session-42"},
                                 json={"model": "smollm2", "user": f"user-{u}", "max_tokens": 2,
                                       "messages": [{"role": "user", "content": "Hi"}]}).json()["system_fingerprint"]
                      for u in range(6)}
        assert len(by_session) == 1, by_session
        # Each version has its own request series (a version label), and they
        # add up to what was asked.
        per_version = {}
        for line in httpx.get(s.base + "/metrics").text.splitlines():
            m = re.match(r'outpost_requests_finished_total\{model="smollm2",version="(\d+)",'
                         r'finish_reason="\w+"\} (\S+)$', line)
            if m:
                per_version[m.group(1)] = per_version.get(m.group(1), 0) + float(m.group(2))
        assert set(per_version) == {"1", "2"} and min(per_version.values()) > 0, per_version
        assert sum(per_version.values()) >= 30, per_version
        assert admin(s, "GET", "/admin/models").json()["canaries"], "promoted before the step ended"
        deadline = time.time() + 90
        while time.time() < deadline and admin(s, "GET", "/admin/models").json()["canaries"]:
            time.sleep(0.5)
        r = admin(s, "GET", "/admin/models").json()
        assert r["canaries"] == [], r["canaries"]
        assert {(l["version"], l["role"]) for l in r["loaded"]} == {("2", "active"), ("1", "standby")}, r
        assert fingerprint(s) == fp2
        metrics = httpx.get(s.base + "/metrics").text
        assert 'outpost_canary_decisions_total{model="smollm2",decision="promote"} 1' in metrics, metrics

        # Another canary (the old version, from standby), ended by a rollback:
        # no request fails, the active version serves everything again.
        r = admin(s, "POST", "/admin/models/canary", {"model": "smollm2:1", "steps": [50], "bake": "10m"})
        assert r.status_code == 200, r.text
        r = admin(s, "POST", "/admin/models/activate", {"model": "smollm2:1"})
        assert r.status_code == 400 and "canary" in r.json()["error"]["message"], r.text
        r = admin(s, "POST", "/admin/models/rollback", {"model": "smollm2", "reason": "seen enough"})
        assert r.status_code == 200 and (r.json()["from"], r.json()["to"]) == ("1", "2"), r.text
        for u in range(6):
            r = httpx.post(s.base + "/v1/chat/completions", timeout=120,
                           json={"model": "smollm2", "user": f"user-{u}", "max_tokens": 2,
                                 "messages": [{"role": "user", "content": "Hi"}]})
            assert r.status_code == 200 and r.json()["system_fingerprint"] == fp2, r.text
        versions = {v["ref"]: v for v in admin(s, "GET", "/admin/models").json()["versions"]}
        assert versions["smollm2:1"]["state"] == "retired"
        assert "canary aborted: seen enough" in versions["smollm2:1"]["error"]
        # The rolled-back version unloads: its gauges go to 0 (sums over
        # versions stay true), the active one's stay.
        def gauge(name, version):
            for line in httpx.get(s.base + "/metrics").text.splitlines():
                if line.startswith(f'{name}{{model="smollm2",version="{version}"}} '):
                    return float(line.rsplit(" ", 1)[1])
        deadline = time.time() + 60
        while time.time() < deadline and gauge("outpost_model_loaded", "1") != 0:
            time.sleep(0.5)
        assert gauge("outpost_model_loaded", "1") == 0 and gauge("outpost_max_sessions", "1") == 0
        assert gauge("outpost_model_loaded", "2") == 1 and gauge("outpost_max_sessions", "2") == 4
        # Bad canary input names the field.
        for body, param in (({"model": "smollm2:1", "steps": [0]}, "steps"),
                            ({"model": "smollm2:1", "steps": "5"}, "steps"),
                            ({"model": "smollm2:1", "bake": "soon"}, "bake"),
                            ({"model": "smollm2:1", "min_requests": 0}, "min_requests"),
                            ({"model": "smollm2:1", "max_ttft_ratio": 0.5}, "max_ttft_ratio"),
                            ({"model": "smollm2:1", "shadow": 101}, "shadow"),
                            ({"model": "smollm2:1", "min_decode_ratio": 2}, "min_decode_ratio"),
                            ({"model": "smollm2:1", "shadow": "10%"}, "shadow"),
                            ({"model": "smollm2:1", "steps": []}, "steps"),
                            ({"model": "smollm2:2"}, "model")):
            r = admin(s, "POST", "/admin/models/canary", body)
            assert r.status_code == 400 and r.json()["error"]["param"] == param, (body, r.text)
        r = admin(s, "POST", "/admin/models/promote", {"model": "smollm2"})
        assert r.status_code == 404 and "no canary" in r.json()["error"]["message"], r.text


def test_a_cold_swap_when_two_versions_do_not_fit_holds_requests_and_cuts_none(store):
    """A memory budget that holds one version but not two: the swap holds new
    requests while those in flight finish, unloads the old version, loads the
    new one and lets the held requests through — zero failures under
    streaming load from the openai client, and the stall measured."""
    with serve("--model-store", str(store), "--memory-budget", "500MiB", "--ctx-size", "1024", "--parallel", "2",
               models=["smollm2"], env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        active = [l["version"] for l in admin(s, "GET", "/admin/models").json()["loaded"] if l["role"] == "active"][0]
        other = "1" if active == "2" else "2"
        fp_before = fingerprint(s)
        stop, results = threading.Event(), []
        threads = stream_load(s.base, stop, results, clients=2)
        before = load_running(results)
        r = admin(s, "POST", "/admin/models/activate", {"model": f"smollm2:{other}", "force": True})
        assert r.status_code == 200, r.text
        swap = r.json()
        assert swap["cold"] and swap["to"] == other and swap["held_ms"] > 0, swap
        time.sleep(3)
        stop.set()
        for t in threads:
            t.join()
        failures = [x for x in results if not x[0]]
        assert not failures, failures[:3]
        assert len(results) > before >= 1, (before, len(results))
        assert all(len(fps) == 1 for _, fps, _, _ in results)  # no stream changed version
        fp_after = fingerprint(s)
        assert fp_after != fp_before
        seen = set().union(*(fps for _, fps, _, _ in results))
        assert seen == {fp_before, fp_after}, seen
        stall = max(g for _, _, gaps, _ in results for g in gaps)
        loaded = [(l["version"], l["role"]) for l in admin(s, "GET", "/admin/models").json()["loaded"]]
        assert loaded == [(other, "active")], loaded  # no room for a standby
        print(f"cold swap under load: {len(results)} streams, 0 failed; new requests held "
              f"{swap['held_ms']:.0f} ms; longest gap between chunks {stall * 1000:.0f} ms")
        assert "cold swap" in s.log()
