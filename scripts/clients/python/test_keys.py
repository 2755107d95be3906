"""Virtual keys through the official SDKs: the status, error type and code
of each refusal, and the OpenAI rate-limit headers, as openai-python and
the Anthropic SDK read them (their retry logic keys on these).
The gateway is scripts/clients/keys.yaml (SPILLWAY_KEYS_URL)."""

import anthropic
import openai
import pytest

HELLO = [{"role": "user", "content": "Say hello."}]


def oa(keys_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{keys_url}/v1", api_key=key, max_retries=0)


def claude(keys_url: str, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=keys_url, api_key=key, max_retries=0)


def test_answers_carry_the_rate_limit_headers(keys_url: str) -> None:
    raw = oa(keys_url, "sk-spw-client-roomy").chat.completions.with_raw_response.create(
        model="chat", messages=HELLO
    )
    assert raw.parse().choices[0].message.content
    for name in ("requests", "tokens"):
        assert raw.headers[f"x-ratelimit-limit-{name}"]
        assert int(raw.headers[f"x-ratelimit-remaining-{name}"]) >= 0
        assert raw.headers[f"x-ratelimit-reset-{name}"]
    assert raw.headers["x-ratelimit-limit-requests"] == "1000"


def test_over_the_rate_limit_is_openai_rate_limit_error(keys_url: str) -> None:
    client = oa(keys_url, "sk-spw-client-limited")
    for _ in range(2):
        client.chat.completions.create(model="chat", messages=HELLO)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="chat", messages=HELLO, stream=True)
    err = caught.value
    assert err.status_code == 429
    assert err.code == "rate_limit_exceeded"
    assert int(err.response.headers["retry-after"]) >= 1
    assert err.response.headers["x-ratelimit-remaining-requests"] == "0"


def spend(keys_url: str) -> None:
    """Spends the `broke` key's budget: a key under its budget is admitted,
    so its first answer may still come (and pass the budget)."""
    try:
        oa(keys_url, "sk-spw-client-broke").chat.completions.create(model="chat", messages=HELLO)
    except openai.RateLimitError:
        pass


def test_over_budget_is_insufficient_quota(keys_url: str) -> None:
    spend(keys_url)
    with pytest.raises(openai.RateLimitError) as caught:
        oa(keys_url, "sk-spw-client-broke").chat.completions.create(model="chat", messages=HELLO)
    assert caught.value.code == "insufficient_quota"
    # A budget `per: total` never resets: no Retry-After to wait for.
    assert "retry-after" not in caught.value.response.headers


def test_an_unknown_key_is_authentication_error(keys_url: str) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        oa(keys_url, "sk-spw-nobody").chat.completions.create(model="chat", messages=HELLO)
    assert caught.value.code == "invalid_api_key"


def test_a_cascade_the_key_may_not_use_is_permission_denied(keys_url: str) -> None:
    with pytest.raises(openai.PermissionDeniedError) as caught:
        oa(keys_url, "sk-spw-client-roomy").chat.completions.create(model="other", messages=HELLO)
    assert caught.value.status_code == 403


def test_anthropic_sdk_reads_each_refusal_as_its_own_type(keys_url: str) -> None:
    ok = claude(keys_url, "sk-spw-client-roomy").messages.create(model="chat", max_tokens=64, messages=HELLO)
    assert ok.content[0].text
    with pytest.raises(anthropic.AuthenticationError) as auth:
        claude(keys_url, "sk-spw-nobody").messages.create(model="chat", max_tokens=64, messages=HELLO)
    assert auth.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(anthropic.PermissionDeniedError) as perm:
        claude(keys_url, "sk-spw-client-roomy").messages.create(model="other", max_tokens=64, messages=HELLO)
    assert perm.value.body["error"]["type"] == "permission_error"
    spend(keys_url)
    with pytest.raises(anthropic.RateLimitError) as quota:
        claude(keys_url, "sk-spw-client-broke").messages.create(model="chat", max_tokens=64, messages=HELLO)
    assert quota.value.body["error"]["type"] == "rate_limit_error"
    limited = claude(keys_url, "sk-spw-client-limited")
    with pytest.raises(anthropic.RateLimitError) as rate:
        for _ in range(3):
            limited.messages.create(model="chat", max_tokens=64, messages=HELLO)
    assert int(rate.value.response.headers["retry-after"]) >= 1
