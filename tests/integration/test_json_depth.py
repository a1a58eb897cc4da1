"""JSON nested past Outpost's limit (128 levels, util/json_text.h) in every
place a client sends JSON: each is refused with a 400 naming the limit (and
the field, where the JSON is inside a string), and the server keeps serving.
Before the limit, one ~180 KB request of 5,000 nested objects — a response
schema, a tool's parameters, a tool call's arguments sent back — overflowed a
thread's stack and killed the server. Requests nested up to the limit are
answered, through a template (Qwen's) that walks a call's arguments level by
level."""
import json
import os

import httpx
import pytest

from outpost_harness import TEMPLATES, serve

DEEP = 5000
LIMIT = 128
ASK = [{"role": "user", "content": "hi"}]


def arrays(levels):
    return "[" * levels + "]" * levels


def schema(levels):
    """An object schema whose request JSON nests about 2 * levels deep."""
    return '{"type":"object","properties":{"a":' * levels + '{"type":"string"}' + "}}" * levels


def sent_back_call(arguments):
    return [*ASK, {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": "f", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]


TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
BODY = "the request body nests arrays and objects more than 128 levels deep"

# (name, path, raw body, message part, param)
ROWS = [
    ("chat response_format schema", "/v1/chat/completions",
     '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"response_format":'
     '{"type":"json_schema","json_schema":{"name":"x","schema":%s}}}' % schema(DEEP), BODY, None),
    ("chat tool parameters", "/v1/chat/completions",
     '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"tools":[{"type":"function",'
     '"function":{"name":"f","parameters":%s}}]}' % schema(DEEP), BODY, None),
    ("chat metadata", "/v1/chat/completions",
     '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"metadata":%s}' % arrays(DEEP), BODY, None),
    ("a call's arguments sent back", "/v1/chat/completions",
     json.dumps({"messages": sent_back_call(arrays(DEEP)), "tools": [TOOL], "max_tokens": 2}),
     "'messages[1].tool_calls[0].function.arguments' nests arrays and objects more than 128 levels deep",
     "messages[1].tool_calls[0].function.arguments"),
    ("a cut call's arguments sent back", "/v1/chat/completions",
     json.dumps({"messages": sent_back_call("[" * DEEP), "tools": [TOOL], "max_tokens": 2}),
     "nests arrays and objects more than 128 levels deep", "messages[1].tool_calls[0].function.arguments"),
    ("completions prompt", "/v1/completions", '{"max_tokens":2,"prompt":%s}' % arrays(DEEP), BODY, None),
    ("responses text.format schema", "/v1/responses",
     '{"input":"hi","max_output_tokens":16,"text":{"format":{"type":"json_schema","name":"x","schema":%s}}}'
     % schema(DEEP), BODY, None),
    ("responses function_call arguments", "/v1/responses",
     json.dumps({"input": [{"role": "user", "content": "hi"},
                           {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": arrays(DEEP)},
                           {"type": "function_call_output", "call_id": "call_1", "output": "ok"}],
                 "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                 "max_output_tokens": 4}),
     "'input[1].arguments' nests arrays and objects more than 128 levels deep", "input[1].arguments"),
    ("embeddings input", "/v1/embeddings", '{"input":%s}' % arrays(DEEP), BODY, None),
    ("conversations metadata", "/v1/conversations", '{"metadata":%s}' % arrays(DEEP), BODY, None),
    ("batches metadata", "/v1/batches",
     '{"input_file_id":"file-x","endpoint":"/v1/completions","completion_window":"24h","metadata":%s}'
     % arrays(DEEP), BODY, None),
    ("an unterminated body", "/v1/chat/completions", "[" * DEEP, BODY, None),
]


@pytest.fixture(scope="module")
def qwen_server():
    with serve("--chat-template-file", os.path.join(TEMPLATES, "qwen2.5-tools.jinja"),
               "--parallel", "2", "--ctx-size", "1024") as s:
        yield s


def assert_serving(s):
    assert s.proc.poll() is None, s.log()[-2000:]
    r = httpx.post(s.base + "/v1/chat/completions", timeout=60,
                   json={"messages": [{"role": "user", "content": "What is the capital of France?"}],
                         "max_tokens": 16, "temperature": 0})
    assert r.status_code == 200 and "Paris" in r.json()["choices"][0]["message"]["content"], r.text


@pytest.mark.parametrize("name,path,body,says,param", ROWS, ids=[r[0] for r in ROWS])
def test_json_nested_past_the_limit_is_refused_and_the_server_keeps_serving(qwen_server, name, path, body,
                                                                           says, param):
    assert len(body) < 4 << 20  # under the default body limit: only the nesting is wrong
    r = httpx.post(qwen_server.base + path, content=body, timeout=60,
                   headers={"content-type": "application/json"})
    assert r.status_code == 400, (name, r.status_code, r.text[:300])
    err = r.json()["error"]
    assert says in err["message"] and err["type"] == "invalid_request_error", (name, err)
    if param is not None:
        assert err["param"] == param, (name, err)
    assert_serving(qwen_server)


def test_a_batch_input_line_nested_past_the_limit_is_named(qwen_server):
    good = json.dumps({"custom_id": "a", "method": "POST", "url": "/v1/completions",
                       "body": {"prompt": "The capital of France is", "max_tokens": 4}})
    deep = '{"custom_id":"b","method":"POST","url":"/v1/completions","body":{"prompt":"x","metadata":%s}}' % (
        arrays(DEEP))
    f = httpx.post(qwen_server.base + "/v1/files", timeout=60, data={"purpose": "batch"},
                   files={"file": ("deep.jsonl", (good + "\n" + deep + "\n").encode())})
    assert f.status_code == 200, f.text
    b = httpx.post(qwen_server.base + "/v1/batches", timeout=60,
                   json={"input_file_id": f.json()["id"], "endpoint": "/v1/completions",
                         "completion_window": "24h"}).json()
    assert b["status"] == "failed", b
    (e,) = b["errors"]["data"]
    assert e["line"] == 2 and e["code"] == "invalid_json_line" and "more than 128 levels deep" in e["message"], e
    assert_serving(qwen_server)


def test_json_nested_up_to_the_limit_is_answered(qwen_server):
    base = qwen_server.base + "/v1/chat/completions"
    # A call's arguments 128 levels deep, rendered by a template that parses
    # them and walks every level; and the cut form of the same, closed.
    for args in (arrays(LIMIT), "[" * LIMIT):
        r = httpx.post(base, timeout=120, json={"messages": sent_back_call(args), "tools": [TOOL],
                                                "tool_choice": "none", "max_tokens": 4})
        assert r.status_code == 200, r.text[:300]
    # A response schema 60 levels deep (the body nests ~125): the grammar is made and used.
    body = ('{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0,"response_format":'
            '{"type":"json_schema","json_schema":{"name":"x","schema":%s}}}' % schema(60))
    r = httpx.post(base, content=body, timeout=120, headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith("{"), r.text[:300]
    assert_serving(qwen_server)
