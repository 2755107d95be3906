"""/metrics as Prometheus reads it: `promtool check metrics` (the Debian
package `prometheus` ships promtool; scripts/clients/run.sh installs it),
and strict parses of both formats with prometheus_client."""

import shutil
import subprocess

import httpx
import openai
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text


def _scrape(base_url: str, client: openai.OpenAI, accept: str) -> httpx.Response:
    # Traffic first, so the per-cascade and per-model series exist.
    client.chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}])
    client.embeddings.create(model="embeddings", input="hi")
    response = httpx.get(f"{base_url}/metrics", headers={"accept": accept}, timeout=10)
    response.raise_for_status()
    return response


def test_promtool_check_metrics(base_url: str, client: openai.OpenAI) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (scripts/clients/run.sh installs the Debian package prometheus)"
    body = _scrape(base_url, client, "text/plain").text
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


def test_text_format_parses(base_url: str, client: openai.OpenAI) -> None:
    response = _scrape(base_url, client, "text/plain")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    names = {family.name for family in parse_text(response.text)}
    # The parser names a counter family without its `_total`.
    assert "spillway_requests" in names, sorted(names)


def test_openmetrics_parses(base_url: str, client: openai.OpenAI) -> None:
    response = _scrape(base_url, client, "application/openmetrics-text; version=1.0.0")
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    # The strict OpenMetrics parser: raises on any deviation, needs `# EOF`.
    families = list(parse_openmetrics(response.text))
    assert families
