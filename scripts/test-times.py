#!/usr/bin/env python3
"""Where the time of `make test` went, from target/test-parts.tsv (written
by scripts/timed.sh, one line per part): a table of the parts, then the
one-line summary `make test` ends with; before them, the ten slowest PHPUnit
classes of target/phpunit.xml (the PHP suite's JUnit log, or --junit FILE).
With --log FILE, also the steps of a `.ci/run` log ("== step: N s" lines).

Usage: scripts/test-times.py [TSV] [--log CI_LOG] [--junit JUNIT_XML]
"""
import os
import re
import sys
import xml.etree.ElementTree as ET


def parts(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) == 5:
                    name, secs, tests, failures, rc = fields
                    rows.append((name, float(secs), int(tests), int(failures), int(rc)))
    except FileNotFoundError:
        pass
    return rows


def main(argv):
    tsv, log = "target/test-parts.tsv", None
    # The PHP suite's JUnit log (make test-php writes it).
    junit = "target/phpunit.xml" if os.path.exists("target/phpunit.xml") else None
    args = iter(argv)
    for a in args:
        if a == "--log":
            log = next(args, None)
        elif a == "--junit":
            junit = next(args, None)
        else:
            tsv = a
    if log:
        print("| step of .ci/run | seconds |\n|---|--:|")
        for m in re.finditer(r"^== (.*): (\d+) s \(total", open(log, errors="replace").read(), re.M):
            print(f"| {m.group(1)} | {m.group(2)} |")
        print()
    if junit:
        classes = [
            (float(s.get("time", 0)), s.get("name", "?"), int(s.get("tests", 0)))
            for s in ET.parse(junit).iter("testsuite")
            if s.get("file")
        ]
        print("| PHPUnit class (ten slowest) | tests | seconds |\n|---|--:|--:|")
        for secs, name, tests in sorted(classes, reverse=True)[:10]:
            print(f"| {name.split(chr(92))[-1]} | {tests} | {secs:.0f} |")
        print()
    rows = parts(tsv)
    if not rows:
        # Nothing timed (a part ran outside `make test`): not a failure.
        print(f"no parts recorded in {tsv}")
        return 0
    print("| part | seconds | tests | failures |\n|---|--:|--:|--:|")
    for name, secs, tests, failures, rc in rows:
        status = "" if rc == 0 else f" (exit {rc})"
        print(f"| {name}{status} | {secs:.0f} | {tests} | {failures} |")
    total = sum(r[1] for r in rows)
    summary = ", ".join(
        f"{name} {tests} tests{'' if not failures and rc == 0 else f' {failures} failed'} in {secs:.0f} s"
        for name, secs, tests, failures, rc in rows
    )
    failed = sum(r[3] for r in rows)
    print(f"make test: {summary}; {failed} failures; {total:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
