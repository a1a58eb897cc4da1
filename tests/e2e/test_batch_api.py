"""End-to-end: OpenAI's Files and Batch APIs through the official openai client,
against a live outpost serve on the default model — a batch runs to its output
file, its answers make sense, it can be cancelled, and a kill -9 half-way
through loses no finished line and runs none twice."""
import json
import os
import signal
import sqlite3
import time

import httpx
import openai
import pytest

from outpost_harness import serve

FRANCE = "The capital of France is"


def lines(n, prompt=lambda i: FRANCE, max_tokens=8, url="/v1/completions", extra=None):
    out = []
    for i in range(n):
        body = {"prompt": prompt(i), "max_tokens": max_tokens, "temperature": 0}
        if url == "/v1/chat/completions":
            body = {"messages": [{"role": "user", "content": prompt(i)}], "max_tokens": max_tokens,
                    "temperature": 0}
        if url == "/v1/responses":
            body = {"instructions": "You are a helpful assistant.", "input": prompt(i),
                    "max_output_tokens": max_tokens, "temperature": 0}
        body.update((extra or {}).get(i, {}))
        out.append(json.dumps({"custom_id": f"line-{i}", "method": "POST", "url": url, "body": body}))
    return ("\n".join(out) + "\n").encode()


def client_for(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="not-needed", max_retries=0)


def wait_for(client, batch_id, statuses, timeout=600):
    deadline = time.time() + timeout
    while True:
        b = client.batches.retrieve(batch_id)
        if b.status in statuses:
            return b
        assert time.time() < deadline, f"batch still {b.status} after {timeout}s: {b}"
        time.sleep(0.5)


def jsonl(text):
    return [json.loads(x) for x in text.splitlines() if x.strip()]


@pytest.fixture(scope="module")
def batch_server(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    with serve("--parallel", "4", "--ctx-size", "512", "--batch-parallel", "4",
               "--state-dir", str(state)) as s:
        yield s


def test_a_batch_runs_through_the_official_client_to_answers_that_make_sense(batch_server):
    client = client_for(batch_server)
    # Twelve good lines (a few about France), one with a bad body.
    prompts = lambda i: FRANCE if i % 4 == 0 else f"Count from {i} to {i + 3}:"  # noqa: E731
    data = lines(13, prompts, extra={12: {"max_tokens": -5}})
    f = client.files.create(file=("questions.jsonl", data), purpose="batch")
    assert f.object == "file" and f.purpose == "batch" and f.bytes == len(data)
    assert f.filename == "questions.jsonl"
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions",
                              completion_window="24h", metadata={"job": "e2e"})
    assert b.status == "in_progress" and b.request_counts.total == 13
    assert b.metadata == {"job": "e2e"}
    # Interactive requests are served while the batch runs.
    r = client.completions.create(model=client.models.list().data[0].id, prompt=FRANCE, max_tokens=8, temperature=0)
    assert "Paris" in r.choices[0].text
    done = wait_for(client, b.id, {"completed", "failed", "expired", "cancelled"})
    assert done.status == "completed", done
    assert done.request_counts.completed == 12 and done.request_counts.failed == 1
    assert done.completed_at >= done.in_progress_at >= done.created_at
    assert done.output_file_id and done.error_file_id
    assert b.id in [x.id for x in client.batches.list(limit=10).data]

    out = jsonl(client.files.content(done.output_file_id).text)
    assert sorted(o["custom_id"] for o in out) == sorted(f"line-{i}" for i in range(12))
    for o in out:
        assert o["error"] is None and o["response"]["status_code"] == 200, o
        body = o["response"]["body"]
        assert body["object"] == "text_completion"
        assert o["response"]["request_id"] == body["id"]
        assert body["usage"]["completion_tokens"] > 0
        i = int(o["custom_id"].split("-")[1])
        if i % 4 == 0:
            assert "Paris" in body["choices"][0]["text"], o
    err = jsonl(client.files.content(done.error_file_id).text)
    assert [e["custom_id"] for e in err] == ["line-12"]
    assert err[0]["response"]["status_code"] == 400
    assert err[0]["response"]["body"]["error"]["param"] == "max_tokens"
    assert batch_server.metric("outpost_batch_lines_total", outcome="ok") >= 12
    assert batch_server.metric("outpost_batch_lines_total", outcome="error") >= 1
    assert batch_server.metric("outpost_batch_lines_running") == 0
    output = client.files.retrieve(done.output_file_id)
    assert output.purpose == "batch_output"
    assert output.expires_at is None  # no output_expires_after asked
    # The lines named no model: the batch reports the one that served them, and
    # its usage is the sum of its answers' (the 400 used none).
    assert done.model == client.models.list().data[0].id
    bodies = [o["response"]["body"] for o in out]
    assert done.usage.input_tokens == sum(b["usage"]["prompt_tokens"] for b in bodies) > 0
    assert done.usage.output_tokens == sum(b["usage"]["completion_tokens"] for b in bodies) > 0
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens
    assert done.usage.input_tokens_details.cached_tokens == sum(
        b["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0) for b in bodies)
    assert done.output_file_id in [x.id for x in client.files.list(purpose="batch_output").data]


def test_batch_steps_cut_short_by_users_are_redone_to_the_same_answers(batch_server):
    """Users arriving mid-step interrupt batch-only engine steps (the step is
    undone in the KV and redone): each line's greedy answer must be what the
    same request gives on its own, and the users' answers must make sense."""
    client = client_for(batch_server)
    model = client.models.list().data[0].id
    prompts = [f"Count from {i} to {i + 9}:" for i in range(1, 7)]
    alone = [client.completions.create(model=model, prompt=p, max_tokens=24, temperature=0).choices[0].text
             for p in prompts]
    before = batch_server.metric("outpost_batch_steps_interrupted_total")
    f = client.files.create(file=("count.jsonl", lines(6, lambda i: prompts[i], max_tokens=24)), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions", completion_window="24h")
    users = 0
    with httpx.Client(base_url=batch_server.base, timeout=120) as http:
        while client.batches.retrieve(b.id).status == "in_progress":
            # Short pauses, so arrivals land inside the batch's own steps.
            time.sleep(0.03 + 0.02 * (users % 3))
            r = http.post("/v1/completions", json={"prompt": FRANCE, "max_tokens": 4, "temperature": 0})
            assert r.status_code == 200 and "Paris" in r.json()["choices"][0]["text"], r.text
            users += 1
    done = wait_for(client, b.id, {"completed", "failed", "expired", "cancelled"})
    assert done.status == "completed" and done.request_counts.completed == 6, done
    assert users > 0
    assert batch_server.metric("outpost_batch_steps_interrupted_total") > before, \
        "no batch step was interrupted: the test did not exercise the undo"
    out = {o["custom_id"]: o["response"]["body"]["choices"][0]["text"]
           for o in jsonl(client.files.content(done.output_file_id).text)}
    for i, want in enumerate(alone):
        assert out[f"line-{i}"] == want, (i, out[f"line-{i}"], want)


def test_a_chat_batch_answers_each_line_with_a_chat_completion(batch_server):
    client = client_for(batch_server)
    data = lines(3, lambda i: ["Name a color.", "Name a fruit.", "Say hello."][i],
                 url="/v1/chat/completions", max_tokens=12)
    f = client.files.create(file=("chat.jsonl", data), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                              completion_window="1h",
                              output_expires_after={"anchor": "created_at", "seconds": 3600})
    done = wait_for(client, b.id, {"completed", "failed"})
    assert done.status == "completed" and done.error_file_id is None, done
    out = jsonl(client.files.content(done.output_file_id).text)
    for o in out:
        msg = o["response"]["body"]["choices"][0]["message"]
        assert msg["role"] == "assistant" and msg["content"].strip(), o
    output = client.files.retrieve(done.output_file_id)
    assert output.expires_at == output.created_at + 3600, output
    usage = [o["response"]["body"]["usage"] for o in out]
    assert done.usage.input_tokens == sum(u["prompt_tokens"] for u in usage)
    assert done.usage.output_tokens == sum(u["completion_tokens"] for u in usage)
    # The chat template's opening is the same for all three: the later lines find it cached.
    cached = sum(u.get("prompt_tokens_details", {}).get("cached_tokens", 0) for u in usage)
    assert done.usage.input_tokens_details.cached_tokens == cached > 0, (done.usage, usage)


def test_a_responses_batch_answers_each_line_with_a_response(batch_server):
    client = client_for(batch_server)
    data = lines(2, lambda i: ["What is the capital of France?", "Say hello."][i], url="/v1/responses",
                 max_tokens=24)
    f = client.files.create(file=("responses.jsonl", data), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/responses", completion_window="1h")
    done = wait_for(client, b.id, {"completed", "failed"})
    assert done.status == "completed" and done.error_file_id is None, done
    out = {o["custom_id"]: o["response"] for o in jsonl(client.files.content(done.output_file_id).text)}
    first = out["line-0"]
    assert first["status_code"] == 200 and first["body"]["object"] == "response"
    assert first["request_id"] == first["body"]["id"] and first["body"]["id"].startswith("resp_")
    text = first["body"]["output"][0]["content"][0]["text"]
    assert "Paris" in text, first
    assert out["line-1"]["body"]["usage"]["output_tokens"] > 0
    usage = [r["body"]["usage"] for r in out.values()]
    assert done.usage.input_tokens == sum(u["input_tokens"] for u in usage) > 0
    assert done.usage.output_tokens == sum(u["output_tokens"] for u in usage) > 0


def test_a_bad_input_file_fails_the_batch_naming_each_bad_line(batch_server):
    client = client_for(batch_server)
    data = lines(1) + b"not json\n" + lines(1, url="/v1/chat/completions").replace(b"line-0", b"x")
    f = client.files.create(file=("bad.jsonl", data), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions",
                              completion_window="24h")
    assert b.status == "failed"
    assert [(e.line, e.code) for e in b.errors.data] == [(2, "invalid_json_line"), (3, "invalid_url")]


def test_cancelling_a_batch_stops_it_and_keeps_what_finished(batch_server):
    client = client_for(batch_server)
    f = client.files.create(file=("long.jsonl", lines(40, max_tokens=48)), purpose="batch")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions",
                              completion_window="24h")
    wait_until = time.time() + 120
    while client.batches.retrieve(b.id).request_counts.completed < 1:
        assert time.time() < wait_until
        time.sleep(0.2)
    c = client.batches.cancel(b.id)
    assert c.status in ("cancelling", "cancelled")
    done = wait_for(client, b.id, {"cancelled"}, timeout=120)
    assert done.cancelled_at is not None
    assert 1 <= done.request_counts.completed < 40
    out = jsonl(client.files.content(done.output_file_id).text)
    assert len(out) == done.request_counts.completed
    # The model serves on after the cancel.
    r = client.completions.create(model=client.models.list().data[0].id, prompt=FRANCE, max_tokens=8, temperature=0)
    assert "Paris" in r.choices[0].text


def test_files_and_batches_refuse_bad_requests_by_name_and_serve_on(batch_server):
    base = batch_server.base
    cases = [
        ("post", "/v1/files", dict(json={"purpose": "batch"}), 400, "Content-Type"),
        ("post", "/v1/files", dict(files={"file": ("a.jsonl", b"x")}, data={"purpose": "assistants"}),
         400, "purpose"),
        ("post", "/v1/files", dict(data={"purpose": "batch"}, files={"other": ("a", b"x")}), 400, "file"),
        ("get", "/v1/files/file-missing", {}, 404, "file_id"),
        ("get", "/v1/files/file-missing/content", {}, 404, "file_id"),
        ("post", "/v1/batches", dict(json={"endpoint": "/v1/completions", "completion_window": "24h"}),
         400, "input_file_id"),
        ("post", "/v1/batches", dict(json={"input_file_id": "file-missing", "endpoint": "/v1/completions",
                                           "completion_window": "24h"}), 404, "input_file_id"),
        ("post", "/v1/batches", dict(json={"input_file_id": "f", "endpoint": "/v1/images",
                                           "completion_window": "24h"}), 400, "endpoint"),
        ("post", "/v1/batches", dict(json={"input_file_id": "f", "endpoint": "/v1/completions",
                                           "completion_window": "forever"}), 400, "completion_window"),
        ("post", "/v1/batches", dict(json={"input_file_id": "f", "endpoint": "/v1/completions",
                                           "completion_window": "24h",
                                           "output_expires_after": {"anchor": "created_at", "seconds": 60}}),
         400, "output_expires_after.seconds"),
        ("get", "/v1/batches?limit=0", {}, 400, "limit"),
        ("get", "/v1/batches/batch_missing", {}, 404, "batch_id"),
        ("post", "/v1/batches/batch_missing/cancel", {}, 404, "batch_id"),
    ]
    for method, path, kw, status, param in cases:
        r = getattr(httpx, method)(base + path, timeout=30, **kw)
        assert r.status_code == status, (path, kw, r.text)
        assert r.json()["error"]["param"] == param, (path, r.text)
    assert httpx.get(base + "/health").status_code == 200


def test_a_kill_9_half_way_loses_no_finished_line_and_runs_none_twice(tmp_path):
    state = tmp_path / "state"
    flags = ("--parallel", "2", "--ctx-size", "512", "--batch-parallel", "2", "--state-dir", str(state))
    n = 30
    with serve(*flags) as s:
        client = client_for(s)
        f = client.files.create(file=("kill.jsonl", lines(n, lambda i: f"Story {i}:", max_tokens=24)),
                                purpose="batch")
        b = client.batches.create(input_file_id=f.id, endpoint="/v1/completions",
                                  completion_window="24h")
        deadline = time.time() + 300
        while client.batches.retrieve(b.id).request_counts.completed < n // 3:
            assert time.time() < deadline
            time.sleep(0.2)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
    # What was durable at the kill: the lines the store says are done.
    db = sqlite3.connect(str(state / "batches.db"))
    before = {cid: (rid, req) for cid, rid, req in db.execute(
        "SELECT custom_id, result_id, request_id FROM lines WHERE batch_id = ? AND state = 1", (b.id,))}
    db.close()
    assert n // 3 <= len(before) < n
    with serve(*flags) as s:
        client = client_for(s)
        done = wait_for(client, b.id, {"completed", "failed"})
        assert done.status == "completed" and done.request_counts.completed == n, done
        out = jsonl(client.files.content(done.output_file_id).text)
    ids = [o["custom_id"] for o in out]
    assert len(ids) == n and len(set(ids)) == n
    for o in out:
        if o["custom_id"] in before:  # finished before the kill: kept, not run again
            assert (o["id"], o["response"]["request_id"]) == before[o["custom_id"]]
        assert o["response"]["body"]["choices"][0]["text"]
