"""The OCI image from `make image` (scripts/build_image: buildah, from scratch),
checked as an operator would use it: complete (every library the binary links,
a non-root user, the entrypoint), and working — it serves the default model
mounted read-only, answers, and on SIGTERM drains a stream in flight and exits 0.

Where a container runtime works, through `podman run`; on machines where it
cannot (crun cannot set rlimits in this sandbox), through `podman image mount`
and the entrypoint under chroot in the image's own root filesystem, as the
image's user — the same files, the same command.
"""
import json
import os
import signal
import subprocess
import tempfile
import threading
import time

import httpx
import pytest
from outpost_harness import BIN, MODEL, Server, free_port, release_build_only

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TAG = f"localhost/outpost:test-{os.getpid()}"


def sh(*args, timeout=300, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, f"{args}: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


@pytest.fixture(scope="module")
def image():
    assert os.geteuid() == 0, "the image tests mount the image's root filesystem: run as root"
    p = sh(os.path.join(ROOT, "scripts", "build_image"), TAG)
    assert f"built {TAG}" in p.stdout, p.stdout
    yield TAG
    sh("podman", "rmi", "-f", TAG, check=False)


@pytest.fixture
def mounted(image):
    mnt = sh("podman", "image", "mount", image).stdout.strip()
    mounts = []
    try:
        yield mnt, mounts
    finally:
        for m in reversed(mounts):
            sh("umount", "-l", m, check=False)
        sh("podman", "image", "unmount", image, check=False)


@release_build_only
def test_image_is_minimal_and_complete(image, mounted):
    cfg = json.loads(sh("podman", "image", "inspect", image).stdout)[0]
    c = cfg["Config"]
    assert c["User"] == "10001:10001"
    assert c["Entrypoint"] == ["/usr/local/bin/outpost"]
    assert c["Cmd"] == ["serve", "--config", "/etc/outpost/outpost.yaml"]
    assert "8080/tcp" in c["ExposedPorts"] and "/models" in c["Volumes"]
    assert c["StopSignal"] == "SIGTERM"
    assert len(cfg["RootFS"]["Layers"]) <= 2  # from scratch: no base layers
    size = cfg["Size"]
    print(f"image size {size / 1e6:.1f} MB")
    assert size < 80e6
    mnt, _ = mounted
    # Every library the binary links is in the image, and nothing like a shell is.
    for line in sh("ldd", BIN).stdout.splitlines():
        parts = line.split()
        path = parts[2] if len(parts) > 2 and parts[1] == "=>" else parts[0]
        if path.startswith("/"):
            assert os.path.exists(mnt + path), f"{path} is missing from the image"
    assert not os.path.exists(mnt + "/bin/sh") and not os.path.exists(mnt + "/usr/bin/env")
    assert "outpost:x:10001:10001" in open(mnt + "/etc/passwd").read()
    assert os.path.getsize(mnt + "/etc/ssl/certs/ca-certificates.crt") > 10_000
    p = sh("chroot", "--userspec=10001:10001", mnt, "/usr/local/bin/outpost", "--version")
    assert p.stdout.startswith("outpost ")


def _podman_run_works(image):
    p = sh("podman", "run", "--rm", image, "--version", timeout=120, check=False)
    if p.returncode != 0:
        print(f"podman run does not work here ({p.stderr.strip()[-200:]}); using chroot")
    return p.returncode == 0


_cleanup = []


def _model_dir():
    """A directory holding the default model as a real file: .deps/models has
    symlinks into the bootstrap cache, which the image cannot follow."""
    d = tempfile.mkdtemp(prefix="outpost-models-")
    _cleanup.append(d)
    real = os.path.realpath(MODEL)
    try:
        os.link(real, os.path.join(d, "default.gguf"))
    except OSError:
        import shutil
        shutil.copyfile(real, os.path.join(d, "default.gguf"))
    os.chmod(d, 0o755)
    return d


def _start(image, mounted, port, log):
    model_dir = _model_dir()
    args = ["serve", "--config", "/etc/outpost/outpost.yaml", "--port", str(port), "--threads", "2"]
    if _podman_run_works(image):
        cmd = ["podman", "run", "--rm", "--network", "host", "-v", f"{model_dir}:/models:ro", image, *args]
    else:
        mnt, mounts = mounted
        sh("mount", "--bind", "-o", "ro", model_dir, mnt + "/models")
        mounts.append(mnt + "/models")
        sh("mount", "-t", "proc", "proc", mnt + "/proc")
        mounts.append(mnt + "/proc")
        cmd = ["chroot", "--userspec=10001:10001", mnt, "/usr/local/bin/outpost", *args]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def test_image_serves_the_mounted_model_and_drains_on_sigterm(image, mounted):
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="outpost-image-", suffix=".log", delete=False)
    proc = _start(image, mounted, port, log)
    server = Server(proc, port, log.name)
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, server.log()
            try:
                if httpx.get(server.base + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, server.log()
            time.sleep(0.2)
        r = server.post("/v1/chat/completions",
                        json={"messages": [{"role": "user", "content": "Say hello"}],
                              "max_tokens": 24, "temperature": 0})
        assert r.status_code == 200, r.text
        answer = r.json()["choices"][0]["message"]["content"]
        assert any(w in answer.lower() for w in ("hello", "hi", "help")), answer

        out = {"events": []}

        def stream():
            body = {"messages": [{"role": "user", "content": "Tell me about lighthouses."}],
                    "max_tokens": 64, "ignore_eos": True, "temperature": 0, "stream": True}
            with httpx.stream("POST", server.base + "/v1/chat/completions", json=body, timeout=120) as s:
                for line in s.iter_lines():
                    if line == "data: [DONE]":
                        out["done"] = True
                    elif line.startswith("data: "):
                        out["events"].append(json.loads(line[6:]))

        t = threading.Thread(target=stream)
        t.start()
        while not out["events"] and t.is_alive():
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        t.join(timeout=60)
        # On failure, the server's own account (drained, cut, or gone?).
        assert out.get("done"), (out["events"][-1:], server.log()[-4000:])
        assert out["events"][-1]["choices"][0]["finish_reason"] == "length"
        assert proc.wait(timeout=60) == 0, server.log()
        assert "drained in" in server.log()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.unlink(log.name)
        import shutil
        for d in _cleanup:
            shutil.rmtree(d, ignore_errors=True)
