#!/usr/bin/env python3
"""A mutation sweep of `memstress compare` and `memstress accept --from` over broken results files.

    tests/cli/mutate_results.py MEMSTRESS [--cases N] [--seed S] [--jobs J] [--keep DIR]

Takes the committed results (tests/data/compare/*.json, results/h100/*.json and *.jsonl, most of them
xz-compressed: NAME.xz) and breaks one thing in each case, as a file from another machine or person might be
broken: a value of another type, a key deleted, a value nested deeply (up to 100,000 levels), the text cut
short. Each case runs `memstress compare ORIGINAL MUTATED` and `memstress accept --profile h100 --any-gpu --from
MUTATED`. Every run must exit 0 or 1, or 2 with a message that names the mutated file; a signal, a timeout, any
other exit code, "internal error" or a sanitizer's report is a finding. Prints the histogram of outcomes per
command and each finding with its mutation (and the file, with --keep DIR). Exit 0 without findings, 1 with
some, 2 on bad usage.
Deterministic for a given --seed (whatever --jobs: the cases are made in order, run J at a time).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import records  # noqa: E402
from value_paths import paths_of  # noqa: E402  (the sweeps of tests/scripts share it)

PROFILE = ROOT / "profiles" / "h100.yaml"
SENTINEL = "@@deep@@"
DEPTHS = (2, 20, 128, 129, 1000, 60_000, 100_000)


def sources() -> list[Path]:
    compare = sorted((ROOT / "tests" / "data" / "compare").glob("*.json"))
    folder = ROOT / "results" / "h100"
    h100 = sorted(p for kind in ("*.json", "*.jsonl", "*.json.xz", "*.jsonl.xz") for p in folder.glob(kind))
    return [p for p in compare + h100 if "devices-" not in p.name and "unknown-schema" not in p.name]


def other_value(rng: random.Random, old: Any) -> Any:
    choices = [7, -1, 2**63, 1.5, "text", "", True, None, [], {}, ["a"], {"k": "v"}, [[["x"]]], SENTINEL]
    return rng.choice([c for c in choices if type(c) is not type(old)] or choices)


def mutate_value(rng: random.Random, doc: Any) -> tuple[Any, str]:
    doc = copy.deepcopy(doc)
    paths = paths_of(doc)
    if not paths:
        return SENTINEL, "the whole document deep"
    # Rows, params and metrics are where readers look hardest: favour them.
    hot = [p for p in paths if any(k in ("rows", "params", "metrics", "verification", "device", "benchmarks")
                                   for k in p if isinstance(k, str))]
    path = rng.choice(hot if hot and rng.random() < 0.7 else paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    name = "/".join(map(str, path))
    kind = rng.random()
    if kind < 0.45:
        parent[key] = other_value(rng, parent[key])
        return doc, f"{name}: set to {str(parent[key])[:40]}"
    if kind < 0.65:
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
        return doc, f"{name}: deleted"
    if kind < 0.85:
        parent[key] = SENTINEL
        return doc, f"{name}: nested deeply"
    parent[key] = [parent[key]] if rng.random() < 0.5 else {"x": parent[key]}
    return doc, f"{name}: wrapped"


def render(doc: Any, rng: random.Random) -> str:
    text = json.dumps(doc)
    depth = rng.choice(DEPTHS)
    deep = "[" * depth + "]" * depth if rng.random() < 0.6 else '{"a":' * depth + "1" + "}" * depth
    return text.replace(json.dumps(SENTINEL), deep)


def plain_suffix(source: Path) -> str:
    """.json or .jsonl, whether the committed file is compressed (NAME.xz) or not."""
    return Path(source.name.removesuffix(".xz")).suffix


def mutate(rng: random.Random, source: Path) -> tuple[str, str]:
    """(mutated text, what was done)."""
    text = records.text(source)
    if rng.random() < 0.08:
        cut = rng.randrange(len(text))
        return text[:cut], f"cut at byte {cut}"
    if plain_suffix(source) == ".jsonl":
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        line, what = mutate_value(rng, json.loads(lines[i]))
        lines[i] = render(line, rng)
        return "\n".join(lines) + "\n", f"line {i + 1}: {what}"
    doc, what = mutate_value(rng, json.loads(text))
    return render(doc, rng), what


def judge(mutated: Path, done: subprocess.CompletedProcess | None) -> str:
    """The outcome's histogram key; findings start with "FINDING"."""
    if done is None:
        return "FINDING timeout"
    rc, err = done.returncode, done.stderr
    if rc < 0:
        return f"FINDING signal {-rc}"
    if "internal error" in err:
        return f"FINDING internal error (exit {rc})"
    if "Sanitizer" in err or "runtime error:" in err:  # ASan, LSan, UBSan (the asan preset): exit 1 otherwise
        return f"FINDING sanitizer report (exit {rc})"
    if rc == 2 and str(mutated) not in err:
        return "FINDING exit 2 without naming the file"
    if rc in (0, 1, 2):
        return f"exit {rc}"
    return f"FINDING exit {rc}"


def run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None


def run_case(memstress: Path, source: Path, mutated: Path, keep: Path | None) -> list[tuple[str, str, str]]:
    """Both commands on one mutated file: (command, outcome, last line of stderr) each. The file is removed,
    or moved into `keep` when a command's outcome is a finding."""
    commands = {
        "compare": [str(memstress), "compare", str(source), str(mutated)],
        "accept": [str(memstress), "accept", "--profile", str(PROFILE), "--any-gpu", "--from", str(mutated)],
    }
    out = []
    for name, command in commands.items():
        done = run(command)
        message = (done.stderr.strip().splitlines() or [""])[-1][:300] if done else ""
        out.append((name, judge(mutated, done), message))
    if keep and any(outcome.startswith("FINDING") for _, outcome, _ in out):
        keep.mkdir(parents=True, exist_ok=True)
        shutil.move(mutated, keep / mutated.name)
    else:
        mutated.unlink()
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("memstress", type=Path)
    parser.add_argument("--cases", type=int, default=1000, help="mutated files (each run by both commands)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    parser.add_argument("--keep", type=Path, help="keep the files of findings here")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    files = sources()
    histogram: dict[str, Counter] = {"compare": Counter(), "accept": Counter()}
    findings = []
    with tempfile.TemporaryDirectory(prefix="mutate-results-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        # The cases are made in order from one generator (the same files for a seed, whatever --jobs); a few
        # at a time are on disk, as the deep ones are hundreds of KiB each.
        pending: dict[Future, tuple[int, Path, str]] = {}
        done_cases: list[tuple[int, Path, str, list]] = []
        for case in range(args.cases):
            source = rng.choice(files)
            text, what = mutate(rng, source)
            mutated = Path(tmp) / f"case{case:04d}{plain_suffix(source)}"
            mutated.write_text(text, encoding="utf-8")
            pending[pool.submit(run_case, args.memstress, source, mutated, args.keep)] = (case, source, what)
            while len(pending) >= 2 * args.jobs or (case + 1 == args.cases and pending):
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    done_cases.append((*pending.pop(future), future.result()))
    for case, source, what, outcomes in sorted(done_cases, key=lambda c: c[0]):
        for name, outcome, message in outcomes:
            histogram[name][outcome] += 1
            if outcome.startswith("FINDING"):
                findings.append(f"{name} case {case} ({source.name}, {what}): {outcome}: {message}")
    for name, counts in histogram.items():
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        print(f"{name}: {sum(counts.values())} cases: {shown}")
    for line in findings:
        print(line)
    print(f"mutate_results.py: {len(findings)} finding(s) in {args.cases} cases (seed {args.seed})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
