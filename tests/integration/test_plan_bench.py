"""`outpost plan` and `outpost bench` as a user runs them."""
import json
import os
import subprocess
import tempfile

import pytest
from outpost_harness import BIN, GEMMA as MODEL  # the planner's figures were validated on Gemma


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


def test_planner_memory_prediction_within_ten_percent(bench_report):
    r, _ = bench_report
    err = r["memory"]["error_pct"]
    print(f"planner vs measured memory error: {err:+.1f}%")
    assert abs(err) <= 10.0, r["memory"]


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
    (["bench", "--model", MODEL, "--duration", "soon"], "--duration"),
    (["bench", "--model", MODEL, "--gen-tokens", "1"], "--gen-tokens must be >= 2"),
]


@pytest.mark.parametrize("args,part", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_plan_and_bench_inputs(args, part):
    subst = {"@NOTGGUF": _tmp("not a model", ".gguf"), "@TRUNC": _truncated()}
    p = run(*[subst.get(a, a) for a in args])
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert part in p.stderr, p.stderr
