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
from outpost_harness import BIN, MODEL, serve, v1_cgroup

pytestmark = pytest.mark.skipif(shutil.which("taskset") is None or os.cpu_count() < 2,
                                reason="needs taskset and two CPUs")
ONE_CPU = ("taskset", "-c", "0")


def answers(s):
    r = s.post("/v1/completions", json={"prompt": "The capital of France is", "temperature": 0,
                                        "max_tokens": 12})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def engine_threads(s):
    """The engine thread and llama.cpp's OpenMP workers, which it makes at its
    first decode and which inherit its name."""
    names = []
    for t in os.listdir(f"/proc/{s.proc.pid}/task"):
        try:
            with open(f"/proc/{s.proc.pid}/task/{t}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a thread that ended meanwhile
    return names.count("outpost-engine")


def test_the_default_thread_count_is_the_cpus_this_process_may_use():
    with serve(threads=None, wrap=ONE_CPU) as s:
        log = s.log()
        assert f"cpu: 1 CPU (of {os.cpu_count()} online: affinity 1); threads 1, threads_batch 1" in log, log
        assert "is more than" not in log, log
        assert "Paris" in answers(s)
        # The engine runs what the log says: one thread, no OpenMP worker.
        assert engine_threads(s) == 1
    with serve(threads="2", wrap=ONE_CPU) as s:
        answers(s)
        assert engine_threads(s) == 2
    with serve(threads=None) as s:
        n = len(os.sched_getaffinity(0))
        assert f"cpu: {n} CPUs; threads {n}, threads_batch {n}" in s.log(), s.log()
        assert "memory: budget " in s.log() and "(available memory)" in s.log(), s.log()
        answers(s)
        assert engine_threads(s) == n


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
    # The warning comes before any measurement: read until it does, then stop
    # the run (its numbers were checked above).
    p = subprocess.Popen([*ONE_CPU, BIN, "bench", "--model", MODEL, "--short", "--json", "--threads", "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in p.stderr:
            seen.append(line)
            if "warning: threads 2 is more than the 1 CPU" in line:
                break
    finally:
        p.kill()
        p.wait(timeout=60)
    assert "warning: threads 2 is more than the 1 CPU" in "".join(seen), "".join(seen)


def test_a_real_cgroup_sets_the_memory_budget_and_the_threads():
    """A systemd unit's MemoryMax= / CPUQuota= as the kernel applies them: the
    server is started inside a cgroup limited to 700 MiB and one CPU's quota,
    with every setting left to auto. Before, the budget was the host's
    available memory (the v1 limit and a unit's own cgroup were not read)."""
    if os.environ.get("OUTPOST_SANITIZED"):
        # ASan's shadow memory and quarantine would put a 700 MiB cgroup at
        # risk of the OOM killer; the release build runs this in `make test`.
        pytest.skip("a memory limit is measured on the release build")
    mem = v1_cgroup("memory", "outpost-test")
    cpu = v1_cgroup("cpu", "outpost-test")
    try:
        with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
            f.write(str(700 << 20))
        with open(os.path.join(cpu, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(cpu, "cpu.cfs_quota_us"), "w") as f:
            f.write("100000")
        enter = (f'echo $$ > {mem}/cgroup.procs && echo $$ > {cpu}/cgroup.procs && '
                 'exec "$0" "$@"')
        with serve("--ctx-size", "2048", threads=None, wrap=("sh", "-c", enter)) as s:
            log = s.log()
            assert "memory: budget 700.00 MiB (the cgroup's memory limit)" in log, log
            assert "of the budget 700.00 MiB reserved" in log, log
            assert f"cpu: 1 CPU (of {os.cpu_count()} online: affinity {len(os.sched_getaffinity(0))}, " \
                   "cgroup quota 1); threads 1, threads_batch 1" in log, log
            sessions = s.ready()["models"][0]["max_sessions"]
            assert 1 <= sessions < 16, sessions  # fewer than the 16 auto admits outside
            assert "Paris" in answers(s)
            assert engine_threads(s) == 1
    finally:
        for d in (mem, cpu):
            try:
                os.rmdir(d)
            except OSError:
                pass
