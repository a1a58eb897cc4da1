"""A prefilled answer on the default model: `continue_final_message` (vLLM's
and llama-server's) leaves the last, assistant message open, and the model
continues it. The answer holds only what the model added (as vLLM's does);
llama-server, started here on the same GGUF from the same pinned source,
answers the same request with the prefill in front. /tokenize counts the
same prompt, and with add_generation_prompt false the messages alone."""
import httpx
import pytest
from outpost_harness import llama_server, stream_events

PREFILL = "The capital of France is"
MESSAGES = [{"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": PREFILL}]


@pytest.fixture(scope="module")
def peer():
    """llama-server on the default model."""
    with llama_server("--ctx-size", "1024", "--parallel", "1", "--threads", "2") as base:
        yield base


def chat(server, **extra):
    body = {"messages": MESSAGES, "max_tokens": 16, "temperature": 0, "cache_prompt": False,
            "continue_final_message": True, **extra}
    r = server.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_model_continues_the_assistants_text(server, peer):
    got = chat(server)
    answer = got["choices"][0]["message"]["content"]
    # It goes on from "…is" (a new turn would start over: "The capital…").
    assert "Paris" in answer, answer
    assert not answer.lstrip().startswith("The capital"), answer
    assert got["choices"][0]["finish_reason"] == "stop"
    # The prefill is prompt, not completion.
    counted = server.post("/tokenize", json={"messages": MESSAGES, "continue_final_message": True})
    assert counted.status_code == 200, counted.text
    assert got["usage"]["prompt_tokens"] == counted.json()["count"]
    assert got["usage"]["completion_tokens"] <= 4, got["usage"]  # " Paris." and the end

    # llama-server: the same prompt, its answer with the prefill in front.
    theirs = httpx.post(peer + "/v1/chat/completions", timeout=60, json={
        "messages": MESSAGES, "max_tokens": 16, "temperature": 0,
        "continue_final_message": True, "add_generation_prompt": False}).json()
    assert theirs["usage"]["prompt_tokens"] == got["usage"]["prompt_tokens"]
    their_answer = theirs["choices"][0]["message"]["content"]
    assert their_answer.startswith(PREFILL) and "Paris" in their_answer[len(PREFILL):], theirs

    # A new turn after the same messages is a different, longer prompt.
    turn = server.post("/tokenize", json={"messages": MESSAGES}).json()
    assert turn["count"] > got["usage"]["prompt_tokens"]


def test_a_stream_adds_up_to_the_same_continuation(server):
    whole = chat(server)["choices"][0]["message"]["content"]
    events, done = stream_events(server, "/v1/chat/completions", {
        "messages": MESSAGES, "max_tokens": 16, "temperature": 0, "cache_prompt": False,
        "continue_final_message": True, "stream": True})
    assert done
    chunks = len(events)
    text = "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
    assert text == whole and chunks >= 3
    assert PREFILL not in text


def test_the_openai_client_sends_it_as_vllm_users_do(client):
    r = client.chat.completions.create(
        model=client.models.list().data[0].id, messages=MESSAGES, max_tokens=16, temperature=0,
        extra_body={"continue_final_message": True, "add_generation_prompt": False,
                    "cache_prompt": False})
    assert "Paris" in r.choices[0].message.content
    assert not r.choices[0].message.content.lstrip().startswith("The capital")


def test_several_choices_each_continue(server):
    got = chat(server, n=2)
    answers = [c["message"]["content"] for c in got["choices"]]
    assert len(answers) == 2 and all("Paris" in a for a in answers), answers


def test_tokenize_counts_the_messages_without_the_header(server):
    def text_of(body):
        r = server.post("/tokenize", json=body)
        assert r.status_code == 200, r.text
        tokens = r.json()["tokens"]
        return len(tokens), server.post("/detokenize", json={"tokens": tokens}).json()["content"]

    n_turn, turn = text_of({"messages": MESSAGES})
    n_open, opened = text_of({"messages": MESSAGES, "continue_final_message": True})
    n_bare, bare = text_of({"messages": MESSAGES, "add_generation_prompt": False})
    assert turn.rstrip().endswith(PREFILL + "<|im_end|>\n<|im_start|>assistant")
    assert opened.endswith("<|im_start|>assistant\n" + PREFILL)
    assert bare.endswith(PREFILL + "<|im_end|>\n")
    assert turn.startswith(bare) and n_open < n_bare < n_turn


BAD = [
    ({"continue_final_message": True, "add_generation_prompt": True}, "add_generation_prompt",
     "exclude each other"),
    ({"add_generation_prompt": False}, "add_generation_prompt", "/tokenize"),
    ({"continue_final_message": "both"}, "continue_final_message", "'reasoning_content'"),
    ({"continue_final_message": True, "response_format": {"type": "json_object"}},
     "continue_final_message", "'response_format'"),
    ({"continue_final_message": True, "tools": [{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {}}}}]},
     "continue_final_message", "the calls' format"),
    ({"continue_final_message": "reasoning_content"}, "messages[1].content", "content empty"),
    ({"continue_final_message": True, "messages": [MESSAGES[0]]}, "messages[0].role",
     "must be the assistant's"),
]


@pytest.mark.parametrize("extra,param,words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_combinations_are_refused_by_name_and_it_serves_on(server, extra, param, words):
    body = {"messages": MESSAGES, "max_tokens": 4, **extra}
    r = server.post("/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err
    assert "Paris" in chat(server)["choices"][0]["message"]["content"]
