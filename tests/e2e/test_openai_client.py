"""End-to-end: the official openai Python client against a live outpost serve."""
import openai
import pytest


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="not-needed", max_retries=0)


@pytest.fixture(scope="module")
def model_id(client):
    return client.models.list().data[0].id


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
    kw = dict(model=model_id, messages=[{"role": "user", "content": "Name a planet."}],
              temperature=0, max_tokens=20)
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
