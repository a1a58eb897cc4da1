"""End-to-end: OpenAI's Conversations API (/v1/conversations) through the
official openai client against a live outpost serve on the default model —
a conversation made, read, changed and deleted; Responses requests that name
it read its items and add their input and answer to it (body and stream);
items added and deleted by hand change what the next answer reads; items
named by item_reference (a conversation's own, a stored answer's); a turn
holding its conversation (conversation_locked) until its answer is in it;
truncation "auto" dropping the oldest turns of a conversation past the
context; and conversations kept across a restart and refused when the server
keeps nothing."""
import time

import openai
import pytest
from outpost_harness import serve


BRIEF = "You are a helpful assistant."
CODE = "Remember this code word: PELICAN."
ASK_CODE = "What was the code word?"


def texts(items):
    return [(i.role, i.content[0].text) for i in items if i.type == "message"]


def test_a_conversation_carries_the_earlier_turns(client, model_id):
    conv = client.conversations.create(metadata={"site": "line-3"})
    assert conv.object == "conversation" and conv.id.startswith("conv_")
    assert conv.metadata == {"site": "line-3"}
    r1 = client.responses.create(model=model_id, instructions=BRIEF, conversation=conv.id, input=CODE,
                                 temperature=0, max_output_tokens=40)
    assert r1.conversation.id == conv.id and r1.previous_response_id is None
    r2 = client.responses.create(model=model_id, instructions=BRIEF, conversation={"id": conv.id},
                                 input=ASK_CODE, temperature=0, max_output_tokens=40)
    # The model read the earlier turn: a word it could not have guessed.
    assert "PELICAN" in r2.output_text, r2.output_text
    # ... without computing it again: the prefix cache held the first turn.
    assert r2.usage.input_tokens_details.cached_tokens >= r1.usage.input_tokens
    # Exactly the answer to the whole conversation sent as chat messages.
    chat = client.chat.completions.create(
        model=model_id, temperature=0, max_tokens=40, messages=[
            {"role": "system", "content": BRIEF}, {"role": "user", "content": CODE},
            {"role": "assistant", "content": r1.output_text}, {"role": "user", "content": ASK_CODE}])
    assert r2.output_text == chat.choices[0].message.content
    assert r2.usage.input_tokens == chat.usage.prompt_tokens
    # The conversation holds both turns in order, the answers under their own ids.
    items = client.conversations.items.list(conv.id, order="asc")
    assert texts(items.data) == [("user", CODE), ("assistant", r1.output_text),
                                 ("user", ASK_CODE), ("assistant", r2.output_text)]
    assert items.data[1].id == r1.output[0].id and items.data[3].id == r2.output[0].id
    assert items.data[0].content[0].type == "input_text"
    assert items.data[1].content[0].type == "output_text"
    newest = client.conversations.items.list(conv.id, limit=1)
    assert [i.id for i in newest.data] == [r2.output[0].id] and newest.has_more
    # The Response is stored too, with its conversation.
    assert client.responses.retrieve(r2.id).conversation.id == conv.id


def test_items_added_and_deleted_by_hand_are_what_the_next_answer_reads(client, model_id):
    conv = client.conversations.create(items=[{"type": "message", "role": "user", "content": CODE},
                                              {"type": "message", "role": "assistant",
                                               "content": "Noted."}])
    added = client.conversations.items.create(
        conv.id, items=[{"type": "message", "role": "user", "content": "And the colour is green."},
                        {"type": "message", "role": "assistant", "content": "Noted too."}])
    assert [i.content[0].text for i in added.data] == ["And the colour is green.", "Noted too."]
    every = client.conversations.items.list(conv.id, order="asc").data
    assert len(every) == 4
    # One item by id; then deleted (the answer is the conversation).
    code_item = every[0]
    assert client.conversations.items.retrieve(code_item.id, conversation_id=conv.id).id == code_item.id
    kw = dict(model=model_id, instructions=BRIEF, input=ASK_CODE)
    before = client.responses.input_tokens.count(**kw, conversation=conv.id).input_tokens
    whole = client.responses.input_tokens.count(
        model=model_id, instructions=BRIEF,
        input=[{"role": "user", "content": CODE}, {"role": "assistant", "content": "Noted."},
               {"role": "user", "content": "And the colour is green."},
               {"role": "assistant", "content": "Noted too."},
               {"role": "user", "content": ASK_CODE}]).input_tokens
    assert before == whole
    assert client.conversations.items.delete(code_item.id, conversation_id=conv.id).id == conv.id
    with pytest.raises(openai.NotFoundError) as e:
        client.conversations.items.retrieve(code_item.id, conversation_id=conv.id)
    assert e.value.body["param"] == "item_id"
    after = client.responses.input_tokens.count(**kw, conversation=conv.id).input_tokens
    without = client.responses.input_tokens.count(
        model=model_id, instructions=BRIEF,
        input=[{"role": "assistant", "content": "Noted."},
               {"role": "user", "content": "And the colour is green."},
               {"role": "assistant", "content": "Noted too."},
               {"role": "user", "content": ASK_CODE}]).input_tokens
    assert after == without < before
    r = client.responses.create(**kw, conversation=conv.id, temperature=0, max_output_tokens=40)
    assert r.usage.input_tokens == after
    assert len(client.conversations.items.list(conv.id).data) == 5


def test_item_references_name_a_conversations_items_and_stored_answers(client, model_id):
    kw = dict(model=model_id, instructions=BRIEF, temperature=0, max_output_tokens=16)
    answered = client.responses.create(**kw, input=CODE)  # stored, in no conversation
    conv = client.conversations.create(items=[{"type": "message", "role": "user",
                                               "content": "And the colour is green."}])
    own = client.conversations.items.list(conv.id).data[0]
    # items.create: a stored answer's item and the conversation's own, by id.
    added = client.conversations.items.create(
        conv.id, items=[{"type": "item_reference", "id": answered.output[0].id},
                        {"type": "item_reference", "id": own.id}])
    assert [i.id for i in added.data] == [answered.output[0].id, own.id]
    assert added.data[0].content[0].text == answered.output_text
    assert added.data[1].content[0].text == "And the colour is green."
    # A turn in the conversation names one of its items (kept by hand, never
    # in a stored response): the same prompt as the item itself.
    ref = client.responses.input_tokens.count(
        model=model_id, conversation=conv.id,
        input=[{"type": "item_reference", "id": own.id}]).input_tokens
    inline = client.responses.input_tokens.count(
        model=model_id, conversation=conv.id,
        input=[{"role": "user", "content": "And the colour is green."}]).input_tokens
    assert ref == inline
    r = client.responses.create(**kw, conversation=conv.id,
                                input=[{"type": "item_reference", "id": own.id}])
    assert r.status in ("completed", "incomplete") and r.usage.input_tokens > 0
    # One nobody holds is a 404 naming where it was; nothing was added.
    count = len(client.conversations.items.list(conv.id, limit=100).data)
    with pytest.raises(openai.NotFoundError) as e:
        client.conversations.items.create(conv.id, items=[{"type": "item_reference",
                                                           "id": "msg_nope"}])
    assert e.value.body["param"] == "items[0].id"
    assert len(client.conversations.items.list(conv.id, limit=100).data) == count


def test_a_streamed_answer_joins_the_conversation_before_its_last_event(client, model_id):
    conv = client.conversations.create()
    # Room for the whole answer: the stream must end "completed" (49 tokens on
    # an AVX2-only box, where 40 cut it and the stream ended "incomplete").
    events = client.responses.create(model=model_id, instructions=BRIEF, conversation=conv.id,
                                     input=CODE, temperature=0, max_output_tokens=120, stream=True)
    seen = None
    for e in events:
        if e.type == "response.completed":
            assert e.response.conversation.id == conv.id
            seen = texts(client.conversations.items.list(conv.id, order="asc").data)
            assert seen == [("user", CODE), ("assistant", e.response.output_text)]
    assert seen is not None
    r = client.responses.create(model=model_id, instructions=BRIEF, conversation=conv.id,
                                input=ASK_CODE, temperature=0, max_output_tokens=40)
    assert "PELICAN" in r.output_text, r.output_text


def test_a_turn_holds_its_conversation_until_its_answer_is_in_it(client, model_id):
    """A second turn (or a change to the items) while one is being answered
    is refused as OpenAI refuses it, 400 conversation_locked, instead of
    answering from a conversation the first turn is about to change; the
    next turn goes as soon as the answer's final event is out; a client
    that hangs up frees the conversation and adds nothing."""
    conv = client.conversations.create(items=[{"role": "user", "content": CODE}])
    long_turn = dict(model=model_id, conversation=conv.id, input="Count to a thousand.",
                     max_output_tokens=300, extra_body={"ignore_eos": True}, stream=True)
    seen, after = [], None
    for e in client.responses.create(**long_turn):
        seen.append(e.type)
        if e.type == "response.created":
            with pytest.raises(openai.BadRequestError) as locked:
                client.responses.create(model=model_id, conversation=conv.id, input="Hi",
                                        max_output_tokens=4)
            assert locked.value.code == "conversation_locked"
            assert locked.value.param == "conversation"
            assert conv.id in locked.value.message
            with pytest.raises(openai.BadRequestError) as adding:
                client.conversations.items.create(conv.id, items=[{"role": "user",
                                                                  "content": "x"}])
            assert adding.value.code == "conversation_locked"
            # Reading it and another conversation are not held off.
            assert len(client.conversations.items.list(conv.id).data) == 1
            other = client.conversations.create()
            client.responses.create(model=model_id, conversation=other.id, input="Hi",
                                    max_output_tokens=2)
        if e.type == "response.incomplete":  # cut at max_output_tokens
            assert e.response.usage.output_tokens == 300
            after = client.responses.create(model=model_id, conversation=conv.id, input=ASK_CODE,
                                            temperature=0, max_output_tokens=8)
    assert seen[0] == "response.created" and seen[-1] == "response.incomplete"
    items = client.conversations.items.list(conv.id, order="asc").data
    assert [i.role for i in items] == ["user", "user", "assistant", "user", "assistant"]
    assert items[-1].content[0].text == after.output_text

    # A client that hangs up mid-answer: nothing of its turn is added, and
    # the conversation is free again as soon as the server sees it gone.
    cut = client.responses.create(**long_turn)
    for e in cut:
        if e.type == "response.output_text.delta":
            break
    cut.close()
    t0 = time.monotonic()
    while True:
        try:
            client.responses.create(model=model_id, conversation=conv.id, input="Hi",
                                    max_output_tokens=2)
            break
        except openai.BadRequestError as e:
            assert e.code == "conversation_locked"
            assert time.monotonic() - t0 < 10, "the cut turn still holds the conversation"
            time.sleep(0.05)
    items = client.conversations.items.list(conv.id, order="asc").data
    assert len(items) == 7 and items[5].content[0].text == "Hi"


def test_store_false_still_adds_to_the_conversation(client, model_id):
    conv = client.conversations.create()
    r = client.responses.create(model=model_id, conversation=conv.id, input="Hi", store=False,
                                max_output_tokens=5)
    assert r.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    assert len(client.conversations.items.list(conv.id).data) == 2


def test_update_delete_and_bad_calls(client, server, model_id):
    conv = client.conversations.create(metadata={"a": "1"})
    assert client.conversations.retrieve(conv.id).metadata == {"a": "1"}
    assert client.conversations.update(conv.id, metadata={"b": "2"}).metadata == {"b": "2"}
    assert server.metric("outpost_conversations_stored") >= 1
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, conversation=conv.id, previous_response_id="resp_x",
                                input="hi")
    assert e.value.body["param"] == "conversation"
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.items.create(conv.id, items=[{"type": "message", "content": "no role"}])
    assert e.value.body["param"] == "items[0].role"
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.create(items=[{"role": "user", "content": "x"}] * 21)
    assert e.value.body["param"] == "items"
    deleted = client.conversations.delete(conv.id)
    assert deleted.deleted and deleted.id == conv.id and deleted.object == "conversation.deleted"
    for call in (lambda: client.conversations.retrieve(conv.id),
                 lambda: client.conversations.items.list(conv.id),
                 lambda: client.conversations.delete(conv.id)):
        with pytest.raises(openai.NotFoundError) as e:
            call()
        assert e.value.body["param"] == "conversation_id"
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=model_id, conversation=conv.id, input="hi")
    assert e.value.body["param"] == "conversation" and conv.id in e.value.body["message"]
    # The server keeps serving.
    assert client.responses.create(model=model_id, input="Hi", max_output_tokens=3).output_text


def test_truncation_auto_drops_the_oldest_turns_to_fit_the_context():
    filler = [{"role": "user", "content": "Tell me about the weather."},
              {"role": "assistant", "content": "It is sunny and warm today."}]
    history = [{"role": "user", "content": CODE}, {"role": "assistant", "content": "Noted."}] + filler * 7
    with serve("--ctx-size", "160") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        model = c.models.list().data[0].id
        conv = c.conversations.create(items=history)
        kw = dict(model=model, instructions=BRIEF, conversation=conv.id, input=ASK_CODE,
                  max_output_tokens=16, temperature=0, store=False)
        # Too long as it is: refused, naming the input.
        with pytest.raises(openai.BadRequestError) as e:
            c.responses.create(**kw)
        assert e.value.body["param"] in ("input", "max_output_tokens")
        assert "context per session is 160" in e.value.body["message"]
        # truncation auto: the oldest turns go until it fits.
        counted = c.responses.input_tokens.count(model=model, instructions=BRIEF,
                                                 conversation=conv.id, input=ASK_CODE,
                                                 truncation="auto").input_tokens
        r = c.responses.create(**kw, truncation="auto")
        assert r.status in ("completed", "incomplete") and r.truncation == "auto"
        assert r.usage.input_tokens + 16 <= 160
        # What was kept is the newest turns, from a user message on: the
        # prompt of exactly such a suffix, and the code word is not in it.
        suffix_tokens = {}
        for start in range(2, len(history), 2):
            explicit = history[start:] + [{"role": "user", "content": ASK_CODE}]
            suffix_tokens[start] = c.responses.input_tokens.count(
                model=model, instructions=BRIEF, input=explicit).input_tokens
        assert r.usage.input_tokens in suffix_tokens.values(), (r.usage.input_tokens, suffix_tokens)
        kept_from = min(k for k, v in suffix_tokens.items() if v == r.usage.input_tokens)
        assert suffix_tokens[kept_from - 2] + 16 > 160 if kept_from > 2 else True
        # Counting with truncation counts what a generation with it would read
        # (max_output_tokens unset there: one token left for the answer).
        assert counted >= r.usage.input_tokens and counted + 1 <= 160
        # The conversation itself keeps everything, and the new turn.
        assert len(c.conversations.items.list(conv.id, limit=100).data) == len(history) + 2


def test_conversations_belong_to_their_key_and_outlive_a_restart(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("key-of-a\nkey-of-b\n")
    flags = ("--api-key-file", str(keys), "--state-dir", str(tmp_path / "state"), "--ctx-size", "1024")

    def clients(s):
        return [openai.OpenAI(base_url=s.base + "/v1", api_key=k, max_retries=0)
                for k in ("key-of-a", "key-of-b")]
    with serve(*flags) as s:
        a, b = clients(s)
        model = a.models.list().data[0].id
        conv = a.conversations.create(items=[{"role": "user", "content": CODE}])
        with pytest.raises(openai.NotFoundError):
            b.conversations.retrieve(conv.id)
        with pytest.raises(openai.NotFoundError) as e:
            b.responses.create(model=model, conversation=conv.id, input=ASK_CODE)
        assert e.value.body["param"] == "conversation"
    with serve(*flags) as s:
        a, _ = clients(s)
        r = a.responses.create(model=model, conversation=conv.id, input=ASK_CODE, max_output_tokens=5)
        assert r.conversation.id == conv.id
        assert len(a.conversations.items.list(conv.id).data) == 3
    # Told to keep nothing: no conversations, and the answer says why.
    with serve(*flags, "--responses-retention", "0") as s:
        a, _ = clients(s)
        with pytest.raises(openai.NotFoundError) as e:
            a.conversations.create()
        assert "responses_retention: 0" in e.value.body["message"]
        with pytest.raises(openai.BadRequestError) as e:
            a.responses.create(model=model, conversation=conv.id, input="hi")
        assert e.value.body["param"] == "conversation"
