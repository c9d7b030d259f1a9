#!/usr/bin/env python3
"""Ingests every committed real result under results/ into a fresh fleet store and checks each file's fate.

    tests/cli/db_real_results.py MEMSTRESS REPO_ROOT WORKDIR

Every `memstress.run/1` document and stream (plain or xz-compressed, as committed), and every Google Benchmark
JSON, must be ingested (added, or recognized as a run already held: a `.json` and its `.jsonl` are one run).
Every other JSON file under results/ (devices, replay and compare documents, snapshots, traces, records of
scripts) must be skipped with a reason naming it, and then the exit code is 2. `db outliers` on the result
must answer 0 or 1, never 2.
"""

from __future__ import annotations

import json
import lzma
import re
import subprocess
import sys
from pathlib import Path

SUFFIXES = (".json", ".jsonl", ".json.xz", ".jsonl.xz")  # results files, committed plain or compressed


def kind(path: Path) -> str:
    """'results' for what the loader reads (by content, as it does), else 'other'."""
    data = path.read_bytes()
    text = (lzma.decompress(data) if path.name.endswith(".xz") else data).decode(errors="replace")
    first = text.lstrip().split("\n", 1)[0]
    try:
        line = json.loads(first)
        if isinstance(line, dict) and line.get("type") == "header" and line.get("schema") == "memstress.run/1":
            return "results"
    except json.JSONDecodeError:
        pass
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return "other"
    if isinstance(doc, dict) and (doc.get("schema") == "memstress.run/1" or isinstance(doc.get("benchmarks"), list)):
        return "results"
    return "other"


def main() -> int:
    memstress, root, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    db = work / "real-results.sqlite"
    db.unlink(missing_ok=True)
    files = sorted(p for p in (root / "results").rglob("*") if p.name.endswith(SUFFIXES) and p.is_file())
    proc = subprocess.run([memstress, "db", "ingest", "-v", *map(str, files), "--db", str(db)], capture_output=True,
                          text=True, check=False)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    fate: dict[str, str] = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        m = re.match(r"^(?:memstress db ingest: )?(added|replaced|same run|unchanged|skipped) '([^']*)'", line)
        if m:
            fate[m.group(2)] = m.group(1)
    failures = []
    for f in files:
        got = fate.get(str(f))
        want_ingested = kind(f) == "results"
        if got is None:
            failures.append(f"{f}: not mentioned")
        elif want_ingested and got == "skipped":
            failures.append(f"{f}: a results file, skipped")
        elif not want_ingested and got != "skipped":
            failures.append(f"{f}: not a results file, but {got}")
    skipped = sum(1 for v in fate.values() if v == "skipped")
    if proc.returncode != (2 if skipped else 0):
        failures.append(f"exit code {proc.returncode} with {skipped} file(s) skipped")
    out = subprocess.run([memstress, "db", "outliers", "--db", str(db)], capture_output=True, text=True, check=False)
    print(out.stdout)
    if out.returncode not in (0, 1):
        failures.append(f"db outliers exited {out.returncode}: {out.stderr}")
    for failure in failures:
        print("FAIL:", failure)
    ingested = sum(1 for v in fate.values() if v != "skipped")
    print(f"{len(files)} files: {ingested} ingested, {skipped} skipped (not results files)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
