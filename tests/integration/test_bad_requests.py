"""A table of bad requests: each gets the right status and a message naming the
field or limit, and the server keeps serving after every one."""
import json

import httpx
import pytest
from outpost_harness import chat_body

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
RESP = "/v1/responses"
CONV = "/v1/conversations"
LONG = "word " * 1500  # far more than the 1024-token session context

CASES = [
    # (method, path, body (str/dict/None), headers, status, param, message part)
    ("POST", CHAT, "{not json", {}, 400, None, "not valid JSON"),
    ("POST", CHAT, "[]", {}, 400, None, "must be a JSON object"),
    ("POST", CHAT, {}, {}, 400, "messages", "'messages' is required"),
    ("POST", CHAT, {"messages": []}, {}, 400, "messages", "must not be empty"),
    ("POST", CHAT, {"messages": "hello"}, {}, 400, "messages", "must be an array"),
    ("POST", CHAT, {"messages": [{"role": "robot", "content": "x"}]}, {}, 400, "messages[0].role", "robot"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": 7}]}, {}, 400, "messages[0].content", "got a number"),
    ("POST", CHAT, chat_body(model="no-such-model"), {}, 404, "model", "does not exist"),
    ("POST", CHAT, chat_body(temperature=5), {}, 400, "temperature", "between 0 and 2"),
    ("POST", CHAT, chat_body(temperature="warm"), {}, 400, "temperature", "must be a number"),
    ("POST", CHAT, chat_body(top_p=2), {}, 400, "top_p", "between 0 and 1"),
    ("POST", CHAT, chat_body(top_k=-3), {}, 400, "top_k", "between 0"),
    ("POST", CHAT, chat_body(max_tokens=-1), {}, 400, "max_tokens", "between 1"),
    ("POST", CHAT, chat_body(max_tokens=5000), {}, 400, "max_tokens", "context per session is 1024"),
    ("POST", CHAT, chat_body(n=9), {}, 400, "n", "this model has 8 sessions"),
    ("POST", CHAT, chat_body(stop=42), {}, 400, "stop", "string or an array"),
    ("POST", CHAT, chat_body(logit_bias={"x": 1}), {}, 400, "logit_bias", "not a token id"),
    ("POST", CHAT, chat_body(logit_bias={"5": 500}), {}, 400, "logit_bias.5", "between -100 and 100"),
    ("POST", CHAT, chat_body(logit_bias={"99999999": 1}), {}, 400, "logit_bias", "outside the vocabulary"),
    ("POST", CHAT, chat_body(logit_bias={"-3": 1}), {}, 400, "logit_bias", "is negative"),
    ("POST", CHAT, chat_body(presence_penalty=9), {}, 400, "presence_penalty", "between -2 and 2"),
    ("POST", CHAT, chat_body(stream="yes"), {}, 400, "stream", "must be a boolean"),
    ("POST", CHAT, chat_body(stream_options={"include_usage": True}), {}, 400, "stream_options", "only allowed"),
    ("POST", CHAT, chat_body(content=LONG), {}, 400, "messages", "context per session is 1024"),
    ("POST", CHAT, chat_body(), {"X-Outpost-Priority": "urgent"}, 400, "X-Outpost-Priority", "interactive"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": "x" * 70000}]}, {}, 413, None, "larger than the limit"),
    # A thinking model's options (docs/api.md, "Models that think").
    ("POST", CHAT, chat_body(reasoning_format="verbose"), {}, 400, "reasoning_format",
     "'auto', 'deepseek' or 'none'"),
    ("POST", CHAT, chat_body(reasoning_format=True), {}, 400, "reasoning_format", "must be a string"),
    ("POST", CHAT, chat_body(reasoning_effort="max"), {}, 400, "reasoning_effort", "got 'max'"),
    ("POST", CHAT, chat_body(reasoning_effort=3), {}, 400, "reasoning_effort", "must be a string"),
    ("POST", CHAT, chat_body(chat_template_kwargs="think"), {}, 400, "chat_template_kwargs",
     "must be an object"),
    ("POST", CHAT, chat_body(chat_template_kwargs={"enable_thinking": "no"}), {}, 400,
     "chat_template_kwargs.enable_thinking", "must be a boolean"),
    ("POST", CHAT, chat_body(chat_template_kwargs={"messages": []}), {}, 400,
     "chat_template_kwargs.messages", "cannot be set"),
    ("POST", CHAT, chat_body(chat_template_kwargs={f"k{i}": i for i in range(65)}), {}, 400,
     "chat_template_kwargs", "at most 64"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": "x", "reasoning_content": "y"}]}, {},
     400, "messages[0].reasoning_content", "only allowed on assistant"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": "x"},
                                 {"role": "assistant", "content": "y", "reasoning_content": 5},
                                 {"role": "user", "content": "z"}]}, {},
     400, "messages[1].reasoning_content", "must be a string"),
    ("POST", CHAT, {"messages": [{"role": "system", "content": "x", "reasoning": "y"}]}, {},
     400, "messages[0].reasoning", "only allowed on assistant"),
    ("POST", CHAT, chat_body(reasoning_budget_tokens=-2), {}, 400, "reasoning_budget_tokens",
     "between -1 and"),
    ("POST", CHAT, chat_body(reasoning_budget_tokens="many"), {}, 400, "reasoning_budget_tokens",
     "must be an integer"),
    ("POST", CHAT, chat_body(reasoning_budget_message="x" * 1001), {}, 400,
     "reasoning_budget_message", "at most 1000 bytes"),
    ("POST", RESP, {"input": "x", "reasoning": "high"}, {}, 400, "reasoning", "must be an object"),
    ("POST", RESP, {"input": "x", "reasoning": {"effort": "max"}}, {}, 400, "reasoning.effort",
     "got 'max'"),
    ("POST", RESP, {"input": "x", "reasoning": {"summary": "long"}}, {}, 400, "reasoning.summary",
     "auto, concise or detailed"),
    ("POST", COMP, {}, {}, 400, "prompt", "'prompt' is required"),
    ("POST", COMP, {"prompt": ""}, {}, 400, "prompt", "must not be empty"),
    ("POST", COMP, {"prompt": [1, 2, 99999999]}, {}, 400, "prompt[2]", "outside the vocabulary"),
    ("POST", COMP, {"prompt": LONG}, {}, 400, "prompt", "context per session is 1024"),
    # The Responses API: its own field names, also for the checks made after
    # parsing (the context, the model, the grammar).
    ("POST", RESP, "{not json", {}, 400, None, "not valid JSON"),
    ("POST", RESP, {}, {}, 400, "input", "'input' is required"),
    ("POST", RESP, {"input": [{"role": "robot", "content": "x"}]}, {}, 400, "input[0].role", "robot"),
    ("POST", RESP, {"input": "x", "max_output_tokens": 5000}, {}, 400, "max_output_tokens",
     "context per session is 1024"),
    ("POST", RESP, {"input": LONG}, {}, 400, "input", "context per session is 1024"),
    ("POST", RESP, {"input": "x", "model": "no-such-model"}, {}, 404, "model", "does not exist"),
    ("POST", RESP, {"input": "x", "tools": [{"type": "file_search"}]}, {}, 400, "tools[0].type", "hosted"),
    ("POST", RESP, {"input": "x", "tools": [{"type": "function", "name": "tag", "parameters": {
        "type": "object", "properties": {"t": {"type": "string", "format": "email"}}}}]}, {}, 400,
     "tools[0].parameters", "format 'email'"),
    ("POST", RESP, {"input": "x", "previous_response_id": "resp_1"}, {}, 404, "previous_response_id",
     "no stored response with id 'resp_1'"),
    ("POST", RESP, {"input": "x", "previous_response_id": 7}, {}, 400, "previous_response_id",
     "must be a string"),
    ("POST", RESP, {"input": "x", "conversation": "conv_1"}, {}, 404, "conversation",
     "no conversation with id 'conv_1'"),
    ("POST", RESP, {"input": [{"type": "item_reference", "id": "msg_1"}]}, {}, 404, "input[0].id",
     "no stored item with id 'msg_1'"),
    ("POST", RESP, {"input": [{"type": "item_reference"}]}, {}, 400, "input[0].id", "is required"),
    ("POST", RESP, {"input": "x", "conversation": {"id": 5}}, {}, 400, "conversation.id",
     "must be a string"),
    ("POST", RESP, {"input": "x", "conversation": "conv_1", "previous_response_id": "resp_1"}, {},
     400, "conversation", "mutually exclusive"),
    ("POST", CONV, "{nope", {}, 400, None, "not valid JSON"),
    ("POST", CONV, {"items": [{"role": "robot", "content": "x"}]}, {}, 400, "items[0].role",
     "must be one of user"),
    ("POST", CONV, {"items": [{"role": "user", "content": "x"}] * 21}, {}, 400, "items",
     "at most 20"),
    ("POST", CONV, {"metadata": {"k": 1}}, {}, 400, "metadata.k", "must be a string"),
    ("GET", CONV, None, {}, 405, None, "use POST"),
    ("GET", CONV + "/conv_1", None, {}, 404, "conversation_id", "no conversation with id 'conv_1'"),
    ("POST", CONV + "/conv_1", {"metadata": {}}, {}, 404, "conversation_id", "no conversation"),
    ("DELETE", CONV + "/conv_1", None, {}, 404, "conversation_id", "no conversation"),
    ("GET", CONV + "/conv_1/items", None, {}, 404, "conversation_id", "no conversation"),
    ("POST", CONV + "/conv_1/items", {"items": [{"role": "user", "content": "x"}]}, {}, 404,
     "conversation_id", "no conversation"),
    ("GET", CONV + "/conv_1/items/msg_1", None, {}, 404, "conversation_id", "no conversation"),
    ("PATCH", CONV + "/conv_1", None, {}, 405, None, "use GET, POST, DELETE"),
    ("GET", CONV + "/conv_1/turns", None, {}, 404, None, "no route"),
    ("POST", RESP, {"input": "x", "store": "yes"}, {}, 400, "store", "must be a boolean"),
    ("POST", RESP, {"input": "x", "background": True, "store": False}, {}, 400, "background",
     "needs store: true"),
    ("POST", RESP, {"input": "x", "background": 1}, {}, 400, "background", "must be a boolean"),
    ("POST", RESP, {"input": "x", "background": True, "max_output_tokens": 0}, {}, 400,
     "max_output_tokens", "between 1 and"),
    ("POST", RESP, {"input": LONG, "background": True}, {}, 400, "input",
     "context per session is 1024"),
    ("POST", RESP, {"input": "x", "background": True, "max_output_tokens": 5000}, {}, 400,
     "max_output_tokens", "context per session is 1024"),
    ("GET", RESP + "/resp_123?stream=true&starting_after=2", None, {}, 404, "response_id",
     "no stored response"),
    ("POST", RESP, {"input": "x"}, {"X-Outpost-Priority": "urgent"}, 400, "X-Outpost-Priority", "interactive"),
    ("GET", RESP, None, {}, 405, None, "use POST"),
    ("GET", RESP + "/resp_123", None, {}, 404, "response_id", "no stored response with id 'resp_123'"),
    ("DELETE", RESP + "/resp_123", None, {}, 404, "response_id", "no stored response"),
    ("GET", RESP + "/resp_123/input_items", None, {}, 404, "response_id", "no stored response"),
    ("POST", RESP + "/resp_123/cancel", None, {}, 404, "response_id", "no stored response"),
    ("PUT", RESP + "/resp_123", None, {}, 405, None, "use GET, DELETE"),
    ("POST", RESP + "/resp_123/input_items", None, {}, 405, None, "use GET"),
    ("GET", RESP + "/resp_123/steps", None, {}, 404, None, "no route"),
    ("POST", RESP + "/input_tokens", {}, {}, 400, "input", "'input' is required"),
    ("POST", RESP + "/input_tokens", {"input": "x", "model": "no-such-model"}, {}, 404, "model",
     "not served here"),
    ("POST", RESP + "/input_tokens", {"input": "x", "previous_response_id": "resp_9"}, {}, 404,
     "previous_response_id", "no stored response"),
    ("GET", RESP + "/input_tokens", None, {}, 405, None, "use POST"),
    # llama-server's grammar field (docs/api.md, "Grammars").
    ("POST", CHAT, chat_body(grammar=5), {}, 400, "grammar", "must be a string (GBNF)"),
    ("POST", CHAT, chat_body(grammar='root ::= "a" |\n  ("b"'), {}, 400, "grammar",
     "expecting ')' at line 2, column 7 (the end of the grammar)"),
    ("POST", COMP, {"prompt": "x", "grammar": "root ::= a\na ::= a \"x\""}, {}, 400, "grammar",
     "the rule 'a' is left-recursive"),
    ("POST", CHAT, chat_body(grammar='root ::= "a"', response_format={"type": "json_object"}), {},
     400, "grammar", "cannot be combined with 'response_format'"),
    ("POST", "/v1/embeddings", "{not json", {}, 400, None, "not valid JSON"),
    ("POST", "/v1/embeddings", "[1, 2]", {}, 400, None, "must be a JSON object"),
    ("POST", "/v1/embeddings", {"input": "x", "model": 7}, {}, 400, "model", "must be a string"),
    # The tokenizer (docs/api.md, "Tokens").
    ("POST", "/tokenize", "{not json", {}, 400, None, "not valid JSON"),
    ("POST", "/tokenize", {}, {}, 400, "content", "'content' (llama-server), 'prompt' or 'messages'"),
    ("POST", "/tokenize", {"content": "x", "prompt": "x"}, {}, 400, "content", "only one of"),
    ("POST", "/tokenize", {"content": 7}, {}, 400, "content", "got a number"),
    ("POST", "/tokenize", {"content": ["a", 1.5]}, {}, 400, "content[1]", "a token id"),
    ("POST", "/tokenize", {"content": ["a", 99999999]}, {}, 400, "content[1]", "outside the vocabulary"),
    ("POST", "/tokenize", {"content": [-1]}, {}, 400, "content[0]", "token id -1 is negative"),
    ("POST", "/tokenize", {"prompt": ["x"]}, {}, 400, "prompt", "must be a string"),
    ("POST", "/tokenize", {"content": "x", "with_pieces": "yes"}, {}, 400, "with_pieces", "a boolean"),
    ("POST", "/tokenize", {"content": "x", "return_token_strs": 1}, {}, 400, "return_token_strs",
     "a boolean"),
    ("POST", "/tokenize", {"content": "x", "parse_special": "no"}, {}, 400, "parse_special", "a boolean"),
    ("POST", "/tokenize", {"content": "x", "add_special": 1}, {}, 400, "add_special", "a boolean"),
    ("POST", "/tokenize", {"prompt": "x", "add_special": True, "add_special_tokens": True}, {}, 400,
     "add_special_tokens", "not both"),
    ("POST", "/tokenize", {"content": "x", "model": 3}, {}, 400, "model", "must be a string"),
    ("POST", "/tokenize", {"content": "x", "model": "no-such-model"}, {}, 404, "model",
     "not served here"),
    ("POST", "/tokenize", {"messages": "hi"}, {}, 400, "messages", "must be an array"),
    ("POST", "/tokenize", {"messages": [{"role": "robot", "content": "x"}]}, {}, 400,
     "messages[0].role", "robot"),
    ("POST", "/tokenize", {"messages": [{"role": "user", "content": "x"}],
                           "add_generation_prompt": "no"}, {}, 400, "add_generation_prompt",
     "a boolean"),
    ("POST", "/tokenize", {"messages": [{"role": "user", "content": "x"}],
                           "continue_final_message": True}, {}, 400, "messages[0].role",
     "must be the assistant's"),
    ("POST", "/tokenize", {"messages": [{"role": "user", "content": "x"}], "add_special_tokens": True},
     {}, 400, "add_special_tokens", "does not apply to 'messages'"),
    ("GET", "/tokenize", None, {}, 405, None, "use POST"),
    ("POST", "/detokenize", {}, {}, 400, "tokens", "'tokens' is required"),
    ("POST", "/detokenize", {"tokens": "1 2"}, {}, 400, "tokens", "an array of token ids"),
    ("POST", "/detokenize", {"tokens": [1, "2"]}, {}, 400, "tokens[1]", "a token id"),
    ("POST", "/detokenize", {"tokens": [1, 99999999]}, {}, 400, "tokens[1]", "outside the vocabulary"),
    ("POST", "/detokenize", {"tokens": [2**40]}, {}, 400, "tokens[0]", "token id 1099511627776 is outside"),
    ("POST", "/detokenize", {"tokens": [1, -5]}, {}, 400, "tokens[1]", "token id -5 is negative"),
    ("POST", "/detokenize", {"tokens": [1], "model": "no-such-model"}, {}, 404, "model",
     "not served here"),
    ("PUT", "/detokenize", None, {}, 405, None, "use POST"),
    ("GET", CHAT, None, {}, 405, None, "use POST"),
    ("GET", "/v1/nothing-here", None, {}, 404, None, "no route"),
    ("GET", "/v1/models/no-such-model", None, {}, 404, "model", "does not exist"),
]


@pytest.mark.parametrize("method,path,body,headers,status,param,part", CASES,
                         ids=[f"{i:02d}-{c[5] or c[4]}" for i, c in enumerate(CASES)])
def test_bad_request(server, method, path, body, headers, status, param, part):
    content = body if isinstance(body, str) else (json.dumps(body) if body is not None else None)
    r = httpx.request(method, server.base + path, content=content,
                      headers={"Content-Type": "application/json", **headers}, timeout=60)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert part in err["message"], err
    assert err["param"] == param, err
    assert err["type"] in ("invalid_request_error", "server_error")
    # OpenAI's code for a prompt past the context, which clients test to trim
    # and retry; no other failure carries it.
    too_long = "context per session" in part
    assert (err["code"] == "context_length_exceeded") == too_long, err
    # ... and the server keeps serving.
    ok = server.post(CHAT, json=chat_body(max_tokens=2))
    assert ok.status_code == 200, ok.text


def test_bad_requests_are_counted_by_status(server):
    before = _count(server, 400)
    server.post(CHAT, content="{bad")
    assert _count(server, 400) == before + 1


def _count(server, status):
    for line in server.get("/metrics").text.splitlines():
        if line.startswith(f'outpost_requests_total{{endpoint="/v1/chat/completions",status="{status}"}}'):
            return float(line.split()[1])
    return 0.0
