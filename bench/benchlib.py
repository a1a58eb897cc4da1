"""Process helpers shared by the benchmark drivers (bench.py, router_overhead.py):
a free loopback port, waiting for a started server to answer, stopping it."""
import signal
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, timeout=120):
    """Waits until GET url answers 200; raises if proc exits or time runs out (then kills it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{url} not ready after {timeout} s")


def stop(proc, timeout=30):
    """SIGTERM, then SIGKILL if it has not exited within timeout seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
