"""`outpost model validate` on real files: the default model as the active
version, a copy re-quantized to Q8_0 by the pinned llama.cpp's quantize tool
(close to it: passes), and a copy with 8 MiB of its weights overwritten by
noise (still a valid GGUF that loads: must fail). The report's figures come
from the models themselves (perplexity on the pinned text, KL divergence,
same-top-token rate, the answers to smoke prompts); a failing version is not
activated — offline or through a running server's /admin/ — without force."""
import json
import os
import random
import subprocess

import httpx
import pytest

from outpost_harness import BIN, MODEL, serve

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(store, *args, timeout=600):
    return subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("validate")
    q8, damaged = d / "q8.gguf", d / "damaged.gguf"
    subprocess.run([os.path.join(ROOT, ".deps", "llama.cpp-build", "bin", "llama-quantize"), "--allow-requantize",
                    MODEL, str(q8), "Q8_0"], check=True, capture_output=True, timeout=300)
    data = bytearray(open(os.path.realpath(MODEL), "rb").read())
    rng = random.Random(7)
    mid = len(data) // 2
    data[mid:mid + (8 << 20)] = bytes(rng.getrandbits(8) for _ in range(8 << 20))
    damaged.write_bytes(bytes(data))
    s = d / "store"
    for src, ref in ((MODEL, "smollm2:1"), (q8, "smollm2:2"), (damaged, "smollm2:3")):
        p = model(s, "import", str(src), ref)
        assert p.returncode == 0, p.stderr
    assert model(s, "activate", "smollm2:1").returncode == 0
    return s


def test_a_requantized_copy_passes_against_the_active_version(store):
    p = model(store, "validate", "smollm2:2", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert r["passed"] and r["against"] == "smollm2:1", r
    checks = {c["name"]: c for c in r["checks"]}
    assert "Paris" in checks["smoke"]["detail"], checks["smoke"]
    fig = checks["quality.perplexity"]["figures"]
    # Q8_0 from Q4_1 is nearly the same model: a small perplexity change, a
    # small KL, mostly the same top token; and the perplexity is a real one.
    assert 3 < fig["ppl_base"] < 200 and abs(fig["ppl_change_pct"]) < 5, fig
    assert fig["mean_kl"] < 0.1 and fig["same_top_pct"] > 85 and fig["tokens"] >= 256, fig
    # Decode speed measured side by side (reported, not checked by default).
    speed = checks["speed.against"]
    assert speed["passed"] and speed["figures"]["decode_tps_base"] > 1, speed
    assert speed["figures"]["decode_tps_candidate"] > 1 and "tokens/s" in speed["detail"], speed
    v = json.loads(model(store, "show", "smollm2:2").stdout)
    assert v["state"] == "validated" and v["validation"]["passed"], v


def test_a_damaged_copy_fails_and_is_not_activated_without_force(store):
    p = model(store, "validate", "smollm2:3")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL smoke" in p.stdout and "FAIL quality.same_top" in p.stdout, p.stdout
    assert "validation FAILED" in p.stdout
    v = json.loads(model(store, "show", "smollm2:3").stdout)
    assert v["state"] == "verified" and not v["validation"]["passed"], v
    same_top = [c for c in v["validation"]["checks"] if c["name"] == "quality.same_top"][0]
    assert not same_top["passed"], same_top
    p = model(store, "activate", "smollm2:3")
    assert p.returncode == 1 and "failed its validation" in p.stderr, p.stderr
    assert json.loads(model(store, "show", "smollm2:1").stdout)["state"] == "active"


def test_a_suite_from_a_file_and_its_bad_inputs(store, tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("smoke:\n"
                     "  - prompt: \"Complete the sentence: The capital of France is\"\n    expect: paris\n"
                     "  - prompt: \"Say hello.\"\n    regex: \"[A-Za-z]{2,}\"\n"
                     "quality:\n  chunks: 2\n  max_mean_kl: 0.05\n"
                     "speed:\n  min_decode_tps: 1000000\n")
    p = model(store, "validate", "smollm2:2", "--suite", str(suite), "--json")
    assert p.returncode == 1, p.stderr  # the decode floor no CPU reaches
    r = json.loads(p.stdout)
    checks = {c["name"]: c for c in r["checks"]}
    assert not checks["speed.decode"]["passed"] and checks["speed.decode"]["figures"]["decode_tps"] > 1, checks
    assert [c["passed"] for c in r["checks"] if c["name"] == "smoke"] == [True, True], r
    assert checks["quality.perplexity"]["figures"]["tokens"] == 2 * 128, checks  # two chunks of 256, half scored
    rows = [
        ("smok:\n  - prompt: x\n", "unknown key 'smok'"),
        ("smoke: hello\n", "'smoke' must be a list"),
        ("smoke:\n  - prompt: x\n", "needs 'expect' or 'regex'"),
        ("smoke:\n  - expect: x\n", "'smoke[0].prompt' is required"),
        ("smoke:\n  - prompt: x\n    regex: \"(\"\n", "not a valid regex"),
        ("smoke:\n  - prompt: x\n    expect: y\n    max_tokens: 0\n", "smoke[0].max_tokens"),
        ("quality:\n  max_mean_kl: lots\n", "'quality.max_mean_kl' must be a number"),
        ("quality:\n  chunks: 1000\n", "'quality.chunks' must be between"),
        ("speed:\n  max_ttft: 5\n", "unknown key 'speed.max_ttft'"),
        ("speed:\n  min_decode_ratio: fast\n", "'speed.min_decode_ratio' must be a number"),
        ("speed:\n  min_decode_ratio: 1000\n", "'speed.min_decode_ratio' must be between"),
        ("smoke: [\n", "line"),
    ]
    for text, says in rows:
        suite.write_text(text)
        p = model(store, "validate", "smollm2:2", "--suite", str(suite))
        assert p.returncode == 2 and says in p.stderr, (text, p.stderr)
    p = model(store, "validate", "smollm2:2", "--suite", str(tmp_path / "missing.yaml"))
    assert p.returncode == 2 and "does not exist" in p.stderr, p.stderr
    p = model(store, "validate", "smollm2:9")
    assert p.returncode != 0 and "smollm2:9" in p.stderr, p.stderr


def test_a_running_server_refuses_a_failed_version_unless_forced(store, tmp_path):
    suite = tmp_path / "fail.yaml"
    suite.write_text("smoke:\n  - prompt: \"Say hello.\"\n    expect: \"a phrase no model says unprompted\"\n")
    p = model(store, "validate", "smollm2:2", "--suite", str(suite))
    assert p.returncode == 1 and "FAIL smoke" in p.stdout, p.stdout
    key = "validate-admin-key-0123456789"
    with serve("--model-store", str(store), models=["smollm2"], env={"OUTPOST_ADMIN_KEY": key}) as s:
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(s.base + "/admin/models/activate", headers=auth, json={"model": "smollm2:2"}, timeout=300)
        assert r.status_code == 400 and "failed its validation" in r.json()["error"]["message"], r.text
        r = httpx.post(s.base + "/admin/models/canary", headers=auth, json={"model": "smollm2:2"}, timeout=300)
        assert r.status_code == 400 and "failed its validation" in r.json()["error"]["message"], r.text
        r = httpx.post(s.base + "/admin/models/activate", headers=auth,
                       json={"model": "smollm2:2", "force": "yes"}, timeout=300)
        assert r.status_code == 400 and r.json()["error"]["param"] == "force", r.text
        r = httpx.post(s.base + "/admin/models/activate", headers=auth,
                       json={"model": "smollm2:2", "force": True}, timeout=300)
        assert r.status_code == 200 and r.json()["to"] == "2", r.text
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text


def test_a_running_server_validates_within_its_memory_budget(store, tmp_path):
    """POST /admin/models/validate (and `outpost model validate --server`):
    the server runs the suite while it serves, its peak reserved in the live
    memory ledger; a box without room refuses, naming both figures; the
    verdict gates activation as the offline one does."""
    key = "validate-admin-key-0123456789"
    auth = {"Authorization": f"Bearer {key}"}
    with serve("--model-store", str(store), "--parallel", "1", models=["smollm2"],
               env={"OUTPOST_ADMIN_KEY": key}) as s:
        active = [v for v in httpx.get(s.base + "/admin/models", headers=auth).json()["versions"]
                  if v["state"] == "active"][0]["ref"]
        r = httpx.post(s.base + "/admin/models/validate", headers=auth, json={"model": "smollm2:3"},
                       timeout=600)
        assert r.status_code == 200, r.text
        rep = r.json()
        assert rep["passed"] is False and rep["against"] == active and rep["reserved_bytes"] > 150e6, rep
        # The damaged copy: its failed report gates activation.
        r = httpx.post(s.base + "/admin/models/activate", headers=auth, json={"model": "smollm2:3"}, timeout=300)
        assert r.status_code == 400 and "failed its validation" in r.json()["error"]["message"], r.text
        # The CLI through the server: the same route.
        p = subprocess.run([BIN, "model", "--server", s.base, "validate", "smollm2:1", "--against",
                            "smollm2:2", "--json"], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "OUTPOST_ADMIN_KEY": key})
        assert p.returncode == 0, p.stderr
        rep = json.loads(p.stdout)
        assert rep["passed"] and rep["against"] == "smollm2:2", rep
        # While it serves: the server still answers.
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
        for body, status, param in (({"model": "smollm2:9"}, 404, None),
                                    ({"model": "smollm2:2", "suite": "fail.yaml"}, 400, "suite"),
                                    ({"model": "smollm2:2", "suite": str(tmp_path / "none.yaml")}, 400, "suite"),
                                    ({"model": "smollm2:2", "against": "smollm2:9"}, 404, None),
                                    ({"model": "smollm2:2", "quick": True}, 400, "quick"),
                                    ({"model": 2}, 400, "model"),
                                    ({}, 400, "model")):
            r = httpx.post(s.base + "/admin/models/validate", headers=auth, json=body, timeout=120)
            assert r.status_code == status, (body, r.text)
            if param:
                assert r.json()["error"]["param"] == param, (body, r.text)
        assert httpx.post(s.base + "/admin/models/validate", json={"model": "smollm2:2"},
                          timeout=30).status_code == 401
    # A budget with room for the served model only: validation is refused.
    with serve("--model-store", str(store), "--parallel", "1", "--ctx-size", "1024",
               "--memory-budget", "360MiB", models=["smollm2"], env={"OUTPOST_ADMIN_KEY": key}) as s:
        r = httpx.post(s.base + "/admin/models/validate", headers=auth, json={"model": "smollm2:1"},
                       timeout=120)
        assert r.status_code == 503, r.text
        msg = r.json()["error"]["message"]
        assert "needs" in msg and "of the budget 360.00 MiB is free" in msg, msg
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert r.status_code == 200, r.text
