"""`outpost model` and its store, as a user drives them: a real GGUF in, an OCI
image layout that skopeo reads and copies with the digests unchanged, a
pinned sha256, damaged and foreign files refused with the reason kept, a
kill -9 in the middle of an import leaving a consistent store, a file changed
on disk caught by verify, and a table of bad input."""
import json
import os
import subprocess
import time

import pytest

from outpost_harness import BIN, MODEL

SHA = None


def model(store, *args, check=False):
    p = subprocess.run([BIN, "model", "--store", str(store), *args], capture_output=True, text=True,
                       timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def sha256_of(path):
    return subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True).stdout.split()[0]


def test_import_publishes_an_oci_layout_that_skopeo_reads(tmp_path):
    store = tmp_path / "models"
    digest = sha256_of(os.path.realpath(MODEL))
    p = model(store, "import", MODEL, "smollm2:1", "--sha256", digest, "--json", check=True)
    v = json.loads(p.stdout)
    assert v["state"] == "verified" and v["digest"] == "sha256:" + digest
    assert v["architecture"] == "llama" and v["params"] > 100_000_000
    assert "importing" in p.stderr and "(100%)" in p.stderr  # progress on stderr
    # The layout: oci-layout, index.json naming the version, the blob under its digest.
    assert json.loads((store / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((store / "index.json").read_text())
    assert [m["annotations"]["org.opencontainers.image.ref.name"] for m in index["manifests"]] == ["smollm2:1"]
    assert (store / "blobs" / "sha256" / digest).stat().st_size == os.path.getsize(os.path.realpath(MODEL))
    # skopeo (Debian) reads it as a ModelPack artifact and copies it unchanged.
    raw = json.loads(subprocess.run(["skopeo", "inspect", "--raw", f"oci:{store}:smollm2:1"],
                                    capture_output=True, text=True, check=True).stdout)
    assert raw["artifactType"] == "application/vnd.cncf.model.manifest.v1+json"
    assert raw["layers"][0]["mediaType"] == "application/vnd.cncf.model.weight.v1.raw"
    assert raw["layers"][0]["digest"] == "sha256:" + digest
    copy = tmp_path / "copy"
    subprocess.run(["skopeo", "copy", f"oci:{store}:smollm2:1", f"oci:{copy}:x"], capture_output=True, check=True)
    assert (copy / "blobs" / "sha256" / digest).exists()
    assert json.loads((copy / "index.json").read_text())["manifests"][0]["digest"] == v["manifest"]
    # A second version of the same bytes shares the blob; list shows both.
    model(store, "import", MODEL, "smollm2:2", check=True)
    listed = json.loads(model(store, "list", "--json", check=True).stdout)
    assert [(m["ref"], m["state"]) for m in listed] == [("smollm2:1", "verified"), ("smollm2:2", "verified")]
    assert model(store, "verify", "smollm2:1").returncode == 0
    # Removing one keeps the shared blob; removing both frees it.
    model(store, "remove", "smollm2:1", check=True)
    assert (store / "blobs" / "sha256" / digest).exists()
    model(store, "remove", "smollm2:2", check=True)
    assert not (store / "blobs" / "sha256" / digest).exists()
    assert json.loads((store / "index.json").read_text())["manifests"] == []


def test_damaged_and_foreign_files_are_refused_with_the_reason_kept(tmp_path):
    store = tmp_path / "models"
    real = os.path.realpath(MODEL)
    truncated = tmp_path / "half.gguf"
    with open(real, "rb") as f:
        truncated.write_bytes(f.read(os.path.getsize(real) // 2))
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n" * 100)
    cases = [
        (["import", MODEL, "m:wrongsum", "--sha256", "0" * 64], "digest mismatch"),
        (["import", str(truncated), "m:truncated"], "not a usable GGUF"),
        (["import", str(text), "m:text"], "not a usable GGUF"),
    ]
    for args, words in cases:
        p = model(store, *args)
        assert p.returncode == 1 and words in p.stderr, (args, p.stderr)
    states = {m["ref"]: (m["state"], m.get("error", "")) for m in json.loads(model(store, "list", "--json").stdout)}
    assert states["m:wrongsum"][0] == "failed" and "digest mismatch" in states["m:wrongsum"][1]
    assert states["m:truncated"][0] == "failed" and states["m:text"][0] == "failed"
    # Nothing half-written is left, and nothing failed is published.
    assert not [f for f in os.listdir(store / "blobs" / "sha256") if f.startswith(".partial")]
    assert json.loads((store / "index.json").read_text())["manifests"] == []
    # A failed version may be imported again.
    assert model(store, "import", MODEL, "m:wrongsum").returncode == 0


def test_kill_9_during_an_import_leaves_a_consistent_store(tmp_path):
    store = tmp_path / "models"
    model(store, "import", MODEL, "good:1", check=True)
    big = tmp_path / "big.gguf"
    with open(big, "wb") as f:  # large enough that the copy takes a while
        f.truncate(600 << 20)
    proc = subprocess.Popen([BIN, "model", "--store", str(store), "import", str(big), "big:1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    blobs = store / "blobs" / "sha256"
    deadline = time.time() + 30
    while not [f for f in os.listdir(blobs) if f.startswith(".partial")]:
        assert proc.poll() is None and time.time() < deadline, "the import ended before it could be killed"
        time.sleep(0.002)
    proc.kill()
    proc.wait()
    listed = {m["ref"]: m for m in json.loads(model(store, "list", "--json", check=True).stdout)}
    assert listed["big:1"]["state"] == "failed" and "interrupted" in listed["big:1"]["error"]
    assert listed["good:1"]["state"] == "verified"
    assert not [f for f in os.listdir(blobs) if f.startswith(".partial")]
    assert model(store, "verify", "good:1").returncode == 0
    subprocess.run(["skopeo", "inspect", "--raw", f"oci:{store}:good:1"], capture_output=True, check=True)


def test_verify_catches_a_file_changed_on_disk(tmp_path):
    store = tmp_path / "models"
    v = json.loads(model(store, "import", MODEL, "m:1", "--json", check=True).stdout)
    blob = store / "blobs" / "sha256" / v["digest"][len("sha256:"):]
    with open(blob, "r+b") as f:
        f.seek(os.path.getsize(blob) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    p = model(store, "verify", "m:1")
    assert p.returncode == 1 and "changed on disk" in p.stderr and v["digest"] in p.stderr
    assert json.loads(model(store, "show", "m:1").stdout)["state"] == "failed"


@pytest.mark.parametrize("args,code,words", [
    (["import", MODEL, "NoCaps:1"], 2, "model name 'NoCaps'"),
    (["import", MODEL, "noversion"], 2, "NAME:VERSION"),
    (["import", MODEL, "m:-bad"], 2, "model version '-bad'"),
    (["import", MODEL, "m:1", "--sha256", "xyz"], 1, "--sha256 must be 64"),
    (["import", "/nonexistent.gguf", "m:1"], 1, "no model file at /nonexistent.gguf"),
    (["show", "m:404"], 1, "no model m:404"),
    (["verify", "m:404"], 1, "no model m:404"),
    (["remove", "m:404"], 1, "no model m:404"),
    (["frobnicate"], 2, "frobnicate"),
    ([], 2, "subcommand"),
])
def test_bad_model_commands(tmp_path, args, code, words):
    p = model(tmp_path / "models", *args)
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert words in p.stderr + p.stdout


def test_one_admin_operation_at_a_time(tmp_path):
    store = tmp_path / "models"
    big = tmp_path / "big.gguf"
    with open(big, "wb") as f:
        f.truncate(600 << 20)
    proc = subprocess.Popen([BIN, "model", "--store", str(store), "import", str(big), "big:1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not (store / "store.db").exists():
            assert time.time() < deadline
            time.sleep(0.01)
        p = model(store, "list")
        assert p.returncode == 1 and "another process is using it" in p.stderr
    finally:
        proc.wait(timeout=120)


def test_export_and_import_move_a_version_between_air_gapped_stores(tmp_path):
    a, b = tmp_path / "site-a", tmp_path / "site-b"
    v = json.loads(model(a, "import", MODEL, "smollm2:1", "--json", check=True).stdout)
    tar = tmp_path / "smollm2-1.tar"
    p = model(a, "export", "smollm2:1", str(tar), check=True)
    assert "exporting" in p.stderr and "(100%)" in p.stderr
    names = subprocess.run(["tar", "-tf", str(tar)], capture_output=True, text=True, check=True).stdout.split()
    assert names[:2] == ["oci-layout", "index.json"] and len(names) == 5
    # GNU tar and skopeo read it; the other store takes it with the manifest digest unchanged.
    subprocess.run(["skopeo", "copy", f"oci-archive:{tar}", f"oci:{tmp_path / 'via-skopeo'}:x"],
                   capture_output=True, check=True)
    w = json.loads(model(b, "import", str(tar), "--json", check=True).stdout)
    assert (w["ref"], w["state"], w["manifest"], w["digest"]) == ("smollm2:1", "verified", v["manifest"], v["digest"])
    assert model(b, "verify", "smollm2:1").returncode == 0
    # An archive skopeo wrote imports too, under the name it carries or one given.
    sk = tmp_path / "skopeo.tar"
    subprocess.run(["skopeo", "copy", f"oci:{a}:smollm2:1", f"oci-archive:{sk}:smollm2:7"], capture_output=True,
                   check=True)
    assert json.loads(model(b, "import", str(sk), "--json", check=True).stdout)["ref"] == "smollm2:7"
    assert json.loads(model(b, "import", str(sk), "other:1", "--json", check=True).stdout)["ref"] == "other:1"


def test_damaged_archives_are_refused_and_leave_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    model(a, "import", MODEL, "m:1", check=True)
    tar = tmp_path / "m.tar"
    model(a, "export", "m:1", str(tar), check=True)
    flipped = tmp_path / "flipped.tar"
    data = bytearray(tar.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the GGUF blob
    flipped.write_bytes(bytes(data))
    cut = tmp_path / "cut.tar"
    cut.write_bytes(tar.read_bytes()[: len(data) // 2])
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"this is not a tar archive\n" * 100)
    for path, words in [(flipped, "does not match its digest"), (cut, "truncated"),
                        (junk, "not a tar archive")]:
        p = model(b, "import", str(path), "m:1")
        assert p.returncode == 1 and words in p.stderr, (path, p.stderr)
    assert not [f for f in os.listdir(b / "blobs" / "sha256")]
    assert json.loads(model(b, "list", "--json").stdout) == []
    p = model(b, "import", str(tar), "m:1", "--sha256", "0" * 64)
    assert p.returncode == 2 and "--sha256 is for a GGUF file" in p.stderr
    p = model(a, "export", "m:404", str(tmp_path / "x.tar"))
    assert p.returncode == 1 and "no model m:404" in p.stderr


def test_an_archive_carries_the_signature_and_activation_checks_it_again(tmp_path):
    """The signature a version was taken with travels in its export (an OCI
    referrer of the manifest), is checked under the importing site's policy,
    and is checked again when a server activates the version: a key removed
    from trusted_keys since the import refuses it."""
    import httpx
    from outpost_harness import serve
    for who in ("central", "other"):
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(tmp_path / f"{who}.key")],
                       check=True, capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", str(tmp_path / f"{who}.key"), "-pubout", "-out",
                        str(tmp_path / f"{who}.pub")], check=True, capture_output=True)
    gguf = tmp_path / "smollm2.gguf"
    gguf.write_bytes(open(os.path.realpath(MODEL), "rb").read())
    p = subprocess.run([BIN, "model", "sign", str(gguf), "--key", str(tmp_path / "central.key")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    enforce = lambda who: ["--signature-policy", "enforce", "--trusted-key", str(tmp_path / f"{who}.pub")]
    a = tmp_path / "site-a"
    v = json.loads(model(a, "import", str(gguf), "smollm2:1", *enforce("central"), "--json", check=True).stdout)
    assert v["signature"].startswith("verified"), v
    tar = tmp_path / "signed.tar"
    model(a, "export", "smollm2:1", str(tar), check=True)
    names = subprocess.run(["tar", "-tf", str(tar)], capture_output=True, text=True, check=True).stdout.split()
    assert len(names) == 8, names  # + the referrer manifest, its empty config, the signature
    index = json.loads(subprocess.run(["tar", "-xOf", str(tar), "index.json"], capture_output=True,
                                      check=True).stdout)
    assert [m.get("artifactType") for m in index["manifests"]] == [
        "application/vnd.cncf.model.manifest.v1+json", "application/vnd.dsse.envelope.v1+json"], index
    referrer = json.loads(subprocess.run(["tar", "-xOf", str(tar), "blobs/sha256/" + index["manifests"][1]["digest"][7:]],
                                         capture_output=True, check=True).stdout)
    assert referrer["subject"]["digest"] == v["manifest"], referrer
    # skopeo still reads the model out of it by name.
    subprocess.run(["skopeo", "copy", f"oci-archive:{tar}:smollm2:1", f"oci:{tmp_path / 'via-skopeo'}:x"],
                   capture_output=True, check=True)
    # The other site: its policy decides.
    b = tmp_path / "site-b"
    w = json.loads(model(b, "import", str(tar), *enforce("central"), "--json", check=True).stdout)
    assert w["signature"].startswith("verified") and w["manifest"] == v["manifest"], w
    p = model(tmp_path / "site-c", "import", str(tar), *enforce("other"))
    assert p.returncode == 1 and "no trusted key" in p.stderr, p.stderr
    assert json.loads(model(tmp_path / "site-c", "show", "smollm2:1").stdout)["state"] == "failed"
    model(tmp_path / "plain", "import", MODEL, "smollm2:1", "--signature-policy", "off", check=True)
    model(tmp_path / "plain", "export", "smollm2:1", str(tmp_path / "plain.tar"), check=True)
    p = model(tmp_path / "site-d", "import", str(tmp_path / "plain.tar"), *enforce("central"))
    assert p.returncode == 1 and "none found" in p.stderr, p.stderr
    # At activation: site b serves another version and activates the signed one.
    model(b, "import", MODEL, "smollm2:0", "--signature-policy", "off", check=True)
    model(b, "activate", "smollm2:0", check=True)
    key = "store-admin-key-0123456789"
    auth = {"Authorization": f"Bearer {key}"}
    for trusted, status in (("other", 403), ("central", 200)):
        with serve("--model-store", str(b), "--signature-policy", "enforce", "--trusted-keys",
                   str(tmp_path / f"{trusted}.pub"), models=["smollm2"], env={"OUTPOST_ADMIN_KEY": key}) as s:
            r = httpx.post(s.base + "/admin/models/activate", headers=auth, json={"model": "smollm2:1"},
                           timeout=300)
            assert r.status_code == status, r.text
            if status == 403:
                assert "at activation" in r.json()["error"]["message"], r.text
                assert s.ready()["models"][0]["version"] == "0"
            else:
                assert r.json()["to"] == "1", r.text
