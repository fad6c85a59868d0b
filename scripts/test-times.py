#!/usr/bin/env python3
"""Where the time of `make test` went, from target/test-parts.tsv (written
by scripts/timed.sh, one line per step: each build, download and suite): a
table of the steps, then the one-line summary `make test` ends with; before
them, the ten slowest PHPUnit classes of target/phpunit.xml (the PHP suite's
JUnit log, or --junit FILE) and the Rust test binaries (cargo's "Running"
and "finished in" lines in target/test-logs/). With --log FILE, also the
steps of a `.ci/run` log ("== step: N s" lines).

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


def rust_binaries(logs="target/test-logs"):
    """(seconds, binary, tests) of each Rust test binary that ran."""
    rows = []
    try:
        names = sorted(os.listdir(logs))
    except FileNotFoundError:
        return rows
    for name in names:
        if not name.startswith("rust"):
            continue
        binary = None
        for line in open(os.path.join(logs, name), errors="replace"):
            m = re.match(r"\s*Running (?:unittests )?(\S+) \(([^)]*)\)", line)
            if m:
                binary = f"{m.group(1)} ({os.path.basename(m.group(2)).rsplit('-', 1)[0]})"
                continue
            m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed.*finished in ([\d.]+)s", line)
            if m and binary:
                rows.append((float(m.group(3)), binary, int(m.group(1)) + int(m.group(2))))
                binary = None
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
        steps = re.findall(r"^== (.*): (\d+) s \(total", open(log, errors="replace").read(), re.M)
        for name, secs in steps:
            print(f"| {name} | {secs} |")
        total = sum(int(secs) for _, secs in steps)
        print(f"| **total** | **{total} ({total / 60:.1f} min)** |")
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
    binaries = rust_binaries(os.path.join(os.path.dirname(tsv) or ".", "test-logs"))
    if binaries:
        print("| Rust test binary (ten slowest) | tests | seconds |\n|---|--:|--:|")
        for secs, name, tests in sorted(binaries, reverse=True)[:10]:
            print(f"| {name} | {tests} | {secs:.0f} |")
        print()
    rows = parts(tsv)
    if not rows:
        # Nothing timed (a part ran outside `make test`): not a failure.
        print(f"no parts recorded in {tsv}")
        return 0
    print("| step | seconds | tests | failures |\n|---|--:|--:|--:|")
    for name, secs, tests, failures, rc in rows:
        status = "" if rc == 0 else f" (exit {rc})"
        print(f"| {name}{status} | {secs:.0f} | {tests or ''} | {failures or ''} |")
    total = sum(r[1] for r in rows)
    # The suites, then the builds and downloads as two sums.
    suites = [r for r in rows if r[2] or r[3] or r[4]]
    summary = ", ".join(
        f"{name} {tests} tests{'' if not failures and rc == 0 else f' ({failures} failed, exit {rc})'} in {secs:.0f} s"
        for name, secs, tests, failures, rc in suites
    )
    others = [r for r in rows if r not in suites]
    builds = sum(r[1] for r in others if not r[0].startswith(("model:", "asset:", "download:")))
    downloads = sum(r[1] for r in others) - builds
    failed = sum(r[3] for r in rows)
    print(
        f"make test: {summary}; {failed} failures; builds {builds:.0f} s, "
        f"downloads and assets {downloads:.0f} s; {total:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
