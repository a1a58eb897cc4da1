"""The deployment files in deploy/ as an operator uses them: the systemd unit
(systemd-analyze verify and security), the Kubernetes manifests (kustomize
rendered by kubectl, validated offline against the Kubernetes schemas by
kubernetes-validate), their memory figures against `outpost plan`, and the
shipped configs served for real — the peer pair as two real Outposts."""
import copy
import json
import os
import re
import shutil
import subprocess

import kubernetes_validate as kv
import pytest
import yaml
from outpost_harness import BIN, MODEL, free_port, serve, v1_cgroup, wait_upstream, yaml_file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "deploy", "systemd", "outpost.service")
K8S = os.path.join(ROOT, "deploy", "kubernetes")


def _unit_copy(tmp_path):
    """The shipped unit with ExecStart pointing at this build (verify checks the binary exists)."""
    with open(UNIT) as f:
        text = f.read().replace("/usr/local/bin/outpost", os.path.abspath(BIN))
    path = tmp_path / "outpost.service"
    path.write_text(text)
    return str(path)


def _unit_setting(key):
    with open(UNIT) as f:
        m = re.search(rf"^{key}=(\S+)$", f.read(), re.M)
    assert m, key
    return m.group(1)


def _plan_deploy():
    """What `outpost plan` says for the shipped configs: the default model, 4 sessions x 4096 tokens."""
    p = subprocess.run([BIN, "plan", "--model", MODEL, "--hardware", "intel-nuc-ultra7",
                        "--peak-sessions", "4", "--context", "4096", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["deploy"]


def test_systemd_unit_verifies_and_is_hardened(tmp_path):
    unit = _unit_copy(tmp_path)
    p = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "outpost.service" not in p.stderr, p.stderr
    p = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", unit],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for outpost.service: ([\d.]+)", p.stdout)
    assert m, p.stdout[-2000:] + p.stderr
    print(f"systemd-analyze security: exposure {m.group(1)}")
    assert float(m.group(1)) <= 2.0, p.stdout
    # A broken unit fails the same check (the check can fail).
    bad = tmp_path / "broken.service"
    bad.write_text(open(unit).read().replace("Type=notify", "Type=notify-me"))
    p = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True, text=True, timeout=60)
    assert "Failed to parse service type" in p.stderr, p.stderr
    for key in ["Type", "User", "ProtectSystem", "NoNewPrivileges", "StateDirectory", "WatchdogSec"]:
        _unit_setting(key)
    assert _unit_setting("Type") == "notify" and _unit_setting("ProtectSystem") == "strict"


def test_memory_limits_are_the_plans():
    d = _plan_deploy()
    assert f"MemoryHigh={_unit_setting('MemoryHigh')} MemoryMax={_unit_setting('MemoryMax')}" == d["systemd"]
    dep = yaml.safe_load(open(os.path.join(K8S, "base", "deployment.yaml")))
    res = dep["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["requests"]["memory"] == d["kubernetes"]["requests"]["memory"]
    assert res["limits"]["memory"] == d["kubernetes"]["limits"]["memory"]


def _shipped_config(tmp_path, **overrides):
    cfg = yaml.safe_load(open(os.path.join(ROOT, "deploy", "systemd", "outpost.yaml")))
    cfg["model"] = os.path.abspath(MODEL)  # flags set the port; host 0.0.0.0 as shipped
    cfg.update(overrides)
    path = tmp_path / "outpost.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _high_mib():
    return int(_unit_setting("MemoryHigh").rstrip("M"))


def _serves_its_four_sessions(s):
    r = s.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Say hello"}],
                                               "max_tokens": 16, "temperature": 0})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"].strip()
    assert '"sessions":4' in json.dumps(s.ready(), separators=(",", ":")), s.ready()


def test_shipped_systemd_config_serves_within_its_memory(tmp_path):
    """The unit's MemoryHigh= is what `plan` says serve needs for the shipped
    config's 4 sessions: with it as the budget they fit, a MiB less they do not."""
    with serve("--config", _shipped_config(tmp_path, memory_budget=f"{_high_mib()}MiB")) as s:
        _serves_its_four_sessions(s)
        rss = s.rss_peak_bytes()
        print(f"peak RSS {rss >> 20} MiB against MemoryHigh {_high_mib()} MiB")
        if not os.environ.get("OUTPOST_SANITIZED"):  # ASan's shadow memory is not the plan's
            assert rss < _high_mib() << 20
    p = subprocess.run([BIN, "serve", "--config",
                        _shipped_config(tmp_path, memory_budget=f"{_high_mib() - 1}MiB"),
                        "--port", str(free_port())], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "parallel 4 does not fit" in p.stderr, p.stderr[-2000:]


def test_shipped_systemd_config_inside_a_cgroup_of_the_units_memory(tmp_path):
    """As systemd runs it: the shipped config (memory_budget: auto) in a real
    cgroup limited to the unit's MemoryHigh= — the budget is the cgroup's
    limit, and the 4 sessions the plan sized it for fit in it."""
    if os.environ.get("OUTPOST_SANITIZED"):
        pytest.skip("a memory limit is measured on the release build")
    cfg = yaml.safe_load(open(os.path.join(ROOT, "deploy", "systemd", "outpost.yaml")))
    assert cfg["memory_budget"] == "auto"
    mem = v1_cgroup("memory", "outpost-deploy")
    try:
        with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
            f.write(str(_high_mib() << 20))
        enter = f'echo $$ > {mem}/cgroup.procs && exec "$0" "$@"'
        with serve("--config", _shipped_config(tmp_path), wrap=("sh", "-c", enter)) as s:
            log = s.log()
            assert f"memory: budget {_high_mib()}.00 MiB (the cgroup's memory limit)" in log, log
            _serves_its_four_sessions(s)
    finally:
        try:
            os.rmdir(mem)
        except OSError:
            pass


def _render(overlay):
    p = subprocess.run(["kubectl", "kustomize", os.path.join(K8S, overlay)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def _matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


@pytest.mark.parametrize("overlay", ["base", "peers", "central"])
def test_kubernetes_manifests_validate(overlay):
    docs = _render(overlay)
    version = kv.latest_version()
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
        if d["kind"] == "ServiceMonitor":
            continue  # a Prometheus Operator CRD: checked below
        kv.validate(d, version, strict=True)
    deployments = kinds["Deployment"]
    assert {"Service", "ConfigMap", "PodDisruptionBudget", "ServiceMonitor",
            "PersistentVolumeClaim"} <= set(kinds)
    configmaps = {c["metadata"]["name"] for c in kinds["ConfigMap"]}
    claims = {c["metadata"]["name"] for c in kinds["PersistentVolumeClaim"]}
    for dep in deployments:
        pod = dep["spec"]["template"]
        labels = pod["metadata"]["labels"]
        assert _matches(dep["spec"]["selector"]["matchLabels"], labels)
        assert any(_matches(s["spec"]["selector"], labels) for s in kinds["Service"]), dep["metadata"]
        for v in pod["spec"].get("volumes", []):
            if "configMap" in v:
                assert v["configMap"]["name"] in configmaps, v
            if "persistentVolumeClaim" in v:
                assert v["persistentVolumeClaim"]["claimName"] in claims, v
        c = pod["spec"]["containers"][0]
        if c["name"] == "outpost":
            assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
            assert c["livenessProbe"]["httpGet"]["path"] == "/health"
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
            assert pod["spec"]["terminationGracePeriodSeconds"] > 30  # drain_timeout
            assert any(_matches(p["spec"]["selector"]["matchLabels"], labels)
                       for p in kinds["PodDisruptionBudget"])
    for sm in kinds["ServiceMonitor"]:
        assert sm["apiVersion"] == "monitoring.coreos.com/v1"
        eps = sm["spec"]["endpoints"]
        assert eps and eps[0]["path"] == "/metrics"
        targets = [s for s in kinds["Service"] if _matches(sm["spec"]["selector"]["matchLabels"],
                                                           s["metadata"]["labels"])]
        assert targets and all(any(p["name"] == eps[0]["port"] for p in s["spec"]["ports"])
                               for s in targets)
    # The validator catches a typo (the check can fail).
    broken = copy.deepcopy(deployments[0])
    broken["spec"]["template"]["spec"]["containers"][0]["containerPorts"] = [8080]
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, version, strict=True)


def _configmap_files(docs, suffix=""):
    for d in docs:
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("outpost-config" + suffix):
            return d["data"]
    raise AssertionError("no outpost-config" + suffix)


def test_kubernetes_peer_pair_runs_as_two_real_outposts(tmp_path):
    """The peers overlay's configs, with the Service names replaced by loopback
    ports: each Outpost sees the other as a healthy peer."""
    docs = _render("peers")
    ports = {"a": free_port(), "b": free_port()}
    servers = {}

    def config_for(box):
        files = _configmap_files(docs, "-" + box)
        routing = files["routing.yaml"]
        for other in "ab":
            routing = routing.replace(f"http://outpost-{other}:8080", f"http://127.0.0.1:{ports[other]}")
        cfg = yaml.safe_load(files["outpost.yaml"])
        cfg["routing_file"] = yaml_file(routing)
        cfg["model"] = os.path.abspath(MODEL)
        cfg["host"] = "127.0.0.1"
        path = tmp_path / f"outpost-{box}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        return str(path)

    with serve("--config", config_for("a"), port=ports["a"]) as a, \
            serve("--config", config_for("b"), port=ports["b"]) as b:
        wait_upstream(a, True, "box-b", timeout=20)
        wait_upstream(b, True, "box-a", timeout=20)
        r = a.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}],
                                                   "max_tokens": 8})
        assert r.status_code == 200 and r.headers["x-outpost-route"] == "local"
