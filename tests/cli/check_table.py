#!/usr/bin/env python3
"""The run table and the progress line as people read them, on the simulated device.

    tests/cli/check_table.py MEMSTRESS tables [--width 160]
    tests/cli/check_table.py MEMSTRESS progress [--updates 3] -- RUN_ARGS...

tables: runs every workload that `memstress list` names with its default parameters on `-d sim` and
measures the widest line of the table: each must fit in --width columns. Each also runs with --wide, which
must show more: the spread and device columns. In both, no number has an exponent and no figure is named
by a second name older files used (Note [One name per figure] in harness/results/former_names.hpp, as
`memstress list --format json` gives them). Prints the widths per workload.

progress: runs `memstress run RUN_ARGS --progress always` (a slow case) and counts the live line's draws on
stderr (the text between carriage returns that says "running"): one case's line must be drawn at least
--updates times, its time growing.

Exit 0 when the checks hold, 1 when one fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


# A name the tables never print (Note [One name per figure]), as a METRIC cell: two spaces either side.
def second_names(listed: dict) -> re.Pattern[str]:
    return re.compile("  (" + "|".join(re.escape(f["former"]) for f in listed["former_metric_names"]) + ")  ")


EXPONENT = re.compile(r"[0-9]e[+-]?[0-9]")


def check_tables(memstress: str, width: int) -> int:
    listed = run([memstress, "list", "--format", "json"])
    if listed.returncode != 0:
        print(f"FAIL: memstress list exited {listed.returncode}: {listed.stderr}")
        return 1
    registry = json.loads(listed.stdout)
    names = [w["name"] for w in registry["workloads"]]
    second = second_names(registry)
    failures = 0
    print(f"{'workload':<14} {'default':>7} {'--wide':>7}")
    for name in names:
        base = [memstress, "run", name, "-d", "sim", "-q"]
        table = run(base)
        wide = run(base + ["--wide"])
        if table.returncode not in (0, 1) or wide.returncode != table.returncode:
            print(f"FAIL: {name}: exit {table.returncode} (--wide: {wide.returncode}): {table.stderr[-2000:]}")
            failures += 1
            continue
        print(f"{name:<14} {widest(table.stdout):>7} {widest(wide.stdout):>7}")
        if widest(table.stdout) > width:
            print(f"FAIL: {name}: the default table is {widest(table.stdout)} columns wide, more than {width}:")
            print(table.stdout)
            failures += 1
        header = wide.stdout.splitlines()[0] if wide.stdout else ""
        if not all(column in header.split() for column in ("P10", "P90", "CV", "DEVICE")):
            print(f"FAIL: {name}: --wide has no spread or device columns: {header!r}")
            failures += 1
        if " P10 " in table.stdout:
            print(f"FAIL: {name}: the default table shows spread columns")
            failures += 1
        for text in (table.stdout, wide.stdout):
            for pattern in (second, EXPONENT):
                if m := pattern.search(text):
                    print(f"FAIL: {name}: {m.group(0)!r} in a table")
                    failures += 1
    return 1 if failures else 0


def check_progress(memstress: str, updates: int, run_args: list[str]) -> int:
    result = run([memstress, "run", *run_args, "--progress", "always"])
    draws = [piece for piece in re.split(r"[\r\n]", result.stderr) if "] running " in piece]
    print(f"exit {result.returncode}; {len(draws)} live line draws:")
    for draw in draws:
        print("  " + draw.replace("\x1b[K", ""))
    if result.returncode != 0:
        print(f"FAIL: exit {result.returncode}: {result.stderr[-2000:]}")
        return 1
    # The case drawn most often: its own time must grow from draw to draw.
    by_case: dict[str, list[float]] = {}
    for draw in draws:
        if m := re.search(r"\[([0-9]+/[0-9]+)\] running .* for ([0-9.]+)s \(", draw):
            by_case.setdefault(m.group(1), []).append(float(m.group(2)))
    longest = max(by_case.values(), key=len, default=[])
    if len(longest) < updates:
        print(f"FAIL: no case's live line was drawn {updates} times or more")
        return 1
    if longest != sorted(longest) or longest[-1] <= longest[0]:
        print(f"FAIL: the case's time does not grow from draw to draw: {longest}")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("memstress")
    parser.add_argument("check", choices=["tables", "progress"])
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--updates", type=int, default=3)
    argv = sys.argv[1:]
    run_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.check == "tables":
        return check_tables(args.memstress, args.width)
    if not run_args:
        parser.error("progress: name the run's arguments after --")
    return check_progress(args.memstress, args.updates, run_args)


if __name__ == "__main__":
    sys.exit(main())
