"""End-to-end: a model that thinks before it answers, through the official
openai client. There is no thinking model small enough to ship, so the
default model (SmolLM2) runs behind the chat templates of two that are: Qwen
3's (the model decides whether to open "<think>") and DeepSeek R1's (the
prompt opens it). Shown two turns of echoing and then given a text that holds
a thinking block, SmolLM2 writes one, and what the client gets is what it would get from Qwen 3:
reasoning_content apart from the content, streamed as deltas, Responses
reasoning items and reasoning_text events, reasoning_tokens counted, thinking
switched off by reasoning_effort or enable_thinking, a response_format or
grammar that applies after the thinking, and the thinking sent back on later turns."""
import json
import os

import openai
import pytest
from outpost_harness import TEMPLATES, serve

ECHO = "<think>first</think>second"
# Two turns of echoing first. Asked once ("Please echo: ..."), SmolLM2's
# greedy answer turned on the CPU's kernels: it echoed on earlier sessions'
# boxes, not on an AVX2-only one (2026-12-06); shown how, it echoes there too.
SHOTS = [{"role": "system", "content": "You repeat the user's text exactly, and nothing else."},
         {"role": "user", "content": "good morning"},
         {"role": "assistant", "content": "good morning"},
         {"role": "user", "content": "<b>bold</b>text"},
         {"role": "assistant", "content": "<b>bold</b>text"}]


@pytest.fixture(scope="module")
def qwen3():
    with serve("--chat-template-file", os.path.join(TEMPLATES, "qwen3.jinja"),
               "--parallel", "4", "--ctx-size", "1024") as s:
        yield s


@pytest.fixture(scope="module")
def client(qwen3):
    return openai.OpenAI(base_url=qwen3.base + "/v1", api_key="x", max_retries=0)


def ask(client, content=ECHO, **kw):
    kw.setdefault("max_tokens", 30)
    return client.chat.completions.create(model=client.models.list().data[0].id, temperature=0,
                                          messages=SHOTS + [{"role": "user", "content": content}],
                                          **kw)


def thinking_tokens(tokens):
    """How many of the answer's tokens it took to close the block: counted
    here from the logprobs' tokens, apart from the server's own count."""
    text = ""
    for i, t in enumerate(tokens):
        text += t.token
        if "</think>" in text:
            return i + 1
    return len(tokens)


def test_the_thinking_comes_apart_from_the_answer(client):
    r = ask(client, logprobs=True)
    m = r.choices[0].message
    assert m.model_extra.get("reasoning_content") == "first", m
    assert m.model_extra.get("reasoning") == "first", m  # newer vLLM's name
    assert m.content.startswith("second"), m.content
    assert "<think>" not in m.content and "</think>" not in m.content
    # reasoning_tokens: the tokens up to the one that closed the block.
    counted = thinking_tokens(r.choices[0].logprobs.content)
    assert 2 <= counted < r.usage.completion_tokens
    assert r.usage.completion_tokens_details.reasoning_tokens == counted


def test_a_stream_carries_the_thinking_as_deltas_and_adds_up_to_the_answer(client):
    whole = ask(client)
    reasoning, reasoning2, content, usage = "", "", "", None
    for chunk in ask(client, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            reasoning += (c.delta.model_extra or {}).get("reasoning_content") or ""
            reasoning2 += (c.delta.model_extra or {}).get("reasoning") or ""
            content += c.delta.content or ""
            # A chunk carries one or the other, never the tags.
            assert "<think>" not in (c.delta.content or "")
    assert reasoning == whole.choices[0].message.model_extra["reasoning_content"]
    assert reasoning2 == reasoning
    assert content == whole.choices[0].message.content
    assert usage.completion_tokens_details.reasoning_tokens == \
        whole.usage.completion_tokens_details.reasoning_tokens > 0


def test_reasoning_format_none_leaves_the_thinking_in_the_content(client):
    r = ask(client, extra_body={"reasoning_format": "none"})
    m = r.choices[0].message
    assert m.content.startswith("<think>first</think>second"), m.content
    assert "reasoning_content" not in (m.model_extra or {})
    assert "reasoning" not in (m.model_extra or {})
    # Still thinking, whatever the client sees of it.
    assert r.usage.completion_tokens_details.reasoning_tokens > 0


def test_thinking_switched_off_reaches_the_template(client):
    on = ask(client, max_tokens=5)
    off = ask(client, max_tokens=5, reasoning_effort="none")
    kwarg = ask(client, max_tokens=5, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    # Qwen 3's template closes an empty block in the prompt itself.
    assert off.usage.prompt_tokens > on.usage.prompt_tokens
    assert kwarg.usage.prompt_tokens == off.usage.prompt_tokens
    # What the model writes after that is all answer: nothing is split off.
    assert "reasoning_content" not in (off.choices[0].message.model_extra or {})
    assert off.usage.completion_tokens_details.reasoning_tokens == 0


def test_a_response_format_applies_after_the_thinking(client):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": False}
    r = ask(client, '<think>first</think>{"a": 1}', max_tokens=60,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "a", "schema": schema, "strict": True}})
    m = r.choices[0].message
    assert r.choices[0].finish_reason == "stop"
    assert m.model_extra.get("reasoning_content") == "first", m
    assert isinstance(json.loads(m.content)["a"], int), m.content


def test_a_grammar_applies_after_the_thinking(client):
    """llama-server's grammar field, wrapped as response_format is: the
    thinking first, then an answer the client's grammar (whose start rule it
    refers to itself) allows."""
    grammar = 'root ::= "second" | "(" root ")"'
    r = ask(client, extra_body={"grammar": grammar})
    m = r.choices[0].message
    assert r.choices[0].finish_reason == "stop"
    assert m.model_extra.get("reasoning_content") == "first", m
    assert m.content == "second", m.content
    # Without the thinking block in front, the same grammar holds from the start.
    r = ask(client, "(second)", extra_body={"grammar": grammar})
    assert r.choices[0].message.content == "(second)"


def test_the_responses_api_gives_a_reasoning_item_then_the_message(client):
    mid = client.models.list().data[0].id
    turns = SHOTS + [{"role": "user", "content": ECHO}]
    r = client.responses.create(model=mid, input=turns, temperature=0, max_output_tokens=30)
    kinds = [o.type for o in r.output]
    assert kinds == ["reasoning", "message"], r.output
    thought = r.output[0]
    assert thought.id.startswith("rs_") and thought.status == "completed" and thought.summary == []
    assert [(c.type, c.text) for c in thought.content] == [("reasoning_text", "first")]
    assert r.output_text.startswith("second"), r.output_text
    assert 0 < r.usage.output_tokens_details.reasoning_tokens < r.usage.output_tokens

    events = list(client.responses.create(model=mid, input=turns, temperature=0,
                                          max_output_tokens=30, stream=True))
    types = [e.type for e in events]
    assert types.index("response.reasoning_text.delta") < types.index("response.output_text.delta")
    streamed = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    done = next(e for e in events if e.type == "response.reasoning_text.done")
    assert streamed == done.text == "first"
    final = events[-1].response
    assert [o.type for o in final.output] == ["reasoning", "message"]
    assert final.output_text == r.output_text

    # The next turn reads the stored items back, the reasoning item among them.
    follow = client.responses.create(model=mid, previous_response_id=r.id, input="And again?",
                                     temperature=0, max_output_tokens=10,
                                     reasoning={"effort": "none"})
    assert follow.status in ("completed", "incomplete") and follow.reasoning.effort == "none"


def test_thinking_sent_back_on_a_later_turn_reaches_the_template(client):
    """Qwen 3 shows the thinking of the turns after the last user message (an
    agent's tool loop): sent back as reasoning_content, it is in the prompt,
    and the prompt grows by it."""
    mid = client.models.list().data[0].id
    call = {"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}
    turns = [{"role": "user", "content": "Weather in Paris?"},
             {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    plain = client.chat.completions.create(model=mid, messages=turns, max_tokens=1)
    turns[1]["reasoning_content"] = "I should look the weather up for the user in Paris."
    with_thought = client.chat.completions.create(model=mid, messages=turns, max_tokens=1)
    assert with_thought.usage.prompt_tokens > plain.usage.prompt_tokens + 8


def test_a_budget_closes_the_block_for_the_model(client):
    """A budget of 0 tokens: as soon as the model opens its block the sampler
    writes the budget message and closes it, and the model goes on to answer."""
    free = ask(client)
    assert free.choices[0].message.model_extra["reasoning_content"] == "first"
    r = ask(client, extra_body={"reasoning_budget_tokens": 0,
                                "reasoning_budget_message": "Enough"})
    m = r.choices[0].message
    assert m.model_extra.get("reasoning_content") == "Enough", m
    assert m.content, m


def test_a_prompt_that_opens_the_block_makes_the_answer_start_inside_it():
    """DeepSeek R1's template ends its prompt with "<think>\\n": everything up
    to "</think>" is thinking, and a cut answer is thinking throughout. SmolLM2
    never closes it; a budget (the config's, here) does."""
    with serve("--chat-template-file", os.path.join(TEMPLATES, "deepseek-r1-distill.jinja"),
               "--parallel", "2", "--ctx-size", "1024", "--reasoning-budget", "6") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        r = ask(c, "What is the capital of France?", max_tokens=16,
                extra_body={"reasoning_budget_tokens": -1})
        m = r.choices[0].message
        assert r.choices[0].finish_reason == "length"
        assert m.model_extra.get("reasoning_content") and m.content == "", m
        assert r.usage.completion_tokens_details.reasoning_tokens == r.usage.completion_tokens == 16

        budgeted = ask(c, "What is the capital of France?", max_tokens=40)
        m = budgeted.choices[0].message
        assert m.model_extra.get("reasoning_content") and m.content, m
        assert "</think>" not in m.content
        # Six tokens of thinking, then the closing tag's tokens.
        closing = budgeted.usage.completion_tokens_details.reasoning_tokens - 6
        assert 1 <= closing <= 4, budgeted.usage


def test_a_prefilled_answer_continues_its_thinking(client):
    """continue_final_message on an assistant message that has only thinking
    so far: the prompt ends inside the block, the model goes on from there, and
    what comes back is what it added, never the client's own part."""
    prefilled = {"role": "assistant", "content": "", "reasoning_content": "first"}
    kw = dict(model=client.models.list().data[0].id, temperature=0, max_tokens=30,
              messages=SHOTS + [{"role": "user", "content": ECHO}, prefilled],
              extra_body={"continue_final_message": True, "cache_prompt": False})
    r = client.chat.completions.create(**kw)
    m = r.choices[0].message
    # Its thinking was whole: the model closes the block and answers.
    assert m.content.startswith("second"), m
    assert "first" not in (m.model_extra.get("reasoning_content") or ""), m
    assert "</think>" not in m.content
    # The closing tag's tokens were thinking, counted as such.
    assert 1 <= r.usage.completion_tokens_details.reasoning_tokens < r.usage.completion_tokens
    reasoning, content = "", ""
    for chunk in client.chat.completions.create(stream=True, **kw):
        for c in chunk.choices:
            reasoning += (c.delta.model_extra or {}).get("reasoning_content") or ""
            content += c.delta.content or ""
    assert content == m.content
    assert reasoning == (m.model_extra.get("reasoning_content") or "")
