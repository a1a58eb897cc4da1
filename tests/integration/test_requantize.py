"""`outpost model requantize`: a new version of the default model whose output
head (SmolLM2 ties it to its Q8_0 token embedding) is IQ4_NL, made in a real
store, validated against its source — perplexity on the pinned text, decode
speed side by side — and served: its answers still make sense. Then a table
of bad invocations, each refused with a message naming what is wrong, the
store left as it was."""
import json
import os
import shutil
import subprocess

import httpx
import pytest

from outpost_harness import BIN, MODEL, serve


def model(store, *args, timeout=600):
    return subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True, text=True,
                          timeout=timeout)


def leftovers(store):
    return [os.path.join(d, f) for d, _, files in os.walk(store) for f in files if "partial" in f]


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
    assert not leftovers(store), leftovers(store)
    # show reads the file's header: the head is the one tensor that changed.
    t, t0 = shown["tensors"], json.loads(model(store, "show", "smollm2:1").stdout)["tensors"]
    assert t["head"] == {"tensor": "token_embd.weight", "type": "iq4_nl", "tied": True,
                         "bytes": r["head"]["bytes_after"]}, t
    assert t0["head"]["type"] == "q8_0" and t0["head"]["bytes"] == r["head"]["bytes_before"], t0
    assert t["count"] == t0["count"] == sum(x["count"] for x in t0["types"].values()), (t, t0)
    assert t["types"]["iq4_nl"]["count"] == 1 and t0["types"]["q8_0"]["count"] - 1 == t["types"].get(
        "q8_0", {"count": 0})["count"], (t, t0)
    assert sum(x["bytes"] for x in t["types"].values()) < shown["size"], t
    # The new file was renamed into the store, not copied: one model file per
    # version (the rest of blobs/ are manifests and configs, under a KiB).
    models = [f for f in os.scandir(store / "blobs" / "sha256") if f.stat().st_size > 2**20]
    assert len(models) == 2, [(f.name, f.stat().st_size) for f in models]

    # Served, it still answers: the validation's smoke question, as the server
    # gets it. (Asked without "Answer in one word.", the smaller head's greedy
    # answer turned on the CPU's kernels: Paris on earlier sessions' boxes,
    # "L'Étoile de France, also known as the City of Love" on an AVX2-only one.)
    path = os.path.join(store, "blobs", "sha256", shown["digest"].split(":")[1])
    with serve(models=[path]) as s:
        a = httpx.post(s.base + "/v1/chat/completions", timeout=120, json={
            "messages": [{"role": "user",
                          "content": "What is the capital of France? Answer in one word."}],
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
        assert not leftovers(store), (args, leftovers(store))


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_store_without_room_for_the_new_file_is_refused_before_a_byte_is_written(tmp_path):
    """The store on a file system that holds the model and 30 MiB more: the new
    version (~82 MB) cannot fit, and requantize says so before llama.cpp's
    quantizer writes anything — no partial file, the store as it was."""
    store = tmp_path / "store"
    store.mkdir()
    size_mib = os.path.getsize(MODEL) // 2**20 + 30
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(store)], check=True)
    try:
        assert model(store, "import", MODEL, "smollm2:1").returncode == 0
        listed, used = model(store, "list").stdout, shutil.disk_usage(store).used
        p = model(store, "requantize", "smollm2:1", "smollm2:1-iq4nl")
        assert p.returncode != 0, p.stdout + p.stderr
        assert "not enough disk for" in p.stderr and "MiB free in" in p.stderr, p.stderr
        assert model(store, "list").stdout == listed
        assert not leftovers(store), leftovers(store)
        assert shutil.disk_usage(store).used == used
    finally:
        subprocess.run(["umount", "-l", str(store)], check=False)
