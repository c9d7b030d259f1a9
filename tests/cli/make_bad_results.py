#!/usr/bin/env python3
"""Write the malformed inputs of the cli.bad_input_* tests (malformed results files) and the broken runs of the
cli.accept_fails_* tests into OUTDIR, at test time.

    tests/cli/make_bad_results.py OUTDIR

Each malformed file is the synthetic tests/data/compare/base.json (or base.jsonl, gbench-base.json, a profile)
with one thing broken, as results from another machine or person might be: a value nested 100,000 levels deep in
a row's params (which crashed `compare` and `accept` with SIGSEGV), or a field of the wrong type (which ended
`accept --from` in "internal error"). The deep files are megabytes of brackets: made here, never committed.
The deep text is written directly: Python's json module cannot read it back (nor write it).

Each broken run (accept-*.json) is the committed healthy H100 record (results/h100/faults-580.159.04/
accept-healthy-1.json), or that record made into a run of two ranks (accept-two-ranks.json: rank 1 a copy of
rank 0 on a second GPU), with one promise broken that `accept --from` once judged a PASS: a rank's figure null or
absent, a rank without its row or without any row, a row of a rank the header does not have, a row that errored
or failed yet carries its figures, a run that was aborted.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "compare"
HEALTHY_H100 = Path(__file__).resolve().parents[2] / "results" / "h100" / "faults-580.159.04" / "accept-healthy-1.json"
DEEP = 100_000


def deep_array(levels: int = DEEP) -> str:
    return "[" * levels + "]" * levels


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def with_deep_params(doc_text: str, deep_text: str) -> str:
    """The document (one line of JSON) with "deep": DEEP_TEXT added to its last row's params."""
    marker = '"params": {'
    at = doc_text.rfind(marker)
    assert at >= 0, "no params in the fixture"
    at += len(marker)
    return doc_text[:at] + '"deep": ' + deep_text + ", " + doc_text[at:]


def mutated(doc: dict, change) -> str:
    doc = copy.deepcopy(doc)
    change(doc)
    return json.dumps(doc)


def two_ranks(doc: dict) -> dict:
    """The one-rank record as a job of two ranks on one host: rank 1 on a second GPU (cuda:1), every row of rank 0
    copied for it."""
    doc = copy.deepcopy(doc)
    gpu = {"label": "cuda:1", "uuid": "GPU-504a2a0f-dd70-8407-c297-2a6bf4dcd645", "pci_bus_id": "0000:00:07.0"}
    second = copy.deepcopy(doc["environment"]["ranks"][0])
    second["rank"] = 1
    second["device"] = dict(gpu)
    doc["environment"]["ranks"].append(second)
    doc["config"]["ranks"] = 2
    rows = []
    for row in doc["rows"]:
        copied = copy.deepcopy(row)
        copied["rank"] = 1
        copied["device"].update(label=gpu["label"], ordinal=1, uuid=gpu["uuid"])
        rows += [row, copied]
    doc["rows"] = rows
    return doc


def is_h2d(row: dict, rank: int) -> bool:
    return row["rank"] == rank and row["workload"] == "transfers" and row["params"]["direction"] == "h2d"


def broken_runs() -> dict[str, str]:
    """The accept-*.json files (module docstring)."""
    healthy = json.loads(HEALTHY_H100.read_text())
    two = two_ranks(healthy)

    def h2d_of_rank1(doc: dict) -> dict:
        return next(r for r in doc["rows"] if is_h2d(r, 1))

    def null_figure(doc: dict) -> None:
        h2d_of_rank1(doc)["metrics"]["GB/s"]["median"] = None

    def absent_figure(doc: dict) -> None:
        del h2d_of_rank1(doc)["metrics"]["GB/s"]

    def errored(doc: dict) -> None:  # the figures kept, as a row that measured, then hit a sticky error
        row = next(r for r in doc["rows"] if is_h2d(r, 0))
        row.update(verdict="error", reason="cudaErrorIllegalAddress: an illegal memory access was encountered")

    def failed(doc: dict) -> None:
        row = next(r for r in doc["rows"] if is_h2d(r, 0))
        row.update(verdict="fail", reason="3 of 201326592 verified items were wrong")
        row["verification"]["errors"] = 3

    def stranger(doc: dict) -> None:
        row = copy.deepcopy(h2d_of_rank1(doc))
        row["rank"] = 7
        doc["rows"].append(row)

    def aborted(doc: dict) -> None:
        doc.update(status="aborted", abort_reason="XID 79 during the run (GPU has fallen off the bus)")

    return {
        "accept-two-ranks.json": json.dumps(two),
        "accept-null-figure.json": mutated(two, null_figure),
        "accept-absent-figure.json": mutated(two, absent_figure),
        "accept-no-h2d-row.json": mutated(two, lambda d: d.update(rows=[r for r in d["rows"] if not is_h2d(r, 1)])),
        "accept-silent-rank.json": mutated(two, lambda d: d.update(rows=[r for r in d["rows"] if r["rank"] == 0])),
        "accept-rank-7.json": mutated(two, stranger),
        "accept-errored-row.json": mutated(healthy, errored),
        "accept-failed-row.json": mutated(healthy, failed),
        "accept-aborted.json": mutated(healthy, aborted),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    base_text = (FIXTURES / "base.json").read_text()
    base = json.loads(base_text)
    one_line = json.dumps(base)
    stream = (FIXTURES / "base.jsonl").read_text().splitlines()
    gbench = json.loads((FIXTURES / "gbench-base.json").read_text(encoding="utf-8"))  # NaN kept as NaN

    def set_field(row: int, path: list[str], value):
        def change(doc: dict) -> None:
            target = doc["rows"][row]
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value

        return change

    files: dict[str, str] = {
        # nesting: the 100,000-deep params array, as a document and as a row of a stream
        "deep-params.json": with_deep_params(one_line, deep_array()),
        "deep-params-object.json": with_deep_params(one_line, deep_object(60_000)),
        "deep-document.json": deep_object(60_000),
        "deep-gbench.json": json.dumps(gbench).replace('"iterations": ', f'"deep": {deep_array()}, "iterations": ', 1),
        # types: fields of the wrong type (each named with its row)
        "params-number.json": mutated(base, set_field(2, ["params"], 7)),
        "params-array.json": mutated(base, set_field(2, ["params"], [[["bytes", "1G"]]])),
        "param-value-array.json": mutated(base, set_field(1, ["params", "bytes"], [[["2M"]]])),
        "median-string.json": mutated(base, set_field(0, ["metrics", "fill", "median"], "fast")),
        "verdict-number.json": mutated(base, set_field(1, ["verdict"], 1)),
        "device-string.json": mutated(base, set_field(0, ["device"], "NVIDIA H200")),
        "rank-string.json": mutated(base, set_field(1, ["rank"], "0")),
        "errors-string.json": mutated(base, set_field(0, ["verification", "errors"], "none")),
        "rows-object.json": mutated(base, lambda d: d.update(rows={"0": d["rows"][0]})),
        "status-number.json": mutated(base, lambda d: d.update(status=3)),
        # replay and compare documents are read by the report (and replay ones by the validator)
        "deep-replay.json": '{"schema": "memstress.replay/1", "replay": ' + deep_array() + "}",
        "deep-compare.json": '{"schema": "memstress.compare/1", "rows": ' + deep_array() + "}",
        # profiles are YAML: a flow sequence 100,000 deep, and one whose check's `where` is deep
        "deep-profile.yaml": deep_array(),
        "deep-where-profile.yaml": "name: t\ngpu: G\nruns: []\nchecks:\n"
        f"  - {{name: c, workload: w, metric: m, max: 0, where: {deep_array(10_000)}}}\n",
    }
    stream_row = 1 + next(i for i, line in enumerate(stream[1:]) if '"type": "row"' in line)
    deep_stream = list(stream)
    deep_stream[stream_row] = with_deep_params(stream[stream_row], deep_array())
    files["deep-params.jsonl"] = "\n".join(deep_stream) + "\n"
    typed_stream = list(stream)
    row = json.loads(stream[stream_row])
    row["params"] = 7
    typed_stream[stream_row] = json.dumps(row)
    files["params-number.jsonl"] = "\n".join(typed_stream) + "\n"
    files.update(broken_runs())
    for name, text in files.items():
        (out / name).write_text(text)
    print(f"make_bad_results.py: {len(files)} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
