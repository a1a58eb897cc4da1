"""The prefix cache on the real models: a prompt that shares a prefix with one
computed before (by an idle or a busy session) reuses its KV, reports it in
usage.prompt_tokens_details.cached_tokens and /ready, is answered faster, and is
answered the same as without the cache (greedy, first tokens: floating-point
sums over different batch shapes may tip a near tie much later, as in
llama-server). Gemma 3 has sliding-window layers, which keep only a window of
cells: reuse there must stay correct too."""
import threading
import time

import pytest
from outpost_harness import GEMMA, MODEL, serve

SYSTEM = ("You are the assistant of a bottling plant. Operators ask about line speed, torque "
          "settings, label alignment and fill levels. Answer in one or two short sentences, with "
          "numbers when you have them. ") * 3
QUESTIONS = ["What is the usual fill level?", "How do I fix label drift?", "What torque for caps?"]
FIRST_TOKENS = 10
# Batch shape alone moves a first-token logprob: measured on Gemma 3, 0.03
# (the same request alone vs next to another) to 0.1 (a 7-token suffix batch vs
# a 476-token prefill). KV from the wrong tokens or positions moves it by whole
# units and changes the text at once.
LOGPROB_NOISE = 0.25


def ask(base, question, chat, max_tokens=FIRST_TOKENS, prefix=SYSTEM):
    import httpx
    if chat:
        body = {"messages": [{"role": "system", "content": prefix}, {"role": "user", "content": question}],
                "temperature": 0, "max_tokens": max_tokens, "logprobs": True}
        r = httpx.post(base + "/v1/chat/completions", json=body, timeout=300)
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        first_lp = c["logprobs"]["content"][0]["logprob"]
        text = c["message"]["content"]
    else:
        body = {"prompt": prefix + question, "temperature": 0, "max_tokens": max_tokens, "logprobs": 1}
        r = httpx.post(base + "/v1/completions", json=body, timeout=300)
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        first_lp = c["logprobs"]["token_logprobs"][0]
        text = c["text"]
    return text, first_lp, r.json()["usage"]


def run(model, chat, cache, prefix=SYSTEM, questions=QUESTIONS, ctx="1024"):
    """Answers: each question in turn, then (concurrently) a long answer and a
    question arriving while it decodes, so the prefix is copied from a busy session."""
    with serve("--prefix-cache", cache, "--parallel", "4", "--ctx-size", ctx, models=[model]) as s:
        out = []
        for q in questions:
            t = time.time()
            text, lp, usage = ask(s.base, q, chat, prefix=prefix)
            out.append((text, lp, usage, time.time() - t))
        box = {}
        long = threading.Thread(target=lambda: box.setdefault("long", ask(s.base, questions[0], chat, 80, prefix)))
        long.start()
        time.sleep(1.0)
        text, lp, usage = ask(s.base, questions[1], chat, prefix=prefix)
        long.join()
        out.append((text, lp, usage, 0.0))
        ready = s.get("/ready").json()["models"][0]["prefix_cache"]
    return out, ready


@pytest.mark.parametrize("model,chat", [(MODEL, True), (GEMMA, False)], ids=["smollm2", "gemma3_swa"])
def test_cached_prefixes_answer_as_uncached_and_faster(model, chat):
    cold, cold_ready = run(model, chat, "false")
    warm, warm_ready = run(model, chat, "true")
    assert cold_ready["enabled"] is False and cold_ready["prompt_tokens_reused"] == 0
    assert warm_ready["enabled"] is True
    assert all(u["prompt_tokens_details"]["cached_tokens"] == 0 for _, _, u, _ in cold)
    # The first question is computed; every later one reuses the system prompt.
    assert warm[0][2]["prompt_tokens_details"]["cached_tokens"] == 0
    for text, lp, usage, _ in warm[1:]:
        assert usage["prompt_tokens_details"]["cached_tokens"] >= 100, usage
        assert usage["prompt_tokens_details"]["cached_tokens"] < usage["prompt_tokens"]
    assert warm_ready["prompt_tokens_reused"] >= 300 and warm_ready["hit_rate"] > 0.5, warm_ready
    assert warm_ready["cached_tokens"] > 0 and warm_ready["cached_bytes"] > 0
    # Same answers: the reused KV is the KV the prompt would have produced.
    for (c_text, c_lp, _, _), (w_text, w_lp, _, _) in zip(cold, warm):
        assert w_text == c_text, (c_text, w_text)
        assert abs(w_lp - c_lp) < LOGPROB_NOISE, (c_lp, w_lp)
    # And faster: the reused questions skip ~130 of ~145 prompt tokens.
    cold_t = sorted(t for _, _, _, t in cold[1:3])
    warm_t = sorted(t for _, _, _, t in warm[1:3])
    assert warm_t[0] < cold_t[0], (cold_t, warm_t)


def test_gemma_prompt_past_its_window_stays_correct():
    """Past Gemma's 512-token window the holder has dropped early cells: reuse
    must either be refused or still give the uncached answer."""
    long_prefix = SYSTEM * 7  # ~830 tokens on Gemma's tokenizer
    questions = QUESTIONS[:2]
    cold, _ = run(GEMMA, False, "false", prefix=long_prefix, questions=questions, ctx="2048")
    warm, _ = run(GEMMA, False, "true", prefix=long_prefix, questions=questions, ctx="2048")
    for (c_text, c_lp, _, _), (w_text, w_lp, usage, _) in zip(cold, warm):
        assert w_text == c_text, (c_text, w_text, usage)
        assert abs(w_lp - c_lp) < LOGPROB_NOISE, (c_lp, w_lp, usage)


def test_cache_prompt_false_computes_the_whole_prompt(server):
    """The request-level opt-out (as llama-server's): nothing is reused, though
    the KV it leaves is cached for the next request."""
    import httpx
    body = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fill level?"}],
            "temperature": 0, "max_tokens": 4}
    first = server.post("/v1/chat/completions", json={**body, "cache_prompt": False}).json()
    again = server.post("/v1/chat/completions", json={**body, "cache_prompt": False}).json()
    reused = server.post("/v1/chat/completions", json=body).json()
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert reused["usage"]["prompt_tokens_details"]["cached_tokens"] == reused["usage"]["prompt_tokens"] - 1
    bad = server.post("/v1/chat/completions", json={**body, "cache_prompt": "no"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "cache_prompt"


def test_a_cold_burst_computes_a_new_prefix_once():
    """Requests that arrive together with a system prompt nobody holds yet: one
    computes it, the others wait for it and copy it, and answer as uncached."""
    import httpx
    with serve("--parallel", "4", "--ctx-size", "1024") as s:
        def burst(cache_prompt):
            out = {}

            def one(q):
                body = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}],
                        "temperature": 0, "max_tokens": FIRST_TOKENS, "cache_prompt": cache_prompt}
                r = httpx.post(s.base + "/v1/chat/completions", json=body, timeout=300)
                assert r.status_code == 200, r.text
                out[q] = (r.json()["choices"][0]["message"]["content"],
                          r.json()["usage"]["prompt_tokens_details"]["cached_tokens"])
            threads = [threading.Thread(target=one, args=(q,)) for q in QUESTIONS]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return out
        warm = burst(True)
        cold = burst(False)  # every prompt computed whole
    assert sorted(c > 100 for _, c in warm.values()) == [False, True, True], warm
    assert {q: t for q, (t, _) in warm.items()} == {q: t for q, (t, _) in cold.items()}
