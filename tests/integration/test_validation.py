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
