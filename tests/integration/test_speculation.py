"""N-gram speculation on the real default model: the same greedy answers with
it on as off, guesses confirmed where an answer copies its input, and none on
a sliding-window model (Gemma 3), where refused guesses could not be cut back
out of the cache."""
import pytest

from outpost_harness import GEMMA, serve

ITEMS = ("valve 12 pressure low; capper head 3 torque alarm; labeller glue roller cleaned; "
         "filler level low on valve 7; conveyor stopped by operator; reel splice at labeller")
PROMPTS = [
    f"Events: {ITEMS}.\nRepeat the events exactly, one per line:\n",
    f"Shift log: {ITEMS}.\nThe same log again, word for word: {ITEMS[:40]}",
    "Count from 1 to 30: 1, 2, 3, 4,",
]


def answers(server):
    out = []
    for p in PROMPTS:
        r = server.post("/v1/completions", json={"prompt": p, "max_tokens": 48, "temperature": 0,
                                                 "cache_prompt": False})
        assert r.status_code == 200, r.text
        out.append(r.json()["choices"][0]["text"])
    r = server.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": f"Copy this list: {ITEMS}"}], "max_tokens": 48,
        "temperature": 0})
    assert r.status_code == 200, r.text
    out.append(r.json()["choices"][0]["message"]["content"])
    return out


@pytest.fixture(scope="module")
def plain():
    with serve("--parallel", "2", "--ctx-size", "512") as s:
        yield answers(s)


def test_speculation_gives_the_same_greedy_answers_and_confirms_copied_text(plain):
    with serve("--parallel", "2", "--ctx-size", "512", "--speculative-draft", "4") as s:
        got = answers(s)
        drafted = s.metric("outpost_speculative_draft_tokens_total")
        accepted = s.metric("outpost_speculative_accepted_tokens_total")
    assert got == plain
    # The answers make sense: the model counts on and copies the list.
    assert "5, 6, 7, 8" in got[2]
    assert "capper head 3" in got[3]
    assert 0 < accepted <= drafted, (accepted, drafted)


def test_a_sliding_window_model_never_guesses():
    with serve("--parallel", "1", "--ctx-size", "512", "--speculative-draft", "4", models=[GEMMA]) as s:
        r = s.post("/v1/completions", json={"prompt": "Count from 1 to 30: 1, 2, 3, 4,", "max_tokens": 16,
                                            "temperature": 0})
        assert r.status_code == 200 and "5, 6" in r.json()["choices"][0]["text"], r.text
        assert s.metric("outpost_speculative_draft_tokens_total") == 0
