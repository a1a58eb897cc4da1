"""The outpost binary's command line: --version, --help, bad flags, bad config
files and bad model files fail clearly and non-zero."""
import os
import subprocess
import tempfile

import pytest
from outpost_harness import BIN, MODEL


def run(*args, timeout=120):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def test_version_names_outpost_and_llama_cpp():
    p = run("--version")
    assert p.returncode == 0
    assert "outpost 0." in p.stdout
    assert "llama.cpp as vendored in llama-cpp-python 0.3.36" in p.stdout


def test_help_lists_serve_and_its_flags():
    assert "serve" in run("--help").stdout
    h = run("serve", "--help").stdout
    for flag in ["--model", "--port", "--ctx-size", "--parallel", "--memory-budget", "--queue-length",
                 "--queue-wait", "--max-body-size", "--threads", "--config"]:
        assert flag in h, flag


def _tmp(text, suffix):
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write(text)
    f.close()
    return f.name


BAD = [
    (["serve", "--port", "eighty"], 2, "--port: 'port' must be an integer"),
    (["serve", "--parallel", "lots"], 2, "'auto' or an integer"),
    (["serve", "--memory-budget", "3 parsecs"], 2, "unknown size unit"),
    (["serve", "--kv-type", "f8"], 2, "one of f16, q8_0, q4_0"),
    (["serve", "--no-such-flag"], 2, "no-such-flag"),
    (["nosuch", "verify", "--help"], 2, "unknown command 'nosuch'"),
    (["nosuch"], 2, "unknown command 'nosuch'"),
    (["plan", "--hardware"], 2, "--hardware"),
    (["serve", "--config", "/nonexistent.yaml"], 2, "does not exist"),
    (["serve", "--config", "@BADKEY"], 2, "unknown key 'modle'"),
    (["serve", "--config", "@BADYAML"], 2, "YAML syntax error"),
    (["serve", "--model", "/nonexistent.gguf", "--port", "0"], 1, "does not exist"),
    (["serve", "--model", "@NOTGGUF", "--port", "0"], 1, "not a GGUF file"),
    (["serve", "--model", MODEL, "--port", "0", "--memory-budget", "100MiB"], 1, "not even one session fits"),
]


@pytest.mark.parametrize("args,code,part", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_invocation(args, code, part):
    subst = {"@BADKEY": _tmp("modle: x.gguf\n", ".yaml"),
             "@BADYAML": _tmp("port: [1,\n", ".yaml"),
             "@NOTGGUF": _tmp("hello", ".gguf")}
    args = [subst.get(a, a) for a in args]
    p = run(*args)
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert part in p.stdout + p.stderr, p.stdout + p.stderr
