"""End-to-end: OpenAI's Responses API (POST /v1/responses) through the official
openai client against a live outpost serve on the default model — the same
answer as the chat endpoint gives, streamed event by event, cut at
max_output_tokens, function calls and their results, structured output,
logprobs, and bad inputs named by their Responses field."""
import json
from typing import Literal

import httpx
import openai
import pydantic
import pytest


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="not-needed", max_retries=0)


@pytest.fixture(scope="module")
def model_id(client):
    return client.models.list().data[0].id


ASK = "What is the capital of France?"
BRIEF = "You are a helpful assistant."


def test_an_answer_that_makes_sense_and_is_the_chat_answer(client, model_id):
    r = client.responses.create(model=model_id, instructions=BRIEF, input=ASK, temperature=0,
                                max_output_tokens=40, extra_body={"cache_prompt": False})
    assert r.object == "response" and r.id.startswith("resp_") and r.status == "completed"
    assert "Paris" in r.output_text, r.output_text
    (msg,) = r.output
    assert msg.type == "message" and msg.role == "assistant" and msg.status == "completed"
    assert msg.content[0].type == "output_text"
    assert r.instructions == BRIEF and r.max_output_tokens == 40 and r.temperature == 0
    assert r.completed_at is not None and r.completed_at >= r.created_at
    # instructions + input mean the same conversation as system + user messages.
    chat = client.chat.completions.create(
        model=model_id, messages=[{"role": "system", "content": BRIEF}, {"role": "user", "content": ASK}],
        temperature=0, max_tokens=40, extra_body={"cache_prompt": False})
    assert r.output_text == chat.choices[0].message.content
    assert r.usage.input_tokens == chat.usage.prompt_tokens
    assert r.usage.output_tokens == chat.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    # Asked again, the prompt comes from the prefix cache.
    again = client.responses.create(model=model_id, instructions=BRIEF, input=ASK, temperature=0,
                                    max_output_tokens=40)
    assert again.output_text == r.output_text
    assert again.usage.input_tokens_details.cached_tokens > 0


def test_streamed_events_add_up_to_the_whole_answer(client, server, model_id):
    def answered():
        try:
            return server.metric("outpost_requests_total", endpoint="/v1/responses", status="200")
        except KeyError:
            return 0
    before = answered()
    kw = dict(model=model_id, instructions=BRIEF, input=ASK, temperature=0,
              max_output_tokens=60, extra_body={"cache_prompt": False})
    whole = client.responses.create(**kw)
    assert whole.status == "completed", whole
    events = list(client.responses.create(stream=True, **kw))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"], types
    assert types[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"], types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 3 and "".join(deltas) == whole.output_text
    final = events[-1].response
    assert final.id == events[0].response.id and final.output_text == whole.output_text
    assert final.usage.output_tokens == whole.usage.output_tokens
    # The client's stream helper puts the same answer together.
    with client.responses.stream(**kw) as s:
        got = "".join(e.delta for e in s if e.type == "response.output_text.delta")
        done = s.get_final_response()
    assert got == done.output_text == whole.output_text
    # Counted once each, streamed or not, under the endpoint's own label.
    assert answered() - before == 3


def test_cut_at_max_output_tokens_is_incomplete(client, model_id):
    r = client.responses.create(model=model_id, input="Write a long story about a lighthouse.",
                                max_output_tokens=5, extra_body={"ignore_eos": True})
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5 and r.output[0].status == "incomplete" and r.completed_at is None
    events = list(client.responses.create(model=model_id, input="Write a long story.", max_output_tokens=5,
                                          stream=True, extra_body={"ignore_eos": True}))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"], "additionalProperties": False}}


def test_function_call_round_trip(client, model_id):
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.responses.create(model=model_id, input=ask, tools=[WEATHER], tool_choice="required",
                                parallel_tool_calls=False, max_output_tokens=100)
    (call,) = r.output  # parallel_tool_calls false: exactly one call, no text
    assert call.type == "function_call" and call.name == "get_weather", r.output
    assert call.call_id.startswith("call_") and call.id.startswith("fc_") and call.status == "completed"
    assert set(json.loads(call.arguments)) == {"city"}
    assert r.tools[0].name == "get_weather" and r.tool_choice == "required"
    # The call and its result go back as input items; the model answers in text.
    follow = ask + [call.model_dump(exclude_none=True),
                    {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 24 C"}]
    r2 = client.responses.create(model=model_id, input=follow, tools=[WEATHER], tool_choice="none",
                                 max_output_tokens=40)
    assert r2.output_text and all(o.type == "message" for o in r2.output)
    # Streamed: the call's arguments arrive piece by piece and add up to the JSON.
    events = list(client.responses.create(model=model_id, input=ask, tools=[WEATHER],
                                          tool_choice={"type": "function", "name": "get_weather"},
                                          parallel_tool_calls=False, stream=True, max_output_tokens=100))
    added = [e for e in events if e.type == "response.output_item.added"]
    assert added[0].item.type == "function_call" and added[0].item.name == "get_weather"
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    (args_done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(pieces) > 2 and "".join(pieces) == args_done.arguments
    assert set(json.loads(args_done.arguments)) == {"city"}
    assert events[-1].response.output[0].arguments == args_done.arguments


class Defect(pydantic.BaseModel):
    part: str = pydantic.Field(max_length=40)
    severity: Literal["low", "medium", "high"]
    count: int


def test_structured_output_with_a_pydantic_model(client, model_id):
    r = client.responses.parse(model=model_id, text_format=Defect, max_output_tokens=80,
                               input="Report as JSON: two deep scratches on the left door panel.")
    assert isinstance(r.output_parsed, Defect), r.output_text
    assert r.text.format.type == "json_schema" and r.text.format.name


def test_logprobs(client, model_id):
    r = client.responses.create(model=model_id, input="Say hello", temperature=0, max_output_tokens=6,
                                top_logprobs=2, include=["message.output_text.logprobs"],
                                extra_body={"cache_prompt": False})
    lp = r.output[0].content[0].logprobs
    assert len(lp) == r.usage.output_tokens and all(len(t.top_logprobs) == 2 for t in lp)
    assert "".join(t.token for t in lp) == r.output_text


@pytest.mark.parametrize("kw,param", [
    (dict(input="hi", previous_response_id="resp_123"), "previous_response_id"),
    (dict(input="hi", tools=[{"type": "web_search"}]), "tools[0].type"),
    (dict(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]),
     "input[0].content[0].type"),
    (dict(input="hi", max_output_tokens=0), "max_output_tokens"),
    (dict(input="hi", text={"format": {"type": "json_schema", "name": "x", "schema": {"not": {}}}}),
     "text.format.schema"),
    (dict(input=[]), "input"),
    (dict(input="hi", background=True), "background"),
])
def test_bad_inputs_name_the_responses_field(client, model_id, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, **kw)
    assert e.value.body["param"] == param, e.value.body
    # The server keeps serving.
    assert client.responses.create(model=model_id, input="Hi", max_output_tokens=3).output_text


def test_responses_are_not_stored(client, server, model_id):
    r = client.responses.create(model=model_id, input="Hi", max_output_tokens=3, store=True)
    assert r.store is False  # said, not pretended
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.retrieve(r.id)
    assert "keeps no responses" in str(e.value)
    assert httpx.get(server.base + "/v1/responses", timeout=10).status_code == 405
