"""Running requests kept on consecutive slots, on the real models: when a
request finishes between two running ones, one of them is moved into its
slot (its KV stream copied, its sampler moved), so every step is one pass
over the weights again. The moved request must answer exactly as it would
have unmoved: greedy tokens equal to those of the same request alone, their
log-probabilities within batch-shape noise, and a divergence, if any, only
where the reference itself was a near tie. Gemma 3 has sliding-window
layers (a second KV cache), which must move too."""
import json
import threading

import httpx
import pytest
from outpost_harness import GEMMA, MODEL, serve

# Batch shape alone moves a log-probability by up to ~0.1 (test_prefix_cache);
# KV from the wrong cells or positions moves it by whole units.
LOGPROB_NOISE = 0.25
PROMPTS = {
    "a": "The history of the lighthouse on the northern cape begins in",
    "b": "List three colours:",
    "c": "A recipe for bread starts with flour, water and",
}
MAX_TOKENS = {"a": 48, "b": 12, "c": 48}


def complete(base, key, first=None, out=None):
    """Streams one greedy completion; returns [(token, logprob, top2 logprobs)]."""
    body = {"prompt": PROMPTS[key], "max_tokens": MAX_TOKENS[key], "temperature": 0,
            "ignore_eos": True, "logprobs": 2, "stream": True}
    toks = []
    with httpx.stream("POST", base + "/v1/completions", json=body, timeout=300) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            lp = json.loads(line[6:])["choices"][0].get("logprobs") or {}
            for t, l, top in zip(lp.get("tokens", []), lp.get("token_logprobs", []),
                                 lp.get("top_logprobs", [])):
                toks.append((t, l, sorted(top.values(), reverse=True)))
            if toks and first is not None:
                first.set()
    if out is not None:
        out[key] = toks
    return toks


def assert_same_answer(ref, got, what):
    assert len(got) == len(ref), what
    for i, ((t0, l0, top0), (t1, l1, _)) in enumerate(zip(ref, got)):
        if t0 != t1:
            # Greedy may tip where the reference's two best were nearly tied.
            assert len(top0) > 1 and top0[0] - top0[1] < LOGPROB_NOISE, \
                f"{what}: token {i} is {t1!r}, alone {t0!r} (best two {top0})"
            return
        assert abs(l0 - l1) < LOGPROB_NOISE, f"{what}: token {i} {t0!r} logprob {l1} alone {l0}"


@pytest.mark.parametrize("model", [MODEL, GEMMA], ids=["smollm2", "gemma3_swa"])
def test_a_request_moved_into_a_hole_answers_as_unmoved(model):
    flags = ("--parallel", "4", "--ctx-size", "512")
    with serve(*flags, models=[model]) as s:
        alone = {k: complete(s.base, k) for k in ("a", "c")}
    with serve(*flags, models=[model]) as s:
        # a, b and c take slots 0, 1 and 2 (each sent once the one before
        # streams); b ends first and leaves a hole between a and c.
        out, threads = {}, []
        for key in ("a", "b", "c"):
            first = threading.Event()
            t = threading.Thread(target=complete, args=(s.base, key, first, out))
            t.start()
            threads.append(t)
            assert first.wait(120), f"{key} sent no token"
        for t in threads:
            t.join()
        moved = s.metric("outpost_sequences_moved_total")
        log = s.log()
    assert moved >= 1, log[-3000:]
    assert len(out["b"]) == MAX_TOKENS["b"]
    for k in ("a", "c"):
        assert_same_answer(alone[k], out[k], f"{k} beside the others")
