"""End-to-end: the Responses API's background mode through the official
openai client against a live outpost serve on the default model — a
response created with background=True answers at once (queued, and stays
queued while the box is full), runs on
without its client, is polled to the same answer a foreground request gives,
is streamed and resumed from any event (starting_after) after the client
hung up, is cancelled (idempotently) and frees its conversation, cannot be
continued before it has an answer, is drained by a stop (SIGTERM) like a
request in flight, runs again from the start after a crash or a stop that
cut it (holding its conversation before /ready answers), under its key kept by
id (no state file holds a key), and fails saying why when it cannot (its key
revoked)."""
import json
import signal
import time
from pathlib import Path

import openai
import pytest
from outpost_harness import serve


def wait_done(client, rid, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        r = client.responses.retrieve(rid)
        if r.status not in ("queued", "in_progress"):
            return r
        assert time.monotonic() < deadline, f"{rid} still {r.status}"
        time.sleep(0.05)


ASK = dict(instructions="You are a helpful assistant.", input="Name three colours.",
           temperature=0, max_output_tokens=24)
LONG = dict(input="Count to a thousand.", max_output_tokens=400, extra_body={"ignore_eos": True})


def test_a_background_response_is_polled_to_the_foreground_answer(client, model_id):
    r = client.responses.create(model=model_id, background=True, **ASK)
    assert r.background is True and r.status in ("queued", "in_progress")
    assert r.output == [] and r.usage is None and r.model == model_id
    # Its input is listed while it runs.
    assert client.responses.input_items.list(r.id).data[0].content[0].text == ASK["input"]
    done = wait_done(client, r.id)
    assert done.status == "completed" and done.background is True
    foreground = client.responses.create(model=model_id, **ASK)
    assert done.output_text == foreground.output_text and done.output_text
    assert done.usage.input_tokens == foreground.usage.input_tokens
    # Now it can be continued, as any stored response.
    nxt = client.responses.create(model=model_id, previous_response_id=r.id, input="One more.",
                                  max_output_tokens=8)
    assert nxt.status in ("completed", "incomplete")


def test_a_stream_resumes_from_any_event_after_the_client_hung_up(client, model_id):
    stream = client.responses.create(model=model_id, background=True, stream=True, **LONG)
    first = []
    for e in stream:
        first.append(e)
        if e.sequence_number == 5:
            break
    stream.close()  # the link drops; the run goes on
    rid = first[0].response.id
    assert first[0].type == "response.created" and first[0].response.background is True
    # Queued until the model begins, as OpenAI's background streams say it.
    assert [(e.type, e.response.status) for e in first[:3]] == [
        ("response.created", "queued"), ("response.queued", "queued"),
        ("response.in_progress", "in_progress")]
    rest = list(client.responses.retrieve(rid, stream=True, starting_after=5))
    events = first + rest
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.incomplete"  # cut at max_output_tokens
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == events[-1].response.output_text
    assert events[-1].response.usage.output_tokens == 400
    # The stored one says the same, and the whole stream replays from the start.
    stored = client.responses.retrieve(rid)
    assert stored.status == "incomplete" and stored.output_text == text
    again = list(client.responses.retrieve(rid, stream=True))
    assert [e.type for e in again] == [e.type for e in events]


def test_cancel_stops_it_once_and_frees_its_conversation(client, model_id, server):
    conv = client.conversations.create(items=[{"role": "user", "content": "Hi."}])
    r = client.responses.create(model=model_id, background=True, conversation=conv.id, **LONG)
    # It holds its conversation while it runs, as any turn does.
    with pytest.raises(openai.BadRequestError) as locked:
        client.responses.create(model=model_id, conversation=conv.id, input="x",
                                max_output_tokens=2)
    assert locked.value.code == "conversation_locked"
    # It cannot be continued before it has an answer.
    with pytest.raises(openai.BadRequestError) as early:
        client.responses.create(model=model_id, previous_response_id=r.id, input="x")
    assert early.value.param == "previous_response_id"
    assert server.metric("outpost_background_responses_running") >= 1
    t0 = time.monotonic()
    cancelled = client.responses.cancel(r.id)
    assert cancelled.status == "cancelled" and time.monotonic() - t0 < 10
    assert client.responses.cancel(r.id).status == "cancelled"  # again: the same
    assert client.responses.retrieve(r.id).status == "cancelled"
    assert server.metric("outpost_background_responses_running") == 0
    # Nothing of it was added, and the conversation is free.
    assert len(client.conversations.items.list(conv.id).data) == 1
    client.responses.create(model=model_id, conversation=conv.id, input="Bye.", max_output_tokens=2)
    assert len(client.conversations.items.list(conv.id).data) == 3
    # A finished one, or one answered at once, cannot be cancelled.
    with pytest.raises(openai.BadRequestError) as ended:
        client.responses.cancel(client.responses.create(model=model_id, input="Hi",
                                                        max_output_tokens=2).id)
    assert "only a background response" in ended.value.message


def test_bad_background_requests_are_named(client, model_id, server):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, input="hi", background=True, store=False)
    assert e.value.param == "background" and "store: true" in e.value.message
    fg = client.responses.create(model=model_id, input="Hi", max_output_tokens=2)
    with pytest.raises(openai.BadRequestError) as e:
        list(client.responses.retrieve(fg.id, stream=True))
    assert e.value.param == "stream"
    bg = client.responses.create(model=model_id, input="Hi", max_output_tokens=2, background=True)
    for bad in ("-3", "two", ""):
        r = server.get(f"/v1/responses/{bg.id}?stream=true&starting_after={bad}")
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["param"] == "starting_after"
    wait_done(client, bg.id)
    # Deleting one that runs stops it first.
    run = client.responses.create(model=model_id, background=True, **LONG)
    assert client.responses.delete(run.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(run.id)


def test_a_run_behind_a_full_box_stays_queued_until_the_model_takes_it(tmp_path):
    # One session, one queue place, and a queue wait of 1 s: an interactive
    # request gets a 503 after it; a background run waits its turn in the
    # queue, and says so — and gives its place to the request a client waits
    # on, then takes it again.
    with serve("--state-dir", str(tmp_path / "state"), "--parallel", "1",
               "--queue-length", "1", "--queue-wait", "1s") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        model = c.models.list().data[0].id
        first = c.responses.create(model=model, background=True, input="Count.",
                                   max_output_tokens=3000, extra_body={"ignore_eos": True})
        assert wait_in_progress(c, first.id)
        second = c.responses.create(model=model, background=True, stream=True, **ASK)
        head = []
        for e in second:
            head.append(e)
            if len(head) == 2:
                break
        second.close()
        rid = head[0].response.id
        assert [(e.type, e.response.status) for e in head] == [
            ("response.created", "queued"), ("response.queued", "queued")]
        # Those two events come before the run asks for a session: wait until
        # it holds the queue place.
        deadline = time.monotonic() + 10
        while s.metric("outpost_queue_depth") < 1:
            assert time.monotonic() < deadline, "the run never entered the queue"
            time.sleep(0.02)
        with pytest.raises(openai.APIStatusError) as busy:  # the interactive one
            c.responses.create(model=model, input="Hi.", max_output_tokens=2)
        # It had the queue place (the run gave it up) and waited it out; it
        # was not refused as "queue full".
        assert busy.value.status_code == 503, busy.value
        assert "waited 1000 ms in the queue" in str(busy.value), busy.value
        assert s.metric("outpost_requests_rejected_total", reason="displaced") == 1
        time.sleep(2.5)  # past the queue wait, twice
        states = (c.responses.retrieve(rid).status, c.responses.retrieve(first.id).status)
        assert states == ("queued", "in_progress"), states
        # The run waits in the queue with its own wait: only the interactive
        # request timed out (a retry each queue_wait would count one each).
        assert s.metric("outpost_requests_rejected_total", reason="queue_timeout") == 1
        c.responses.cancel(first.id)  # the session frees: the second begins
        done = wait_done(c, rid)
        assert done.status in ("completed", "incomplete") and done.output_text
        events = list(c.responses.retrieve(rid, stream=True))
        assert [e.type for e in events[:3]] == ["response.created", "response.queued",
                                                "response.in_progress"]
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert events[-1].response.output_text == done.output_text
        assert events[-1].response.id == rid


def test_a_crash_or_a_stop_does_not_lose_a_run(tmp_path):
    flags = ("--state-dir", str(tmp_path / "state"), "--ctx-size", "4096")
    with serve(*flags) as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        model = c.models.list().data[0].id
        r = c.responses.create(model=model, background=True, input="Count.",
                               max_output_tokens=120, extra_body={"ignore_eos": True})
        assert wait_in_progress(c, r.id)
        s.proc.kill()  # kill -9: no chance to say anything
        s.proc.wait()
    with serve(*flags) as s:
        # It runs again from the start, under its id, and is answered whole.
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        again = wait_done(c, r.id)
        assert again.status == "incomplete" and again.usage.output_tokens == 120, again.error
        assert again.background is True and again.created_at == r.created_at
        events = list(c.responses.retrieve(r.id, stream=True))
        assert events[0].type == "response.created" and events[-1].type == "response.incomplete"
        assert wait_log(s, "background response(s) left unfinished run again")
        # SIGTERM drains: a short run in flight finishes as it would have ...
        short = c.responses.create(model=model, background=True, input="Say hi.",
                                   max_output_tokens=40, extra_body={"ignore_eos": True})
        assert wait_in_progress(c, short.id)
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=30)
    assert "1 background response(s)" in s.final_log and "drained in" in s.final_log
    with serve(*flags) as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        done = c.responses.retrieve(short.id)
        assert done.status == "incomplete" and done.usage.output_tokens == 40, done.status
        # ... and one that outlasts the drain (cut by a second SIGTERM) is
        # queued again, and runs at the next start.
        long = c.responses.create(model=model, background=True, input="Count.",
                                  max_output_tokens=3000, extra_body={"ignore_eos": True})
        assert wait_in_progress(c, long.id)
    assert s.stopped_by == "SIGTERM twice"
    with serve(*flags) as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        assert wait_in_progress(c, long.id), c.responses.retrieve(long.id).status
        assert c.responses.cancel(long.id).status == "cancelled"


def test_a_resumed_run_holds_its_conversation_before_the_server_is_ready(tmp_path):
    state = ("--state-dir", str(tmp_path / "state"))
    with serve(*state) as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        model = c.models.list().data[0].id
        conv = c.conversations.create(items=[{"role": "user", "content": "Hi."}])
        r = c.responses.create(model=model, background=True, conversation=conv.id, **LONG)
        assert wait_in_progress(c, r.id)
        s.proc.kill()
        s.proc.wait()
    with serve(*state) as s:
        # The first client turn after /ready finds the conversation held by
        # the run that resumed, never the other way round.
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError) as locked:
            c.responses.create(model=model, conversation=conv.id, input="x", max_output_tokens=2)
        assert locked.value.code == "conversation_locked"
        done = wait_done(c, r.id)
        assert done.status == "incomplete" and done.usage.output_tokens == 400, done.error
        # Its turn was added once: the first item, its input, its answer.
        items = c.conversations.items.list(conv.id, order="asc").data
        assert [i.role for i in items] == ["user", "user", "assistant"], items


def run_then_crash(state, key, tokens, also=lambda c, model: None):
    """Starts a background run of `tokens` tokens with `key` (and `also`'s
    work), kills the server mid-run; the run's id and what `also` returned."""
    with serve(*state, "--api-key", key) as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key=key, max_retries=0)
        model = c.models.list().data[0].id
        r = c.responses.create(model=model, background=True, input="Count.",
                               max_output_tokens=tokens, extra_body={"ignore_eos": True})
        extra = also(c, model)
        assert wait_in_progress(c, r.id)
        s.proc.kill()
        s.proc.wait()
    # What is kept for a restart names the key by its id, never the key.
    kept = [p for p in Path(state[1]).rglob("*") if p.is_file()]
    assert any(p.name.startswith("responses.db") for p in kept), kept
    assert not [p for p in kept if key.encode() in p.read_bytes()]
    return r.id, extra


def test_a_run_whose_key_was_revoked_fails_after_the_restart(tmp_path):
    state = ("--state-dir", str(tmp_path / "state"))
    rid, _ = run_then_crash(state, "key-one", 200)
    # Restarted with only another key: the run is not made on its behalf.
    with serve(*state, "--api-key", "key-two") as s:
        # The runs left unfinished are read once the model is loaded, before
        # /ready answers (so they hold their conversations before a client
        # turn can): the line is there when serve() sees the server ready.
        assert "cannot run again after the restart" in s.log(), s.log()
    with serve(*state, "--api-key", "key-one") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="key-one", max_retries=0)
        failed = c.responses.retrieve(rid)
        assert failed.status == "failed" and "could not run again" in failed.error.message
        assert "its API key is no longer accepted" in failed.error.message, failed.error


def test_a_run_and_a_batch_made_with_a_key_run_under_it_after_a_restart(tmp_path):
    def batch(c, model):
        lines = "".join(json.dumps({"custom_id": f"l{i}", "method": "POST",
                                    "url": "/v1/completions",
                                    "body": {"model": model, "prompt": "The capital of France is",
                                             "max_tokens": 4, "temperature": 0}}) + "\n"
                        for i in range(3))
        f = c.files.create(file=("b.jsonl", lines.encode()), purpose="batch")
        return c.batches.create(input_file_id=f.id, endpoint="/v1/completions",
                                completion_window="24h").id

    state = ("--state-dir", str(tmp_path / "state"))
    rid, batch_id = run_then_crash(state, "key-one", 120, also=batch)
    with serve(*state, "--api-key", "key-one") as s:
        # The key comes back from its id: the run and the batch's lines are
        # made on its behalf (keys are required: without it, 401s).
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="key-one", max_retries=0)
        again = wait_done(c, rid)
        assert again.status == "incomplete" and again.usage.output_tokens == 120, again.error
        deadline = time.monotonic() + 120
        while (done := c.batches.retrieve(batch_id)).status != "completed":
            assert time.monotonic() < deadline, done
            time.sleep(0.2)
        assert done.request_counts.completed == 3 and done.request_counts.failed == 0, done
        out = c.files.content(done.output_file_id).text
        assert out.count('"status_code": 200') + out.count('"status_code":200') == 3, out
        assert "Paris" in out, out


def wait_log(server, text, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in server.log():
            return True
        time.sleep(0.05)
    return False


def wait_in_progress(client, rid, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.responses.retrieve(rid).status == "in_progress":
            return True
        time.sleep(0.02)
    return False
