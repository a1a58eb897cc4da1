"""POST /tokenize and /detokenize on the default model: the same tokens and
pieces as llama-server's own endpoints on the same GGUF (the peer built from the
same pinned source, started here), the same counts a generation reports in
usage.prompt_tokens, and text that survives the round trip."""
import httpx
import pytest
from outpost_harness import llama_server

TEXTS = [
    "Hello world",
    "The capital of France is Paris.",
    "  two leading spaces,\nnewlines\n\n and\ttabs ",
    "Zürich, 東京, naïve café, emoji 🙂",
    "<|im_start|>user\nhi<|im_end|>",
    "x",
]


@pytest.fixture(scope="module")
def peer():
    """llama-server on the default model."""
    with llama_server("--ctx-size", "512", "--parallel", "1", "--threads", "1") as base:
        yield base


def tokenize(server, **body):
    r = server.post("/tokenize", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_tokens_and_pieces_are_llama_servers(server, peer):
    for text in TEXTS:
        for add_special in (False, True):
            for parse_special in (False, True):
                body = {"content": text, "add_special": add_special,
                        "parse_special": parse_special}
                ours = tokenize(server, **body)
                theirs = httpx.post(peer + "/tokenize", json=body, timeout=30).json()
                assert ours["tokens"] == theirs["tokens"], body
                assert ours["count"] == len(ours["tokens"]) > 0
                pieces = tokenize(server, with_pieces=True, **body)["tokens"]
                their_pieces = httpx.post(peer + "/tokenize", json=dict(body, with_pieces=True),
                                          timeout=30).json()["tokens"]
                assert pieces == their_pieces, body
    # Defaults are llama-server's too (add_special false, parse_special true).
    text = TEXTS[4]
    assert tokenize(server, content=text)["tokens"] == \
        httpx.post(peer + "/tokenize", json={"content": text}, timeout=30).json()["tokens"]


def test_text_survives_the_round_trip(server, peer):
    for text in TEXTS:
        tokens = tokenize(server, content=text)["tokens"]
        r = server.post("/detokenize", json={"tokens": tokens})
        assert r.status_code == 200, r.text
        back = r.json()
        assert back["content"] == text
        assert back["prompt"] == text  # vLLM's name for the same text
        assert back["model"] == tokenize(server, content=text)["model"]
        theirs = httpx.post(peer + "/detokenize", json={"tokens": tokens}, timeout=30).json()
        assert theirs["content"] == text


def test_pieces_are_the_text_in_order(server):
    text = TEXTS[3]
    got = tokenize(server, content=text, with_pieces=True, return_token_strs=True)
    ids = [t["id"] for t in got["tokens"]]
    assert ids == tokenize(server, content=text)["tokens"]
    # A piece that is part of a character comes as its bytes; the bytes of all
    # the pieces are the text's.
    data = b"".join(p["piece"].encode() if isinstance(p["piece"], str) else bytes(p["piece"])
                    for p in got["tokens"])
    assert data.decode() == text
    assert len(got["token_strs"]) == len(ids)
    assert "".join(got["token_strs"][:3]) == text[:len("".join(got["token_strs"][:3]))]


def test_control_token_text(server):
    special = tokenize(server, content="<|im_start|>", with_pieces=True)["tokens"]
    assert len(special) == 1 and special[0]["piece"] == "<|im_start|>"
    plain = tokenize(server, content="<|im_start|>", parse_special=False)["tokens"]
    assert len(plain) > 1 and special[0]["id"] not in plain


def test_a_prompt_counts_what_a_completion_counts(server):
    prompt = "Write one sentence about the sea. The sea is"
    got = tokenize(server, prompt=prompt)  # vLLM's shape: add_special_tokens defaults to true
    r = server.post("/v1/completions", json={"prompt": prompt, "max_tokens": 1, "temperature": 0})
    assert r.status_code == 200, r.text
    assert got["count"] == r.json()["usage"]["prompt_tokens"]
    assert got["max_model_len"] == 1024  # the shared server's --ctx-size
    # The text's own tokens, and what add_special_tokens adds around them.
    bare = tokenize(server, prompt=prompt, add_special_tokens=False)["tokens"]
    assert got["tokens"][-len(bare):] == bare


def test_messages_count_what_a_chat_completion_counts(server):
    messages = [{"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "What colour is the sky?"}]
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    for extra in ({}, {"tools": tools}):
        got = tokenize(server, messages=messages, **extra)
        r = server.post("/v1/chat/completions",
                        json={"messages": messages, "max_tokens": 1, "temperature": 0, **extra})
        assert r.status_code == 200, r.text
        assert got["count"] == r.json()["usage"]["prompt_tokens"] == len(got["tokens"])
        text = server.post("/detokenize", json={"tokens": got["tokens"]}).json()["content"]
        # The model's own template: its turns, the question, the assistant's prefix.
        assert "<|im_start|>system" in text and "What colour is the sky?" in text
        assert text.rstrip().endswith("<|im_start|>assistant")
        if extra:
            assert "get_weather" in text
    assert tokenize(server, messages=messages, tools=tools)["count"] > \
        tokenize(server, messages=messages)["count"]


def test_model_by_name(server):
    model = server.get("/v1/models").json()["data"][0]["id"]
    assert tokenize(server, model=model, content="hi")["model"] == model
    r = server.post("/tokenize", json={"model": "no-such-model", "content": "hi"})
    assert r.status_code == 404 and r.json()["error"]["param"] == "model"
    # GET is not the method.
    r = server.get("/tokenize")
    assert r.status_code == 405 and r.headers["Allow"] == "POST"
