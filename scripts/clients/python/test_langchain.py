"""LangChain's ChatOpenAI against Spillway: with_structured_output in every
method (json_schema, function_calling, json_mode) with pydantic models that
have Optional and nested fields, bind_tools, streaming."""

from typing import List, Optional

import pydantic
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


class Address(pydantic.BaseModel):
    """A postal address."""

    street: str
    city: str
    zip_code: Optional[str] = None


class Person(pydantic.BaseModel):
    """A person."""

    full_name: str
    age: int
    nickname: Optional[str] = None
    address: Address
    previous: List[Address] = []


def llm(base_url: str, model: str = "chat", **kw) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=f"{base_url}/v1", api_key="not-needed", max_retries=0, **kw)


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
@pytest.mark.parametrize("cascade", ["chat", "renamed"])
def test_structured_output(base_url: str, method: str, cascade: str) -> None:
    structured = llm(base_url, cascade).with_structured_output(Person, method=method)
    person = structured.invoke("Invent a person.")
    assert isinstance(person, Person)
    assert isinstance(person.address, Address)


def test_structured_output_strict(base_url: str) -> None:
    structured = llm(base_url).with_structured_output(Person, method="json_schema", strict=True, include_raw=True)
    out = structured.invoke("Invent a person.")
    assert out["parsing_error"] is None
    assert isinstance(out["parsed"], Person)


def test_structured_output_json_mode(base_url: str) -> None:
    # json_mode sends `response_format: json_object`; the schema is only in the prompt.
    structured = llm(base_url, "fenced").with_structured_output(Person, method="json_mode")
    prompt = (
        "Invent a person. Answer in JSON with this JSON Schema:\n"
        + __import__("json").dumps(Person.model_json_schema())
    )
    person = structured.invoke(prompt)
    assert isinstance(person, Person)


def test_json_mode_and_a_schema_only_in_the_prompt_on_the_demo(demo_url: str) -> None:
    # The demo's mocks answer JSON for a schema found only in the prompt:
    # LangChain's json_mode (response_format json_object) ...
    schema = __import__("json").dumps(Person.model_json_schema())
    structured = llm(demo_url, "chat").with_structured_output(Person, method="json_mode")
    assert isinstance(structured.invoke(f"Invent a person. Answer in JSON with this JSON Schema:\n{schema}"), Person)
    # ... and instructor's MD_JSON mode (no response_format at all: the
    # schema in the system message, the answer asked for in a ```json block).
    system = (
        "As a genius expert, your task is to understand the content and provide the parsed objects in json "
        f"that match the following json_schema:\n\n{schema}\n\nMake sure to return an instance of the JSON, "
        "not the schema itself"
    )
    answer = llm(demo_url, "chat").invoke(
        [
            ("system", system),
            ("user", "Invent a person."),
            ("user", "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA"),
        ]
    )
    text = str(answer.content)
    body = text.split("```json", 1)[-1].split("```", 1)[0] if "```" in text else text
    Person.model_validate_json(body.strip())


def test_structured_output_typed_dict_schema(base_url: str) -> None:
    schema = {
        "title": "Reply",
        "description": "A reply.",
        "type": "object",
        "properties": {"answer": {"type": "string"}, "score": {"type": ["number", "null"]}},
        "required": ["answer", "score"],
    }
    out = llm(base_url).with_structured_output(schema, method="json_schema").invoke("Answer.")
    assert isinstance(out["answer"], str)


@tool
def get_weather(city: str, unit: Optional[str] = None) -> str:
    """The weather in a city."""
    return f"12 {unit or 'C'} in {city}"


def test_bind_tools(base_url: str) -> None:
    model = llm(base_url).bind_tools([get_weather])
    question = HumanMessage("Weather in Paris?")
    first = model.invoke([question])
    assert first.tool_calls and first.tool_calls[0]["name"] == "get_weather"
    call = first.tool_calls[0]
    assert isinstance(call["args"]["city"], str)
    result = ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])
    second = model.invoke([question, first, result])
    assert second.content and not second.tool_calls


def test_bind_tools_stream(base_url: str) -> None:
    model = llm(base_url).bind_tools([get_weather], tool_choice="get_weather")
    merged = None
    for chunk in model.stream("Weather in Paris?"):
        merged = chunk if merged is None else merged + chunk
    assert merged is not None and merged.tool_calls[0]["name"] == "get_weather"


def test_stream_text(base_url: str) -> None:
    text = "".join(chunk.content for chunk in llm(base_url).stream("Say hello."))
    assert text


def test_responses_api(base_url: str) -> None:
    # ChatOpenAI on the Responses API, as `use_responses_api=True` sends it.
    out = llm(base_url, use_responses_api=True).invoke("Say hello.")
    assert out.text


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_structured_output_on_responses_api(base_url: str, method: str) -> None:
    structured = llm(base_url, "renamed", use_responses_api=True).with_structured_output(Person, method=method)
    assert isinstance(structured.invoke("Invent a person."), Person)


def test_structured_output_streamed(base_url: str) -> None:
    last = None
    for last in llm(base_url).with_structured_output(Person, method="json_schema").stream("Invent a person."):
        pass
    assert isinstance(last, Person)


def test_embeddings(base_url: str) -> None:
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: the default tokenizes with tiktoken,
    # whose encodings download from the internet.
    embeddings = OpenAIEmbeddings(
        model="embeddings", base_url=f"{base_url}/v1", api_key="not-needed", check_embedding_ctx_length=False, max_retries=0
    )
    vectors = embeddings.embed_documents(["one", "two"])
    assert len(vectors) == 2 and len(vectors[0]) == 64
