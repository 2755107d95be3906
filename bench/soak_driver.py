#!/usr/bin/env python3
"""Load driver for bench/soak.sh: mixed traffic against a running gateway,
the gateway's resident memory sampled every 10 s, a reload every 60 s.

Standard library only. Prints a summary with the RSS slope after the
warm-up (least squares over the samples past the first fifth of the run).
"""
import argparse
import http.client
import json
import random
import subprocess
import threading
import time
from collections import Counter

CHAT = [{"role": "user", "content": "Tell me about the river in three sentences."}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
    "additionalProperties": False,
}

# (weight, name, method, path, body, streamed, hang up after the first bytes)
KINDS = [
    (25, "chat", "/v1/chat/completions", {"model": "chat", "messages": CHAT}, False, False),
    (25, "chat_stream", "/v1/chat/completions", {"model": "chat", "messages": CHAT, "stream": True}, True, False),
    (10, "http", "/v1/chat/completions", {"model": "http", "messages": CHAT}, False, False),
    (8, "http_stream", "/v1/chat/completions", {"model": "http", "messages": CHAT, "stream": True}, True, False),
    (8, "json", "/v1/chat/completions", {"model": "json", "messages": CHAT,
        "response_format": {"type": "json_schema", "json_schema": {"name": "trip", "schema": SCHEMA}}}, False, False),
    (5, "responses", "/v1/responses", {"model": "chat", "input": "Hello there", "stream": True}, True, False),
    (5, "messages", "/v1/messages", {"model": "chat", "max_tokens": 64, "messages": CHAT}, False, False),
    (5, "embeddings", "/v1/embeddings", {"model": "vectors", "input": ["one", "two", "three"]}, False, False),
    (6, "hang_up", "/v1/chat/completions", {"model": "chat", "messages": CHAT, "stream": True}, True, True),
    (2, "handoff", "/v1/chat/completions", {"model": "doomed", "messages": CHAT}, False, False),
    (1, "bad_request", "/v1/chat/completions", {"model": "chat", "messages": "not a list"}, False, False),
]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def worker(host, port, deadline, counts, lock):
    weights = [k[0] for k in KINDS]
    while time.monotonic() < deadline:
        _, name, path, body, streamed, hang_up = random.choices(KINDS, weights)[0]
        conn = http.client.HTTPConnection(host, port, timeout=30)
        try:
            headers = {"Content-Type": "application/json"}
            if path == "/v1/messages":
                headers["anthropic-version"] = "2023-06-01"
            conn.request("POST", path, json.dumps(body), headers)
            resp = conn.getresponse()
            if hang_up:
                resp.read(64)
                key = f"{name} hung up"
            else:
                resp.read()
                key = f"{name} {resp.status}"
        except Exception as e:  # noqa: BLE001 - every failure is counted by kind
            key = f"{name} {type(e).__name__}"
        finally:
            conn.close()
        with lock:
            counts[key] += 1


def slope_mib_per_hour(samples):
    n = len(samples)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in samples) / n
    my = sum(r for _, r in samples) / n
    den = sum((t - mx) ** 2 for t, _ in samples)
    if den == 0:
        return 0.0
    return sum((t - mx) * (r - my) for t, r in samples) / den * 3600 / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--seconds", type=int, default=1800)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reload-cmd", required=True)
    a = ap.parse_args()
    hostport = a.url.split("//", 1)[1]
    host, port = hostport.split(":")
    start = time.monotonic()
    deadline = start + a.seconds
    counts, lock = Counter(), threading.Lock()
    threads = [threading.Thread(target=worker, args=(host, int(port), deadline, counts, lock), daemon=True)
               for _ in range(a.threads)]
    for t in threads:
        t.start()
    samples, generation, next_reload = [], 0, start + 60
    with open(a.out, "w") as out:
        out.write("seconds,rss_kib,requests\n")
        while time.monotonic() < deadline:
            time.sleep(10)
            now = time.monotonic() - start
            rss = rss_kib(a.pid)
            with lock:
                total = sum(counts.values())
            samples.append((now, rss))
            out.write(f"{now:.0f},{rss},{total}\n")
            out.flush()
            if time.monotonic() >= next_reload:
                generation += 1
                subprocess.run([a.reload_cmd, str(generation)], check=False)
                next_reload += 60
    for t in threads:
        t.join(timeout=40)
    warm = [s for s in samples if s[0] >= a.seconds / 5]
    total = sum(counts.values())
    print(f"soak: {a.seconds} s, {a.threads} client threads, {total} requests ({total / a.seconds:.0f}/s), "
          f"{generation} reloads")
    for key, n in sorted(counts.items()):
        print(f"  {key}: {n}")
    if samples:
        rss = [r for _, r in samples]
        print(f"RSS: first {rss[0] / 1024:.1f} MiB, max {max(rss) / 1024:.1f} MiB, last {rss[-1] / 1024:.1f} MiB")
        print(f"RSS slope after the warm-up ({len(warm)} samples past {a.seconds // 5} s): "
              f"{slope_mib_per_hour(warm):+.2f} MiB/hour")


if __name__ == "__main__":
    main()
