"""`outpost plan` and `outpost bench` as a user runs them."""
import json
import os
import subprocess
import tempfile

import pytest
from outpost_harness import release_build_only
from outpost_harness import BIN, GEMMA as MODEL  # the planner's figures were validated on Gemma
from outpost_harness import MODEL as DEFAULT_MODEL, serve
from report_pages import assert_readable


def run(*args, timeout=600):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def bench_report():
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    html = out.replace(".json", ".html")
    p = run("bench", "--model", MODEL, "--short", "--json", "-o", out, "--html", html, "--threads", "2")
    assert p.returncode == 0, p.stderr
    assert "[bench] sweep" in p.stderr  # progress lines while it runs
    report = json.loads(p.stdout)
    with open(out) as f:
        assert json.load(f) == report
    with open(html) as f:
        assert "<svg" in f.read()
    return report, out


@release_build_only
def test_bench_json_has_every_field_with_sane_values(bench_report):
    r, _ = bench_report
    assert r["bandwidth"]["read_gbps"] > 0.5 and r["bandwidth"]["triad_gbps"] > 0.5
    assert r["prefill_tps"] > 1
    assert r["decode_tps"] > 1
    assert r["ceiling_tps"] > r["decode_tps"] * 0.5
    assert 0 < r["calibration"]["decode_efficiency"] < 1.5
    sessions = [p["sessions"] for p in r["sweep"]]
    assert sessions == [1, 2, 4]
    for p in r["sweep"]:
        assert p["aggregate_tps"] > 0 and p["per_user_tps"] > 0
        assert 0 < p["ttft_p50_s"] <= p["ttft_p99_s"]
        assert 0 < p["itl_p50_s"] <= p["itl_p99_s"]
    m = r["memory"]
    assert m["rss_after_load_bytes"] > 100 * 2**20
    assert m["rss_all_sessions_full_bytes"] >= m["rss_after_load_bytes"]
    assert m["planned_bytes"] > 0


@release_build_only
def test_planner_memory_prediction_within_ten_percent(bench_report):
    r, _ = bench_report
    err = r["memory"]["error_pct"]
    print(f"planner vs measured memory error: {err:+.1f}%")
    assert abs(err) <= 10.0, r["memory"]


@release_build_only
def test_plan_calibrated_by_the_bench_report(bench_report):
    _, path = bench_report
    p = run("plan", "--model", MODEL, "--mem", "4GiB", "--bandwidth",
            f"{bench_report[0]['bandwidth']['read_gbps']}GB/s", "--tops", "1", "--calibrate", path, "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert path in j["speed"]["efficiency_source"]
    # Calibrated with this machine's own efficiency and bandwidth, the plan
    # predicts roughly what the bench measured.
    assert j["speed"]["expected_tps"] == pytest.approx(bench_report[0]["decode_tps"], rel=0.35)


def test_plan_default_model_table_json_html():
    p = run("plan", "--model", MODEL, "--hardware", "jetson-orin-nano-8gb", "--context", "2048",
            "--peak-sessions", "8")
    assert p.returncode == 0, p.stderr
    for part in ["Gate 1  fit", "Gate 2  speed", "Gate 3  concurrency", "KV per token                  18.4 KB"]:
        assert part in p.stdout, part
    j = json.loads(run("plan", "--model", MODEL, "--hardware", "nvidia-l4", "--json").stdout)
    assert j["fit"]["kv_bytes_per_token"] == 18432
    assert j["fit"]["weight_bytes"] == 246587904
    html = tempfile.NamedTemporaryFile(suffix=".html", delete=False).name
    assert run("plan", "--model", MODEL, "--hardware", "nvidia-l4", "--hardware", "intel-nuc-ultra7",
               "--html", html).returncode == 0
    with open(html) as f:
        text = f.read()
    assert text.count("<svg") == 4 and "Comparison" in text


@pytest.mark.parametrize("model,budget,ctx", [(DEFAULT_MODEL, "640MiB", 2048),
                                               (DEFAULT_MODEL, "1GiB", 2048),
                                               (MODEL, "1GiB", 2048)])
def test_plan_says_the_sessions_serve_admits(model, budget, ctx):
    """For a GGUF at hand, `plan`'s "max sessions that fit" in a memory is what
    `serve` admits with that memory as its budget: both count weights, KV and
    the runtime from llama.cpp's dry run. Before, `plan` left the runtime out
    and said 9 where serve ran 8 (the default model in 640 MiB)."""
    j = json.loads(run("plan", "--model", model, "--mem", budget, "--bandwidth", "20GB/s",
                       "--context", str(ctx), "--peak-sessions", "16", "--json").stdout)
    assert "dry run" in j["fit"]["runtime_source"], j["fit"]
    assert j["fit"]["runtime_bytes"] > 64 << 20
    planned = j["fit"]["max_sessions"]
    with serve("--memory-budget", budget, "--ctx-size", str(ctx), models=[model]) as s:
        served = s.ready()["models"][0]["max_sessions"]
    print(f"{os.path.basename(model)} in {budget} at {ctx} tokens: plan {planned}, serve {served}")
    assert 1 < planned < 16 and planned == served


VOICE_ASSISTANT = """\
name: voice assistant
response_budget: 300ms
cloud_rtt: 120ms
model_size: 70B
easy_share: 80%
requests_per_day: 1M
tokens_per_request: 800
"""


def test_plan_advise_as_a_user_runs_it():
    wl = _tmp(VOICE_ASSISTANT, ".yaml")
    html, svg, routing = (wl.replace(".yaml", s) for s in (".html", ".svg", ".routing.yaml"))
    p = run("plan", "--advise", "--workload", wl, "--html", html, "--svg", svg, "--routing-out", routing)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Verdict:  HYBRID" in out
    for q in ["1. Immediacy", "2. Data boundary", "3. Required intelligence", "4. User scale and cost",
              "5. Update frequency", "6. Offline"]:
        assert q in out, q
    assert "420 ms (120 ms round trip + 300 ms" in out
    assert f"wrote routing file {routing}" in out
    with open(routing) as f:
        assert "kind: central" in f.read()
    with open(svg) as f:
        assert f.read().startswith("<svg")
    # Flags override the file: with a relaxed budget and the data kept in the
    # organisation the verdict becomes on-premises, and JSON says why.
    j = json.loads(run("plan", "--advise", "--workload", wl, "--data-boundary", "organisation",
                       "--response-budget", "2s", "--json").stdout)
    assert j["verdict"] == "on-premises"
    assert j["rules"][1]["decides"] == "on-premises" and j["rules"][1]["requirement"]
    assert j["workload"]["requests_per_day"] == 1e6
    # The model the task needs can be a real GGUF; the candidates can be named.
    j = json.loads(run("plan", "--advise", "--model", MODEL, "--hardware", "jetson-orin-nano-8gb",
                       "--offline", "--json").stdout)
    assert j["verdict"] == "edge" and j["candidates"][0]["hardware"] == "jetson-orin-nano-8gb"
    assert j["candidates"][0]["passes"]


def test_report_pages_read_well_in_chromium(bench_report):
    """plan, plan --advise and bench pages: no sideways overflow at 1280 and
    800 px, legends clear of the plots, text inside the charts, round ticks."""
    _, bench_json = bench_report
    plan_html = _tmp("", ".html")
    assert run("plan", "--model", MODEL, "--hardware", "nvidia-l4", "--hardware", "jetson-orin-nano-8gb",
               "--html", plan_html).returncode == 0
    results = assert_readable(plan_html, min_charts=4)
    titles = [c["title"] for c in results[0]["charts"]]
    assert "Tokens/s as sessions grow" in titles and "Memory as sessions grow" in titles
    advise_html = _tmp("", ".html")
    assert run("plan", "--advise", "--workload", _tmp(VOICE_ASSISTANT, ".yaml"),
               "--html", advise_html).returncode == 0
    results = assert_readable(advise_html, min_charts=1)
    assert results[0]["charts"][0]["title"] == "Monthly cost against request volume"
    assert_readable(bench_json.replace(".json", ".html"), min_charts=2)


def test_list_hardware_has_the_four_classes():
    out = run("plan", "--list-hardware").stdout
    for name in ["jetson-orin-nano-8gb", "jetson-agx-orin-64gb", "intel-nuc-ultra7", "nvidia-l4",
                 "rtx-4000-ada", "nvidia-h100-sxm", "apple-m4-pro-48gb"]:
        assert name in out


def _tmp(data, suffix, binary=False):
    f = tempfile.NamedTemporaryFile("wb" if binary else "w", suffix=suffix, delete=False)
    f.write(data)
    f.close()
    return f.name


def _truncated():
    with open(MODEL, "rb") as f:
        return _tmp(f.read(4 << 20), ".gguf", binary=True)


BAD = [
    (["plan", "--model", MODEL, "--hardware", "cray-1"], "unknown hardware profile 'cray-1'"),
    (["plan", "--model", MODEL], "give --hardware NAME"),
    (["plan", "--hardware", "nvidia-l4"], "give --model FILE.gguf or describe one"),
    (["plan", "--model", "@NOTGGUF", "--hardware", "nvidia-l4"], "not a GGUF file"),
    (["plan", "--model", "@TRUNC", "--hardware", "nvidia-l4"], "truncated"),
    (["plan", "--model", "/nonexistent.gguf", "--hardware", "nvidia-l4"], "does not exist"),
    (["plan", "--params", "-7B", "--bits", "4", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
      "--hardware", "nvidia-l4"], "must be positive"),
    (["plan", "--params", "7B", "--bits", "4", "--layers", "0", "--kv-heads", "8", "--head-dim", "128",
      "--hardware", "nvidia-l4"], "'layers' must be positive"),
    (["plan", "--model", MODEL, "--mem", "-4GiB", "--bandwidth", "100GB/s"], "--mem"),
    (["plan", "--model", MODEL, "--mem", "4GiB", "--bandwidth", "fast"], "--bandwidth"),
    (["plan", "--model", MODEL, "--hardware", "nvidia-l4", "--kv-type", "f8"], "--kv-type"),
    (["plan", "--model", MODEL, "--hardware", "nvidia-l4", "--context", "-1"], "--context must be positive"),
    (["plan", "--model", MODEL, "--hardware", "nvidia-l4", "--headroom", "lots"], "--headroom"),
    (["plan", "--model", MODEL, "--hardware", "nvidia-l4", "--calibrate", "@NOTGGUF"], "not an `outpost bench --json` report"),
    (["plan", "--advise", "--data-boundary", "planet"], "--data-boundary: 'data_boundary': 'planet'"),
    (["plan", "--advise", "--easy-share", "2"], "--easy-share"),
    (["plan", "--advise", "--response-budget", "soon"], "--response-budget"),
    (["plan", "--advise", "--requests-per-day", "-5"], "--requests-per-day"),
    (["plan", "--advise", "--workload", "/nonexistent.yaml"], "does not exist"),
    (["plan", "--advise", "--workload", "@BADYAML"], "unknown key 'colour'"),
    (["plan", "--advise", "--model", MODEL, "--model", MODEL], "give one --model"),
    (["plan", "--advise", "--html", "/nonexistent/dir/x.html"], "--html: cannot write"),
    (["bench", "--model", MODEL, "--duration", "soon"], "--duration"),
    (["bench", "--model", MODEL, "--gen-tokens", "1"], "--gen-tokens must be >= 2"),
]


def test_bench_tune_measures_thread_counts_and_suggests_a_config_serve_takes(tmp_path):
    p = run("bench", "--model", DEFAULT_MODEL, "--short", "--tune", "--json", "--threads", "2")
    assert p.returncode == 0, p.stderr
    assert "tune: 1 threads" in p.stderr and "tune: 2 threads" in p.stderr
    report = json.loads(p.stdout)
    t = report["tuning"]
    assert [x["threads"] for x in t["points"]] == [1, 2]
    assert all(x["prefill_tps"] > 0 and x["decode_tps"] > 0 for x in t["points"])
    s = t["suggested"]
    # The fastest measured, each for its own kind of work.
    assert s["threads"] == max(t["points"], key=lambda x: x["decode_tps"])["threads"]
    assert s["threads_batch"] == max(t["points"], key=lambda x: x["prefill_tps"])["threads"]
    # A stream's token gap at the most sessions measured, stretched by half.
    assert s["step_budget_ms"] == pytest.approx(1.5 * report["sweep"][-1]["itl_p50_s"] * 1000, abs=1)
    # What verifying 4 speculative guesses per sequence costs: the step time of
    # n x 5 tokens over n tokens, a step of k tokens taken as the median token
    # gap at k sessions (linear between the swept counts).
    sweep = [(p["sessions"], p["itl_p50_s"]) for p in report["sweep"]]

    def step(n):
        for i, (k, gap) in enumerate(sweep):
            if n <= k:
                if n == k:
                    return gap
                if i == 0:
                    return None
                k0, g0 = sweep[i - 1]
                return g0 + (n - k0) / (k - k0) * (gap - g0)
        return None

    v = t["verify_cost"]
    assert v["draft"] == 4
    expected = [(k, step(5 * k) / gap) for k, gap in sweep if step(5 * k)]
    assert [(p["sessions"], round(p["step_ratio"], 6)) for p in v["points"]] == \
        [(k, round(r, 6)) for k, r in expected[:len(v["points"])]] and len(v["points"]) == len(expected)
    # Suggested up to the most sessions at which every smaller count was nearly free (<= 1.3x).
    free = 0
    for p in v["points"]:
        if p["step_ratio"] > 1.3:
            break
        free = p["sessions"]
    assert s["speculative_max_batch"] == free
    assert s["speculative_draft"] == (4 if free else 0)
    spec = (f"speculative_draft: 4\nspeculative_max_batch: {free}\n" if free else
            f"speculative_draft: 0  # 4 guesses make a 1-sequence step {v['points'][0]['step_ratio']:.2f}x "
            "longer: not nearly free here\n" if v["points"] else "")
    assert t["config"] == (f"threads: {s['threads']}\nthreads_batch: {s['threads_batch']}\n"
                           f"step_budget: {s['step_budget_ms']}ms\n" + spec)
    # The suggestion is a serve config as it stands.
    cfg = tmp_path / "tuned.yaml"
    cfg.write_text(t["config"])
    with serve("--config", str(cfg), "--parallel", "2", "--ctx-size", "512") as srv:
        r = srv.post("/v1/completions", json={"prompt": "The capital of France is", "max_tokens": 8,
                                               "temperature": 0})
        assert r.status_code == 200 and "Paris" in r.json()["choices"][0]["text"], r.text
        assert f"step budget {s['step_budget_ms']} ms" in srv.log()


@pytest.mark.parametrize("args,part", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_plan_and_bench_inputs(args, part):
    subst = {"@NOTGGUF": _tmp("not a model", ".gguf"), "@TRUNC": _truncated(),
             "@BADYAML": _tmp("model_size: 1B\ncolour: blue\n", ".yaml")}
    p = run(*[subst.get(a, a) for a in args])
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert part in p.stderr, p.stderr
