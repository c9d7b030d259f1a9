#!/usr/bin/env python3
"""scripts/lab/find_max_table.py FOLDER: memstress_torch.find_max_batch and Lightning's batch-size finder beside
PyTorch's largest batch, from the outputs of scripts/lab/doctor_programs.py on one GPU, as a Markdown table.

FOLDER holds, each file as doctor_programs.py --out wrote it, all under one cap:
  largest/PROGRAM-bB.json     runs at batch B (--batch B --steps 2 --cap CAP): PyTorch's largest batch is the
                              largest that ran below the lowest that ran out
  <finder>/PROGRAM-<tool>.json  a finder's run (--find-max memstress|lightning --cap CAP), one folder per finder
                              (e.g. one per version of find_max_batch, and lightning/, printed last)

Prints one row per program: PyTorch's largest, then for each finder folder (in name order) the batch found and
its distance from the largest, trials, steps, OOMs met and seconds. Exit 2 for bad input (no runs, a run of
another cap, a program with no run that ran out).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


class BadInput(Exception):
    pass


def load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: not a doctor_programs.py result ({e})") from None
    if not isinstance(doc, dict) or "program" not in doc or "cap" not in doc:
        raise BadInput(f"{path}: not a doctor_programs.py result (no program or cap)")
    return doc


def largest(runs: list[dict[str, Any]]) -> dict[str, int]:
    by_program: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_program.setdefault(run["program"], []).append(run)
    found = {}
    for program, mine in sorted(by_program.items()):
        if any(not isinstance(r.get("batch"), int) or r["batch"] < 1 for r in mine):
            raise BadInput(f"largest/: {program}: a run without a batch of 1 or more")
        ran_out = [r["batch"] for r in mine if r.get("oom")]
        if not ran_out:
            raise BadInput(f"largest/: {program}: no run that ran out, so its largest batch is not known")
        below = [r["batch"] for r in mine if not r.get("oom") and r["batch"] < min(ran_out)]
        if not below:
            raise BadInput(f"largest/: {program}: no run that ran below the first that ran out ({min(ran_out)})")
        found[program] = max(below)
    return found


def cell(found: dict[str, Any] | None, real: int) -> list[str]:
    if found is None:
        return ["-"] * 5
    if found.get("crashed") or found.get("batch") is None:
        return [f"failed: {found.get('error')}"] + ["-"] * 4
    batch = int(found["batch"])
    return [f"{batch} ({100 * (batch / real - 1):+.1f}%)", str(found.get("trial_count", len(found["trials"]))),
            str(found.get("trial_steps", "-")), str(found.get("ooms")), f"{found.get('seconds', 0):.1f}"]


def table(folder: Path) -> str:
    runs = [load(p) for p in sorted((folder / "largest").glob("*.json"))]
    if not runs:
        raise BadInput(f"{folder}/largest: no runs")
    caps = {r["cap"] for r in runs}
    finders = sorted((p for p in folder.iterdir() if p.is_dir() and p.name != "largest"),
                     key=lambda p: (p.name == "lightning", p.name))
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for f in finders:
        mine = found.setdefault(f.name, {})
        for p in sorted(f.glob("*.json")):
            doc = load(p)
            if doc["program"] in mine:
                raise BadInput(f"{f}: two runs of {doc['program']}")
            if not doc.get("crashed") and (not isinstance(doc.get("batch"), int) or "trials" not in doc):
                raise BadInput(f"{p}: a finder's run without its batch or trials")
            mine[doc["program"]] = doc
    caps |= {doc["cap"] for by in found.values() for doc in by.values()}
    if len(caps) != 1:
        raise BadInput(f"{folder}: runs under several caps ({', '.join(str(c) for c in sorted(caps))})")
    real = largest(runs)
    head = ["program", "PyTorch's largest"]
    for f in finders:
        head += [f"{f.name}: batch", "trials", "steps", "OOMs", "s"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for program, n in real.items():
        row = [program, str(n)]
        for f in finders:
            row += cell(found[f.name].get(program), n)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: find_max_table.py FOLDER", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(table(Path(argv[0])))
    except BadInput as e:
        print(f"find_max_table.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
