"""The default model's answers make sense, and the API features real clients use:
structured output (response_format), logprobs, API keys. Read what the server
answers, not only the status codes."""
import json
import re

import pytest
from outpost_harness import chat_body, serve, stream_events

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
GREETING = re.compile(r"\b(hello|hi|hey|greet\w*|welcome|glad|nice to meet)\b", re.I)


def test_readme_example_gives_a_short_greeting(server):
    """The README's curl, as a newcomer sends it (no sampling settings: the
    model's defaults apply), over fixed seeds so the test is repeatable."""
    answers = []
    for seed in range(6):
        r = server.post(CHAT, json={"messages": [{"role": "user", "content": "Say hello"}], "seed": seed})
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        answers.append((c["message"]["content"], c["finish_reason"], r.json()["usage"]["completion_tokens"]))
    for text, finish, n in answers:
        assert finish == "stop" and n <= 80, answers  # short, and it ends by itself
        assert text.strip(), answers
    greetings = [t for t, _, _ in answers if GREETING.search(t)]
    assert len(greetings) >= 4, answers


DEFECT_SCHEMA = {
    "type": "object",
    "properties": {
        "part": {"type": "string", "maxLength": 60},
        "severity": {"type": "string", "enum": ["low", "medium", "high"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["part", "severity", "count"],
    "additionalProperties": False,
}


def check_defect(text):
    d = json.loads(text)
    assert list(d) == ["part", "severity", "count"], d  # the schema's order, not sorted
    assert isinstance(d["part"], str) and len(d["part"]) <= 60
    assert d["severity"] in ("low", "medium", "high")
    assert isinstance(d["count"], int) and 1 <= d["count"] <= 9
    return d


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_schema_output_always_parses_and_follows_the_schema(server, seed):
    body = chat_body(content="Report this defect as JSON: two deep scratches on the left door panel.",
                     # Room for the schema's longest answer: a 60-character part can
                     # take 60 tokens (seed 2 wrote "p1,p2,...": 87 tokens in all).
                     temperature=0.8, seed=seed, max_tokens=160, cache_prompt=False,
                     response_format={"type": "json_schema",
                                      "json_schema": {"name": "defect", "strict": True, "schema": DEFECT_SCHEMA}})
    r = server.post(CHAT, json=body)
    assert r.status_code == 200, r.text
    c = r.json()["choices"][0]
    assert c["finish_reason"] == "stop"  # the grammar let the model end only when the JSON was complete
    check_defect(c["message"]["content"])
    events, done = stream_events(server, CHAT, {**body, "stream": True})
    assert done
    streamed = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert streamed == c["message"]["content"]  # same seed, same constrained answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_complete_json_answer_ends_even_with_ignore_eos(server, stream):
    """ignore_eos bans the end of generation; once the schema's answer is
    complete the grammar allows nothing else. The answer ends there ("stop")
    instead of the server dying (llama.cpp threw on the engine thread), and a
    logit_bias ban on what the grammar needs does not leave it stuck either."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    for extra in [{"ignore_eos": True},
                  {"ignore_eos": True, "logit_bias": {str(t): -100 for t in range(0, 200)}}]:
        body = chat_body(content="Is water wet? Answer as JSON.", temperature=0.8, seed=4, max_tokens=60,
                         response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
                         **extra)
        if stream:
            events, done = stream_events(server, CHAT, {**body, "stream": True})
            assert done
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
            finish = [e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1]
        else:
            r = server.post(CHAT, json=body)
            assert r.status_code == 200, r.text
            text, finish = r.json()["choices"][0]["message"]["content"], r.json()["choices"][0]["finish_reason"]
        assert finish == "stop", (extra, text)
        assert isinstance(json.loads(text)["ok"], bool), text
    assert server.get("/health").status_code == 200


@pytest.mark.parametrize("pattern,check", [
    (r"^\d{3}-\d{4}$", r"^\d{3}-\d{4}$"),                    # \d: llama.cpp's converter reads none
    (r"^https?:\/\/[a-z]+\.com$", r"^https?://[a-z]+\.com$"),  # \/: nor this escape
    (r"[A-Z]{3}", r"[A-Z]{3}"),                                # unanchored: "contains a match"
    (r"^[A-Z][a-z]+\s[A-Z][a-z]+$", r"^[A-Z][a-z]+\s[A-Z][a-z]+$"),  # \s: a tab or newline escaped
])
def test_a_pattern_is_enforced_and_the_answer_stays_a_json_string(server, pattern, check):
    """Each of these patterns used to be dropped for "any string" (a warning on
    stderr only); the answers follow them now. An unanchored pattern's filler
    and `.` leave quotes out, so the answer is one JSON string."""
    for seed in (1, 2):
        body = chat_body(content="Give a phone number and a web site.", temperature=0.7, seed=seed,
                         max_tokens=60, response_format={"type": "json_schema", "json_schema": {
                             "name": "p", "schema": {"type": "string", "pattern": pattern}}})
        r = server.post(CHAT, json=body)
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        text = c["message"]["content"]
        assert text.startswith('"') and '"' not in text[1:-1], text  # one string, no raw quote inside
        if c["finish_reason"] == "stop":
            assert re.search(check, json.loads(text)), text
        else:  # cut by max_tokens: an unfinished string
            assert c["finish_reason"] == "length", c


def test_number_bounds_hold_in_the_answers(server):
    """minimum / maximum on a number (Pydantic's confloat): llama.cpp's converter
    would ignore them; Outpost's own rule keeps every answer within, and the
    number is a plain decimal. Hot sampling, several seeds, so the model tries
    many numbers."""
    schema = {"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "celsius": {"type": "number", "exclusiveMinimum": -273.15, "maximum": 100},
        "loss": {"type": "number", "maximum": -0.5}},
        "required": ["score", "celsius", "loss"], "additionalProperties": False}
    seen = set()
    for seed in range(6):
        body = chat_body(content="Rate the review 0 to 1, say the temperature in Celsius and the loss: "
                                 "'The soup was cold.'", temperature=1.3, seed=seed, max_tokens=80,
                         response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
        r = server.post(CHAT, json=body)
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        assert c["finish_reason"] == "stop", c
        d = json.loads(c["message"]["content"])
        assert 0 <= d["score"] <= 1 and -273.15 < d["celsius"] <= 100 and d["loss"] <= -0.5, d
        numbers = re.findall(r":\s*(-?[0-9][0-9.eE+-]*)", c["message"]["content"])
        assert len(numbers) == 3 and all(re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", n) for n in numbers), c
        seen.add((d["score"], d["celsius"], d["loss"]))
    assert len(seen) >= 3, seen  # the model chose, within the bounds


def test_json_object_output_parses(server):
    r = server.post(CHAT, json=chat_body(content="List two fruits.", temperature=0.8, seed=5, max_tokens=120,
                                         response_format={"type": "json_object"}))
    assert r.status_code == 200, r.text
    c = r.json()["choices"][0]
    if c["finish_reason"] == "stop":
        assert isinstance(json.loads(c["message"]["content"]), dict)
    else:  # cut by max_tokens: still a prefix of a JSON object
        assert c["message"]["content"].lstrip().startswith("{")


def test_chat_logprobs_match_the_tokens_and_stream_the_same(server):
    body = chat_body(content="Say hello", logprobs=True, top_logprobs=3, max_tokens=8, cache_prompt=False)
    j = server.post(CHAT, json=body).json()
    c = j["choices"][0]
    content = c["logprobs"]["content"]
    assert c["logprobs"]["refusal"] is None
    assert len(content) == j["usage"]["completion_tokens"]
    assert "".join(t["token"] for t in content) == c["message"]["content"]
    for t in content:
        assert t["logprob"] <= 0 and bytes(t["bytes"]).decode("utf-8", "replace")
        assert len(t["top_logprobs"]) == 3
        lps = [a["logprob"] for a in t["top_logprobs"]]
        assert lps == sorted(lps, reverse=True)
        # Greedy: the chosen token is the most likely one.
        assert t["logprob"] == pytest.approx(lps[0], abs=1e-4) and t["token"] == t["top_logprobs"][0]["token"]
    events, _ = stream_events(server, CHAT, {**body, "stream": True})
    streamed = [t for e in events if e["choices"] and e["choices"][0]["logprobs"]
                for t in e["choices"][0]["logprobs"]["content"]]
    assert [t["token"] for t in streamed] == [t["token"] for t in content]
    # Without logprobs the field is present and null, as OpenAI's schema requires.
    plain = server.post(CHAT, json=chat_body(max_tokens=2)).json()["choices"][0]
    assert plain["logprobs"] is None and plain["message"]["refusal"] is None


def test_completion_logprobs_legacy_shape(server):
    j = server.post(COMP, json={"prompt": "The sky is", "temperature": 0, "max_tokens": 5, "logprobs": 2}).json()
    lp = j["choices"][0]["logprobs"]
    n = j["usage"]["completion_tokens"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]) == n
    assert "".join(lp["tokens"]) == j["choices"][0]["text"]
    assert lp["text_offset"][0] == 0 and all(len(t) == 2 for t in lp["top_logprobs"])


BAD = [
    (CHAT, {"response_format": {"type": "xml"}}, "response_format.type", "json_schema"),
    (CHAT, {"response_format": {"type": "json_schema"}}, "response_format.json_schema", "required"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"type": "string", "format": "email"}}}}}},
     "response_format.json_schema.schema", "format 'email'"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "array", "uniqueItems": True}}}}, "response_format.json_schema.schema", "keyword 'uniqueItems'"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}}},
     "response_format.json_schema.schema", "cannot be turned into a grammar"),
    # Bounds llama.cpp's grammar engine cannot keep: a minimum above its maximum
    # (its parser used to take those until the kernel killed the server for
    # memory), counts past 2000, number bounds (ignored), an empty integer range
    # (a grammar that dead-ends: the server died on it).
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}}}}}},
     "response_format.json_schema.schema", "at /properties/a: minLength 5 is above maxLength 2"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "array", "items": {"type": "integer"}, "minItems": 5, "maxItems": 2}}}},
     "response_format.json_schema.schema", "minItems 5 is above maxItems 2"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "string", "pattern": "^a{5,2}$"}}}}, "response_format.json_schema.schema", "at least 5 and at most 2"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "string", "maxLength": 5000}}}}, "response_format.json_schema.schema", "maxLength 5000 is more than"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "number", "minimum": 1, "maximum": 0.5}}}}, "response_format.json_schema.schema",
     "no number lies within its bounds"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": ["number", "null"], "minimum": 0}}}}, "response_format.json_schema.schema",
     "use anyOf with {\"type\": \"null\"}"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 6}}}}, "response_format.json_schema.schema",
     "no integer lies within its bounds"),
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "string", "pattern": r"^(a)\1$"}}}}, "response_format.json_schema.schema",
     "uses regular-expression syntax grammar-constrained decoding cannot enforce"),
    # Every enum value is grammar work on every token, which all streams wait for.
    (CHAT, {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "enum": ["v%d" % i for i in range(1001)]}}}}, "response_format.json_schema.schema",
     "has 1001 enum values and anyOf/oneOf branches in all; at most 1000"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f%d" % t, "parameters": {
        "type": "object", "properties": {"a": {"enum": ["v%d" % i for i in range(300)]}}}}} for t in range(4)]},
     "tools", "has 1200 enum values and anyOf/oneOf branches in all its functions"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}}}}}],
        "tool_choice": "required"}, "tools[0].function.parameters", "minLength 5 is above maxLength 2"),
    (CHAT, {"logprobs": True, "top_logprobs": 21}, "top_logprobs", "between 0 and 20"),
    (CHAT, {"top_logprobs": 2}, "top_logprobs", "requires 'logprobs': true"),
    (CHAT, {"logprobs": "yes"}, "logprobs", "boolean"),
    (COMP, {"prompt": "x", "logprobs": 21}, "logprobs", "between 0 and 20"),
    (CHAT, {"temperature": 3}, "temperature", "between 0 and 2"),
]


@pytest.mark.parametrize("path,extra,param,words", BAD, ids=[b[2] + ":" + b[3] for b in BAD])
def test_bad_inputs_name_the_field(server, path, extra, param, words):
    body = {**(chat_body() if path == CHAT else {}), **extra}
    r = server.post(path, json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err
    assert err["type"] == "invalid_request_error" and err["code"] == "invalid_value"
    assert server.get("/health").status_code == 200  # still serving


def test_api_keys(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("# site keys\nsk-line-one\n\n  sk-line-two  \n")
    with serve("--api-key-file", str(keys), "--parallel", "1", "--ctx-size", "256") as s:
        def post(auth):
            headers = {"Authorization": auth} if auth is not None else {}
            return s.post(CHAT, json=chat_body(max_tokens=2), headers=headers)
        for auth, why in [(None, "required"), ("Bearer sk-wrong", "not valid"), ("Basic sk-line-one", "Bearer"),
                          ("Bearer sk-line-on", "not valid"), ("Bearer sk-line-one2", "not valid"), ("sk-line-one", "Bearer")]:
            r = post(auth)
            assert r.status_code == 401, (auth, r.text)
            err = r.json()["error"]
            assert err["code"] == "invalid_api_key" and why in err["message"], (auth, err)
            assert r.headers["WWW-Authenticate"] == "Bearer"
        assert post("Bearer sk-line-one").status_code == 200
        assert post("Bearer sk-line-two").status_code == 200
        assert s.get("/v1/models").status_code == 401
        assert s.get("/v1/models", headers={"Authorization": "Bearer sk-line-two"}).status_code == 200
        assert s.get("/health").status_code == 200 and s.get("/ready").status_code == 200
        assert s.get("/metrics").status_code == 200
        log = s.log()
    assert "sk-line" not in log and "sk-wrong" not in log  # keys are never logged
    with serve("--api-key", "sk-flag", "--metrics-require-key", "true", "--parallel", "1",
               "--ctx-size", "256") as s:
        assert s.get("/metrics").status_code == 401
        assert s.get("/metrics", headers={"Authorization": "Bearer sk-flag"}).status_code == 200


def test_api_key_file_errors_are_clear(tmp_path):
    from outpost_harness import BIN
    import subprocess
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n\n")
    for path, words in [(str(tmp_path / "missing"), "cannot be read"), (str(empty), "holds no key")]:
        p = subprocess.run([BIN, "serve", "--api-key-file", path, "--port", "0"], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2 and words in p.stdout + p.stderr, p.stdout + p.stderr


def choices_equal_separate_requests(s, seed):
    """n choices (one prefill, KV copied) answer exactly what separate requests
    with seeds seed, seed+1, ... answer (each computing the prompt itself:
    cache_prompt false, so none reuses the prefix cache)."""
    body = chat_body(content="Say hello", temperature=0.8, seed=seed, max_tokens=16, cache_prompt=False)
    j = s.post(CHAT, json={**body, "n": 3}).json()
    together = [c["message"]["content"] for c in sorted(j["choices"], key=lambda c: c["index"])]
    alone = [s.post(CHAT, json={**body, "seed": seed + i}).json()["choices"][0]["message"]["content"]
             for i in range(3)]
    assert together == alone
    assert j["usage"]["completion_tokens"] == sum(
        s.post(CHAT, json={**body, "seed": seed + i}).json()["usage"]["completion_tokens"] for i in range(3))
    return j


def test_n_choices_share_the_prompt_and_match_separate_requests(server):
    j = choices_equal_separate_requests(server, 11)
    assert [c["index"] for c in j["choices"]] == [0, 1, 2]
    assert j["usage"]["prompt_tokens"] < 60  # counted once
    # Streamed: every chunk names its choice; each choice ends once.
    events, done = stream_events(server, CHAT, chat_body(content="Say hello", seed=11, temperature=0.8,
                                                         max_tokens=16, n=3, stream=True, cache_prompt=False))
    assert done
    texts = {}
    finishes = {}
    for e in events:
        for c in e["choices"]:
            texts[c["index"]] = texts.get(c["index"], "") + (c["delta"].get("content") or "")
            if c["finish_reason"]:
                finishes[c["index"]] = finishes.get(c["index"], 0) + 1
    assert [texts[i] for i in range(3)] == [c["message"]["content"] for c in j["choices"]]
    assert finishes == {0: 1, 1: 1, 2: 1}


def test_n_choices_on_gemma_sliding_window_layers():
    """Gemma 3 mixes sliding-window and full attention (two KV caches): the
    copied prompt must give the same answers as computing it again."""
    from outpost_harness import GEMMA
    with serve("--parallel", "3", "--ctx-size", "512", models=[GEMMA]) as s:
        choices_equal_separate_requests(s, 5)


@pytest.fixture(scope="module")
def embedder():
    with serve("--embeddings", "true", "--parallel", "1", "--ctx-size", "256") as s:
        yield s


def cos(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_embeddings_are_unit_vectors_that_mean_something(embedder):
    texts = ["The cat sat on the mat.", "A kitten is sitting on a rug.",
             "Quarterly revenue rose by 8 percent.", "Stock markets fell sharply today.",
             "The cat sat on the mat."]
    j = embedder.post("/v1/embeddings", json={"input": texts}).json()
    assert j["object"] == "list" and j["model"] and j["usage"]["prompt_tokens"] == j["usage"]["total_tokens"] > 10
    vs = [d["embedding"] for d in sorted(j["data"], key=lambda d: d["index"])]
    assert [d["object"] for d in j["data"]] == ["embedding"] * 5
    assert all(len(v) == 576 for v in vs)  # SmolLM2 135M's hidden size
    assert all(abs(cos(v, v) - 1) < 1e-4 for v in vs)  # normalised
    assert cos(vs[0], vs[4]) == pytest.approx(1, abs=1e-5)  # same text, same vector
    # Related sentences are closer than unrelated ones.
    assert cos(vs[0], vs[1]) > cos(vs[0], vs[2]) + 0.1
    assert cos(vs[2], vs[3]) > cos(vs[1], vs[3]) + 0.1
    # One string, base64 (little-endian float32): the same vector.
    import base64
    import struct
    b = embedder.post("/v1/embeddings", json={"input": texts[0], "encoding_format": "base64"}).json()
    raw = base64.b64decode(b["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == pytest.approx(vs[0], abs=1e-6)


EMB_BAD = [
    ({}, "input", "required"),
    ({"input": ""}, "input", "must not be empty"),
    ({"input": []}, "input", "must not be empty"),
    ({"input": ["ok", ""]}, "input[1]", "must not be empty"),
    ({"input": 42}, "input", "must be a string"),
    ({"input": ["ok", {"a": 1}]}, "input[1]", "string or an array of token ids"),
    ({"input": [1, 2, 99999999]}, "input[2]", "token id 99999999 is outside the vocabulary"),
    ({"input": [[1, 2], [3, -4]]}, "input[1][1]", "token id -4 is negative"),
    ({"input": [2**32 + 1]}, "input[0]", "token id 4294967297 is outside the vocabulary"),
    ({"input": ["x"] * 2049}, "input", "at most 2048"),
    ({"input": "word " * 400}, "input", "the most one input may have is 256"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format", "float or base64"),
    ({"input": "x", "dimensions": 64}, "dimensions", "must be 576"),
    ({"input": "x", "model": "nope"}, "model", "does not exist"),
]


@pytest.mark.parametrize("body,param,words", EMB_BAD, ids=[b[1] + ":" + b[2] for b in EMB_BAD])
def test_embeddings_bad_inputs(embedder, body, param, words):
    r = embedder.post("/v1/embeddings", json=body)
    assert r.status_code in (400, 404), r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err
    assert (err["code"] == "context_length_exceeded") == ("most one input" in words), err
    assert embedder.get("/health").status_code == 200


def test_embeddings_need_the_flag(server):
    r = server.post("/v1/embeddings", json={"input": "x"})
    assert r.status_code == 400 and "not loaded for embeddings" in r.json()["error"]["message"]


def test_several_prompts_in_one_completions_request(server):
    prompts = ["Once upon a time", "The sky is"]
    alone = [server.post(COMP, json={"prompt": p, "temperature": 0, "max_tokens": 6}).json() for p in prompts]
    j = server.post(COMP, json={"prompt": prompts, "temperature": 0, "max_tokens": 6, "n": 2}).json()
    assert [c["index"] for c in j["choices"]] == [0, 1, 2, 3]  # prompt x n + j
    texts = [c["text"] for c in j["choices"]]
    # Greedy: each prompt's choices equal the answer to that prompt alone.
    assert texts == [alone[0]["choices"][0]["text"]] * 2 + [alone[1]["choices"][0]["text"]] * 2
    assert j["usage"]["prompt_tokens"] == sum(a["usage"]["prompt_tokens"] for a in alone)
    # Token-id prompts, streamed.
    events, done = stream_events(server, COMP, {"prompt": [[1, 2, 3], [4, 5]], "temperature": 0,
                                                "max_tokens": 3, "stream": True})
    assert done
    finished = sorted(c["index"] for e in events for c in e["choices"] if c["finish_reason"])
    assert finished == [0, 1]
    r = server.post(COMP, json={"prompt": ["fine", ""], "max_tokens": 2})
    assert r.status_code == 400 and r.json()["error"]["param"] == "prompt[1]"
