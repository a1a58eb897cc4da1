"""Shared by tests/integration and tests/e2e: the harness on sys.path, one shared
server, and the official openai client for it (a module may define its own)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from outpost_harness import serve  # noqa: E402


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
