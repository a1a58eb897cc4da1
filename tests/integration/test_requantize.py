"""`outpost model requantize`: a new version of the default model whose output
head (SmolLM2 ties it to its Q8_0 token embedding) is IQ4_NL, made in a real
store, validated against its source — perplexity on the pinned text, decode
speed side by side — and served: its answers still make sense. Then a table
of bad invocations, each refused with a message naming what is wrong, the
store left as it was."""
import json
import os
import subprocess

import httpx

from outpost_harness import BIN, MODEL, serve


def model(store, *args, timeout=600):
    return subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_requantize_validate_and_serve_then_bad_invocations(tmp_path):
    store = tmp_path / "store"
    assert model(store, "import", MODEL, "smollm2:1").returncode == 0
    suite = tmp_path / "suite.yaml"
    # IQ4_NL's perplexity cost on this 135M model is ~10%: the suite allows 25.
    suite.write_text("quality:\n  max_ppl_increase_pct: 25\n")
    p = model(store, "requantize", "smollm2:1", "smollm2:1-iq4nl", "--suite", str(suite), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert r["head"] == {"tensor": "token_embd.weight", "from": "q8_0", "to": "iq4_nl",
                         "bytes_before": 49152 * 576 // 32 * 34, "bytes_after": 49152 * 576 // 32 * 18}, r
    assert r["file_bytes_after"] < r["file_bytes_before"] - 12 * 2**20, r
    v = r["validation"]
    assert v["passed"] and v["against"] == "smollm2:1", v
    checks = {c["name"]: c for c in v["checks"]}
    assert "Paris" in checks["smoke"]["detail"], checks["smoke"]
    q = checks["quality.perplexity"]["figures"]
    assert 0 < q["ppl_change_pct"] < 25 and q["mean_kl"] < 0.3 and q["same_top_pct"] > 70, q
    speed = checks["speed.against"]["figures"]
    assert speed["decode_tps_base"] > 1 and speed["decode_tps_candidate"] > 1, speed
    assert abs(speed["ratio"] - speed["decode_tps_candidate"] / speed["decode_tps_base"]) < 1e-6, speed

    shown = json.loads(model(store, "show", "smollm2:1-iq4nl").stdout)
    assert shown["state"] == "validated", shown
    assert shown["source"] == "requantized from smollm2:1 (token_embd.weight q8_0 → iq4_nl)", shown
    assert not [f for f in os.listdir(store) if "partial" in f], os.listdir(store)

    # Served, it still answers.
    path = os.path.join(store, "blobs", "sha256", shown["digest"].split(":")[1])
    with serve(models=[path]) as s:
        a = httpx.post(s.base + "/v1/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 24, "temperature": 0}).json()
        assert "Paris" in a["choices"][0]["message"]["content"], a

    listed = model(store, "list").stdout
    rows = [
        (["requantize", "nosuch:1", "x:1"], 1, "nosuch:1"),
        (["requantize", "smollm2:1", "smollm2:1-iq4nl"], 2, "smollm2:1-iq4nl already exists"),
        (["requantize", "smollm2:1", "Bad Ref"], 2, "Bad Ref"),
        (["requantize", "smollm2:1", "smollm2:q3", "--head", "q3_k"], 2, "--head"),
        (["requantize", "smollm2:1", "smollm2:q8", "--head", "q8_0"], 2, "token_embd.weight is already q8_0"),
        (["requantize", "smollm2:1", "smollm2:s", "--suite", str(tmp_path / "none.yaml")], 2, "does not exist"),
        (["requantize", "smollm2:1"], 2, "new"),
        (["--server", "http://127.0.0.1:9", "requantize", "smollm2:1", "smollm2:r"], 2, "run it on the box"),
    ]
    for args, rc, says in rows:
        p = model(store, *args)
        assert p.returncode == rc and says in p.stderr, (args, p.returncode, p.stderr)
        assert model(store, "list").stdout == listed, args
        assert not [f for f in os.listdir(store) if "partial" in f], (args, os.listdir(store))
