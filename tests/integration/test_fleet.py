"""The fleet's desired state as a central team uses it: a signed document
(`outpost fleet sign`, Ed25519 DSSE) served by a plain HTTP server with ETags,
a real `outpost serve` polling it, pulling the version it names over HTTP
(the default model re-quantized to Q8_0 by the pinned llama-quantize),
activating it, then a canary to another version that real traffic promotes,
the observed state POSTed back to the centre after every poll; the link going
down (the box keeps serving and keeps the last good state across a restart);
an older generation refused; and tables of bad configuration and documents."""
import hashlib
import http.server
import json
import os
import subprocess
import threading
import time

import httpx
import pytest

from outpost_harness import BIN, MODEL, serve
from test_lifecycle import quantize_tool

KEY = "fleet-admin-key-0123456789"


class Centre:
    """The central side: the signed document at /desired.json (ETag and
    If-None-Match as any web server does), model files under /models/, and
    the observed states POSTed to /observed. `down` makes it answer 503."""

    def __init__(self, files):
        self.document = b""
        self.files = files
        self.observed = []
        self.gets = self.not_modified = 0
        self.down = False
        centre = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if centre.down:
                    self.send_error(503)
                    return
                if self.path == "/desired.json":
                    centre.gets += 1
                    etag = '"' + hashlib.sha256(centre.document).hexdigest()[:16] + '"'
                    if self.headers.get("If-None-Match") == etag:
                        centre.not_modified += 1
                        self.send_response(304)
                        self.send_header("ETag", etag)
                        self.end_headers()
                        return
                    body = centre.document
                    self.send_response(200)
                    self.send_header("ETag", etag)
                else:
                    name = self.path.rsplit("/", 1)[-1]
                    if name not in centre.files:
                        self.send_error(404)
                        return
                    with open(centre.files[name], "rb") as f:
                        body = f.read()
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                if self.path == "/observed" and not centre.down:
                    centre.observed.append(json.loads(body))
                    self.send_response(204)
                else:
                    self.send_response(503)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def last(self):
        return self.observed[-1] if self.observed else {}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    q8 = d / "smollm2-q8_0.gguf"
    subprocess.run([quantize_tool(), "--allow-requantize", MODEL, str(q8), "Q8_0"], check=True,
                   capture_output=True, timeout=300)
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(d / "central.key")],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(d / "central.key"), "-pubout", "-out",
                    str(d / "central.pub")], check=True, capture_output=True)
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(d / "stranger.key")],
                   check=True, capture_output=True)
    return {"dir": d, "q8": str(q8), "q8_sha": sha256(q8), "q4_sha": sha256(os.path.realpath(MODEL))}


def sign(fleet, doc, key="central.key"):
    src = fleet["dir"] / "doc.json"
    src.write_text(json.dumps(doc))
    p = subprocess.run([BIN, "fleet", "sign", "--key", str(fleet["dir"] / key), str(src)],
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def wait_for(what, fn, timeout=240):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"{what}: not reached in {timeout} s; last: {last}")


def admin(s, method, path, **kw):
    return httpx.request(method, s.base + path, headers={"Authorization": f"Bearer {KEY}"},
                         timeout=60, **kw)


def test_a_box_follows_the_fleet_by_pull_canary_and_promotion_and_keeps_its_state_offline(fleet):
    d = fleet["dir"]
    store = d / "models"
    state = d / "state"
    p = subprocess.run([BIN, "model", "--store", str(store), "import", MODEL, "smollm2:1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "model", "--store", str(store), "activate", "smollm2:1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    centre = Centre({"smollm2-q8_0.gguf": fleet["q8"]})
    # Generation 1: this site gets the Q8_0 copy at once; another site
    # (listed first) something else, which this box must not touch.
    centre.document = sign(fleet, {"generation": 1, "models": [
        {"name": "smollm2", "version": "never", "sites": ["plant-9"],
         "source": centre.url + "/models/missing.gguf", "sha256": "0" * 64},
        {"name": "smollm2", "version": "2", "labels": {"line": "a"},
         "source": centre.url + "/models/smollm2-q8_0.gguf", "sha256": fleet["q8_sha"]}]})
    flags = ["--model-store", str(store), "--state-dir", str(state), "--parallel", "4",
             "--fleet-url", centre.url + "/desired.json", "--fleet-interval", "1s",
             "--fleet-site", "plant-3", "--fleet-labels", "line=a,tier=gold",
             "--fleet-report-url", centre.url + "/observed",
             "--fleet-trusted-keys", str(d / "central.pub")]
    with serve(*flags, models=["smollm2"], env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        o = wait_for("generation 1 converged",
                     lambda: centre.last().get("observed_generation") == 1 and centre.last())
        m = o["models"]
        assert [(x["name"], x["desired"], x["phase"], x["active"]) for x in m] == \
            [("smollm2", "smollm2:2", "converged", "2")], o
        assert o["site"] == "plant-3" and o["labels"] == {"line": "a", "tier": "gold"}, o
        assert s.ready()["models"][0]["version"] == "2"
        # The pulled model answers sensibly.
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
        versions = {v["ref"]: v for v in admin(s, "GET", "/admin/models").json()["versions"]}
        assert "smollm2:never" not in versions
        assert versions["smollm2:2"]["source"].endswith("/models/smollm2-q8_0.gguf")
        # Unchanged documents cost a 304, not a download.
        wait_for("a 304", lambda: centre.not_modified >= 2, timeout=30)
        assert s.metric("outpost_fleet_polls_total", result="unchanged") >= 2
        assert s.metric("outpost_fleet_generation", kind="observed") == 1

        # Generation 2: back to the Q4_1 version, through a canary that real
        # traffic promotes (a short step, a wide TTFT margin: the flow, not
        # the two versions' speeds).
        centre.document = sign(fleet, {"generation": 2, "models": [
            {"name": "smollm2", "version": "1", "source": MODEL, "sha256": fleet["q4_sha"],
             "canary": {"steps": [50], "bake": "5s", "min_requests": 4, "max_ttft_ratio": 100}}]})
        wait_for("the canary", lambda: any(x["phase"] == "canary" for x in centre.last().get("models", [])))
        assert admin(s, "GET", "/admin/models").json()["canaries"][0]["version"] == "1"
        fingerprints = set()

        def traffic():
            for u in range(16):
                r = httpx.post(s.base + "/v1/chat/completions", timeout=120,
                               json={"model": "smollm2", "user": f"user-{u}", "max_tokens": 2,
                                     "messages": [{"role": "user", "content": "Hi"}]})
                assert r.status_code == 200, r.text
                fingerprints.add(r.json()["system_fingerprint"])
            return centre.last().get("observed_generation") == 2

        o = wait_for("generation 2 converged", traffic, timeout=300)
        assert len(fingerprints) == 2, fingerprints  # both versions served during the canary
        assert s.ready()["models"][0]["version"] == "1"
        assert 'outpost_canary_decisions_total{model="smollm2",decision="promote"} 1' in \
            s.get("/metrics").text
        assert admin(s, "GET", "/admin/fleet").json()["observed_generation"] == 2

        # The link drops: the box keeps serving what it has and says why.
        centre.down = True
        o = wait_for("the outage seen", lambda: "error" in admin(s, "GET", "/admin/fleet").json()["document"]
                     and admin(s, "GET", "/admin/fleet").json())
        assert "HTTP 503" in o["document"]["error"], o
        assert o["generation"] == 2 and o["models"][0]["phase"] == "converged", o
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert r.status_code == 200 and "Paris" in r.json()["choices"][0]["text"], r.text
        assert s.metric("outpost_fleet_polls_total", result="error") >= 1
        # POST /admin/fleet/sync polls at once; the admin key guards it.
        assert admin(s, "POST", "/admin/fleet/sync").status_code == 200
        assert httpx.get(s.base + "/admin/fleet", timeout=10).status_code == 401

    # A restart while the centre is unreachable: the kept document still
    # rules, and the store's active version serves.
    with serve(*flags, models=["smollm2"], env={"OUTPOST_ADMIN_KEY": KEY}) as s:
        o = wait_for("the kept state", lambda: (admin(s, "GET", "/admin/fleet").json().get("models")
                                                and admin(s, "GET", "/admin/fleet").json()))
        assert o["generation"] == 2 and o["observed_generation"] == 2, o
        assert o["models"][0]["phase"] == "converged" and "error" in o["document"], o
        assert s.ready()["models"][0]["version"] == "1"
        assert "kept desired state generation 2" in s.log()
        # The link returns with an older generation (a stale mirror): refused.
        centre.document = sign(fleet, {"generation": 1, "models": [
            {"name": "smollm2", "version": "2", "source": centre.url + "/models/smollm2-q8_0.gguf",
             "sha256": fleet["q8_sha"]}]})
        centre.down = False
        o = wait_for("the stale document refused",
                     lambda: "older" in centre.last().get("document", {}).get("error", "") and centre.last())
        assert o["generation"] == 2 and s.ready()["models"][0]["version"] == "1", o
        # One signed by a key the box does not trust: refused too.
        centre.document = sign(fleet, {"generation": 3, "models": []}, key="stranger.key")
        o = wait_for("the stranger's document refused",
                     lambda: "no trusted key" in centre.last().get("document", {}).get("error", "")
                     and centre.last())
        assert o["generation"] == 2, o
        assert s.metric("outpost_fleet_polls_total", result="refused") >= 2
    centre.server.shutdown()


def test_bad_fleet_configuration_is_refused_naming_the_key(fleet, tmp_path):
    d = fleet["dir"]
    base = ["--model", MODEL, "--port", "0", "--state-dir", str(tmp_path / "state"),
            "--model-store", str(tmp_path / "models")]
    cases = [
        (["--fleet-url", "ftp://central/desired.json"], "fleet_url"),
        (["--fleet-url", "desired.json"], "fleet_url"),
        (["--fleet-url", "/x.json", "--fleet-labels", "line"], "fleet_labels"),
        (["--fleet-url", "/x.json", "--fleet-report-url", "ftp://central/observed"], "fleet_report_url"),
        (["--fleet-url", "/x.json", "--fleet-interval", "soon"], "fleet_interval"),
        (["--fleet-url", "/x.json"], "fleet_trusted_keys"),  # nobody may sign the document
        (["--fleet-url", "/x.json", "--fleet-trusted-keys", str(d / "central.key")], "private key"),
        (["--fleet-url", "/x.json", "--fleet-trusted-keys", str(tmp_path / "none.pub")], "cannot be read"),
        (["--fleet-url", "oci://", "--fleet-trusted-keys", str(d / "central.pub")], "fleet_url"),
    ]
    for flags, expect in cases:
        p = subprocess.run([BIN, "serve", *base, *flags], capture_output=True, text=True, timeout=120)
        assert p.returncode != 0, (flags, p.stderr[-2000:])
        assert expect in p.stderr, (flags, p.stderr[-2000:])


def test_fleet_sign_and_check_refuse_bad_documents_naming_the_field(fleet, tmp_path):
    d = fleet["dir"]
    good = {"generation": 4, "models": [
        {"name": "smollm2", "version": "2", "sites": ["plant-3"], "source": "https://c/m.gguf",
         "sha256": "a" * 64, "canary": {"steps": [5, 50], "bake": "10m"}},
        {"name": "smollm2", "version": "1", "source": "https://c/m1.gguf", "sha256": "b" * 64}]}
    env_path = tmp_path / "state.dsse.json"
    src = tmp_path / "state.json"
    src.write_text(json.dumps(good))
    p = subprocess.run([BIN, "fleet", "sign", "--key", str(d / "central.key"), str(src), "-o",
                        str(env_path)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "generation 4" in p.stderr, p.stderr
    p = subprocess.run([BIN, "fleet", "check", "--trusted-keys", str(d / "central.pub"), "--site",
                        "plant-3", "--json", str(env_path)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["generation"] == 4 and [x["ref"] for x in out["selected"]] == ["smollm2:2"], out
    assert out["selected"][0]["canary"]["steps"] == [5, 50], out
    p = subprocess.run([BIN, "fleet", "check", "--trusted-keys", str(d / "central.pub"), "--site",
                        "plant-4", str(env_path)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "smollm2:1" in p.stdout and "smollm2:2" not in p.stdout, p.stdout
    # Signed by another key: check refuses it.
    other = tmp_path / "other.dsse.json"
    p = subprocess.run([BIN, "fleet", "sign", "--key", str(d / "stranger.key"), str(src), "-o",
                        str(other)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "fleet", "check", "--trusted-keys", str(d / "central.pub"), str(other)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "no trusted key" in p.stderr, p.stderr
    # Bad documents: sign refuses them, naming the field.
    bad = [
        ({"models": []}, "generation"),
        ({"generation": 1, "models": [{"name": "smollm2", "source": "https://c/m.gguf"}]},
         "models[0].sha256"),
        ({"generation": 1, "models": [{"name": "smollm2", "source": "c/m.gguf", "sha256": "a" * 64}]},
         "models[0].source"),
        ({"generation": 1, "models": [{"name": "smollm2", "source": "https://c/m.gguf",
                                       "sha256": "a" * 64, "canary": {"steps": [50, 5]}}]},
         "models[0].canary.steps"),
        ({"generation": 1, "models": [], "extra": True}, "extra"),
    ]
    for doc, field in bad:
        src.write_text(json.dumps(doc))
        p = subprocess.run([BIN, "fleet", "sign", "--key", str(d / "central.key"), str(src)],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 1 and field in p.stderr, (doc, p.stderr)
    src.write_text("{not json")
    p = subprocess.run([BIN, "fleet", "sign", "--key", str(d / "central.key"), str(src)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "not a JSON object" in p.stderr, p.stderr
    src.write_text(json.dumps(good))
    p = subprocess.run([BIN, "fleet", "sign", "--key", str(d / "central.pub"), str(src)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "Ed25519 private key" in p.stderr, p.stderr
    p = subprocess.run([BIN, "fleet", "nosuch"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
