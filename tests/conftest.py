"""Shared by tests/integration and tests/e2e: the harness on sys.path, one shared
server, the official openai client for it (a module may define its own), and
one temporary directory per pytest run that holds everything the run writes."""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from outpost_harness import serve  # noqa: E402

_RUN_TMP = None


def pytest_configure(config):
    """Points TMPDIR (this process's tempfile module and every process a test
    starts: servers, llama-server, Chromium, the CLI) at a directory of this
    run's own, so a run leaves nothing behind in /tmp: servers' logs, state
    directories, model files, configs."""
    global _RUN_TMP
    names = "-".join(os.path.splitext(os.path.basename(str(a)))[0] for a in config.args)[:40]
    _RUN_TMP = tempfile.mkdtemp(prefix=f"outpost-{names or 'tests'}-")
    os.environ["TMPDIR"] = _RUN_TMP
    tempfile.tempdir = _RUN_TMP


def pytest_sessionfinish(session, exitstatus):
    """A run that passed removes its directory; one that failed keeps it (the
    servers' logs are in it) and says where. OUTPOST_KEEP_TMP=1 always keeps it."""
    if _RUN_TMP is None:
        return
    if exitstatus == 0 and not os.environ.get("OUTPOST_KEEP_TMP"):
        shutil.rmtree(_RUN_TMP, ignore_errors=True)
    else:
        sys.stderr.write(f"\n[outpost tests] files of this run kept in {_RUN_TMP}\n")


@pytest.fixture(scope="session")
def server():
    """One shared server: 8 sessions of 1024 tokens, queue of 32."""
    with serve("--parallel", "8", "--ctx-size", "1024", "--queue-length", "32",
               "--max-body-size", "64KiB") as s:
        yield s


@pytest.fixture(scope="session")
def client(server):
    """The official openai client on the shared server."""
    import openai  # only the tests that use it need the package
    return openai.OpenAI(base_url=server.base + "/v1", api_key="not-needed", max_retries=0)


@pytest.fixture(scope="session")
def model_id(client):
    return client.models.list().data[0].id
