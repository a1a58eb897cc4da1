"""Routing with real processes on loopback: an edge Outpost with a second
Outpost as "central" (and a deliberately broken fake central for garbage)."""
import concurrent.futures as cf
import http.server
import os
import re
import signal
import socketserver
import subprocess
import threading
import time

import gguf_edit
import httpx
import pytest
from outpost_harness import MODEL, chat_body, free_port, serve, wait_upstream, yaml_file

CHAT = "/v1/chat/completions"
GREETING = re.compile(r"\b(hello|hi|hey|greet\w*|welcome|glad|nice to meet)\b", re.I)


def routing_file(central_port, extra=""):
    return yaml_file(f"""
upstreams:
  - name: hq
    kind: central
    url: http://127.0.0.1:{central_port}
    models: [central-model]
    health_check: {{interval: 200ms, timeout: 1s, unhealthy_threshold: 2, healthy_threshold: 1}}
    connect_timeout: 500ms
    first_byte_timeout: 10s  # a 360-token prefill on 2 loaded cores takes ~3 s
    total_timeout: 60s
policy:
  aliases: {{large: hq}}
  max_local_prompt_tokens: 300
{extra}
""")


def central_requests(central):
    for line in central.get("/metrics").text.splitlines():
        if line.startswith('outpost_requests_total{endpoint="/v1/chat/completions",status="200"}'):
            return float(line.split()[1])
    return 0.0


@pytest.fixture(scope="module")
def pair():
    central_port = free_port()
    # Central's sessions hold twice the edge's: what does not fit here fits there.
    with serve("--model-id", "central-model", "--parallel", "4", "--ctx-size", "2048", port=central_port) as central:
        with serve("--parallel", "1", "--queue-length", "1", "--ctx-size", "1024",
                   "--routing-file", routing_file(central_port)) as edge:
            wait_upstream(edge, True)
            yield edge, central


def test_alias_goes_central_with_route_header_and_usage(pair):
    edge, central = pair
    before = central_requests(central)
    r = edge.post(CHAT, json=chat_body(model="large"))
    assert r.status_code == 200, r.text
    assert r.headers["X-Outpost-Route"] == "central:hq"
    assert r.headers["X-Outpost-Route-Reason"] == "model:alias"
    assert r.json()["model"] == "central-model"  # answered by central
    assert central_requests(central) == before + 1
    assert edge.metric("outpost_proxied_completion_tokens_total") > 0
    local = edge.post(CHAT, json=chat_body())
    assert local.headers["X-Outpost-Route"] == "local"


def test_streaming_passes_through(pair):
    edge, _ = pair
    with httpx.stream("POST", edge.base + CHAT, json=chat_body(model="large", stream=True), timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["X-Outpost-Route"] == "central:hq"
        lines = [l for l in r.iter_lines() if l.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    assert len(lines) > 3


def test_difficult_request_goes_central_unless_restricted(pair):
    edge, central = pair
    long_prompt = "Summarise this log line. " * 60  # > 300 tokens
    before = central_requests(central)
    r = edge.post(CHAT, json=chat_body(content=long_prompt))
    assert r.headers["X-Outpost-Route"] == "central:hq"
    assert r.headers["X-Outpost-Route-Reason"] == "difficulty:prompt_tokens"
    assert central_requests(central) == before + 1
    r = edge.post(CHAT, json=chat_body(content=long_prompt), headers={"X-Data-Class": "restricted"})
    assert r.status_code == 200
    assert r.headers["X-Outpost-Route"] == "local"
    assert "kept_local" in r.headers["X-Outpost-Route-Reason"]
    assert central_requests(central) == before + 1


def test_what_does_not_fit_a_local_session_goes_central(pair):
    """A request under every routing setting's limit (a short prompt, no
    max_local_max_tokens) whose prompt plus max_tokens is more than one of the
    edge's 1,024-token sessions holds: the edge could only refuse it, so it
    goes to central like a difficult one, and comes back from there answered.
    Kept here by the client or its data class, it gets this node's 400 naming
    the limit, as before."""
    edge, central = pair
    body = chat_body(content="Say hello", max_tokens=1010)
    before = central_requests(central)
    r = edge.post(CHAT, json=body)
    assert r.status_code == 200, r.text
    assert r.headers["X-Outpost-Route"] == "central:hq", r.headers
    assert r.headers["X-Outpost-Route-Reason"] == "difficulty:max_tokens"
    assert central_requests(central) == before + 1
    answer = r.json()
    assert answer["model"] == "central-model"
    assert answer["choices"][0]["finish_reason"] == "stop", answer  # it ended by itself
    assert GREETING.search(answer["choices"][0]["message"]["content"]), answer
    for headers, reason in (({"X-Outpost-Tier": "local"}, "default"),
                            ({"X-Data-Class": "restricted"},
                             "difficulty:max_tokens;data_class:restricted;kept_local")):
        r = edge.post(CHAT, json=body, headers=headers)
        assert r.status_code == 400, r.text
        assert r.headers["X-Outpost-Route"] == "local"
        assert r.headers["X-Outpost-Route-Reason"] == reason
        err = r.json()["error"]
        assert err["code"] == "context_length_exceeded" and err["param"] == "max_tokens", err
        assert "1024" in err["message"], err
    assert central_requests(central) == before + 1
    # What fits stays here.
    r = edge.post(CHAT, json=chat_body(content="Say hello", max_tokens=900))
    assert r.status_code == 200 and r.headers["X-Outpost-Route"] == "local", r.headers


def test_infill_is_answered_here_whatever_the_routing(pair):
    edge, _ = pair
    # llama-server's native shape comes from no upstream: /infill stays here,
    # even when asked for central (this model has no FIM tokens: a 400 from
    # this node, naming the field).
    body = {"input_prefix": "def f():\n", "input_suffix": "\n"}
    r = edge.post("/infill", json=body, headers={"X-Outpost-Tier": "central"})
    assert r.status_code == 400, r.text
    assert r.headers["X-Outpost-Route"] == "local"
    assert r.headers["X-Outpost-Route-Reason"] == "local_only"
    assert r.json()["error"]["param"] == "input_suffix"
    # A model only central serves: not here, so not at all.
    r = edge.post("/infill", json={**body, "model": "large"})
    assert r.status_code == 404 and r.json()["error"]["param"] == "model", r.text
    # The OpenAI-shaped way to the same gap is routed as any completion: to
    # central for central's model (which, here, cannot fill in the middle
    # either: its 400 comes back as it came) ...
    gap = {"prompt": "def f():\n", "suffix": "\n", "max_tokens": 4}
    r = edge.post("/v1/completions", json={**gap, "model": "large"})
    assert r.headers["X-Outpost-Route"] == "central:hq", r.headers
    assert r.status_code == 400 and r.json()["error"]["param"] == "suffix", r.text
    # ... and for the local model when the client asks for central (which
    # refuses it too here; test_a_gap_this_model_cannot_fill_goes_to_a_central_that_can
    # has one that can), while kept here it is this node's 400.
    r = edge.post("/v1/completions", json=gap, headers={"X-Outpost-Tier": "central"})
    assert r.headers["X-Outpost-Route"] == "central:hq", r.headers
    assert r.status_code == 400 and r.json()["error"]["param"] == "suffix", r.text
    r = edge.post("/v1/completions", json=gap)
    assert "X-Outpost-Route" not in r.headers, r.headers
    assert r.status_code == 400 and r.json()["error"]["param"] == "suffix", r.text


def test_a_gap_this_model_cannot_fill_goes_to_a_central_that_can(tmp_path):
    """A request this node's model cannot take as asked (a `suffix`, and its
    GGUF names no fill-in-the-middle tokens) that the client sends to central
    is answered there, by a model that can (the default model with FIM markers
    named, as in test_infill.py); kept here — no tier header, or restricted
    data — it gets this node's 400 naming the field."""
    fim_model = str(tmp_path / "smollm2-fim.gguf")
    gguf_edit.copy_with_fim_markers(MODEL, fim_model)
    central_port = free_port()
    with serve("--model-id", "central-model", "--parallel", "1", "--ctx-size", "1024",
               models=[fim_model], port=central_port) as central:
        with serve("--parallel", "1", "--ctx-size", "1024",
                   "--routing-file", routing_file(central_port)) as edge:
            wait_upstream(edge, True)
            gap = {"prompt": "def add(a, b):\n    c = ", "suffix": "\n    return c\n", "max_tokens": 8,
                   "temperature": 0}
            r = edge.post("/v1/completions", json=gap, headers={"X-Outpost-Tier": "central"})
            assert r.status_code == 200, r.text
            assert r.headers["X-Outpost-Route"] == "central:hq", r.headers
            assert r.headers["X-Outpost-Route-Reason"] == "difficulty:tier"
            assert r.json()["model"] == "central-model"
            assert r.json()["usage"]["completion_tokens"] > 0, r.json()
            # The same gap asked of central directly: the same answer.
            direct = central.post("/v1/completions", json={**gap, "model": "central-model"})
            assert direct.json()["choices"][0]["text"] == r.json()["choices"][0]["text"]
            for headers in ({}, {"X-Outpost-Tier": "central", "X-Data-Class": "restricted"}):
                r = edge.post("/v1/completions", json=gap, headers=headers)
                assert r.status_code == 400, r.text
                err = r.json()["error"]
                assert err["param"] == "suffix" and "fill in the middle" in err["message"], err
            assert central.metric("outpost_requests_total", endpoint="/v1/completions", status="200") == 2


def test_restricted_never_reaches_central_under_load(pair):
    """Local is saturated (1 session, queue 1); restricted traffic must still
    never leave the node: it is queued locally or refused, never proxied."""
    edge, central = pair
    before = central_requests(central)
    long_prompt = "Patient record line. " * 60

    def restricted(i):
        body = chat_body(content=long_prompt if i % 2 else f"note {i}", max_tokens=40)
        if i % 3 == 0:
            body["model"] = "large"  # even an explicit central model
        return edge.post(CHAT, json=body, headers={"X-Data-Class": "restricted"})

    with cf.ThreadPoolExecutor(8) as ex:
        results = list(ex.map(restricted, range(16)))
    codes = {r.status_code for r in results}
    assert codes <= {200, 403, 503}, codes
    assert 403 in codes  # the "large" ones are refused
    for r in results:
        assert r.headers.get("X-Outpost-Route") in ("local", "reject"), r.headers
    assert central_requests(central) == before, "restricted data reached central"


def test_responses_api_goes_to_centrals_own_responses_endpoint(pair):
    """A /v1/responses request is routed like a chat one (alias, difficulty,
    restricted data kept local) and, sent central, reaches central's own
    /v1/responses with the body as it came; a stream ends with its last event."""
    edge, central = pair

    def central_responses():
        try:
            return central.metric("outpost_requests_total", endpoint="/v1/responses", status="200")
        except KeyError:
            return 0

    before = central_responses()
    r = edge.post("/v1/responses", json={"model": "large", "input": "Name a color.", "max_output_tokens": 8})
    assert r.status_code == 200, r.text
    assert r.headers["X-Outpost-Route"] == "central:hq"
    body = r.json()
    assert body["object"] == "response" and body["model"] == "central-model" and body["output"]
    assert central_responses() == before + 1
    with httpx.stream("POST", edge.base + "/v1/responses", timeout=60,
                      json={"model": "large", "input": "Count to five.", "max_output_tokens": 16,
                            "stream": True}) as s:
        assert s.status_code == 200 and s.headers["X-Outpost-Route"] == "central:hq"
        events = [l[len("event: "):] for l in s.iter_lines() if l.startswith("event: ")]
    assert events[0] == "response.created" and events[-1] in ("response.completed", "response.incomplete")
    assert "error" not in events and central_responses() == before + 2
    long_input = "Summarise this log line. " * 60  # > 300 tokens
    r = edge.post("/v1/responses", json={"input": long_input, "max_output_tokens": 8})
    assert r.headers["X-Outpost-Route-Reason"] == "difficulty:prompt_tokens", r.text
    r = edge.post("/v1/responses", json={"input": long_input, "max_output_tokens": 8},
                  headers={"X-Data-Class": "restricted"})
    assert r.status_code == 200 and r.headers["X-Outpost-Route"] == "local", r.text
    assert r.json()["object"] == "response"
    assert central_responses() == before + 3


@pytest.mark.parametrize("threshold,escalates", [(0.0, True), (-1000.0, False)])
def test_confidence_cascade(pair, threshold, escalates):
    """Local answers first; a mean token log-probability below the threshold
    sends the request to central, whose answer is returned (0.0: always, since
    log-probabilities are negative; -1000: never)."""
    _, central = pair
    cport = central.port
    cfg = routing_file(cport, f"  confidence_cascade: {{min_mean_logprob: {threshold}}}")
    with serve("--parallel", "1", "--ctx-size", "512", "--routing-file", cfg) as edge:
        wait_upstream(edge, True)
        before = central_requests(central)
        r = edge.post(CHAT, json=chat_body())
        assert r.status_code == 200, r.text
        mean = float(r.headers["X-Outpost-Local-Mean-Logprob"])
        assert mean < 0
        if escalates:
            assert r.headers["X-Outpost-Route"] == "central:hq"
            assert r.headers["X-Outpost-Route-Reason"] == "cascade:low_confidence"
            assert int(r.headers["X-Outpost-Local-Completion-Tokens"]) > 0  # local cost recorded
            assert r.json()["model"] == "central-model"
            assert central_requests(central) == before + 1
        else:
            assert r.headers["X-Outpost-Route"] == "local"
            assert central_requests(central) == before
        # Streaming requests never cascade.
        s = edge.post(CHAT, json=chat_body(stream=True))
        assert s.headers["X-Outpost-Route"] == "local"


@pytest.mark.parametrize("header,value", [
    ("X-Data-Class", "secret"),
    ("X-Data-Class", "Restricted"),
    ("X-Outpost-Tier", "cloud"),
    ("X-Latency-Budget-Ms", "soon"),
    ("X-Latency-Budget-Ms", "-5"),
    ("X-Latency-Budget-Ms", "0"),
    ("X-Outpost-Priority", "urgent"),
])
def test_bad_routing_headers_name_the_header(pair, header, value):
    edge, _ = pair
    r = edge.post(CHAT, json=chat_body(), headers={header: value})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == header
    assert value in err["message"]
    # ... and the server keeps serving.
    assert edge.post(CHAT, json=chat_body(max_tokens=2)).status_code == 200


def test_uplink_loss_and_recovery():
    central_port = free_port()
    cmd_extra = ("--model-id", "central-model", "--parallel", "2", "--ctx-size", "512")
    with serve(*cmd_extra, port=central_port) as central:
        with serve("--parallel", "2", "--ctx-size", "512", "--routing-file", routing_file(central_port)) as edge:
            wait_upstream(edge, True)
            assert edge.post(CHAT, json=chat_body(model="large")).status_code == 200
            assert edge.metric("outpost_upstream_up", upstream="hq", kind="central") == 1
            # Kill central; the health check notices.
            central.proc.send_signal(signal.SIGKILL)
            central.proc.wait()
            detect = wait_upstream(edge, False)
            print(f"central loss detected after {detect:.2f}s")
            assert edge.metric("outpost_upstream_up", upstream="hq", kind="central") == 0
            # Local-eligible traffic keeps working; central-only fails fast with a reason.
            ok = edge.post(CHAT, json=chat_body())
            assert ok.status_code == 200 and ok.headers["X-Outpost-Route"] == "local"
            gone = edge.post(CHAT, json=chat_body(model="large"), timeout=10)
            assert gone.status_code == 503
            assert "unavailable" in gone.json()["error"]["message"]
            assert gone.headers["X-Outpost-Route-Reason"] == "link_down"
            # A difficult request falls back to local while the link is down.
            hard = edge.post(CHAT, json=chat_body(content="Summarise this. " * 80))
            assert hard.status_code == 200 and hard.headers["X-Outpost-Route"] == "local"
            assert "link_down" in hard.headers["X-Outpost-Route-Reason"]
        # (edge closed) — recovery: central back on the same port, edge notices.
    with serve(*cmd_extra, port=central_port) as central:
        with serve("--parallel", "2", "--ctx-size", "512", "--routing-file", routing_file(central_port)) as edge:
            wait_upstream(edge, True)
            central.proc.send_signal(signal.SIGKILL)
            central.proc.wait()
            wait_upstream(edge, False)
            with serve(*cmd_extra, port=central_port):
                back = wait_upstream(edge, True)
                print(f"central recovery noticed after {back:.2f}s")
                assert edge.post(CHAT, json=chat_body(model="large")).status_code == 200


def test_hanging_central_fails_within_timeouts():
    central_port = free_port()
    with serve("--model-id", "central-model", "--parallel", "2", "--ctx-size", "512", port=central_port) as central:
        with serve("--parallel", "2", "--ctx-size", "512", "--routing-file", routing_file(central_port)) as edge:
            wait_upstream(edge, True)
            central.proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers
            try:
                t0 = time.time()
                r = edge.post(CHAT, json=chat_body(model="large"), timeout=30)
                elapsed = time.time() - t0
                print(f"hanging central answered by the edge after {elapsed:.2f}s")
                assert r.status_code == 503, r.text
                assert edge.post(CHAT, json=chat_body()).status_code == 200  # local unaffected
            finally:
                central.proc.send_signal(signal.SIGCONT)


class Garbage(http.server.BaseHTTPRequestHandler):
    mode = "json"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if Garbage.mode == "500":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")
        elif Garbage.mode == "json":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{not json")
        elif Garbage.mode == "sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'data: {"choices":[{"delta":{"content":"hal')  # truncated, no [DONE]
            self.wfile.flush()


@pytest.mark.parametrize("mode,status", [("500", 503), ("json", 502), ("sse", 200)])
def test_garbage_central_never_crashes_or_hangs(mode, status):
    Garbage.mode = mode
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Garbage)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with serve("--parallel", "2", "--ctx-size", "512",
                   "--routing-file", routing_file(srv.server_address[1])) as edge:
            wait_upstream(edge, True)
            body = chat_body(model="large", stream=(mode == "sse"))
            r = edge.post(CHAT, json=body, timeout=30)
            assert r.status_code == status, r.text
            if mode == "sse":
                assert '"error"' in r.text and r.text.rstrip().endswith("data: [DONE]")
            else:
                assert r.json()["error"]["message"]
            assert edge.post(CHAT, json=chat_body()).status_code == 200  # still serving
    finally:
        srv.shutdown()
