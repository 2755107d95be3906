"""Prints one PASS/FAIL line per client scenario from the suites' JUnit
files, then the totals and the suite's wall time (scripts/clients/run.sh)."""

import sys
import xml.etree.ElementTree as ET


def cases(path: str, label: str):
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as e:
        yield (f"{label}: no results ({e})", False)
        return
    for case in tree.iter("testcase"):
        bad = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if skipped:
            continue
        where = case.get("classname") or ""
        name = case.get("name") or "?"
        if label == "python":
            # classname is the module: test_openai_python -> openai_python.
            name = f"{where.rsplit('.', 1)[-1].removeprefix('test_')}: {name}"
        yield (name, not bad)


def main() -> int:
    *files, seconds = sys.argv[1:]
    results = []
    for path in files:
        results += list(cases(path, "python" if path.endswith("python.xml") else "node"))
    print("\nClient scenarios:")
    for name, ok in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"Client suite wall time: {seconds}s (installs included)")
    print(f"clients: {passed} passed, {failed} failed")
    return 0 if failed == 0 and results else 1


if __name__ == "__main__":
    sys.exit(main())
