"""End-to-end: the official openai Python client against a live outpost serve."""
import json
import openai
import pytest


def test_models_list(client):
    models = client.models.list()
    assert len(models.data) == 1
    m = models.data[0]
    assert m.object == "model" and m.id
    assert client.models.retrieve(m.id).id == m.id


def test_chat(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "system", "content": "You answer briefly."},
                                  {"role": "user", "content": "What is 2 + 2?"}],
        temperature=0, max_tokens=16)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.model == model_id


def test_streaming_chat_matches_non_streaming(client, model_id):
    # cache_prompt false: both compute the whole prompt (docs/api.md).
    kw = dict(model=model_id, messages=[{"role": "user", "content": "Name a planet."}],
              temperature=0, max_tokens=20, extra_body={"cache_prompt": False})
    whole = client.chat.completions.create(**kw).choices[0].message.content
    stream = client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw)
    parts, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.content:
                parts.append(c.delta.content)
            if c.finish_reason:
                finish = c.finish_reason
    assert "".join(parts) == whole
    assert finish in ("stop", "length")
    assert usage is not None and usage.completion_tokens > 0


def test_completions(client, model_id):
    r = client.completions.create(model=model_id, prompt="Water boils at", temperature=0, max_tokens=8)
    assert r.choices[0].text
    assert r.usage.completion_tokens <= 8
    chunks = list(client.completions.create(model=model_id, prompt="Water boils at", temperature=0,
                                            max_tokens=8, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text


def test_errors_map_to_client_exceptions(client, model_id):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="missing", messages=[{"role": "user", "content": "x"}])
    assert "does not exist" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "x"}],
                                       temperature=9)
    assert e.value.body["param"] == "temperature"


# --- The features agent frameworks and extraction pipelines use -------------

from typing import Literal  # noqa: E402

import pydantic  # noqa: E402  (installed with openai)


class Defect(pydantic.BaseModel):
    part: str = pydantic.Field(max_length=40)  # enforced by the grammar too
    severity: Literal["low", "medium", "high"]
    count: int


def test_structured_output_with_a_pydantic_model(client, model_id):
    r = client.chat.completions.parse(
        model=model_id, response_format=Defect, seed=3, max_tokens=80,
        messages=[{"role": "user", "content": "Report as JSON: two deep scratches on the left door panel."}])
    d = r.choices[0].message.parsed
    assert isinstance(d, Defect) and d.severity in ("low", "medium", "high"), r
    # The fields come in the model's order, as OpenAI writes them.
    assert list(json.loads(r.choices[0].message.content)) == ["part", "severity", "count"], r
    # Streamed, the same schema holds chunk by chunk put together.
    with client.chat.completions.stream(
            model=model_id, response_format=Defect, seed=4, max_tokens=80,
            messages=[{"role": "user", "content": "Report as JSON: a dent in the roof."}]) as s:
        final = s.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Defect)


class Reading(pydantic.BaseModel):
    gauge: str
    pressure_bar: float = pydantic.Field(ge=0, le=16)  # bounds on a number: Outpost's own rule
    confidence: float = pydantic.Field(gt=0, lt=1)


def test_a_pydantic_model_with_float_bounds(client, model_id):
    for seed in (1, 2, 3):
        r = client.chat.completions.parse(
            model=model_id, response_format=Reading, seed=seed, temperature=1.2, max_tokens=80,
            messages=[{"role": "user", "content": "Read gauge P-7: about 3 bar. Answer as JSON."}])
        d = r.choices[0].message.parsed
        assert isinstance(d, Reading), r  # parse() validated the bounds too
        assert 0 <= d.pressure_bar <= 16 and 0 < d.confidence < 1, d


class Order(pydantic.BaseModel):
    item: str
    unit_price: float = pydantic.Field(ge=0, multiple_of=0.01)  # cents: two fraction digits
    boxes: int = pydantic.Field(gt=0, multiple_of=6)  # sold by the half dozen
    discount_percent: int = pydantic.Field(ge=0, le=50, multiple_of=5)


def test_a_pydantic_model_with_multiples(client, model_id):
    """multipleOf (which llama.cpp's converter drops) kept by Outpost's rule:
    at a high temperature, where an unconstrained small model writes any
    number, every draw parses and validates."""
    schema = json.dumps(Order.model_json_schema())
    assert '"multipleOf": 0.01' in schema and '"multipleOf": 6' in schema, schema
    for seed in (1, 2, 3, 4):
        r = client.chat.completions.parse(
            model=model_id, response_format=Order, seed=seed, temperature=1.3, max_tokens=90,
            messages=[{"role": "user", "content": "Order as JSON: 12 boxes of M4 bolts at 3.457 "
                                                  "dollars each, 7 percent off."}])
        d = r.choices[0].message.parsed
        assert isinstance(d, Order), r  # parse() validated the multiples too
        text = json.loads(r.choices[0].message.content)
        cents = text["unit_price"] * 100
        assert abs(cents - round(cents)) < 1e-6, text
        assert d.boxes % 6 == 0 and d.boxes > 0 and d.discount_percent % 5 == 0, d


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}


def test_tools_and_a_response_format_together(client, model_id):
    """OpenAI lets an answer either call a tool or follow response_format;
    agents send both. Each answer is one or the other, streamed the same."""
    schema = {"type": "object", "properties": {"part": {"type": "string"},
                                               "severity": {"enum": ["low", "medium", "high"]}},
              "required": ["part", "severity"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "defect", "strict": True, "schema": schema}}
    ask = [{"role": "user", "content": "Report this defect: the left door panel has two deep scratches. "
                                       "Do not call any function."}]
    kinds = set()
    for seed in range(1, 9):
        # cache_prompt off: a cached prefix's logits differ in the last bits,
        # and the streamed answer must be the same draw.
        r = client.chat.completions.create(model=model_id, messages=ask, tools=[WEATHER], response_format=fmt,
                                           seed=seed, temperature=1.0, max_tokens=80,
                                           extra_body={"cache_prompt": False})
        c = r.choices[0]
        if c.finish_reason == "tool_calls":
            assert all(t.function.name == "get_weather" and "city" in json.loads(t.function.arguments)
                       for t in c.message.tool_calls), c
            kinds.add("call")
        elif c.finish_reason == "stop":
            d = json.loads(c.message.content)  # the format's JSON, not {"response": ...}
            assert set(d) == {"part", "severity"} and d["severity"] in ("low", "medium", "high"), d
            assert not c.message.tool_calls
            kinds.add("answer")
            chunks = list(client.chat.completions.create(
                model=model_id, messages=ask, tools=[WEATHER], response_format=fmt, seed=seed,
                temperature=1.0, max_tokens=80, stream=True, extra_body={"cache_prompt": False}))
            assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == c.message.content
        else:
            assert c.finish_reason == "length", c
    assert "answer" in kinds, kinds


def test_tool_calling_round_trip(client, model_id):
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model=model_id, messages=ask, tools=[WEATHER],
                                       tool_choice="required", parallel_tool_calls=False, seed=1)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls" and c.message.content is None
    (call,) = c.message.tool_calls  # parallel_tool_calls=False: exactly one
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    args = __import__("json").loads(call.function.arguments)
    assert set(args) == {"city"} and isinstance(args["city"], str)
    # The tool's result goes back; the model answers in text.
    follow = ask + [c.message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 C"}]
    r2 = client.chat.completions.create(model=model_id, messages=follow, tools=[WEATHER],
                                        tool_choice="none", seed=1, max_tokens=40)
    assert r2.choices[0].message.content and not r2.choices[0].message.tool_calls
    # Streamed: delta.tool_calls in OpenAI's shape. (One call: with parallel
    # calls allowed this small model repeats the call until the context ends,
    # and an answer cut there finishes "length".)
    chunks = list(client.chat.completions.create(model=model_id, messages=ask, tools=[WEATHER],
                                                 tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                                 parallel_tool_calls=False, stream=True, seed=2))
    calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
    assert calls and calls[0].function.name == "get_weather" and calls[0].index == 0
    # The arguments arrive piece by piece and add up to the whole JSON.
    first = [i for i, tc in enumerate(calls) if tc.id]
    assert len(calls) > len(first) + 1
    args = "".join(tc.function.arguments or "" for tc in calls if tc.index == 0)
    assert set(__import__("json").loads(args)) == {"city"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_call_cut_by_max_tokens_is_what_it_holds_never_the_format(client, model_id):
    """Cut at max_tokens anywhere in a forced call, the answer is what it holds
    so far — the call once its name is whole, its arguments' text so far —
    with finish_reason "length", streamed or not; the generic format's own
    {"tool_calls": ...} wrapper never reaches the client as content."""
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    kw = dict(model=model_id, messages=ask, tools=[WEATHER], tool_choice="required", temperature=0,
              parallel_tool_calls=False, extra_body={"cache_prompt": False})
    whole = client.chat.completions.create(max_tokens=100, **kw).choices[0]
    assert whole.finish_reason == "tool_calls", whole
    full_args = whole.message.tool_calls[0].function.arguments
    named = 0
    for max_tokens in (6, 12, 19, 24, 28):
        c = client.chat.completions.create(max_tokens=max_tokens, **kw).choices[0]
        assert c.finish_reason == "length" and not c.message.content, (max_tokens, c)
        calls = c.message.tool_calls or []
        if calls:
            named += 1
            assert calls[0].function.name == "get_weather", (max_tokens, calls)
            assert full_args.startswith(calls[0].function.arguments), (max_tokens, calls, full_args)
        chunks = list(client.chat.completions.create(max_tokens=max_tokens, stream=True, **kw))
        assert chunks[-1].choices[0].finish_reason == "length"
        assert not "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices), max_tokens
        deltas = [t for ch in chunks if ch.choices for t in (ch.choices[0].delta.tool_calls or [])]
        assert "".join(t.function.arguments or "" for t in deltas) == (
            calls[0].function.arguments if calls else ""), (max_tokens, deltas)
    assert named >= 2  # some cuts fell inside the arguments


def test_native_tool_format_round_trip_and_incremental_stream():
    """A template that declares tools (Qwen 2.5's, on SmolLM2): the calls are in
    that template's own format, constrained and parsed by llama.cpp's chat code,
    and a stream carries the arguments piece by piece as they are generated."""
    import json
    import os
    from outpost_harness import TEMPLATES, serve
    with serve("--chat-template-file", os.path.join(TEMPLATES, "qwen2.5-tools.jinja"),
               "--parallel", "2", "--ctx-size", "1024") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        mid = c.models.list().data[0].id
        ask = [{"role": "user", "content": "What is the weather in Paris?"}]
        r = c.chat.completions.create(model=mid, messages=ask, tools=[WEATHER], tool_choice="required",
                                      parallel_tool_calls=False, seed=1, max_tokens=100)
        ch = r.choices[0]
        assert ch.finish_reason == "tool_calls" and ch.message.content is None, ch
        (call,) = ch.message.tool_calls
        assert call.function.name == "get_weather" and call.id.startswith("call_")
        assert set(json.loads(call.function.arguments)) == {"city"}
        # The call and its result go back in the template's own turns.
        follow = ask + [ch.message.model_dump(exclude_none=True),
                        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 C"}]
        r2 = c.chat.completions.create(model=mid, messages=follow, tools=[WEATHER], tool_choice="none",
                                       seed=1, max_tokens=40)
        assert r2.choices[0].message.content and not r2.choices[0].message.tool_calls
        # Cut inside its arguments (Qwen's parser reads a cut call as whole:
        # the finish is still "length"), then sent back as it came with its
        # result: the template takes arguments as an object, and the cut text
        # is closed into one rather than refused.
        def valid(text):
            try:
                json.loads(text)
                return True
            except json.JSONDecodeError:
                return False

        cut = None
        for max_tokens in range(12, 24):
            a = c.chat.completions.create(model=mid, messages=ask, tools=[WEATHER], tool_choice="required",
                                          parallel_tool_calls=False, seed=1, max_tokens=max_tokens).choices[0]
            assert a.finish_reason == "length", (max_tokens, a)
            if a.message.tool_calls and '"city' in a.message.tool_calls[0].function.arguments:
                cut = a.message
                break
        assert cut is not None and not valid(cut.tool_calls[0].function.arguments), cut
        follow = ask + [cut.model_dump(exclude_none=True),
                        {"role": "tool", "tool_call_id": cut.tool_calls[0].id, "content": "Sunny, 24 C"}]
        r3 = c.chat.completions.create(model=mid, messages=follow, tools=[WEATHER], tool_choice="none",
                                       seed=1, max_tokens=30)
        assert r3.choices[0].message.content, r3
        # auto: text or well-formed calls to declared functions, whichever the model picks.
        for seed in range(3):
            a = c.chat.completions.create(model=mid, messages=ask, tools=[WEATHER], seed=seed, max_tokens=120)
            m, finish = a.choices[0].message, a.choices[0].finish_reason
            if m.tool_calls and finish == "tool_calls":
                assert all(t.function.name == "get_weather" and "city" in json.loads(t.function.arguments)
                           for t in m.tool_calls)
            elif m.tool_calls:  # cut at max_tokens: the calls so far, named
                assert finish == "length" and all(t.function.name == "get_weather" for t in m.tool_calls)
            else:
                assert m.content and "<tool_call>" not in m.content, m.content
        # Streamed: the first delta names the call, the next ones add argument text.
        chunks = list(c.chat.completions.create(model=mid, messages=ask, tools=[WEATHER],
                                                tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                                parallel_tool_calls=False, stream=True, seed=2, max_tokens=100))
        deltas = [tc for chunk in chunks if chunk.choices for tc in (chunk.choices[0].delta.tool_calls or [])]
        assert deltas[0].id.startswith("call_") and deltas[0].function.name == "get_weather"
        assert len(deltas) > 2 and all(d.index == 0 and d.id is None for d in deltas[1:])
        args = "".join(d.function.arguments or "" for d in deltas)
        assert set(json.loads(args)) == {"city"}
        assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_logprobs_through_the_client(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Say hello"}],
                                       temperature=0, max_tokens=6, logprobs=True, top_logprobs=2,
                                       extra_body={"cache_prompt": False})
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens and all(len(t.top_logprobs) == 2 for t in lp)
    assert "".join(t.token for t in lp) == r.choices[0].message.content
    stream = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Say hello"}],
                                            temperature=0, max_tokens=6, logprobs=True, stream=True,
                                            extra_body={"cache_prompt": False})
    tokens = [t.token for ch in stream if ch.choices and ch.choices[0].logprobs
              for t in ch.choices[0].logprobs.content]
    assert tokens == [t.token for t in lp]


def test_n_choices(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Say hello"}],
                                       n=2, seed=7, max_tokens=12, extra_body={"cache_prompt": False})
    assert [c.index for c in r.choices] == [0, 1] and all(c.message.content for c in r.choices)
    stream = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Say hello"}],
                                            n=2, seed=7, max_tokens=12, stream=True, extra_body={"cache_prompt": False})
    got = {0: "", 1: ""}
    for ch in stream:
        for c in ch.choices:
            got[c.index] += c.delta.content or ""
    assert [got[0], got[1]] == [c.message.content for c in r.choices]


def test_embeddings_through_the_client():
    from outpost_harness import serve
    with serve("--embeddings", "true", "--parallel", "1", "--ctx-size", "256") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        # The client asks for base64 and decodes it.
        r = c.embeddings.create(model=c.models.list().data[0].id, input=["edge box", "edge server"])
        assert len(r.data) == 2 and len(r.data[0].embedding) == 576 and r.usage.prompt_tokens > 0
        f = c.embeddings.create(model=r.model, input="edge box", encoding_format="float")
        assert f.data[0].embedding == pytest.approx(r.data[0].embedding, abs=1e-6)
        with pytest.raises(openai.BadRequestError):
            c.embeddings.create(model=r.model, input="")


@pytest.mark.parametrize("kw,param", [
    (dict(n=64), "n"),
    (dict(tool_choice={"type": "function", "function": {"name": "nope"}}, tools=[WEATHER]), "tool_choice"),
    (dict(tools=[{"type": "function", "function": {"name": "bad name"}}]), "tools[0].function.name"),
    (dict(tools=[WEATHER, {"type": "function", "function": {
        "name": "tag", "parameters": {"type": "object", "properties": {"t": {"type": "string", "format": "email"}}}}}]),
     "tools[1].function.parameters"),
    (dict(logprobs=True, top_logprobs=25), "top_logprobs"),
    (dict(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {}}}}),
     "response_format.json_schema.schema"),
])
def test_bad_feature_inputs_raise_bad_request(client, model_id, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "x"}], **kw)
    assert e.value.body["param"] == param, e.value.body


def test_wrong_key_is_an_authentication_error(tmp_path):
    from outpost_harness import serve
    with serve("--api-key", "sk-right", "--parallel", "1", "--ctx-size", "256") as s:
        bad = openai.OpenAI(base_url=s.base + "/v1", api_key="sk-wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
        good = openai.OpenAI(base_url=s.base + "/v1", api_key="sk-right", max_retries=0)
        assert good.models.list().data


def test_service_tiers_through_the_client_and_a_full_queue_gives_way_to_priority():
    """service_tier is answered as served; when every session and the whole
    queue are taken, a "priority" request displaces a queued "flex" one (503
    with Retry-After), which another "flex" request could not."""
    import concurrent.futures as cf
    import time
    from outpost_harness import serve
    with serve("--parallel", "1", "--queue-length", "1", "--ctx-size", "512") as s:
        c = openai.OpenAI(base_url=s.base + "/v1", api_key="x", max_retries=0)
        m = c.models.list().data[0].id
        ask = [{"role": "user", "content": "What is the capital of France?"}]
        for tier, served in (("priority", "priority"), ("flex", "flex"), ("auto", "default"), (None, "default")):
            kw = {} if tier is None else {"service_tier": tier}
            r = c.chat.completions.create(model=m, messages=ask, temperature=0, max_tokens=4, **kw)
            assert r.service_tier == served, (tier, r)
            r = c.completions.create(model=m, prompt="The capital of France is", temperature=0,
                                     max_tokens=8, extra_body=kw)
            assert r.service_tier == served, (tier, r)
            assert "Paris" in r.choices[0].text, r.choices[0].text
        chunks = list(c.chat.completions.create(model=m, messages=ask, temperature=0, max_tokens=8,
                                                service_tier="flex", stream=True))
        assert {ch.service_tier for ch in chunks} == {"flex"}

        def wait_for(active, queued):
            deadline = time.time() + 30
            while time.time() < deadline:
                st = s.ready()["models"][0]
                if st["active"] == active and st["queued"] == queued:
                    return
                time.sleep(0.02)
            raise AssertionError(f"never {active} active + {queued} queued: {s.ready()}")

        long = dict(model=m, messages=[{"role": "user", "content": "Write a long story."}],
                    max_tokens=300, extra_body={"ignore_eos": True})
        with cf.ThreadPoolExecutor(3) as ex:
            running = ex.submit(c.chat.completions.create, **long)
            wait_for(1, 0)
            flex = ex.submit(c.with_raw_response.chat.completions.create, service_tier="flex", **long)
            wait_for(1, 1)
            # Another flex request finds nothing below it to displace: refused.
            with pytest.raises(openai.InternalServerError) as refused:
                c.chat.completions.create(model=m, messages=ask, max_tokens=4, service_tier="flex")
            assert refused.value.status_code == 503
            assert "queue holds 1 of 1" in refused.value.body["message"], refused.value.body
            prio = ex.submit(c.completions.create, model=m, prompt="The capital of France is",
                             temperature=0, max_tokens=8, extra_body={"service_tier": "priority"})
            with pytest.raises(openai.InternalServerError) as displaced:
                flex.result(timeout=60)
            assert displaced.value.status_code == 503
            assert "'flex' request gave its place" in displaced.value.body["message"], displaced.value.body
            assert int(displaced.value.response.headers["Retry-After"]) >= 1
            p = prio.result(timeout=120)
            assert p.service_tier == "priority" and "Paris" in p.choices[0].text, p
            assert running.result(timeout=120).usage.completion_tokens == 300
        assert s.metric("outpost_requests_rejected_total", reason="displaced") == 1
        # Still serving.
        assert c.chat.completions.create(model=m, messages=ask, max_tokens=4).choices
