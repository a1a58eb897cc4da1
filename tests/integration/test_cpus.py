"""Thread counts against the CPUs the process may really use (util/cpus.h):
under `taskset -c 0` a server with the default thread count runs one thread
and says so, one told to run more threads than that warns at start and still
serves, and an OpenMP wait policy that makes llama.cpp's threads sleep at its
barriers is named. `outpost bench` takes the same default."""
import json
import os
import shutil
import subprocess

import pytest
from outpost_harness import BIN, MODEL, serve

pytestmark = pytest.mark.skipif(shutil.which("taskset") is None or os.cpu_count() < 2,
                                reason="needs taskset and two CPUs")
ONE_CPU = ("taskset", "-c", "0")


def answers(s):
    r = s.post("/v1/completions", json={"prompt": "The capital of France is", "temperature": 0,
                                        "max_tokens": 12})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def os_threads(s):
    return len(os.listdir(f"/proc/{s.proc.pid}/task"))


def test_the_default_thread_count_is_the_cpus_this_process_may_use():
    with serve(threads=None, wrap=ONE_CPU) as s:
        log = s.log()
        assert f"cpu: 1 CPU (of {os.cpu_count()} online: affinity 1); threads 1, threads_batch 1" in log, log
        assert "is more than" not in log, log
        assert "Paris" in answers(s)
        default_threads = os_threads(s)
    # The engine runs what the log says: as many OS threads as with --threads 1
    # after a request (llama.cpp's OpenMP team is made at the first decode),
    # one fewer than with --threads 2.
    with serve(threads="1", wrap=ONE_CPU) as s:
        answers(s)
        assert os_threads(s) == default_threads
    with serve(threads="2", wrap=ONE_CPU) as s:
        answers(s)
        assert os_threads(s) == default_threads + 1
    with serve(threads=None) as s:
        n = len(os.sched_getaffinity(0))
        assert f"cpu: {n} CPUs; threads {n}, threads_batch {n}" in s.log(), s.log()


def test_more_threads_than_cpus_warns_and_still_serves():
    with serve("--threads-batch", "3", threads="2", wrap=ONE_CPU) as s:
        log = s.log()
        assert "threads 2 is more than the 1 CPU this process may use" in log, log
        assert "threads_batch 3 is more than the 1 CPU" in log, log
        assert "Paris" in answers(s)


@pytest.mark.parametrize("env,named", [({"OMP_WAIT_POLICY": "passive"}, "OMP_WAIT_POLICY=passive"),
                                       ({"GOMP_SPINCOUNT": "0"}, "GOMP_SPINCOUNT=0")])
def test_an_openmp_wait_setting_that_sleeps_is_named(env, named):
    with serve(env=env) as s:
        assert f"{named} in the environment" in s.log(), s.log()
    with serve(env={"OMP_WAIT_POLICY": "active"}) as s:
        assert "in the environment" not in s.log(), s.log()


def test_bench_takes_the_same_default():
    p = subprocess.run([*ONE_CPU, BIN, "bench", "--model", MODEL, "--short", "--json"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["threads"] == 1
    assert report["cpus"] == f"1 CPU (of {os.cpu_count()} online: affinity 1)", report["cpus"]
    assert "warning" not in p.stderr, p.stderr
    p = subprocess.run([*ONE_CPU, BIN, "bench", "--model", MODEL, "--short", "--json", "--threads", "2"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "warning: threads 2 is more than the 1 CPU" in p.stderr, p.stderr
