"""/metrics as a monitoring system reads it: the OpenTelemetry GenAI server
histograms under their standard names, hardware sensors from a fake sysfs tree
cross-checked against Debian's prometheus-node-exporter reading the same tree,
and the whole exposition accepted by `promtool check metrics`."""
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict

import httpx
import pytest
from outpost_harness import BIN, free_port, serve

SYSFS = {
    "class/thermal/thermal_zone0/type": "x86_pkg_temp",
    "class/thermal/thermal_zone0/temp": "45000",
    "class/thermal/thermal_zone0/policy": "step_wise",
    "class/thermal/thermal_zone1/type": "GPU-therm",
    "class/thermal/thermal_zone1/temp": "51500",
    "class/thermal/thermal_zone1/policy": "step_wise",
    "class/hwmon/hwmon0/name": "coretemp",
    "class/hwmon/hwmon0/temp1_input": "52000",
    "class/hwmon/hwmon0/temp1_label": "Package id 0",
    "class/hwmon/hwmon0/temp2_input": "50000",
    "class/hwmon/hwmon1/name": "amdgpu",
    "class/hwmon/hwmon1/power1_average": "35000000",
    "class/hwmon/hwmon1/temp1_input": "61000",
    "class/hwmon/hwmon2/name": "ina3221",
    "class/hwmon/hwmon2/in1_label": "VDD_IN",
    "class/hwmon/hwmon2/in1_input": "5000",
    "class/hwmon/hwmon2/curr1_input": "1200",
    "devices/system/cpu/cpu0/thermal_throttle/core_throttle_count": "3",
    "devices/system/cpu/cpu0/thermal_throttle/package_throttle_count": "7",
}
# RAPL zones under powercap (µJ): a package and its core and dram subzones.
for _zone, _name, _uj in (("intel-rapl:0", "package-0", "123456789"), ("intel-rapl:0:0", "core", "45000000"),
                          ("intel-rapl:0:1", "dram", "7000000")):
    SYSFS[f"class/powercap/{_zone}/name"] = _name
    SYSFS[f"class/powercap/{_zone}/energy_uj"] = _uj
    SYSFS[f"class/powercap/{_zone}/max_energy_range_uj"] = "262143328850"
# Each CPU's cpufreq directory as the kernel lays it out (node_exporter reads
# all of it; Outpost reads scaling_cur_freq, kHz).
for _cpu, _khz in (("cpu0", "2400000"), ("cpu1", "1200000")):
    for _name, _text in (("scaling_cur_freq", _khz), ("cpuinfo_min_freq", "800000"),
                         ("cpuinfo_max_freq", "4000000"), ("scaling_min_freq", "800000"),
                         ("scaling_max_freq", "4000000"), ("scaling_governor", "powersave"),
                         ("scaling_available_governors", "performance powersave"),
                         ("scaling_driver", "intel_pstate"), ("related_cpus", _cpu[3:]),
                         ("affected_cpus", _cpu[3:]), ("scaling_setspeed", "<unsupported>")):
        SYSFS[f"devices/system/cpu/{_cpu}/cpufreq/{_name}"] = _text
# The stand-in NVML library the unit tests build (tests/mocks/fake_nvml.cc).
FAKE_NVML = os.path.join(os.path.dirname(os.path.abspath(BIN)), "tests", "libfake_nvml.so")


def fake_sysfs():
    """Writes SYSFS under a new temporary directory; returns its path."""
    root = tempfile.mkdtemp(prefix="outpost-sysfs-")
    for rel, text in SYSFS.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    return root


@pytest.fixture(scope="module")
def sysfs():
    root = fake_sysfs()
    yield root
    shutil.rmtree(root)


def parse(text):
    """Prometheus text → {(name, frozenset(labels)): value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def series(metrics, name, **want):
    return {dict(l).get("hw_id", ""): v for (n, l), v in metrics.items()
            if n == name and all((k, v2) in l for k, v2 in want.items())}


def test_genai_metrics_sensors_and_promtool(sysfs):
    with serve("--parallel", "2", "--embeddings", "true",
               env={"OUTPOST_SYSFS_ROOT": sysfs, "OUTPOST_NVML_LIBRARY": FAKE_NVML}) as s:
        assert "sensors: " in s.log() and "hwmon up" in s.log()
        # Long enough (over a second of work) for the windowed rates to fill.
        r = s.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Say hello"}],
                                                   "max_tokens": 96, "ignore_eos": True,
                                                   "temperature": 0})
        assert r.status_code == 200
        r = s.post("/v1/completions", json={"prompt": "The sky is", "max_tokens": 8, "temperature": 0})
        assert r.status_code == 200
        r = s.post("/v1/embeddings", json={"input": ["a red fox", "a blue sky"]})
        assert r.status_code == 200
        text = s.get("/metrics").text
    m = parse(text)
    model = "SmolLM2-135M-Instruct.Q4_1"
    for op in ("chat", "text_completion"):
        base = {("gen_ai_operation_name", op), ("gen_ai_provider_name", "outpost"),
                ("gen_ai_request_model", model), ("openai_response_service_tier", "default")}
        # A success carries no error_type (OpenTelemetry sets it only on errors).
        assert m[("gen_ai_server_request_duration_seconds_count", frozenset(base))] == 1
        assert m[("gen_ai_server_time_to_first_token_seconds_count", frozenset(base))] == 1
        assert m[("gen_ai_server_time_per_output_token_seconds_count", frozenset(base))] == 1
        ttft = m[("gen_ai_server_time_to_first_token_seconds_sum", frozenset(base))]
        dur = m[("gen_ai_server_request_duration_seconds_sum", frozenset(base))]
        assert 0 < ttft <= dur < 60
    # Embeddings: the request duration only (no tokens are generated).
    emb = {("gen_ai_operation_name", "embeddings"), ("gen_ai_provider_name", "outpost"),
           ("gen_ai_request_model", model), ("openai_response_service_tier", "default")}
    assert m[("gen_ai_server_request_duration_seconds_count", frozenset(emb))] == 1
    assert 0 < m[("gen_ai_server_request_duration_seconds_sum", frozenset(emb))] < 60
    assert ("gen_ai_server_time_to_first_token_seconds_count", frozenset(emb)) not in m
    temps = series(m, "outpost_hw_temperature_celsius")
    assert temps["thermal_zone0/x86_pkg_temp"] == 45 and temps["thermal_zone1/GPU-therm"] == 51.5
    assert temps["coretemp/Package id 0"] == 52 and temps["amdgpu/temp1"] == 61
    power = series(m, "outpost_hw_power_watts", source="hwmon")
    assert power == {"amdgpu/power1": 35, "ina3221/VDD_IN": 6}
    assert series(m, "outpost_hw_power_watts", source="nvml") == {"gpu0": 120.5}
    assert series(m, "outpost_hw_throttle_events_total")["package0"] == 7
    up = {dict(l)["source"]: v for (n, l), v in m.items() if n == "outpost_sensor_up"}
    assert up["hwmon"] == 1 and up["thermal_zone"] == 1 and up["cpu_throttle"] == 1
    assert up["cpufreq"] == 1 and up["nvml"] == 1 and up["devfreq"] == 0 and up["rapl"] == 1
    assert series(m, "outpost_hw_energy_joules_total", source="rapl") == {
        "intel-rapl:0/package-0": 123.456789, "intel-rapl:0:0/core": 45, "intel-rapl:0:1/dram": 7}
    assert series(m, "outpost_hw_clock_hertz", source="cpufreq") == {"cpu0": 2.4e9, "cpu1": 1.2e9}
    # The GPU through NVML (the stand-in library): clock, utilisation, memory;
    # its second device answers NOT_SUPPORTED and is left out, never 0.
    assert series(m, "outpost_hw_clock_hertz", source="nvml") == {"gpu0": 1.41e9}
    assert series(m, "outpost_hw_utilization_ratio") == {"gpu0": 0.37}
    assert series(m, "outpost_hw_memory_used_bytes") == {"gpu0": 10 * 2**30}
    assert series(m, "outpost_hw_memory_total_bytes") == {"gpu0": 80 * 2**30}
    assert series(m, "outpost_hw_temperature_celsius", source="nvml") == {"gpu0": 65, "gpu1": 48}
    assert ":" not in "".join(n for n, _ in m)  # no recording-rule names
    # The serving set: how requests ended, the model's load, the process.
    finished = {dict(l)["finish_reason"]: v for (n, l), v in m.items()
                if n == "outpost_requests_finished_total"}
    assert sum(finished.values()) == 2 and set(finished) <= {"stop", "length"}, finished
    assert m[("outpost_model_loaded", frozenset({("model", model)}))] == 1
    # Queue time (one value per request that ran), KV usage as a share, and
    # the decode and prefill rates over a window.
    assert m[("outpost_request_queue_time_seconds_count", frozenset({("model", model)}))] == 2
    assert 0 <= m[("outpost_request_queue_time_seconds_sum", frozenset({("model", model)}))] < 5
    assert 0 < m[("outpost_kv_usage_ratio", frozenset({("model", model)}))] <= 1
    assert m[("outpost_decode_tokens_per_second", frozenset({("model", model)}))] > 0
    assert m[("outpost_prefill_tokens_per_second", frozenset({("model", model)}))] > 0
    assert 0 < m[("outpost_model_load_seconds", frozenset({("model", model)}))] < 120
    assert m[("process_resident_memory_bytes", frozenset())] > 50e6
    assert m[("process_cpu_seconds_total", frozenset())] > 0
    assert 0 < m[("process_open_fds", frozenset())] < m[("process_max_fds", frozenset())]
    assert abs(time.time() - m[("process_start_time_seconds", frozenset())]) < 600
    # Prometheus's own linter accepts the whole exposition.
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_sensor_readings_match_node_exporter_on_the_same_tree(sysfs):
    port = free_port()
    ne = subprocess.Popen(["prometheus-node-exporter", f"--path.sysfs={sysfs}", "--collector.disable-defaults",
                           "--collector.hwmon", "--collector.thermal_zone", "--collector.cpufreq",
                           "--collector.rapl",
                           f"--web.listen-address=127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                ne_text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                break
            except httpx.HTTPError:
                assert time.time() < deadline, "node_exporter did not start"
                time.sleep(0.2)
    finally:
        ne.terminate()
        ne.wait()
    theirs = parse(ne_text)
    with serve(env={"OUTPOST_SYSFS_ROOT": sysfs}) as s:
        ours = parse(s.get("/metrics").text)
    # Per hwmon chip, the same temperatures; per thermal zone, the same value.
    ne_chip = defaultdict(list)
    for (n, l), v in theirs.items():
        if n == "node_hwmon_temp_celsius":
            ne_chip[dict(l)["chip"]].append(v)
    our_chip = defaultdict(list)
    for hw_id, v in series(ours, "outpost_hw_temperature_celsius", source="hwmon").items():
        our_chip[hw_id.split("/")[0]].append(v)
    assert {k: sorted(v) for k, v in ne_chip.items()} == {k: sorted(v) for k, v in our_chip.items()}
    ne_zones = sorted(v for (n, l), v in theirs.items() if n == "node_thermal_zone_temp")
    our_zones = sorted(series(ours, "outpost_hw_temperature_celsius", source="thermal_zone").values())
    assert ne_zones == our_zones and len(ne_zones) == 2
    # Per CPU, the same clock.
    ne_clock = {"cpu" + dict(l)["cpu"]: v for (n, l), v in theirs.items()
                if n == "node_cpu_scaling_frequency_hertz"}
    assert ne_clock == series(ours, "outpost_hw_clock_hertz", source="cpufreq") and len(ne_clock) == 2
    # Per RAPL zone, the same energy (node_exporter names the domain in the
    # metric, Outpost in hw_id).
    ne_rapl = {n[len("node_rapl_"):-len("_joules_total")]: v for (n, l), v in theirs.items()
               if n.startswith("node_rapl_")}
    our_rapl = {hw_id.split("/")[1].replace("-0", ""): v
                for hw_id, v in series(ours, "outpost_hw_energy_joules_total", source="rapl").items()}
    assert ne_rapl == our_rapl and len(ne_rapl) == 3, (ne_rapl, our_rapl)
    ne_power = {dict(l)["chip"]: v for (n, l), v in theirs.items() if n == "node_hwmon_power_average_watt"}
    assert ne_power == {"amdgpu": series(ours, "outpost_hw_power_watts")["amdgpu/power1"]}
