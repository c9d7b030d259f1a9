#!/usr/bin/env python3
"""Write the results files of the cli.audit_* tests (the bad-input audit) into OUTDIR, at test time.

    tests/cli/make_audit_files.py OUTDIR

Each is a committed file with one thing taken away, as a run that died early leaves it:

    no-rows.jsonl        the synthetic tests/data/compare/base.jsonl's header alone: a run that died before its
                         first case (no rows, no footer)
    no-rows.json         tests/data/compare/base.json with its rows emptied: a document of no rows
    unfinished.jsonl     the real results/h100/faults-580.159.04/accept-healthy-1.jsonl without its footer: a run that never
                         finished, every row it wrote kept
    no-gpu-name.json     tests/data/compare/base.json with every row's device name blank
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPARE = ROOT / "tests" / "data" / "compare"
ACCEPT_H100 = ROOT / "results" / "h100" / "faults-580.159.04" / "accept-healthy-1.jsonl"


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    stream = (COMPARE / "base.jsonl").read_text().splitlines()
    (out / "no-rows.jsonl").write_text(stream[0] + "\n")

    base = json.loads((COMPARE / "base.json").read_text())
    empty = dict(base, rows=[], status="aborted", abort_reason="died before its first case")
    empty["summary"] = {key: 0 for key in base.get("summary", {})}
    (out / "no-rows.json").write_text(json.dumps(empty, indent=1) + "\n")

    lines = ACCEPT_H100.read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "footer", "the committed stream ends with its footer"
    (out / "unfinished.jsonl").write_text("\n".join(lines[:-1]) + "\n")

    nameless = json.loads((COMPARE / "base.json").read_text())
    for row in nameless["rows"]:
        row["device"]["name"] = ""
    (out / "no-gpu-name.json").write_text(json.dumps(nameless, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
