#!/usr/bin/env python3
"""Checks the gateway crate's layering from its imports.

Reads every `.rs` file under crates/spillway/src (test modules and test
files left out), resolves each `use` and each inline `crate::`/`super::`
path to the file that defines it, and reports:

  * import cycles between files (strongly connected components of the
    file graph; a `mod x;` declaration is not an import, a `pub use` is);
  * imports that run against the layering below: from a module to one on
    its own or a higher layer (a module's files may import each other).

  scripts/layers.py            # prints both; exits 1 past the limits
  scripts/layers.py --verbose  # every edge that crosses, with its names
"""
import os
import re
import sys
from collections import defaultdict

# Bottom first. A module may import from lower layers only.
LAYERS = [
    ["client_link", "journal", "digits"],
    ["outcome", "quality", "telemetry", "supervisor", "secret"],
    ["api", "normalize"],
    ["config"],
    ["prompts", "metrics"],
    ["health", "redact"],
    ["state", "providers", "export"],
    ["load", "discovery"],
    ["alerts", "cascade"],
    ["usage", "handoff", "escalation"],
    ["stored", "tenancy"],
    ["gateway"],
    ["server"],
    ["app"],
    ["drill"],
    ["cli", "lib", "main"],
]
MAX_CYCLES = 0
MAX_CROSSINGS = 5

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "spillway", "src")


def modpath(rel):
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main") and len(parts) > 1:
        parts = parts[:-1]
    return parts


def is_test_file(rel):
    name = os.path.basename(rel)
    return name in ("tests.rs", "proptests.rs", "test_support.rs") or name.endswith(("_tests.rs", "_proptests.rs"))


def strip(src):
    src = re.sub(r"//[^\n]*", "", src)  # comments (doc links are not imports)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)  # strings
    # `#[cfg(test)] mod x { ... }` blocks: cut by brace matching.
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{", src):
        if m.start() < i:
            continue
        out.append(src[i:m.start()])
        depth, j = 1, m.end()
        while j < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[j], 0)
            j += 1
        i = j
    out.append(src[i:])
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree)]
    prefix, body = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    items.append(cur)
    return [p for it in items if it for p in expand_use(prefix + it)]


def main():
    verbose = "--verbose" in sys.argv
    files = {}
    for d, _, fs in os.walk(ROOT):
        for f in fs:
            if f.endswith(".rs"):
                rel = os.path.relpath(os.path.join(d, f), ROOT)
                if not is_test_file(rel):
                    files[rel] = strip(open(os.path.join(d, f), encoding="utf-8").read())
    by_mod = {tuple(modpath(r)): r for r in files}

    def resolve(parts):
        for k in range(len(parts), 0, -1):
            hit = by_mod.get(tuple(parts[:k]))
            if hit:
                return hit
        return None

    edges = defaultdict(set)
    for rel, src in files.items():
        here = modpath(rel)
        # the module a path's `super` is relative to
        parent_of_file = here[:-1] if not rel.endswith(("mod.rs", "lib.rs", "main.rs")) else here
        paths = []
        for u in re.findall(r"\buse\s+([^;]+);", src):
            paths += expand_use(u)
        paths += re.findall(r"(?<![:\w])((?:crate|super)(?:::\w+)+)", src)
        for p in paths:
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                base, segs = [], segs[1:]
            elif segs[0] == "super":
                base, segs = list(parent_of_file), segs[1:]
                while segs and segs[0] == "super":
                    base, segs = base[:-1], segs[1:]
                if rel.endswith("mod.rs"):
                    base = base[:-1]
            elif segs[0] == "self":
                base, segs = list(here), segs[1:]
            else:
                continue
            target = resolve(base + [s for s in segs if s[:1].islower() and s != "self"])
            if target and target != rel:
                edges[rel].add((target, segs[-1] if segs else ""))

    # Cycles: Tarjan's strongly connected components.
    graph = {f: {t for t, _ in edges[f]} for f in files}
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in sorted(files):
        if v not in index:
            visit(v)
    cycles = [c for c in comps if len(c) > 1]

    layer_of = {m: i for i, row in enumerate(LAYERS) for m in row}
    crossings = []
    for src_file, targets in sorted(edges.items()):
        a = modpath(src_file)[0]
        for tgt, name in sorted(targets):
            b = modpath(tgt)[0]
            if a == b:
                continue
            la, lb = layer_of.get(a), layer_of.get(b)
            if la is None or lb is None:
                crossings.append((src_file, tgt, name, "module missing from LAYERS"))
            elif lb >= la:
                crossings.append((src_file, tgt, name, f"layer {la} -> {lb}"))

    print(f"files: {len(files)}, imports between files: {sum(len(v) for v in graph.values())}")
    print(f"import cycles: {len(cycles)}")
    for c in cycles:
        print("  cycle: " + " -> ".join(c))
    print(f"imports against the layering: {len(crossings)}")
    for s, t, n, why in crossings:
        if verbose or len(crossings) <= 20:
            print(f"  {s} -> {t} ({n}; {why})")
    ok = len(cycles) <= MAX_CYCLES and len(crossings) <= MAX_CROSSINGS
    if not ok:
        print(f"FAIL: at most {MAX_CYCLES} cycles and {MAX_CROSSINGS} crossings allowed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
