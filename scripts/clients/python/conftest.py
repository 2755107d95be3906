"""Fixtures of the client suite: the gateways scripts/clients/run.sh started.

SPILLWAY_URL is the mock gateway (scripts/clients/mock.yaml: every cascade
starts on a model that fails), SPILLWAY_DEMO_URL the demo (examples/demo.yaml,
the config `spillway serve` embeds) on a port of its own, SPILLWAY_KEYS_URL
a gateway with virtual keys (scripts/clients/keys.yaml).
"""

import os

import openai
import pytest


def _url(name: str) -> str:
    url = os.environ.get(name)
    if not url:
        pytest.fail(f"{name} is not set: run the suite with scripts/clients/run.sh")
    return url.rstrip("/")


@pytest.fixture(scope="session")
def base_url() -> str:
    return _url("SPILLWAY_URL")


@pytest.fixture(scope="session")
def keys_url() -> str:
    return _url("SPILLWAY_KEYS_URL")


@pytest.fixture(scope="session")
def demo_url() -> str:
    return _url("SPILLWAY_DEMO_URL")


@pytest.fixture(scope="session")
def client(base_url: str) -> openai.OpenAI:
    # No retries: a gateway error must show, not be papered over by the SDK.
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="not-needed", max_retries=0)


@pytest.fixture(scope="session")
def demo_client(demo_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{demo_url}/v1", api_key="not-needed", max_retries=0)
