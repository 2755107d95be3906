"""openai-python against Spillway: chat, streaming, tools, structured
output parsed into pydantic models (Optional and nested fields), the
Responses API (whole and streamed) and embeddings."""

import json
from enum import Enum
from typing import List, Optional

import openai
import pydantic
import pytest

USER = [{"role": "user", "content": "Say hello."}]


def test_chat(client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=USER)
    chat = raw.parse()
    assert chat.choices[0].message.content
    assert chat.choices[0].finish_reason == "stop"
    assert chat.usage is not None and chat.usage.total_tokens > 0
    # The first model of the cascade is down: the answer came from the next.
    assert raw.headers["x-spillway-model"] == "mock/steady"


def test_chat_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="chat", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens > 0


def test_chat_stream_helper(client: openai.OpenAI) -> None:
    with client.chat.completions.stream(model="chat", messages=USER) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    assert final.choices[0].message.content


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}


def test_tools_round_trip(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model="chat", messages=USER, tools=[WEATHER])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls and message.tool_calls[0].function.name == "get_weather"
    args = json.loads(message.tool_calls[0].function.arguments)
    assert isinstance(args["city"], str) and args["unit"] in ("c", "f")
    # The tool's result goes back; the model answers in text.
    history = USER + [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "12 C"},
    ]
    second = client.chat.completions.create(model="chat", messages=history, tools=[WEATHER])
    assert second.choices[0].message.content
    assert not second.choices[0].message.tool_calls


def test_tools_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="chat", messages=USER, tools=[WEATHER], tool_choice="required", stream=True
    )
    name, arguments, finish = "", "", None
    for chunk in stream:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                if call.function and call.function.name:
                    name += call.function.name
                if call.function and call.function.arguments:
                    arguments += call.function.arguments
            finish = choice.finish_reason or finish
    assert name == "get_weather"
    assert finish == "tool_calls"
    assert set(json.loads(arguments)) == {"city", "unit"}


class Color(str, Enum):
    RED = "red"
    GREEN = "green"


class Address(pydantic.BaseModel):
    street: str
    city: str
    zip_code: Optional[str]


class Person(pydantic.BaseModel):
    full_name: str
    age: int
    nickname: Optional[str]
    favourite: Color
    address: Address
    previous: List[Address]
    manager: Optional[Address]


@pytest.mark.parametrize("cascade", ["chat", "renamed", "fenced"])
def test_parse_pydantic_optional_and_nested(client: openai.OpenAI, cascade: str) -> None:
    completion = client.chat.completions.parse(
        model=cascade,
        messages=[{"role": "user", "content": "Invent a person."}],
        response_format=Person,
    )
    person = completion.choices[0].message.parsed
    assert isinstance(person, Person)
    assert isinstance(person.address, Address)


def test_beta_parse(client: openai.OpenAI) -> None:
    completion = client.beta.chat.completions.parse(
        model="renamed", messages=[{"role": "user", "content": "Invent a person."}], response_format=Person
    )
    assert isinstance(completion.choices[0].message.parsed, Person)


def test_parse_tools_strict(client: openai.OpenAI) -> None:
    class Lookup(pydantic.BaseModel):
        query: str
        limit: Optional[int]
        where: Address

    completion = client.chat.completions.parse(
        model="chat",
        messages=[{"role": "user", "content": "Look it up."}],
        tools=[openai.pydantic_function_tool(Lookup)],
    )
    call = completion.choices[0].message.tool_calls[0]
    assert isinstance(call.function.parsed_arguments, Lookup)


def test_responses_create(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="chat", input="Say hello.", instructions="Be brief.", max_output_tokens=64
    )
    assert response.status == "completed"
    assert response.output_text
    assert response.usage is not None and response.usage.output_tokens > 0


def test_responses_items_and_stream(client: openai.OpenAI) -> None:
    stream = client.responses.create(
        model="chat",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Say hello."}]}],
        stream=True,
    )
    kinds, text, done = [], "", None
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            done = event.response
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert text and done is not None and done.output_text == text


def test_responses_stream_helper(client: openai.OpenAI) -> None:
    with client.responses.stream(model="chat", input="Say hello.") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text


def test_responses_tools(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"], "strict": True}
    first = client.responses.create(model="chat", input="Weather in Paris?", tools=[tool])
    calls = [item for item in first.output if item.type == "function_call"]
    assert calls and calls[0].name == "get_weather"
    assert set(json.loads(calls[0].arguments)) == {"city", "unit"}
    second = client.responses.create(
        model="chat",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": calls[0].call_id, "name": calls[0].name, "arguments": calls[0].arguments},
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "12 C"},
        ],
        tools=[tool],
    )
    assert second.output_text


def test_responses_parse(client: openai.OpenAI) -> None:
    response = client.responses.parse(model="renamed", input="Invent a person.", text_format=Person)
    assert isinstance(response.output_parsed, Person)


def test_embeddings(client: openai.OpenAI) -> None:
    # The SDK asks for base64 by default and decodes it.
    result = client.embeddings.create(model="embeddings", input=["one", "two"])
    assert [d.index for d in result.data] == [0, 1]
    assert all(len(d.embedding) == 64 for d in result.data)
    again = client.embeddings.create(model="embeddings", input="one", encoding_format="float")
    # The same float32 vector either way (base64 carries float32 bits).
    assert again.data[0].embedding == pytest.approx(result.data[0].embedding, abs=1e-6)
    short = client.embeddings.create(model="embeddings", input="one", dimensions=16)
    assert len(short.data[0].embedding) == 16


def test_errors_in_openai_shape(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="no-such-cascade", messages=USER)
    assert e.value.status_code == 404
    # OpenAI's error shape: the SDK found `error.message` and `error.code`.
    assert e.value.code == "model_not_found"
    assert "no-such-cascade" in e.value.message


def test_models(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert "chat" in ids
    assert client.models.retrieve("chat").id == "chat"


def test_demo_chat_parse_and_stream(demo_client: openai.OpenAI) -> None:
    """The demo `spillway serve` embeds: chat, a parse with nested models, a stream."""
    chat = demo_client.chat.completions.create(model="chat", messages=USER)
    assert chat.choices[0].message.content
    parsed = demo_client.chat.completions.parse(
        model="extraction", messages=[{"role": "user", "content": "Invent a person."}], response_format=Person
    )
    assert isinstance(parsed.choices[0].message.parsed, Person)
    text = "".join(
        c.choices[0].delta.content or ""
        for c in demo_client.chat.completions.create(model="chat", messages=USER, stream=True)
        if c.choices
    )
    assert text


def test_n_choices_and_max_tokens(client: openai.OpenAI) -> None:
    two = client.chat.completions.create(model="chat", messages=USER, n=2)
    assert [c.index for c in two.choices] == [0, 1]
    cut = client.chat.completions.create(model="chat", messages=USER, max_completion_tokens=2)
    assert cut.choices[0].finish_reason == "length"
    finish = None
    for chunk in client.chat.completions.create(model="chat", messages=USER, max_tokens=2, stream=True):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
    assert finish == "length"


def test_json_object_mode(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="fenced",
        messages=[{"role": "system", "content": 'Reply in JSON like {"a": 1, "b": "x"}.'}, *USER],
        response_format={"type": "json_object"},
    )
    assert isinstance(json.loads(completion.choices[0].message.content), dict)


def test_async_client_stream(base_url: str) -> None:
    import asyncio

    async def run() -> str:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="not-needed", max_retries=0)
        stream = await client.chat.completions.create(model="chat", messages=USER, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(run())


def test_responses_stream_parse(client: openai.OpenAI) -> None:
    with client.responses.stream(model="renamed", input="Invent a person.", text_format=Person) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert isinstance(final.output_parsed, Person)


def test_responses_tool_choice_and_stream_events(client: openai.OpenAI) -> None:
    def fn(name: str, prop: str, kind: str) -> dict:
        schema = {"type": "object", "properties": {prop: {"type": kind}}, "required": [prop], "additionalProperties": False}
        return {"type": "function", "name": name, "parameters": schema, "strict": True}

    tools = [fn("search", "q", "string"), fn("count", "n", "integer")]
    picked = client.responses.create(
        model="chat", input="Count.", tools=tools, tool_choice={"type": "function", "name": "count"}
    )
    assert [i.name for i in picked.output if i.type == "function_call"] == ["count"]
    kinds, arguments = [], ""
    for event in client.responses.create(model="chat", input="Search.", tools=tools, stream=True):
        kinds.append(event.type)
        if event.type == "response.function_call_arguments.delta":
            arguments += event.delta
    assert "response.function_call_arguments.done" in kinds
    assert set(json.loads(arguments)) == {"q"}


def test_responses_fields_sdks_send(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="chat",
        input=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Say hello."}],
        store=False,
        parallel_tool_calls=True,
        truncation="disabled",
        metadata={"team": "a"},
        temperature=0.5,
        top_p=1,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low"},
        text={"verbosity": "low"},
    )
    assert response.output_text
    assert response.metadata == {"team": "a"}


def test_responses_are_stored_and_continued(client: openai.OpenAI) -> None:
    first = client.responses.create(model="chat", input="Say hello.")
    assert first.store is True
    again = client.responses.retrieve(first.id)
    assert again.output_text == first.output_text
    second = client.responses.create(model="chat", input="Again.", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert second.output_text.endswith("Again.")
    items = client.responses.input_items.list(second.id)
    assert [i.id for i in items.data] and items.data[0].type == "message"
    streamed = ""
    with client.responses.stream(model="chat", input="More.", previous_response_id=second.id) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                streamed += event.delta
        final = stream.get_final_response()
    assert streamed.endswith("More.") and client.responses.retrieve(final.id).id == final.id
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="chat", input="x", previous_response_id="resp_nope")
    assert e.value.param == "previous_response_id"
    assert e.value.code == "previous_response_not_found"


def test_legacy_completions(client: openai.OpenAI) -> None:
    done = client.completions.create(model="chat", prompt="Say hello.", max_tokens=64)
    assert done.object == "text_completion"
    assert done.choices[0].text and done.choices[0].finish_reason == "stop"
    assert done.usage and done.usage.completion_tokens > 0
    cut = client.completions.create(model="chat", prompt="Say hello.")
    assert cut.choices[0].finish_reason in ("length", "stop")
    text = ""
    for chunk in client.completions.create(model="chat", prompt="Say hello.", max_tokens=64, stream=True):
        assert chunk.object == "text_completion"
        text += chunk.choices[0].text if chunk.choices else ""
    assert text == done.choices[0].text


def test_embeddings_token_arrays(client: openai.OpenAI) -> None:
    result = client.embeddings.create(model="embeddings", input=[[1, 2, 3], [4, 5]])
    assert len(result.data) == 2


def test_all_models_failed_is_a_503_the_sdk_reads(client: openai.OpenAI) -> None:
    for stream in (False, True):
        with pytest.raises(openai.InternalServerError) as e:
            client.chat.completions.create(model="all-down", messages=USER, stream=stream)
        assert e.value.status_code == 503
        assert e.value.code == "all_models_failed"
    with pytest.raises(openai.InternalServerError) as e:
        client.responses.create(model="all-down", input="x", stream=True)
    assert e.value.code == "all_models_failed"
