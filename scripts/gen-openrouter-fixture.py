#!/usr/bin/env python3
"""Writes crates/spillway/testdata/discovery/openrouter-models.json.

An OpenRouter-shaped `GET /api/v1/models` listing (providers.md §3) of a few
hundred models for the discovery tests: `:free` variants, per-token price
strings, vision/guard/embed/image-output models, and the odd entries real
listings have (null and negative prices, absurd contexts, missing ids).

Deterministic (fixed seed, no clock), so re-running it gives the same file:

    python3 scripts/gen-openrouter-fixture.py

The first entries are fixed and named in the Rust tests; the rest are
generated filler. Change the fixed ones only together with the tests.
"""

import json
import pathlib
import random

SEED = 20250601
OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/spillway/testdata/discovery/openrouter-models.json"

# (vendor, family stem, versions, sizes in B or None, base price in $/1M)
FAMILIES = [
    ("meta-llama", "llama", ["3.1", "3.2", "3.3"], [1, 3, 8, 70, 405], 0.1),
    ("qwen", "qwen", ["2.5", "3"], [0.5, 1.5, 7, 14, 32, 72, 235], 0.08),
    ("google", "gemma", ["2", "3"], [2, 4, 9, 12, 27], 0.05),
    ("mistralai", "mistral", ["7b-instruct-v0.1", "7b-instruct-v0.3"], [None], 0.03),
    ("mistralai", "mixtral", ["8x7b-instruct", "8x22b-instruct"], [None], 0.6),
    ("deepseek", "deepseek", ["r1", "v3", "r1-distill-llama", "r1-distill-qwen"], [None, 1.5, 8, 14, 32, 70], 0.3),
    ("microsoft", "phi", ["3-mini-4k-instruct", "3.5-mini-instruct", "4"], [None], 0.07),
    ("nousresearch", "hermes", ["3-llama-3.1", "4"], [70, 405], 0.7),
    ("cohere", "command", ["r", "r-plus", "a"], [None], 1.5),
    ("openai", "gpt", ["4o", "4o-mini", "4.1", "4.1-mini", "oss"], [None, 20, 120], 2.0),
    ("x-ai", "grok", ["3", "3-mini", "4"], [None], 3.0),
    ("amazon", "nova", ["lite-v1", "micro-v1", "pro-v1"], [None], 0.2),
    ("nvidia", "llama-3.1-nemotron", ["instruct", "ultra"], [70, 253], 0.6),
    ("thudm", "glm", ["4", "z1"], [9, 32], 0.1),
]
SUFFIXES = ["", "-instruct", "-it", "-chat", "-preview"]
SPECIAL_KINDS = ["vision", "guard", "embed"]


def per_token(usd_per_1m):
    """OpenRouter's decimal string in USD per single token."""
    return format(usd_per_1m / 1e6, ".10f").rstrip("0").rstrip(".") or "0"


def model(mid, context, p_in, p_out, *, inputs=("text",), outputs=("text",), tools=True, created=1_730_000_000):
    """One listing entry; prices in $/1M (None → omitted key)."""
    pricing = {"request": "0", "image": "0", "web_search": "0", "internal_reasoning": "0"}
    if p_in is not None:
        pricing["prompt"] = p_in if isinstance(p_in, str) else per_token(p_in)
    if p_out is not None:
        pricing["completion"] = p_out if isinstance(p_out, str) else per_token(p_out)
    params = ["max_tokens", "temperature", "top_p", "stop", "seed"]
    if tools:
        params = ["tools", "tool_choice"] + params
    return {
        "id": mid,
        "canonical_slug": mid.split(":")[0],
        "name": mid.split("/")[-1].replace("-", " ").title(),
        "created": created,
        "description": "Generated for Spillway's discovery tests.",
        "context_length": context,
        "architecture": {
            "modality": "+".join(inputs) + "->" + "+".join(outputs),
            "input_modalities": list(inputs),
            "output_modalities": list(outputs),
            "tokenizer": "Other",
            "instruct_type": None,
        },
        "pricing": pricing,
        "top_provider": {"context_length": context, "max_completion_tokens": None, "is_moderated": False},
        "per_request_limits": None,
        "supported_parameters": params,
    }


def fixed():
    """Entries the Rust tests name. Keep in sync with listing/tests.rs."""
    entries = [
        model("meta-llama/llama-3.3-70b-instruct:free", 131072, 0, 0),
        model("meta-llama/llama-3.3-70b-instruct", 131072, 0.13, 0.40),
        model("google/gemma-3-27b-it:free", 96000, 0, 0, inputs=("text", "image")),
        model("google/gemma-3-27b-it", 131072, 0.09, 0.17, inputs=("text", "image")),
        model("qwen/qwen3-235b-a22b", 40960, 0.14, 0.60),
        model("anthropic/claude-sonnet-4", 200000, 3.0, 15.0, inputs=("text", "image")),
        model("meta-llama/llama-guard-4-12b", 163840, 0.05, 0.05, tools=False),
        model("openai/text-embedding-3-small", 8192, 0.02, 0, outputs=("embeddings",), tools=False),
        model("google/gemini-2.5-flash-image-preview", 32768, 0.30, 2.50, outputs=("image", "text")),
        model("black-forest-labs/flux-image", 4096, 0.5, 0.5, inputs=("text",), outputs=("image",), tools=False),
        # A dynamic router: negative prices are a sentinel for "unknown".
        model("openrouter/auto", 2000000, "-1", "-1"),
        # Odd entries real listings have had.
        model("broken/absurd-context", 10**15, 0.1, 0.1),
        model("broken/zero-context", 0, 0.1, 0.1),
        model("broken/string-context", "lots", 0.1, 0.1),
        model("broken/string-price", 65536, "abc", "0.000001"),
        model("broken/missing-prompt-price", 65536, None, 0.2),
        model("broken/float-context", 32768.0, 0.1, 0.1),
        model("broken/huge-price", 65536, "5", "5"),
    ]
    null_pricing = model("broken/null-pricing", 65536, 0.1, 0.1)
    null_pricing["pricing"] = None
    entries.append(null_pricing)
    top_only = model("fallback/top-provider-context", None, 0.2, 0.2)
    top_only["top_provider"]["context_length"] = 65536
    entries.append(top_only)
    entries.append({"name": "no id at all", "context_length": 8192})
    entries.append("not an object")
    entries.append(model("", 8192, 0, 0))
    return entries


def generated(rng, count, taken):
    seen = set(taken)
    out = []
    while len(out) < count:
        vendor, stem, versions, sizes, base = rng.choice(FAMILIES)
        version = rng.choice(versions)
        size = rng.choice(sizes)
        sep = "" if stem in ("qwen",) and rng.random() < 0.5 else "-"
        mid = f"{vendor}/{stem}{sep}{version}"
        if size is not None:
            mid += f"-{size:g}b"
        mid += rng.choice(SUFFIXES)
        if rng.random() < 0.06:
            mid += "-" + rng.choice(SPECIAL_KINDS)
        if mid in seen:
            continue
        seen.add(mid)
        context = rng.choice([4096, 8192, 16384, 32768, 32768, 65536, 131072, 131072, 163840, 1048576])
        scale = (size or 30) / 30
        p_in = round(base * rng.uniform(0.5, 2.0) * max(scale, 0.2), 4)
        p_out = round(p_in * rng.choice([1, 2, 3, 4, 5]), 4)
        inputs = ("text", "image") if mid.endswith("-vision") or rng.random() < 0.15 else ("text",)
        created = 1_700_000_000 + rng.randrange(0, 60_000_000)
        out.append(model(mid, context, p_in, p_out, inputs=inputs, tools=rng.random() < 0.6, created=created))
        # About a fifth of the models also have a `:free` variant, often
        # with a smaller context, as on the real listing.
        if rng.random() < 0.2 and len(out) < count:
            free_ctx = rng.choice([context, min(context, 32768), min(context, 8192)])
            out.append(model(mid + ":free", free_ctx, 0, 0, inputs=inputs, created=created))
    return out


def main():
    rng = random.Random(SEED)
    head = fixed()
    taken = {e["id"] for e in head if isinstance(e, dict) and "id" in e}
    data = head + generated(rng, 300, taken)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"data": data}, indent=1) + "\n")
    print(f"wrote {len(data)} entries to {OUT}")


if __name__ == "__main__":
    main()
