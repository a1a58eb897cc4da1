"""Several models in one process: each with its own scheduler, all planned
against one memory budget; /v1/models lists them and `model` selects one."""
import subprocess

from outpost_harness import BIN, MODEL, chat_body, serve

CHAT = "/v1/chat/completions"


def test_two_models_served_side_by_side():
    with serve("--parallel", "2", "--ctx-size", "512", "--memory-budget", "2GiB",
               models=[f"alpha={MODEL}", f"beta={MODEL}"]) as s:
        ids = [m["id"] for m in s.get("/v1/models").json()["data"]]
        assert ids == ["alpha", "beta"]
        for model in ["alpha", "beta"]:
            r = s.post(CHAT, json=chat_body(model=model, max_tokens=4))
            assert r.status_code == 200, r.text
            assert r.json()["model"] == model
        # No model named: the first is the default.
        assert s.post(CHAT, json=chat_body(max_tokens=2)).json()["model"] == "alpha"
        ready = s.ready()
        assert [m["id"] for m in ready["models"]] == ["alpha", "beta"]
        reserved = sum(m["capacity"]["reserved_bytes"] for m in ready["models"])
        assert ready["memory"]["reserved_bytes"] == reserved
        assert ready["memory"]["budget_bytes"] == 2 << 30
        assert reserved <= ready["memory"]["budget_bytes"]
        # Each model's series are its own.
        assert s.metric("outpost_completion_tokens_total", model="alpha") > 0
        assert s.metric("outpost_completion_tokens_total", model="beta") > 0
        assert s.metric("outpost_max_sessions", model="beta") == 2


def run_serve(*args):
    return subprocess.run([BIN, "serve", "--port", "0", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_second_model_that_does_not_fit_beside_the_first_is_refused_at_start():
    # One model at 4 sessions of 4096 tokens needs ~780 MiB with headroom: two do not fit in 1200.
    p = run_serve("--model", f"a={MODEL}", "--model", f"b={MODEL}", "--memory-budget", "1200MiB",
                  "--parallel", "4", "--ctx-size", "4096")
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "cannot serve" in out and "b" in out, out
    assert "memory budget" in out, out


def test_the_same_model_id_twice_is_refused():
    p = run_serve("--model", MODEL, "--model", MODEL, "--parallel", "1", "--ctx-size", "256",
                  "--memory-budget", "2GiB")
    assert p.returncode != 0
    assert "already loaded" in p.stdout + p.stderr
