"""The Anthropic SDK against Spillway's /v1/messages: whole, streamed,
tools (tool_use / tool_result), and Anthropic's error shape."""

import anthropic
import pytest

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city", "unit"],
    },
}


@pytest.fixture(scope="module")
def claude(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key="not-needed", max_retries=0)


def test_messages(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model="chat",
        max_tokens=256,
        system="Be brief.",
        messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
    )
    assert message.type == "message" and message.role == "assistant"
    assert message.content[0].type == "text" and message.content[0].text
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens > 0


def test_messages_stream(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="chat", max_tokens=256, messages=[{"role": "user", "content": "Say hello."}]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
        text = "".join(b.text for b in final.content if b.type == "text")
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_delta" in kinds
    assert text and final.stop_reason == "end_turn"


def test_messages_raw_stream_events(claude: anthropic.Anthropic) -> None:
    events = list(
        claude.messages.create(
            model="chat", max_tokens=256, messages=[{"role": "user", "content": "Say hello."}], stream=True
        )
    )
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_tools_round_trip(claude: anthropic.Anthropic) -> None:
    question = {"role": "user", "content": "Weather in Paris?"}
    first = claude.messages.create(model="chat", max_tokens=256, tools=[WEATHER], messages=[question])
    assert first.stop_reason == "tool_use"
    use = next(b for b in first.content if b.type == "tool_use")
    assert use.name == "get_weather" and set(use.input) == {"city", "unit"}
    second = claude.messages.create(
        model="chat",
        max_tokens=256,
        tools=[WEATHER],
        messages=[
            question,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "12 C"}]},
        ],
    )
    assert second.stop_reason == "end_turn"
    assert any(b.type == "text" and b.text for b in second.content)


def test_tools_stream(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="chat",
        max_tokens=256,
        tools=[WEATHER],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=[{"role": "user", "content": "Weather in Paris?"}],
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    use = next(b for b in final.content if b.type == "tool_use")
    assert use.name == "get_weather" and set(use.input) == {"city", "unit"}
    assert final.stop_reason == "tool_use"


def test_count_tokens(claude: anthropic.Anthropic) -> None:
    count = claude.messages.count_tokens(model="chat", messages=[{"role": "user", "content": "Say hello."}])
    assert count.input_tokens > 0


def test_errors_in_anthropic_shape(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as e:
        claude.messages.create(model="no-such-cascade", max_tokens=16, messages=[{"role": "user", "content": "x"}])
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "not_found_error"


def test_system_blocks_cache_control_and_metadata(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model="chat",
        max_tokens=256,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello.", "cache_control": {"type": "ephemeral"}}]}],
        stop_sequences=["zzz"],
        metadata={"user_id": "u1"},
    )
    assert message.content[0].text.endswith("Say hello.")


def test_thinking_and_image_are_accepted(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(
        model="chat",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "What is this?"},
                ],
            }
        ],
    )
    assert any(b.type == "text" for b in message.content)


def test_tool_choice_any_and_max_tokens_stop(claude: anthropic.Anthropic) -> None:
    forced = claude.messages.create(
        model="chat", max_tokens=256, tools=[WEATHER], tool_choice={"type": "any"}, messages=[{"role": "user", "content": "hi"}]
    )
    assert forced.stop_reason == "tool_use"
    cut = claude.messages.create(model="chat", max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert cut.stop_reason == "max_tokens"


def test_max_tokens_is_required(base_url: str) -> None:
    import httpx

    r = httpx.post(
        f"{base_url}/v1/messages",
        json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"anthropic-version": "2023-06-01"},
    )
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request_error"


def test_all_models_failed_in_anthropic_shape(claude: anthropic.Anthropic) -> None:
    for stream in (False, True):
        with pytest.raises(anthropic.APIStatusError) as e:
            claude.messages.create(model="all-down", max_tokens=16, messages=[{"role": "user", "content": "x"}], stream=stream)
        assert e.value.status_code == 503
        assert e.value.body["error"]["type"] == "overloaded_error"
        assert e.value.request_id
