"""Pinned prompts on the real models: a system prompt named in the config is
computed as the model loads and saved under <state_dir>/pinned, so the very
first request that carries it is warm; a restart reads the file back instead
of computing; a prefix evicted by other work comes back from the file; a
damaged file is computed again and replaced. Answers stay those of the same
requests without any cache (greedy first tokens, as in test_prefix_cache)."""
import os
import subprocess
import time

from outpost_harness import BIN, GEMMA, MODEL, serve, yaml_file
from test_prefix_cache import LOGPROB_NOISE, QUESTIONS, SYSTEM, ask


def pinned_config(tmp_path, entry):
    return yaml_file(f"state_dir: {tmp_path / 'state'}\npinned_prompts:\n  - {entry}\n")


def kvseq_files(tmp_path):
    d = tmp_path / "state" / "pinned"
    return sorted(d.glob("*.kvseq")) if d.exists() else []


def pinned_ready(s):
    return s.ready()["models"][0]["prefix_cache"]["pinned"]


def test_a_pinned_system_prompt_is_warm_at_once_after_a_restart_and_after_eviction(tmp_path):
    prompt_file = tmp_path / "system.txt"
    prompt_file.write_text(SYSTEM)
    cfg = pinned_config(tmp_path, f"system_file: {prompt_file}")
    flags = ("--parallel", "1", "--ctx-size", "1024")
    with serve(*flags, "--prefix-cache", "false") as s:
        cold = [ask(s.base, q, True) for q in QUESTIONS[:2]]

    # First start: computed and saved; the first request reuses it.
    with serve(*flags, "--config", cfg) as s:
        assert "pinned prompt 1 of 1:" in s.log() and "tokens computed in" in s.log(), s.log()
        pinned = pinned_ready(s)
        assert pinned["prompts"] == 1 and pinned["tokens"] > 100, pinned
        assert s.ready()["models"][0]["prefix_cache"]["cached_tokens"] == pinned["tokens"]
        text, lp, usage = ask(s.base, QUESTIONS[0], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == pinned["tokens"], usage
        first = (text, lp)
    files = kvseq_files(tmp_path)
    assert len(files) == 1 and files[0].stat().st_size > 1_000_000, files
    assert not list((tmp_path / "state" / "pinned").glob("*.tmp"))
    assert text == cold[0][0] and abs(lp - cold[0][1]) < LOGPROB_NOISE, (cold[0], first)

    # Restart: read back, not computed, the same KV and so the same answer.
    # Beside it a day-old file of another model: past pinned_cache_size, it
    # gives way; the file in use stays.
    stranger = files[0].parent / "pinned-0123456789abcdef.kvseq"
    stranger.write_bytes(b"\0" * (4 << 20))
    os.utime(stranger, (time.time() - 86400, time.time() - 86400))
    bound = files[0].stat().st_size + (2 << 20)
    with serve(*flags, "--config", cfg, "--pinned-cache-size", f"{bound >> 20}MiB") as s:
        assert "tokens read from" in s.log() and "tokens computed in" not in s.log(), s.log()
        assert "removed 1 older file(s) (4096 KiB)" in s.log(), s.log()
        assert kvseq_files(tmp_path) == files
        text, lp, usage = ask(s.base, QUESTIONS[0], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == pinned["tokens"]
        assert (text, lp) == first
        # Another prompt takes the only session: the next request that starts
        # with the system prompt gets it back from the file.
        r = s.post("/v1/completions", json={"prompt": "Unrelated words about the weather. " * 8,
                                            "max_tokens": 4})
        assert r.status_code == 200 and r.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        text, lp, usage = ask(s.base, QUESTIONS[1], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == pinned["tokens"], usage
        assert pinned_ready(s)["restores"] == 1
        assert text == cold[1][0] and abs(lp - cold[1][1]) < LOGPROB_NOISE, (cold[1], text, lp)

    # A damaged file: refused, computed again, replaced; answers unchanged.
    files[0].write_bytes(b"GGSQ" + os.urandom(4096))
    with serve(*flags, "--config", cfg) as s:
        assert "not used" in s.log() and "tokens computed in" in s.log(), s.log()
        text, lp, usage = ask(s.base, QUESTIONS[0], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == pinned["tokens"]
        assert text == first[0] and abs(lp - first[1]) < LOGPROB_NOISE
    assert files[0].stat().st_size > 1_000_000


def test_a_pinned_raw_prompt_on_a_sliding_window_model_answers_as_uncached(tmp_path):
    """Gemma 3 (sliding-window layers) with a pinned /v1/completions prefix.
    A prefix computed on its own and a suffix after it is a batch split the
    uncached run does not have: on Gemma it moves the first token's logprob
    by ~0.27 (measured) and leaves the text. So the KV from the file is held
    to the in-memory cache after the same split, exactly, and to the uncached
    answers by their text."""
    cfg = pinned_config(tmp_path, "{prompt: " + repr(SYSTEM) + "}")
    flags = ("--parallel", "2", "--ctx-size", "1024")
    with serve(*flags, "--prefix-cache", "false", models=[GEMMA]) as s:
        cold = [ask(s.base, q, False)[0] for q in QUESTIONS[:2]]
    with serve(*flags, models=[GEMMA]) as s:
        r = s.post("/v1/completions", json={"prompt": SYSTEM, "max_tokens": 1, "temperature": 0})
        assert r.status_code == 200
        split = [ask(s.base, q, False)[:2] for q in QUESTIONS[:2]]
    assert [t for t, _ in split] == cold
    for start in ("computed", "read from"):
        with serve(*flags, "--config", cfg, models=[GEMMA]) as s:
            assert f"tokens {start}" in s.log(), s.log()
            for want, q in zip(split, QUESTIONS[:2]):
                text, lp, usage = ask(s.base, q, False)
                assert usage["prompt_tokens_details"]["cached_tokens"] > 100, usage
                assert (text, lp) == want, (start, want, text, lp)


def test_a_pinned_prompt_for_an_unknown_tenant_stops_the_start(tmp_path):
    cfg = pinned_config(tmp_path, "{system: Be brief., tenant: lab}")
    p = subprocess.run([BIN, "serve", "--model", MODEL, "--config", cfg, "--port", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "pinned_prompts[0].tenant 'lab'" in p.stdout + p.stderr
    routing = yaml_file("tenants:\n  - {name: office, api_key: key-office}\n")
    p = subprocess.run([BIN, "serve", "--model", MODEL, "--config", cfg, "--routing-file", routing,
                        "--port", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "no tenant of that name" in p.stdout + p.stderr, p.stdout + p.stderr


def test_a_pinned_prompt_for_one_model_is_pinned_on_that_model_only(tmp_path):
    """`model:` names the served model a prompt is for; the others neither
    compute it nor hold its cells. An id no model serves stops the start."""
    gemma_id = os.path.splitext(os.path.basename(os.path.realpath(GEMMA)))[0]
    cfg = pinned_config(tmp_path, f"{{system: Be brief., model: {gemma_id}}}")
    with serve("--parallel", "2", "--ctx-size", "1024", "--config", cfg,
               models=[MODEL, GEMMA]) as s:
        pinned = {m["id"]: m["prefix_cache"]["pinned"]["prompts"] for m in s.ready()["models"]}
        assert pinned[gemma_id] == 1 and sorted(pinned.values()) == [0, 1], pinned
    assert len(kvseq_files(tmp_path)) == 1
    cfg = pinned_config(tmp_path, "{system: Be brief., model: gemma}")
    p = subprocess.run([BIN, "serve", "--model", MODEL, "--config", cfg, "--port", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    model_id = os.path.splitext(os.path.basename(os.path.realpath(MODEL)))[0]
    out = p.stdout + p.stderr
    assert f"pinned_prompts[0].model 'gemma': no served model has that id (serving '{model_id}')" in out, out
    assert "capacity plan" not in out, out  # refused before any model loads


def test_a_swapped_in_version_serves_its_first_request_warm(tmp_path):
    """A model swap (docs/lifecycle.md): the new version pins the prompt as it
    loads, before it takes traffic, and saves it to its own file."""
    from test_lifecycle import KEY, admin, quantize_tool
    q8 = tmp_path / "smollm2-q8_0.gguf"
    subprocess.run([quantize_tool(), "--allow-requantize", MODEL, str(q8), "Q8_0"], check=True,
                   capture_output=True, timeout=300)
    store = tmp_path / "models"
    for f, ref in ((MODEL, "smollm2:1"), (str(q8), "smollm2:2")):
        p = subprocess.run([BIN, "model", "--store", str(store), "import", f, ref], capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "model", "--store", str(store), "activate", "smollm2:1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    prompt_file = tmp_path / "system.txt"
    prompt_file.write_text(SYSTEM)
    # `model:` names a store model by its name, as clients do.
    cfg = pinned_config(tmp_path, f"{{system_file: {prompt_file}, model: smollm2}}")
    with serve("--model-store", str(store), "--config", cfg, "--parallel", "2", "--ctx-size", "1024",
               models=["smollm2"], env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        tokens = pinned_ready(s)["tokens"]
        _, _, usage = ask(s.base, QUESTIONS[0], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == tokens
        assert len(kvseq_files(tmp_path)) == 1
        r = admin(s, "POST", "/admin/models/activate", {"model": "smollm2:2"})
        assert r.status_code == 200 and r.json()["to"] == "2", r.text
        assert s.ready()["models"][0]["version"] == "2"
        assert pinned_ready(s) == {"prompts": 1, "tokens": tokens, "restores": 0}
        text, _, usage = ask(s.base, QUESTIONS[1], True)
        assert usage["prompt_tokens_details"]["cached_tokens"] == tokens, usage
        assert text.strip()
        assert len(kvseq_files(tmp_path)) == 2  # one per version: another model file
