"""Outpost in front of a real llama.cpp server as "central" (llama-server built
by scripts/bootstrap from the same pinned source), driven by the official
openai client: the alias routes there, non-streamed and streamed answers come
back intact, the proxied usage is counted, relayed Responses are stored here
and continued through llama-server, and pooled keep-alive connections to
llama-server keep working across pauses."""
import time

import openai
import pytest
from outpost_harness import llama_server, serve, wait_upstream, yaml_file


@pytest.fixture(scope="module")
def central():
    with llama_server("--ctx-size", "2048", "--parallel", "2", "--threads", "2",
                      "--alias", "gemma-central") as base:
        yield base


@pytest.fixture(scope="module")
def edge(central):
    routing = yaml_file(f"""
upstreams:
  - name: hq
    kind: central
    url: {central}
    models: [gemma-central]
    health_check: {{path: /health, interval: 250ms, timeout: 1s}}
policy:
  aliases: {{large: hq}}
""")
    with serve("--parallel", "1", "--ctx-size", "512", "--routing-file", routing) as e:
        wait_upstream(e, True)
        yield e


@pytest.fixture(scope="module")
def client(edge):
    return openai.OpenAI(base_url=edge.base + "/v1", api_key="not-needed", max_retries=0)


def proxied_completion_tokens(edge):
    return edge.metric("outpost_proxied_completion_tokens_total")


def test_alias_answered_by_llama_server(client, edge):
    before = proxied_completion_tokens(edge)
    raw = client.chat.completions.with_raw_response.create(
        model="large", messages=[{"role": "user", "content": "Name a color."}], temperature=0, max_tokens=12)
    assert raw.headers["x-outpost-route"] == "central:hq"
    r = raw.parse()
    assert r.choices[0].message.content
    assert r.model == "gemma-central"  # llama-server's answer, relayed as is
    assert r.usage.completion_tokens > 0
    assert proxied_completion_tokens(edge) - before == r.usage.completion_tokens


def test_stream_relayed_from_llama_server(client, edge):
    before = proxied_completion_tokens(edge)
    stream = client.chat.completions.create(
        model="large", messages=[{"role": "user", "content": "Count from one to five."}],
        temperature=0, max_tokens=24, stream=True, stream_options={"include_usage": True})
    text, usage, chunks = "", None, 0
    for ev in stream:
        chunks += 1
        if ev.choices:
            text += ev.choices[0].delta.content or ""
        if ev.usage:
            usage = ev.usage
    assert chunks > 3 and text.strip()
    assert usage is not None and usage.completion_tokens > 0
    assert proxied_completion_tokens(edge) - before == usage.completion_tokens


def test_pooled_connections_survive_pauses(client):
    # Pauses around the pool's idle limit (2 s): a connection llama-server or the
    # pool closed meanwhile must cost a reconnect, never a failed request.
    for pause in (0, 0.5, 1.5, 2.5, 0):
        time.sleep(pause)
        r = client.chat.completions.create(
            model="large", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
        # A whole answer from central each time: text, its usage, a finish reason.
        assert r.choices[0].message.content.strip(), r
        assert 0 < r.usage.completion_tokens <= 4, r.usage
        assert r.choices[0].finish_reason in ("length", "stop")


def proxied_prompt_tokens(edge):
    return edge.metric("outpost_proxied_prompt_tokens_total")


def test_responses_api_relayed_to_llama_server(client, edge):
    """/v1/responses routed to central goes to llama-server's own /v1/responses
    as it came; its Response (and its event stream, which has no [DONE]) comes
    back whole, and its usage is counted."""
    before = proxied_completion_tokens(edge), proxied_prompt_tokens(edge)
    raw = client.responses.with_raw_response.create(
        model="large", input="Name a color.", temperature=0, max_output_tokens=12)
    assert raw.headers["x-outpost-route"] == "central:hq"
    r = raw.parse()
    assert r.object == "response" and r.output_text and r.model == "gemma-central"
    assert proxied_completion_tokens(edge) - before[0] == r.usage.output_tokens > 0
    assert proxied_prompt_tokens(edge) - before[1] == r.usage.input_tokens > 0

    before = proxied_completion_tokens(edge)
    events = list(client.responses.create(model="large", input="Count from one to five.", temperature=0,
                                          max_output_tokens=24, stream=True))
    assert events[-1].type == "response.completed", [e.type for e in events]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text.strip() and events[-1].response.usage.output_tokens > 0
    # Ended by its last event, not cut short: no error event after it, and counted.
    assert proxied_completion_tokens(edge) - before == events[-1].response.usage.output_tokens


def test_a_relayed_response_is_stored_here_and_continued_through_llama_server(client, edge):
    """llama-server keeps no responses: Outpost keeps the relayed one (body or
    stream) and sends the next turn with the earlier items in its input."""
    r1 = client.responses.create(model="large", input="My name is Ada. Say hi.", temperature=0,
                                 max_output_tokens=16)
    got = client.responses.retrieve(r1.id)
    assert got.id == r1.id and got.output_text == r1.output_text
    raw = client.responses.with_raw_response.create(
        model="large", previous_response_id=r1.id, input="What is my name?", temperature=0,
        max_output_tokens=16)
    assert raw.headers["x-outpost-route"] == "central:hq"
    r2 = raw.parse()
    assert r2.status == "completed" and r2.output_text
    # It says what Outpost did, not what llama-server (which saw no id) did.
    assert r2.previous_response_id == r1.id and r2.store is True
    # The same as sending the whole conversation.
    whole = client.responses.create(
        model="large", temperature=0, max_output_tokens=16,
        input=[{"type": "message", "role": "user", "content": "My name is Ada. Say hi."},
               {"type": "message", "role": "assistant", "content": r1.output_text},
               {"type": "message", "role": "user", "content": "What is my name?"}])
    assert r2.output_text == whole.output_text
    assert r2.usage.input_tokens == whole.usage.input_tokens
    # Items named by reference reach llama-server as the items themselves.
    first_in = client.responses.input_items.list(r1.id).data[0]
    by_ref = client.responses.create(
        model="large", temperature=0, max_output_tokens=16,
        input=[{"type": "item_reference", "id": first_in.id},
               {"type": "item_reference", "id": r1.output[0].id},
               {"type": "message", "role": "user", "content": "What is my name?"}])
    assert by_ref.output_text == whole.output_text

    events = list(client.responses.create(model="large", previous_response_id=r2.id, stream=True,
                                          input="Thanks.", temperature=0, max_output_tokens=8))
    assert events[-1].type == "response.completed"
    assert all(e.response.previous_response_id == r2.id for e in events if hasattr(e, "response"))
    kept = client.responses.retrieve(events[-1].response.id)
    assert kept.output_text == events[-1].response.output_text
    assert kept.previous_response_id == r2.id


def test_a_conversation_here_continued_through_llama_server(client, edge):
    """A conversation lives here; a relayed answer reads it (its items sent in
    the input) and is added to it, body or stream."""
    conv = client.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    raw = client.responses.with_raw_response.create(
        model="large", conversation=conv.id, input="Say hi to me by name.", temperature=0,
        max_output_tokens=16)
    assert raw.headers["x-outpost-route"] == "central:hq"
    r1 = raw.parse()
    assert r1.conversation.id == conv.id and r1.output_text
    whole = client.responses.create(
        model="large", temperature=0, max_output_tokens=16,
        input=[{"type": "message", "role": "user", "content": "My name is Ada."},
               {"type": "message", "role": "user", "content": "Say hi to me by name."}])
    assert r1.output_text == whole.output_text
    assert r1.usage.input_tokens == whole.usage.input_tokens
    events, after = [], None
    for e in client.responses.create(model="large", conversation=conv.id, stream=True,
                                     input="Thanks.", temperature=0, max_output_tokens=8):
        events.append(e)
        if e.type == "response.completed":
            # The turn is over once its final event is here: the next one
            # goes at once (no conversation_locked), and reads this answer.
            after = client.responses.create(model="large", conversation=conv.id, input="Bye.",
                                            temperature=0, max_output_tokens=4)
    assert events[-1].type == "response.completed"
    assert events[-1].response.conversation.id == conv.id
    items = client.conversations.items.list(conv.id, order="asc").data
    assert [i.content[0].text for i in items] == [
        "My name is Ada.", "Say hi to me by name.", r1.output_text, "Thanks.",
        events[-1].response.output_text, "Bye.", after.output_text]


def test_a_background_response_runs_here_and_is_answered_by_llama_server(client, edge):
    """llama-server has no background mode: Outpost runs the relay on its
    own thread and keeps the answer; llama-server sees a plain stream."""
    r = client.responses.create(model="large", background=True, input="Say hi.", temperature=0,
                                max_output_tokens=8)
    assert r.background is True and r.status in ("queued", "in_progress")
    deadline = time.monotonic() + 60
    while (done := client.responses.retrieve(r.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert done.status in ("completed", "incomplete"), done.error
    assert done.background is True
    fg = client.responses.create(model="large", input="Say hi.", temperature=0, max_output_tokens=8)
    assert done.output_text == fg.output_text and done.output_text
    events = list(client.responses.retrieve(r.id, stream=True))
    assert events[-1].response.id == r.id and events[-1].response.background is True
    # The relayed stream is numbered as one with the run's own queued events
    # in front (llama-server counts from 0 too): starting_after counts right.
    assert [e.type for e in events[:2]] == ["response.created", "response.queued"]
    assert [e.type for e in events].count("response.created") == 1
    assert [e.sequence_number for e in events] == list(range(len(events)))
