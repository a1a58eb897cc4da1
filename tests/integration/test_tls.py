"""HTTPS on the server: a real certificate, rejected plain HTTP, reload on
SIGHUP without dropping the listener, and clear errors for bad files."""
import signal
import ssl
import socket
import subprocess
import time

import httpx
import pytest
from outpost_harness import BIN, chat_body, free_port, serve


def make_cert(dir_, name):
    cert, key = dir_ / f"{name}.crt", dir_ / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def served_cn(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"], input=der,
                         capture_output=True, check=True).stdout.decode()
    return out.strip()


def test_https_serves_and_reloads_on_sighup(tmp_path):
    first_cert, first_key = make_cert(tmp_path, "first")
    live_cert, live_key = tmp_path / "live.crt", tmp_path / "live.key"
    live_cert.write_bytes(first_cert.read_bytes())
    live_key.write_bytes(first_key.read_bytes())
    port = free_port()
    with serve("--tls-cert-file", str(live_cert), "--tls-key-file", str(live_key),
               "--parallel", "1", "--ctx-size", "256", port=port, wait_ready=False) as s:
        base = f"https://127.0.0.1:{port}"
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(base + "/ready", verify=str(first_cert), timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, s.log()
            time.sleep(0.2)
        r = httpx.post(base + "/v1/chat/completions", json=chat_body(max_tokens=4), verify=str(first_cert),
                       timeout=60)
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
        with pytest.raises(httpx.HTTPError):  # plain HTTP is not spoken on the HTTPS port
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
        assert "CN = first" in served_cn(port)

        # Renewal: new files in place, SIGHUP, new connections get the new certificate.
        second_cert, second_key = make_cert(tmp_path, "second")
        live_cert.write_bytes(second_cert.read_bytes())
        live_key.write_bytes(second_key.read_bytes())
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "CN = second" not in served_cn(port):
            assert time.time() < deadline, s.log()
            time.sleep(0.1)
        assert httpx.get(base + "/health", verify=str(second_cert), timeout=5).status_code == 200

        # A broken renewal keeps the working certificate.
        live_key.write_text("not a key\n")
        s.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert s.proc.poll() is None
        assert "CN = second" in served_cn(port)
        assert "still serving the previous certificate" in s.log()


@pytest.mark.parametrize("flags,words", [
    (["--tls-cert-file", "/nonexistent.crt", "--tls-key-file", "/nonexistent.key"], "tls_cert_file"),
    (["--tls-cert-file", "CERT"], "tls_key_file is missing"),
    (["--tls-cert-file", "CERT", "--tls-key-file", "OTHERKEY"], "tls_key_file"),
])
def test_bad_tls_files_are_refused_at_start(tmp_path, flags, words):
    cert, _ = make_cert(tmp_path, "a")
    _, other_key = make_cert(tmp_path, "b")
    flags = [str(cert) if f == "CERT" else str(other_key) if f == "OTHERKEY" else f for f in flags]
    p = subprocess.run([BIN, "serve", "--port", "0", *flags], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and words in p.stdout + p.stderr, p.stdout + p.stderr
