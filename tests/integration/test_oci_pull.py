"""`outpost model pull oci://…` against a real registry: Debian's
`docker-registry` (the CNCF distribution registry) started here on loopback,
models pushed to it with ORAS (PyPI's `oras`) and, for the shapes ORAS cannot
write (a ModelPack artifactType, an index, shards), with the distribution
API's own upload calls. Three registries share one storage: anonymous plain
HTTP, HTTPS with Basic auth (htpasswd), and token auth (a token service here
signs RS256 JWTs the registry checks against its root certificate). Faults: a
connection reset mid-blob (a proxy in front of the registry), a blob damaged
on the registry's disk, a wrong password, a missing tag, shards, tar-packed
weights."""
import base64
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse

import httpx
import pytest

from outpost_harness import BIN, MODEL

REGISTRY = shutil.which("docker-registry") or "docker-registry (scripts/bootstrap installs it)"
USER, PASSWORD = "site-7", "correct horse battery staple"
MODEL_BYTES = open(os.path.realpath(MODEL), "rb").read()
MODEL_DIGEST = "sha256:" + hashlib.sha256(MODEL_BYTES).hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenService(http.server.ThreadingHTTPServer):
    """Issues registry tokens (RS256 JWT with the signing certificate in x5c)
    to USER:PASSWORD, or anonymously when `anonymous` is set."""
    daemon_threads = True

    def __init__(self, key, cert_der, issuer, service):
        super().__init__(("127.0.0.1", 0), TokenHandler)
        self.key, self.cert_der, self.issuer, self.service = key, cert_der, issuer, service
        self.anonymous = False
        self.issued = []  # (user, scope)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def token(self, user, scope):
        now = int(time.time())
        access = []
        if scope:
            kind, name, actions = scope.split(":")
            access = [{"type": kind, "name": name, "actions": actions.split(",")}]
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {"iss": self.issuer, "sub": user, "aud": self.service, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": os.urandom(8).hex(), "access": access}
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())).encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signing_input,
                             capture_output=True, check=True).stdout
        return signing_input.decode() + "." + b64url(sig)


class TokenHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        auth = self.headers.get("Authorization", "")
        user = None
        if auth.startswith("Basic "):
            u, _, p = base64.b64decode(auth[6:]).decode().partition(":")
            user = u if (u, p) == (USER, PASSWORD) else None
            if user is None:
                self.send_error(401)
                return
        elif not self.server.anonymous:
            self.send_error(401)
            return
        scope = q.get("scope", [""])[0]
        self.server.issued.append((user, scope))
        body = json.dumps({"token": self.server.token(user or "anonymous", scope), "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ResetProxy:
    """TCP proxy in front of the registry that resets the first connection
    whose answer passes `reset_after` bytes, and before that resets the first
    `drop_first` connections as soon as their request arrives (a flaky link)."""

    def __init__(self, upstream_port, reset_after, drop_first=0):
        self.upstream, self.reset_after, self.resets = upstream_port, reset_after, 0
        self.drop_first, self.dropped = drop_first, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        if self.dropped < self.drop_first:
            self.dropped += 1
            c.recv(65536)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()  # a reset, no answer
            return
        u = socket.create_connection(("127.0.0.1", self.upstream))

        def up():
            try:
                while (d := c.recv(65536)):
                    u.sendall(d)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        sent = 0
        try:
            while (d := u.recv(65536)):
                c.sendall(d)
                sent += len(d)
                if self.resets == 0 and sent > self.reset_after:
                    self.resets += 1
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    c.shutdown(socket.SHUT_RDWR)  # wakes the other direction's recv too
                    break
        except OSError:
            pass
        c.close()
        u.close()

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def registries(tmp_path_factory):
    """Three registries over one storage, and the models pushed to it."""
    d = tmp_path_factory.mktemp("registry")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", d / "tls.key", "-out", d / "tls.crt"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=outpost-test-token-signer", "-keyout", d / "token.key", "-out", d / "token.crt"],
                   check=True, capture_output=True)
    der = subprocess.run(["openssl", "x509", "-in", d / "token.crt", "-outform", "DER"], check=True,
                         capture_output=True).stdout
    import bcrypt
    (d / "htpasswd").write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(5)).decode()}\n")
    tokens = TokenService(str(d / "token.key"), der, "outpost-test-issuer", "outpost-test")
    ports = {k: free_port() for k in ("open", "basic", "token")}
    auth = {
        "open": "",
        "basic": f"auth:\n  htpasswd:\n    realm: outpost-test\n    path: {d / 'htpasswd'}\n",
        "token": (f"auth:\n  token:\n    realm: http://127.0.0.1:{tokens.server_address[1]}/token\n"
                  f"    service: outpost-test\n    issuer: outpost-test-issuer\n"
                  f"    rootcertbundle: {d / 'token.crt'}\n"),
    }
    procs = []
    for kind, port in ports.items():
        tls = f"  tls:\n    certificate: {d / 'tls.crt'}\n    key: {d / 'tls.key'}\n" if kind == "basic" else ""
        cfg = d / f"{kind}.yml"
        cfg.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {d / 'data'}\n"
                       f"  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{tls}{auth[kind]}")
        procs.append(subprocess.Popen([REGISTRY, "serve", str(cfg)], stdout=subprocess.DEVNULL,
                                      stderr=open(d / f"{kind}.log", "w")))
    for kind, port in ports.items():
        scheme = "https" if kind == "basic" else "http"
        for _ in range(100):
            try:
                httpx.get(f"{scheme}://127.0.0.1:{port}/v2/", verify=False, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"registry {kind} did not start: {(d / f'{kind}.log').read_text()}")
    reg = type("Registries", (), {})()
    reg.dir, reg.ports, reg.tokens, reg.ca = d, ports, tokens, str(d / "tls.crt")
    reg.open = f"127.0.0.1:{ports['open']}"
    push(reg)
    yield reg
    for p in procs:
        p.terminate()
        p.wait(10)
    tokens.shutdown()


def upload(base, repo, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if httpx.head(f"{base}/v2/{repo}/blobs/{digest}").status_code == 200:
        return digest
    r = httpx.post(f"{base}/v2/{repo}/blobs/uploads/")
    assert r.status_code == 202, r.text
    loc = r.headers["Location"]
    loc = loc if loc.startswith("http") else base + loc
    r = httpx.put(loc + ("&" if "?" in loc else "?") + "digest=" + digest, content=data, timeout=120)
    assert r.status_code == 201, r.text
    return digest


def put_manifest(base, repo, tag, manifest):
    body = json.dumps(manifest).encode()
    r = httpx.put(f"{base}/v2/{repo}/manifests/{tag}", content=body,
                  headers={"Content-Type": manifest["mediaType"]})
    assert r.status_code == 201, r.text
    return "sha256:" + hashlib.sha256(body).hexdigest()


def push(reg):
    """The shapes GGUF is published in, all of the default model."""
    import oras.client
    base = "http://" + reg.open
    client = oras.client.OrasClient(hostname=reg.open, insecure=True)
    work = reg.dir / "push"
    work.mkdir()
    gguf = work / "smollm2.gguf"
    shutil.copyfile(os.path.realpath(MODEL), gguf)
    config = work / "config.json"
    config.write_text(json.dumps({"config": {"format": "gguf", "architecture": "llama"}}))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        # ORAS generic: a file titled *.gguf, the default layer type.
        client.push(files=["smollm2.gguf"], target=f"{reg.open}/oras/smollm2:q4", quiet=True)
        # Docker Model Runner: gguf.v3 layer, its own config type.
        client.push(files=["smollm2.gguf:application/vnd.docker.ai.gguf.v3"], target=f"{reg.open}/ai/smollm2:q4",
                    manifest_config="config.json:application/vnd.docker.ai.model.config.v0.1+json", quiet=True)
    finally:
        os.chdir(cwd)
    # CNCF ModelPack, behind an index beside a platform image.
    cfg = json.dumps({"descriptor": {"name": "smollm2"}, "config": {"format": "gguf"},
                      "modelfs": {"type": "layers", "diffIds": [MODEL_DIGEST]}}).encode()
    cfg_digest = upload(base, "modelpack/smollm2", cfg)
    upload(base, "modelpack/smollm2", MODEL_BYTES)
    mp = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
          "artifactType": "application/vnd.cncf.model.manifest.v1+json",
          "config": {"mediaType": "application/vnd.cncf.model.config.v1+json", "digest": cfg_digest,
                     "size": len(cfg)},
          "layers": [{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": MODEL_DIGEST,
                      "size": len(MODEL_BYTES),
                      "annotations": {"org.cncf.model.filepath": "smollm2.gguf"}}]}
    mp_digest = put_manifest(base, "modelpack/smollm2", "plain", mp)
    reg.modelpack_digest = mp_digest
    img_cfg = b'{"architecture":"amd64","os":"linux"}'
    img = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                      "digest": upload(base, "modelpack/smollm2", img_cfg), "size": len(img_cfg)},
           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": cfg_digest, "size": len(cfg)}]}
    img_digest = put_manifest(base, "modelpack/smollm2", "image", img)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": img["mediaType"], "digest": img_digest, "size": len(json.dumps(img)),
                            "platform": {"os": "linux", "architecture": "amd64"}},
                           {"mediaType": mp["mediaType"], "digest": mp_digest, "size": len(json.dumps(mp)),
                            "artifactType": mp["artifactType"]}]}
    put_manifest(base, "modelpack/smollm2", "v1", index)
    # An OpenSSF model-signing bundle (the reference tool, key mode) over the
    # model, attached to the ModelPack manifest the way registries without a
    # referrers API keep it: the fallback tag sha256-<manifest hex>.
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", reg.dir / "ec.key"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", reg.dir / "ec.key", "-pubout", "-out", reg.dir / "ec.pub"], check=True,
                   capture_output=True)
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", reg.dir / "other.key"], check=True)
    subprocess.run(["openssl", "pkey", "-in", reg.dir / "other.key", "-pubout", "-out", reg.dir / "other.pub"],
                   check=True)
    signed = reg.dir / "signed"
    signed.mkdir()
    shutil.copyfile(os.path.realpath(MODEL), signed / "model.gguf")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([os.path.join(root, ".deps", "venv", "bin", "model_signing"), "sign", "key", str(signed),
                    "--private_key", str(reg.dir / "ec.key"), "--signature", str(signed / "model.sig")],
                   check=True, capture_output=True)
    bundle = (signed / "model.sig").read_bytes()
    bundle_type = "application/vnd.dev.sigstore.bundle.v0.3+json"
    empty = upload(base, "modelpack/smollm2", b"{}")
    referrer = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": bundle_type,
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
                "layers": [{"mediaType": bundle_type, "digest": upload(base, "modelpack/smollm2", bundle),
                            "size": len(bundle)}],
                "subject": {"mediaType": mp["mediaType"], "digest": mp_digest, "size": len(json.dumps(mp))}}
    put_manifest(base, "modelpack/smollm2", "sha256-" + mp_digest[7:], referrer)
    reg.signed_dir = signed
    # Two "shards" that are one unsplit file twice (refused: the file says it is whole).
    shards = dict(mp, layers=[dict(mp["layers"][0]), dict(mp["layers"][0])])
    put_manifest(base, "modelpack/smollm2", "shards", shards)
    tarred = dict(mp, layers=[dict(mp["layers"][0], mediaType="application/vnd.cncf.model.weight.v1.tar")])
    put_manifest(base, "modelpack/smollm2", "tarred", tarred)
    # A copy of the model in its own repository whose blob the test damages on disk.
    damaged = bytearray(MODEL_BYTES)
    damaged[-100] ^= 0xFF  # another file; uploaded under its own digest, then the stored bytes are swapped
    upload(base, "damaged/smollm2", cfg)
    bad_digest = upload(base, "damaged/smollm2", bytes(damaged))
    put_manifest(base, "damaged/smollm2", "q4", dict(mp, layers=[dict(mp["layers"][0], digest=bad_digest,
                                                                        size=len(damaged))]))
    hexd = bad_digest[7:]
    blob = reg.dir / "data" / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexd[:2] / hexd / "data"
    blob.write_bytes(MODEL_BYTES)  # what the registry now serves under bad_digest: not those bytes


def push_gguf_layers(reg, work, names, target):
    """Pushes the files `names` in `work` with ORAS as Docker Model Runner
    publishes a model: one gguf.v3 layer each, in order (ORAS titles each
    layer with its path, relative to the working directory)."""
    import oras.client
    cwd = os.getcwd()
    os.chdir(work)
    try:
        oras.client.OrasClient(hostname=reg.open, insecure=True).push(
            files=[f"{n}:application/vnd.docker.ai.gguf.v3" for n in names], target=f"{reg.open}/{target}",
            quiet=True)
    finally:
        os.chdir(cwd)


def pull(store, *args, env=None, timeout=300):
    return subprocess.run([BIN, "model", "--store", str(store), "pull", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("repo,shape", [("oras/smollm2:q4", "oras"), ("ai/smollm2:q4", "docker-model-runner"),
                                        ("modelpack/smollm2:v1", "modelpack")])
def test_every_published_shape_pulls_the_same_verified_file(registries, tmp_path, repo, shape):
    p = pull(tmp_path / "m", f"oci://{registries.open}/{repo}", "smollm2:1", "--json")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["state"] == "verified" and v["digest"] == MODEL_DIGEST and v["architecture"] == "llama", v
    assert f"is a {shape} model" in p.stderr, p.stderr
    # The version names the manifest it came from, pinned by digest.
    name = repo.split(":")[0]
    assert v["source"].startswith(f"oci://{registries.open}/{name}@sha256:"), v["source"]
    if shape == "modelpack":  # followed the index to the model, not to the platform image
        assert v["source"].endswith(registries.modelpack_digest), v["source"]
    # Pinned by digest, the same answer.
    p = pull(tmp_path / "m", v["source"], "smollm2:2", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["digest"] == MODEL_DIGEST, p.stderr


def test_basic_auth_over_https_and_token_auth(registries, tmp_path):
    env = {"OUTPOST_REGISTRY_PASSWORD": PASSWORD}
    basic = f"oci://127.0.0.1:{registries.ports['basic']}/ai/smollm2:q4"
    # Without credentials, with wrong ones, without the CA: refused, saying why.
    p = pull(tmp_path / "m", basic, "smollm2:1", "--ca-file", registries.ca)
    assert p.returncode == 1 and "asks for a user and password" in p.stderr, p.stderr
    p = pull(tmp_path / "m", basic, "smollm2:1", "--ca-file", registries.ca, "--username", USER,
             env={"OUTPOST_REGISTRY_PASSWORD": "wrong"})
    assert p.returncode == 1 and f"refused user '{USER}'" in p.stderr, p.stderr
    p = pull(tmp_path / "m", basic, "smollm2:1", "--username", USER, env=env)
    assert p.returncode != 0 and "certificate" in p.stderr.lower(), p.stderr
    p = pull(tmp_path / "m", basic, "smollm2:1", "--username", USER)
    assert p.returncode == 2 and "OUTPOST_REGISTRY_PASSWORD" in p.stderr, p.stderr
    p = pull(tmp_path / "m", basic, "smollm2:1", "--ca-file", registries.ca, "--username", USER, env=env)
    assert p.returncode == 0 and "smollm2:1: verified" in p.stdout, p.stderr
    assert PASSWORD not in p.stdout + p.stderr
    # Token auth: the realm's service hands out a token for this repository's pull scope.
    token = f"oci://127.0.0.1:{registries.ports['token']}/modelpack/smollm2:v1"
    registries.tokens.anonymous = False
    p = pull(tmp_path / "m", token, "smollm2:2")
    assert p.returncode == 1 and "refused an anonymous pull" in p.stderr, p.stderr
    p = pull(tmp_path / "m", token, "smollm2:2", "--username", USER, env=env)
    assert p.returncode == 0, p.stderr
    assert (USER, "repository:modelpack/smollm2:pull") in registries.tokens.issued, registries.tokens.issued
    registries.tokens.anonymous = True  # a public repository: anonymous tokens
    p = pull(tmp_path / "m", token.replace(":v1", ":plain"), "smollm2:3")
    assert p.returncode == 0, p.stderr
    assert (None, "repository:modelpack/smollm2:pull") in registries.tokens.issued


def test_credentials_saved_by_docker_login_or_podman_login_are_used(registries, tmp_path):
    """The auth files docker, podman, skopeo and oras write: used when no
    --username is given; one kept by a credential helper is named and the pull
    goes on anonymously."""
    import base64
    host = f"127.0.0.1:{registries.ports['basic']}"
    basic = f"oci://{host}/ai/smollm2:q4"
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "config.json").write_text(json.dumps({"auths": {f"https://{host}/v1/": {"auth": auth}}}))
    env = {"DOCKER_CONFIG": str(docker), "REGISTRY_AUTH_FILE": "", "XDG_RUNTIME_DIR": str(tmp_path / "none")}
    p = pull(tmp_path / "m", basic, "smollm2:1", "--ca-file", registries.ca, env=env)
    assert p.returncode == 0 and "smollm2:1: verified" in p.stdout, p.stderr
    assert f"user '{USER}' for {host} from {docker / 'config.json'}" in p.stderr, p.stderr
    assert PASSWORD not in p.stdout + p.stderr
    # podman's auth.json through --authfile, with the token registry.
    podman = tmp_path / "auth.json"
    token_host = f"127.0.0.1:{registries.ports['token']}"
    podman.write_text(json.dumps({"auths": {token_host: {"auth": auth}}}))
    registries.tokens.anonymous = False
    try:
        p = pull(tmp_path / "m", f"oci://{token_host}/modelpack/smollm2:v1", "smollm2:2",
                 "--authfile", str(podman), env=env)
        assert p.returncode == 0, p.stderr
        assert (USER, "repository:modelpack/smollm2:pull") in registries.tokens.issued
    finally:
        registries.tokens.anonymous = True
    # Saved credentials that are wrong are refused as given ones are.
    bad = base64.b64encode(f"{USER}:wrong".encode()).decode()
    (docker / "config.json").write_text(json.dumps({"auths": {host: {"auth": bad}}}))
    p = pull(tmp_path / "m", basic, "smollm2:3", "--ca-file", registries.ca, env=env)
    assert p.returncode == 1 and f"refused user '{USER}'" in p.stderr, p.stderr
    # Kept by a credential helper Outpost does not run: named, then anonymous.
    (docker / "config.json").write_text(json.dumps({"auths": {host: {}}, "credsStore": "desktop"}))
    p = pull(tmp_path / "m", basic, "smollm2:3", "--ca-file", registries.ca, env=env)
    assert p.returncode == 1 and "docker-credential-desktop" in p.stderr, p.stderr
    assert "asks for a user and password" in p.stderr, p.stderr
    # A given --username wins over any file.
    (docker / "config.json").write_text(json.dumps({"auths": {host: {"auth": bad}}}))
    p = pull(tmp_path / "m", basic, "smollm2:3", "--ca-file", registries.ca, "--username", USER,
             env={**env, "OUTPOST_REGISTRY_PASSWORD": PASSWORD})
    assert p.returncode == 0, p.stderr


def test_a_reset_mid_blob_resumes_with_a_range(registries, tmp_path):
    proxy = ResetProxy(registries.ports["open"], reset_after=len(MODEL_BYTES) // 3)
    p = pull(tmp_path / "m", f"oci://127.0.0.1:{proxy.port}/ai/smollm2:q4", "smollm2:1", "--plain-http")
    assert p.returncode == 0, p.stderr
    assert proxy.resets == 1 and "again in" in p.stderr and "starting over" not in p.stderr, p.stderr
    v = json.loads(pull(tmp_path / "m2", f"oci://127.0.0.1:{proxy.port}/ai/smollm2:q4", "smollm2:1",
                        "--plain-http", "--json").stdout)
    assert v["digest"] == MODEL_DIGEST
    proxy.close()


def test_a_flaky_link_is_retried_for_the_manifest_too(registries, tmp_path):
    src = "oci://127.0.0.1:{}/ai/smollm2:q4"
    # Two connections reset before any answer: the manifest fetch tries again.
    proxy = ResetProxy(registries.ports["open"], reset_after=10**12, drop_first=2)
    p = pull(tmp_path / "m", src.format(proxy.port), "smollm2:1", "--plain-http")
    assert p.returncode == 0 and "smollm2:1: verified" in p.stdout, p.stderr
    assert proxy.dropped == 2 and p.stderr.count("trying again in") == 2, p.stderr
    proxy.close()
    # A link that stays down: given up after --attempts, saying how many.
    proxy = ResetProxy(registries.ports["open"], reset_after=10**12, drop_first=100)
    p = pull(tmp_path / "m", src.format(proxy.port), "smollm2:2", "--plain-http", "--attempts", "3")
    assert p.returncode == 1 and "(3 attempts)" in p.stderr and proxy.dropped == 3, p.stderr
    proxy.close()


def test_bad_artifacts_are_refused_and_nothing_is_published(registries, tmp_path):
    store = tmp_path / "m"
    o = registries.open
    rows = [
        (f"oci://{o}/ai/nothing:q4", "no such manifest", []),
        # Two layers of one file: refused before any download.
        (f"oci://{o}/modelpack/smollm2:shards", "shard 2 is shard 1 again", []),
        (f"oci://{o}/modelpack/smollm2:tarred", "packed in a tar layer", []),
        (f"oci://{o}/modelpack/smollm2@sha256:{'0' * 64}", "no such manifest", []),
        (f"oci://{o}/ai/smollm2:q4", "is not the digest of", ["--sha256", "0" * 64]),
        (f"oci://{o}/damaged/smollm2:q4", "digest mismatch", []),
        # Two tries, not the default eight (a minute of doubling waits).
        ("oci://127.0.0.1:9/ai/smollm2:q4", "could not connect (nothing listening there, or no route) (2 attempts)",
         ["--attempts", "2"]),
    ]
    for i, (src, says, extra) in enumerate(rows):
        p = pull(store, src, f"smollm2:{i + 1}", *extra, timeout=120)
        assert p.returncode == 1, (src, p.stdout, p.stderr)
        assert says in p.stderr, (src, p.stderr)
    blobs = os.listdir(store / "blobs" / "sha256")
    assert MODEL_DIGEST[7:] not in blobs and not [b for b in blobs if b.startswith(".resume")], blobs
    listing = subprocess.run([BIN, "model", "--store", str(store), "list"], capture_output=True, text=True).stdout
    assert "verified" not in listing and "active" not in listing, listing


def test_a_split_model_is_pulled_kept_signed_exported_and_served_as_its_shards(registries, tmp_path):
    """A model split by the pinned llama.cpp's gguf-split into three files,
    published as Docker Model Runner publishes shards (one gguf.v3 layer per
    file, in order) with ORAS: pulled as three blobs, loaded from the store
    by llama.cpp's own split naming, signed as one model, exported and
    imported with its shards, and serving "Paris"."""
    from outpost_harness import serve
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tmp_path / "split"
    work.mkdir()
    subprocess.run([os.path.join(root, ".deps", "llama.cpp-build", "bin", "llama-gguf-split"), "--split",
                    "--split-max-size", "40M", MODEL, str(work / "smollm2")], check=True, capture_output=True,
                   timeout=300)
    names = sorted(f for f in os.listdir(work) if f.endswith(".gguf"))
    assert names == [f"smollm2-0000{i}-of-00003.gguf" for i in (1, 2, 3)], names
    digests = ["sha256:" + hashlib.sha256((work / n).read_bytes()).hexdigest() for n in names]
    push_gguf_layers(registries, work, names, "ai/smollm2:split")

    store = tmp_path / "store"
    p = pull(store, f"oci://{registries.open}/ai/smollm2:split", "smollm2:split", "--json")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["shards"] == digests and v["digest"] == digests[0], v
    assert v["size"] == sum((work / n).stat().st_size for n in names), v
    assert "@sha256:" in v["source"]
    p = subprocess.run([BIN, "model", "--store", str(store), "verify", "smollm2:split"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    # The store's OCI layout lists the three layers in order (skopeo reads it).
    raw = json.loads(subprocess.run(["skopeo", "inspect", "--raw", f"oci:{store}:smollm2:split"], check=True,
                                    capture_output=True, text=True).stdout)
    assert [l["digest"] for l in raw["layers"]] == digests, raw

    # Local files: the first shard brings the others; a missing one, or a
    # shard that is not the first, is refused by name.
    local = tmp_path / "local"
    p = subprocess.run([BIN, "model", "--store", str(local), "import", str(work / names[1]), "smollm2:2"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "is shard 2 of 3" in p.stderr, p.stderr
    partial = tmp_path / "partial"
    partial.mkdir()
    for n in (names[0], names[2]):
        shutil.copy(work / n, partial / n)
    p = subprocess.run([BIN, "model", "--store", str(local), "import", str(partial / names[0]), "smollm2:3"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "shard 2 of 3" in p.stderr and "is missing" in p.stderr, p.stderr

    # Signed as one model: the signature names every shard; enforced on import.
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(tmp_path / "k.pem")], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(tmp_path / "k.pem"), "-pubout", "-out", str(tmp_path / "k.pub")],
                   check=True)
    p = subprocess.run([BIN, "model", "sign", str(work / names[0]), "--key", str(tmp_path / "k.pem")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "the 2 shards after it" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([BIN, "model", "--store", str(local), "import", str(work / names[0]), "smollm2:4",
                        "--signature-policy", "enforce", "--trusted-key", str(tmp_path / "k.pub")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    shown = json.loads(subprocess.run([BIN, "model", "--store", str(local), "show", "smollm2:4"],
                                      capture_output=True, text=True).stdout)
    assert shown["signature"].startswith("verified"), shown
    # The same signature does not vouch for other bytes in one shard.
    tampered = tmp_path / "tampered"
    shutil.copytree(work, tampered)
    with open(tampered / names[2], "r+b") as f:
        f.seek(-10, 2)
        f.write(b"\x00" * 10)
    p = subprocess.run([BIN, "model", "--store", str(local), "import", str(tampered / names[0]), "smollm2:5",
                        "--signature-policy", "enforce", "--trusted-key", str(tmp_path / "k.pub"),
                        "--signature", str(work / (names[0] + ".sig"))], capture_output=True, text=True)
    assert p.returncode == 1 and "shard 3 of 3" in p.stderr, p.stderr

    # Export with its shards, import elsewhere, serve.
    tar = tmp_path / "split.tar"
    p = subprocess.run([BIN, "model", "--store", str(store), "export", "smollm2:split", str(tar)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    site = tmp_path / "site"
    p = subprocess.run([BIN, "model", "--store", str(site), "import", str(tar), "smollm2:1", "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["shards"] == digests
    assert subprocess.run([BIN, "model", "--store", str(site), "activate", "smollm2:1"],
                          capture_output=True).returncode == 0
    with serve("--model-store", str(site), models=["smollm2"]) as s:
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"model": "smollm2", "prompt": "The capital of France is", "temperature": 0,
                             "max_tokens": 8})
        assert r.status_code == 200 and "Paris" in r.json()["choices"][0]["text"], r.text
        assert s.metric("outpost_model_weight_bytes") > 90e6  # every shard's weights, planned for
    # Removing it leaves no shard behind.
    p = subprocess.run([BIN, "model", "--store", str(store), "remove", "smollm2:split"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    left = set(os.listdir(store / "blobs" / "sha256"))
    assert not left & {d[7:] for d in digests}, left
    assert not os.listdir(store / "splits")


def test_a_running_server_pulls_from_the_registry_and_serves_it(registries, tmp_path):
    from outpost_harness import serve
    store = tmp_path / "m"
    assert subprocess.run([BIN, "model", "--store", str(store), "import", MODEL, "smollm2:1"],
                          capture_output=True).returncode == 0
    key = "oci-admin-key-0123456789"
    # Signatures enforced for the open registry's source only; the token
    # registry's model (signed too, same storage) is merely checked.
    policy = f"oci://{registries.open}/=enforce,*=warn"
    with serve("--model-store", str(store), "--signature-policy", policy, "--trusted-keys",
               str(registries.dir / "ec.pub"), models=["smollm2:1"], env={"OUTPOST_ADMIN_KEY": key}) as s:
        # Through the CLI's --server: the box pulls, with the credentials the
        # caller gives (a token registry: the box asks the realm for a token).
        p = subprocess.run([BIN, "model", "--server", s.base, "pull",
                            f"oci://127.0.0.1:{registries.ports['token']}/modelpack/smollm2:v1", "smollm2:2",
                            "--username", USER, "--json"], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "OUTPOST_ADMIN_KEY": key, "OUTPOST_REGISTRY_PASSWORD": PASSWORD})
        assert p.returncode == 0, p.stderr
        v = json.loads(p.stdout)
        assert v["state"] == "verified" and v["source"].endswith(registries.modelpack_digest), v
        assert v["signature"].startswith("verified: model-signing"), v
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(s.base + "/admin/models/pull", headers=auth, timeout=300,
                       json={"source": f"oci://{registries.open}/ai/smollm2:q4", "model": "smollm2:9"})
        assert r.status_code == 403 and r.json()["error"]["param"] == "signature", r.text
        assert "none found, and the policy is enforce" in r.json()["error"]["message"], r.text
        r = httpx.post(s.base + "/admin/models/activate", headers=auth, json={"model": "smollm2:2"}, timeout=300)
        assert r.status_code == 200 and r.json()["to"] == "2", r.text
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
        # The password went to the box in the request body and nowhere else.
        r = httpx.get(s.base + "/admin/models/smollm2:2", headers=auth)
        assert PASSWORD not in r.text and r.json()["state"] == "active", r.text
        assert PASSWORD not in s.log() and "is a modelpack model" in s.log(), s.log()[-2000:]


def test_signatures_are_found_checked_before_the_download_and_enforced(registries, tmp_path):
    store = tmp_path / "m"
    src = f"oci://{registries.open}/modelpack/smollm2:v1"
    trust = ["--trusted-key", str(registries.dir / "ec.pub")]
    # The bundle attached in the registry verifies: the version says by which key.
    p = pull(store, src, "smollm2:1", "--signature-policy", "enforce", *trust, "--json")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert v["signature"].startswith("verified: model-signing, key "), v
    # Signed by a key the box does not trust: refused before a byte of the
    # model moves (no partial file, no version).
    p = pull(store, src, "smollm2:2", "--signature-policy", "enforce", "--trusted-key",
             str(registries.dir / "other.pub"))
    assert p.returncode == 1 and "no trusted key" in p.stderr, p.stderr
    # No signature at all: refused under enforce, taken with a warning under warn.
    unsigned = f"oci://{registries.open}/ai/smollm2:q4"
    p = pull(tmp_path / "m2", unsigned, "smollm2:1", "--signature-policy", "enforce", *trust)
    assert p.returncode == 1 and "none found, and the policy is enforce" in p.stderr, p.stderr
    assert not [f for f in os.listdir(tmp_path / "m2" / "blobs" / "sha256") if f.startswith(".resume")]
    p = pull(tmp_path / "m2", unsigned, "smollm2:1", *trust, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["signature"] == "unsigned (policy warn)", p.stdout
    assert "signature unsigned (policy warn)" in p.stderr, p.stderr
    listing = subprocess.run([BIN, "model", "--store", str(store), "list"], capture_output=True, text=True).stdout
    assert "smollm2:2" not in listing, listing
    # A local file: model.sig beside it is found; a tampered copy fails.
    p = subprocess.run([BIN, "model", "--store", str(store), "import", str(registries.signed_dir / "model.gguf"),
                        "smollm2:3", "--signature-policy", "enforce", *trust, "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["signature"].startswith("verified"), p.stderr
    other = tmp_path / "copy"
    other.mkdir()
    data = bytearray(MODEL_BYTES)
    data[-1] ^= 1
    (other / "model.gguf").write_bytes(bytes(data))
    shutil.copyfile(registries.signed_dir / "model.sig", other / "model.sig")
    p = subprocess.run([BIN, "model", "--store", str(store), "import", str(other / "model.gguf"), "smollm2:4",
                        "--signature-policy", "enforce", *trust], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "for other bytes" in p.stderr, p.stderr
    listing = subprocess.run([BIN, "model", "--store", str(store), "list"], capture_output=True, text=True).stdout
    assert "smollm2:4" in listing and "failed" in listing, listing  # copied, never to be served
    # Outpost's own Ed25519 envelope, written by `outpost model sign`.
    own = tmp_path / "own"
    own.mkdir()
    shutil.copyfile(os.path.realpath(MODEL), own / "smollm2.gguf")
    p = subprocess.run([BIN, "model", "sign", str(own / "smollm2.gguf"), "--key", str(registries.dir / "other.key")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and (own / "smollm2.gguf.sig").exists(), p.stderr
    p = subprocess.run([BIN, "model", "--store", str(store), "import", str(own / "smollm2.gguf"), "smollm2:5",
                        "--signature-policy", "enforce", "--trusted-key", str(registries.dir / "other.pub"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["signature"].startswith("verified: dsse"), p.stderr


def test_a_model_exported_by_outpost_is_published_with_skopeo_and_pulled_back(registries, tmp_path):
    """Outpost's own models are ModelPack: an export, copied into the registry
    by skopeo, pulls back on another box as the same file and manifest."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert subprocess.run([BIN, "model", "--store", str(a), "import", MODEL, "smollm2:7"],
                          capture_output=True).returncode == 0
    p = subprocess.run([BIN, "model", "--store", str(a), "export", "smollm2:7", str(tmp_path / "m.tar")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", f"oci-archive:{tmp_path / 'm.tar'}",
                        f"docker://{registries.open}/outpost/smollm2:7"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    p = pull(b, f"oci://{registries.open}/outpost/smollm2:7", "smollm2:7", "--json")
    assert p.returncode == 0 and "is a modelpack model" in p.stderr, p.stderr
    v = json.loads(p.stdout)
    exported = json.loads(subprocess.run([BIN, "model", "--store", str(a), "show", "smollm2:7"],
                                         capture_output=True, text=True).stdout)
    assert v["digest"] == exported["digest"] == MODEL_DIGEST
    assert v["source"].endswith(exported["manifest"]), (v["source"], exported["manifest"])  # same manifest bytes


def test_end_to_end_registry_pull_validate_canary_promote(registries, tmp_path):
    """The path a new version takes to a site, with real files: a Q8_0 copy of
    the default model (re-quantized by the pinned llama.cpp) published with
    ORAS, pulled by digest, validated against the active version, given a
    canary share and promoted by the box itself."""
    from outpost_harness import serve
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tmp_path / "publish"
    work.mkdir()
    subprocess.run([os.path.join(root, ".deps", "llama.cpp-build", "bin", "llama-quantize"), "--allow-requantize",
                    MODEL, str(work / "smollm2-q8.gguf"), "Q8_0"], check=True, capture_output=True, timeout=300)
    push_gguf_layers(registries, work, ["smollm2-q8.gguf"], "ai/smollm2:q8")
    store = tmp_path / "store"
    assert subprocess.run([BIN, "model", "--store", str(store), "import", MODEL, "smollm2:1"],
                          capture_output=True).returncode == 0
    assert subprocess.run([BIN, "model", "--store", str(store), "activate", "smollm2:1"],
                          capture_output=True).returncode == 0
    p = pull(store, f"oci://{registries.open}/ai/smollm2:q8", "smollm2:2", "--json")
    assert p.returncode == 0, p.stderr
    pinned = json.loads(p.stdout)["source"]
    assert "@sha256:" in pinned
    p = subprocess.run([BIN, "model", "--store", str(store), "validate", "smollm2:2"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0 and "validation passed" in p.stdout, p.stdout + p.stderr
    key = "e2e-admin-key-0123456789"
    with serve("--model-store", str(store), "--parallel", "4", models=["smollm2"],
               env={"OUTPOST_ADMIN_KEY": key}) as s:
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(s.base + "/admin/models/canary", headers=auth, timeout=300,
                       json={"model": "smollm2:2", "steps": [50], "bake": "2s", "min_requests": 3,
                             "max_ttft_ratio": 100})
        assert r.status_code == 200 and r.json()["percent"] == 50, r.text
        deadline = time.time() + 120
        n = 0
        while time.time() < deadline and httpx.get(s.base + "/admin/models", headers=auth).json()["canaries"]:
            r = httpx.post(s.base + "/v1/chat/completions", timeout=120,
                           json={"model": "smollm2", "user": f"user-{n}", "max_tokens": 4,
                                 "messages": [{"role": "user", "content": "Hi"}]})
            assert r.status_code == 200, r.text
            n += 1
        listing = httpx.get(s.base + "/admin/models", headers=auth).json()
        assert listing["canaries"] == [], listing["canaries"]
        versions = {v["ref"]: v for v in listing["versions"]}
        assert versions["smollm2:2"]["state"] == "active", versions["smollm2:2"]
        assert versions["smollm2:2"]["source"] == pinned and versions["smollm2:2"]["validation"]["passed"]
        r = httpx.post(s.base + "/v1/completions", timeout=120,
                       json={"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})
        assert "Paris" in r.json()["choices"][0]["text"], r.text
        assert 'decision="promote"} 1' in httpx.get(s.base + "/metrics").text


def test_end_to_end_a_worse_version_is_caught_in_the_shadow_and_rolled_back_live(registries, tmp_path):
    """The other ending, with real files: a copy of the default model whose
    metadata names " Paris" as its end-of-sequence token (a packaging bug: it
    loads, warms up and greets, but answers nothing where the answer is
    "Paris"), published with ORAS and pulled by digest. Validation fails it.
    Forced into a canary with a shadow phase, it is judged on mirrored
    requests and aborted before any user sees it; forced into a live canary,
    it is rolled back by the box after its first step, on its empty answers.
    The active version is never touched."""
    import gguf_edit
    from outpost_harness import serve
    work = tmp_path / "publish"
    work.mkdir()
    bad = work / "smollm2-eos-bug.gguf"
    bad.write_bytes(MODEL_BYTES)
    gguf_edit.set_uint32(str(bad), "tokenizer.ggml.eos_token_id", gguf_edit.token_id(str(bad), "\u0120Paris"))
    push_gguf_layers(registries, work, [bad.name], "ai/smollm2:eos-bug")
    store = tmp_path / "store"
    for args in (["import", MODEL, "smollm2:1"], ["activate", "smollm2:1"]):
        assert subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True).returncode == 0
    p = pull(store, f"oci://{registries.open}/ai/smollm2:eos-bug", "smollm2:2")
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "model", "--store", str(store), "validate", "smollm2:2"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 1 and "FAIL" in p.stdout, p.stdout + p.stderr

    key = "e2e-admin-key-0123456789"
    with serve("--model-store", str(store), "--parallel", "4", models=["smollm2"],
               env={"OUTPOST_ADMIN_KEY": key}) as s:
        auth = {"Authorization": f"Bearer {key}"}
        plan = {"model": "smollm2:2", "steps": [50], "bake": "2s", "min_requests": 3, "max_ttft_ratio": 100}

        def ask(n):
            r = httpx.post(s.base + "/v1/completions", timeout=120,
                           json={"model": "smollm2", "user": f"user-{n}", "prompt": "The capital of France is",
                                 "temperature": 0, "max_tokens": 6})
            assert r.status_code == 200, r.text
            return r.json()["choices"][0]["text"]

        def until_ended():
            answers, deadline = [], time.time() + 120
            while time.time() < deadline and httpx.get(s.base + "/admin/models", headers=auth).json()["canaries"]:
                answers.append(ask(len(answers)))
            return answers

        def version():
            return {v["ref"]: v for v in httpx.get(s.base + "/admin/models", headers=auth).json()["versions"]}["smollm2:2"]

        r = httpx.post(s.base + "/admin/models/canary", headers=auth, json=dict(plan, shadow=100), timeout=300)
        assert r.status_code == 400 and "failed its validation" in r.json()["error"]["message"], r.text
        r = httpx.post(s.base + "/admin/models/canary", headers=auth, json=dict(plan, shadow=100, force=True),
                       timeout=300)
        assert r.status_code == 200, r.text
        assert r.json()["phase"] == "shadow" and r.json()["percent"] == 0 and r.json()["shadow_percent"] == 100
        ready = httpx.get(s.base + "/ready").json()
        assert "shadow" in json.dumps(ready), ready
        answers = until_ended()
        # No user ever got the candidate: every answer is the active version's.
        assert answers and all("Paris" in a for a in answers), answers
        v = version()
        assert v["state"] == "retired" and "empty answers" in v["error"], v
        m = httpx.get(s.base + "/metrics").text
        assert 'decision="abort"} 1' in m, [l for l in m.splitlines() if "canary_decisions" in l]

        # Live: half of the conversations get it until the box rolls it back.
        r = httpx.post(s.base + "/admin/models/canary", headers=auth, json=dict(plan, force=True), timeout=300)
        assert r.status_code == 200 and r.json()["phase"] == "live" and r.json()["percent"] == 50, r.text
        answers = until_ended()
        assert any(a == "" for a in answers), answers  # the canary's users saw its empty answers ...
        v = version()
        assert v["state"] == "retired" and "canary aborted: empty answers" in v["error"], v
        assert 'decision="abort"} 2' in httpx.get(s.base + "/metrics").text
        # ... and after the rollback nobody does: the active version serves everyone.
        assert all("Paris" in ask(1000 + n) for n in range(6))
        listing = httpx.get(s.base + "/admin/models", headers=auth).json()
        assert {v["ref"]: v["state"] for v in listing["versions"]}["smollm2:1"] == "active"


def test_a_fleet_desired_state_published_as_an_oci_artifact_is_followed(registries, tmp_path):
    """The desired state as an OCI artifact (pushed with ORAS beside the
    models): the box reads the signed document from the registry, pulls the
    model it names by manifest digest from the same registry and activates
    it; a new push under the same tag is a new document (its manifest digest
    is the ETag)."""
    import oras.client
    from outpost_harness import serve
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(tmp_path / "central.key")],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(tmp_path / "central.key"), "-pubout", "-out",
                    str(tmp_path / "central.pub")], check=True, capture_output=True)
    r = httpx.get(f"http://{registries.open}/v2/oras/smollm2/manifests/q4",
                  headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    assert r.status_code == 200, r.text
    model_digest = r.headers["Docker-Content-Digest"]
    store = tmp_path / "store"
    assert subprocess.run([BIN, "model", "--store", str(store), "import", MODEL, "smollm2:1"],
                          capture_output=True).returncode == 0
    assert subprocess.run([BIN, "model", "--store", str(store), "activate", "smollm2:1"],
                          capture_output=True).returncode == 0

    def publish(generation, entries):
        doc = tmp_path / "state.json"
        doc.write_text(json.dumps({"generation": generation, "models": entries}))
        p = subprocess.run([BIN, "fleet", "sign", "--key", str(tmp_path / "central.key"), str(doc), "-o",
                            str(tmp_path / "state.dsse.json")], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            oras.client.OrasClient(hostname=registries.open, insecure=True).push(
                files=["state.dsse.json:application/vnd.outpost.desired-state.v1+json"],
                target=f"{registries.open}/fleet/state:plant-3", quiet=True)
        finally:
            os.chdir(cwd)
        r = httpx.get(f"http://{registries.open}/v2/fleet/state/manifests/plant-3",
                      headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        return r.headers["Docker-Content-Digest"]

    doc_digest = publish(1, [{"name": "smollm2", "source": f"oci://{registries.open}/oras/smollm2@{model_digest}"}])
    key = "fleet-oci-admin-key-0123456789"
    auth = {"Authorization": f"Bearer {key}"}
    with serve("--model-store", str(store), "--state-dir", str(tmp_path / "state"),
               "--fleet-url", f"oci://{registries.open}/fleet/state:plant-3", "--fleet-interval", "1s",
               "--fleet-trusted-keys", str(tmp_path / "central.pub"),
               models=["smollm2"], env={"OUTPOST_ADMIN_KEY": key}) as s:
        want = "sha256-" + model_digest[7:19]

        def observed():
            return httpx.get(s.base + "/admin/fleet", headers=auth, timeout=30).json()
        deadline = time.time() + 240
        o = observed()
        while time.time() < deadline and o.get("observed_generation") != 1:
            time.sleep(0.5)
            o = observed()
        assert o.get("observed_generation") == 1, o
        assert o["document"]["etag"] == doc_digest, o
        assert o["models"][0]["desired"] == f"smollm2:{want}" and o["models"][0]["phase"] == "converged", o
        assert s.ready()["models"][0]["version"] == want
        versions = {v["ref"]: v for v in httpx.get(s.base + "/admin/models", headers=auth).json()["versions"]}
        assert versions[f"smollm2:{want}"]["source"].endswith(f"oras/smollm2@{model_digest}")
        # Generation 2 under the same tag: back to version 1.
        publish(2, [{"name": "smollm2", "version": "1", "source": MODEL,
                     "sha256": versions["smollm2:1"]["digest"][7:]}])
        deadline = time.time() + 120
        while time.time() < deadline and observed().get("observed_generation") != 2:
            time.sleep(0.5)
        assert observed()["observed_generation"] == 2, observed()
        assert s.ready()["models"][0]["version"] == "1"
