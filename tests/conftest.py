"""Shared by tests/integration and tests/e2e: the harness on sys.path and one shared server."""
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
