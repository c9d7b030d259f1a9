"""Validate memstress results against results/schema/.

    python3 -m memstress.validate FILE...

(PYTHONPATH naming python/ of the checkout, or share/memstress/python installed; its usage and messages name it
so.)

A FILE ending in .jsonl (or .ndjson), or whose first line is a stream's header line (as `memstress compare`
tells them), is a JSON Lines stream, checked line by line against memstress-rows-1.schema.json: a header line
first, then row lines, then at most one footer line, last (a run that crashed has none, and may have left its
last line cut short: that line is left out and said so, as `memstress compare` does). A document whose
"schema" is "memstress.replay/1" (`memstress replay --out`) is checked against memstress-replay-1.schema.json.
Any other FILE is a whole run document, checked against memstress-run-1.schema.json. Beyond the schemas, the
summary must count the rows' verdicts, no row may have more errors than checked items, or pass with errors, or
name a headline metric it does not have,
and a document's rank_summary (runs of several ranks) must be what its rows give: recomputed here, case by
case, stragglers included.

Files are read by memstress's own rules (docs/limits.md, "Files read whole"; _json.py): a regular file only (a
FIFO, /dev/zero, a directory is refused at once, naming what it is), at most 256 MiB, JSON with no key twice in
one object, no NaN or Infinity and no number beyond a double (1e999), nested at most 128 levels.

Prints one line per file, "FILE: ok (N rows)", or "FILE: invalid" followed by the first errors, each
with its JSON path. Exit codes: 0 all valid; 1 some file invalid; 2 some file unreadable (missing, not a
regular file, larger than 256 MiB, not UTF-8), not JSON (by those rules), not a JSON object, or nested more
than 128 levels deep (or the schemas themselves); 77 the jsonschema package is missing (CTest:
SKIP_RETURN_CODE 77). What UTF-8 cannot encode in a file's name is printed escaped (as \\udcff).
The only dependency is jsonschema (>= 4.18, requirements.txt); the script runs under the project's
.venv when it exists, whatever python started it (_pyenv.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from . import _json

ROOT = Path(__file__).resolve().parents[2]  # the checkout, or share/memstress installed
SCHEMA_DIR = ROOT / "results" / "schema"
RUN_SCHEMA = "memstress-run-1.schema.json"
ROWS_SCHEMA = "memstress-rows-1.schema.json"
REPLAY_SCHEMA = "memstress-replay-1.schema.json"
STREAM_SUFFIXES = {".jsonl", ".ndjson"}

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE, EXIT_SKIP = 0, 1, 2, 77
VERDICTS = ("pass", "fail", "skip", "error")


def import_jsonschema():
    """jsonschema and referencing, or None (main() first moves to a python that has them, _pyenv)."""
    try:
        import jsonschema
        import referencing

        return jsonschema, referencing
    except ImportError:
        return None


class Unreadable(Exception):
    """The file cannot be read or is not JSON: exit 2."""


class NotJSON(Unreadable):
    """A text that does not parse (NaN and 1e999 included): a stream's last line so is cut short, not damage."""


def parse_json(text: str, where: str) -> Any:
    """One JSON value by memstress's own rules (_json.strict_loads: nested at most 128 levels, no key twice, no
    NaN or Infinity, no number beyond a double), else Unreadable (exit 2); NotJSON where it does not parse."""
    try:
        return _json.strict_loads(text)
    except (_json.TooDeep, _json.KeyTwice) as e:
        raise Unreadable(f"{where}{e}") from None
    except _json.Refused as e:
        raise NotJSON(f"{where}{e}") from None
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        raise NotJSON(f"{where}not JSON: {e}") from None


def load_schemas(jsonschema, referencing, schema_dir: Path):
    """Validators for the run document, one stream line (which refers to the run schema) and a replay document."""
    schemas = {}
    for name in (RUN_SCHEMA, ROWS_SCHEMA, REPLAY_SCHEMA):
        path = schema_dir / name
        try:
            schemas[name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise Unreadable(f"{path}: cannot load schema: {e}") from None
        try:
            jsonschema.Draft202012Validator.check_schema(schemas[name])
        except jsonschema.SchemaError as e:
            raise Unreadable(f"{path}: not a valid JSON Schema: {e.message}") from None
    registry = referencing.Registry().with_resources(
        (s["$id"], referencing.Resource.from_contents(s)) for s in schemas.values()
    )
    make = jsonschema.Draft202012Validator
    return (
        make(schemas[RUN_SCHEMA], registry=registry),
        make(schemas[ROWS_SCHEMA], registry=registry),
        make(schemas[REPLAY_SCHEMA], registry=registry),
    )


MAX_MESSAGE = 300  # characters of one error: jsonschema's messages hold the instance, which may be huge


def schema_errors(validator, instance: Any, prefix: str = "") -> list[str]:
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    out = []
    for e in errors:
        line = f"{prefix}{e.json_path}: {e.message}"
        out.append(line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE] + " ...")
    return out


def row_errors(row: Any, path: str) -> list[str]:
    """What the schema cannot say about one (schema-valid) row."""
    if not isinstance(row, dict) or not isinstance(row.get("verification"), dict):
        return []
    out = []
    headline = row.get("headline")
    if isinstance(headline, str) and isinstance(row.get("metrics"), dict) and headline not in row["metrics"]:
        out.append(f"{path}.headline: {headline[:80]!r} is not among the row's metrics")
    checked, errors = row["verification"].get("checked"), row["verification"].get("errors")
    if not isinstance(checked, int) or not isinstance(errors, int):
        return out
    if errors > checked:
        out.append(f"{path}.verification: {errors} errors among {checked} items checked")
    if errors > 0 and row.get("verdict") == "pass":
        out.append(f"{path}.verdict: 'pass' with {errors} data errors")
    return out


def summary_errors(summary: Any, rows: Iterable[Any], path: str) -> list[str]:
    """The summary must count the rows and their verdicts."""
    if not isinstance(summary, dict):
        return []
    rows = list(rows)
    # A row of a stream that does not match the schema is still counted (its errors are given already).
    counts = Counter(r.get("verdict") for r in rows if isinstance(r, dict) and isinstance(r.get("verdict"), str))
    expected = {"rows": len(rows), **{v: counts.get(v, 0) for v in VERDICTS}}
    return [
        f"{path}.{key}: {summary[key]!r}, but the rows say {want}"
        for key, want in expected.items()
        if key in summary and summary[key] != want
    ]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def expected_rank_summary(rows: list[Any], threshold: float) -> dict[tuple, dict]:
    """(workload, case, allocator, metric) -> min, median, max and stragglers, from the rows."""
    samples: dict[tuple, list[tuple[int, float, str | None]]] = {}
    better: dict[tuple, str] = {}
    for row in rows:
        if row.get("verdict") not in ("pass", "fail"):
            continue
        for name, m in row.get("metrics", {}).items():
            if m.get("median") is None or not m.get("n"):
                continue
            key = (row["workload"], row["case"], row["allocator"], name)
            samples.setdefault(key, []).append((row["rank"], m["median"], row["device"].get("node")))
            better[key] = m["better"]
    out = {}
    for key, values in samples.items():
        mid = median([v for _, v, _ in values])
        stragglers = set()
        for rank, v, node in values:
            if better[key] == "none" or mid == 0:
                continue
            worse = (mid - v if better[key] == "higher" else v - mid) / abs(mid)
            if worse > threshold:
                stragglers.add((rank, node))
        out[key] = {
            "ranks": len(values),
            "min": min(v for _, v, _ in values),
            "median": mid,
            "max": max(v for _, v, _ in values),
            "stragglers": stragglers,
        }
    return out


def rank_summary_errors(doc: dict) -> list[str]:
    """A document's rank_summary must match its rows."""
    summary = doc.get("rank_summary")
    if not isinstance(summary, dict):
        return []
    want = expected_rank_summary(doc["rows"], summary["straggler_threshold_pct"] / 100.0)
    errors = []
    seen = set()
    for i, entry in enumerate(summary["cases"]):
        key = (entry["workload"], entry["case"], entry["allocator"], entry["metric"])
        path = f"$.rank_summary.cases[{i}]"
        seen.add(key)
        if key not in want:
            errors.append(f"{path}: no rows give {key}")
            continue
        w = want[key]
        for field in ("min", "median", "max"):
            if not close(entry[field], w[field]):
                errors.append(f"{path}.{field}: {entry[field]!r}, but the rows say {w[field]!r}")
        if entry["ranks"] != w["ranks"]:
            errors.append(f"{path}.ranks: {entry['ranks']}, but {w['ranks']} ranks report it")
        named = {(s["rank"], s.get("node")) for s in entry["stragglers"]}
        if named != w["stragglers"]:
            errors.append(f"{path}.stragglers: ranks (and nodes) {sorted(named, key=str)}, but the rows say "
                          f"{sorted(w['stragglers'], key=str)}")
    for key in want.keys() - seen:
        errors.append(f"$.rank_summary.cases: {key} is missing")
    return errors


def plural_rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def read_text(path: Path) -> str:
    """The file's text as memstress reads a results file (_json.read_text: a regular file only, opened without
    blocking, at most 256 MiB, decompressed where it is xz or gzip, UTF-8), else Unreadable."""
    try:
        return _json.read_text(path)
    except _json.Unreadable as e:
        raise Unreadable(str(e)) from None


def readable(path: Path) -> None:
    """Raises Unreadable unless `path` reads, is JSON (a document, or a stream's lines but a cut-short last one)
    and is nested no deeper than _json allows."""
    text = read_text(path)
    if path.suffix in STREAM_SUFFIXES or _json.is_stream(text):
        lines = stream_lines(text)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue  # an empty line is invalid, not unreadable (check_stream says so with the schema)
            try:
                parse_json(line, f"line {number}: ")
            except NotJSON:
                if number == len(lines) > 1:
                    continue  # a run killed while writing its last row: read without it, as check_stream does
                raise
    else:
        parse_document(text)


def parse_document(text: str) -> dict:
    """A run or replay document: JSON (parse_json) and an object, else Unreadable."""
    doc = parse_json(text, "")
    if not isinstance(doc, dict):
        raise Unreadable(f"not a memstress document (a JSON {JSON_TYPES.get(type(doc), 'value')}, not an object)")
    return doc


def stream_lines(text: str) -> list[str]:
    """A stream's lines, trailing blank ones left out, its nesting bounded over the whole file (so the line
    named is the file's); Unreadable when too deep or empty."""
    try:
        _json.check_depth(text)
    except _json.TooDeep as e:
        raise Unreadable(str(e)) from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise Unreadable("empty: no header line")
    return lines


def check_document(path: Path, run_validator, replay_validator, text: str) -> tuple[list[str], str]:
    doc = parse_document(text)
    if doc.get("schema") == "memstress.replay/1":
        errors = schema_errors(replay_validator, doc)
        replay = doc.get("replay")
        if not errors and isinstance(replay, dict) and "timeline" in replay:
            points = replay["timeline"]["points"]
            if len(points) != replay["timeline_points"]:
                errors.append(f"$.replay.timeline: {len(points)} points, timeline_points says {replay['timeline_points']}")
            if any(b[0] < a[0] for a, b in zip(points, points[1:])):
                errors.append("$.replay.timeline: event_index goes back")
        sweep = doc.get("sweep")
        rows = len(sweep["rows"]) if isinstance(sweep, dict) and isinstance(sweep.get("rows"), list) else 0
        return errors, f"replay, {rows} sweep rows"
    errors = schema_errors(run_validator, doc)
    if errors or not isinstance(doc, dict):
        return errors, ""
    rows = doc["rows"]
    for i, row in enumerate(rows):
        errors += row_errors(row, f"$.rows[{i}]")
    errors += summary_errors(doc["summary"], rows, "$.summary")
    errors += rank_summary_errors(doc)
    ranks = len({r.get("rank") for r in rows if isinstance(r, dict)})
    note = plural_rows(len(rows)) + (f" from {ranks} ranks" if ranks > 1 else "")
    return errors, note


def check_stream(path: Path, line_validator, text: str) -> tuple[list[str], str]:
    lines = stream_lines(text)
    errors: list[str] = []
    rows: list[Any] = []
    footer = None
    seen_header = False
    cut_short = False
    for number, text in enumerate(lines, start=1):
        where = f"line {number}: "
        if not text.strip():
            errors.append(f"{where}empty line")
            continue
        try:
            item = parse_json(text, where)
        except NotJSON:
            # A run killed while writing a row leaves its last line cut short (memstress compare reads the rest).
            if number == len(lines) > 1 and footer is None:
                cut_short = True
                continue
            raise
        line_errors = schema_errors(line_validator, item, where)
        errors += line_errors
        kind = item.get("type") if isinstance(item, dict) else None
        if number == 1 and kind != "header":
            errors.append(f"{where}$.type: the first line must be the header, not {kind!r}")
        elif number > 1 and kind == "header" and seen_header:
            errors.append(f"{where}$.type: a second header")
        seen_header = seen_header or kind == "header"
        if footer is not None:
            errors.append(f"{where}a line after the footer (line {footer[0]})")
        if kind == "row":
            rows.append(item)
            if not line_errors:
                errors += row_errors(item, f"{where}$")
        elif kind == "footer" and footer is None:
            footer = (number, item)
    note = plural_rows(len(rows))
    if footer is None:
        note += ", no footer: the run did not finish"
    elif isinstance(footer[1], dict):
        errors += summary_errors(footer[1].get("summary"), rows, f"line {footer[0]}: $.summary")
    if cut_short:
        note += f"; its last line (line {len(lines)}) was cut short and is left out"
    return errors, note


def main(argv: list[str] | None = None) -> int:
    from . import _pyenv

    prog = _pyenv.prog("memstress.validate")
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Validate memstress results (.json run documents, .jsonl streams) against results/schema/.",
        epilog="exit codes: 0 valid, 1 invalid, 2 unreadable, not JSON or nested too deep, 77 jsonschema not installed",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="a .json run document or a .jsonl stream")
    parser.add_argument("--schema-dir", type=Path, default=SCHEMA_DIR, help="where the schemas are (default: %(default)s)")
    parser.add_argument("--max-errors", type=int, default=10, metavar="N", help="errors shown per file (default: %(default)s)")
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")  # a file name's stray bytes: printed escaped, no traceback
    _pyenv.ensure(prog, __file__, ["jsonschema", "referencing"], exit_if_missing=False)
    modules = import_jsonschema()
    if modules is None:
        # What needs no schema is still checked: a file that cannot be read, is not JSON or is nested too deep
        # is exit 2 with or without jsonschema (GPU images often have no package index to install it from).
        status = EXIT_SKIP
        for path in args.files:
            try:
                readable(path)
            except Unreadable as e:
                print(f"{path}: {e}")
                status = EXIT_UNREADABLE
        print("jsonschema not installed (pip install -r requirements.txt, or run scripts/setup)", file=sys.stderr)
        return status
    jsonschema, referencing = modules
    try:
        run_validator, line_validator, replay_validator = load_schemas(jsonschema, referencing, args.schema_dir)
    except Unreadable as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE

    status = EXIT_OK
    for path in args.files:
        try:
            text = read_text(path)
            if path.suffix in STREAM_SUFFIXES or _json.is_stream(text):
                errors, note = check_stream(path, line_validator, text)
            else:
                errors, note = check_document(path, run_validator, replay_validator, text)
        except Unreadable as e:
            print(f"{path}: {e}")
            status = max(status, EXIT_UNREADABLE)
            continue
        if not errors:
            print(f"{path}: ok ({note})")
            continue
        status = max(status, EXIT_INVALID)
        print(f"{path}: invalid")
        for line in errors[: args.max_errors]:
            print(f"  {line}")
        if len(errors) > args.max_errors:
            print(f"  ... and {len(errors) - args.max_errors} more")
    return status


if __name__ == "__main__":
    sys.exit(main())
