"""The report's inputs: each file read and told apart by its content (run documents and their JSON Lines
streams, compare, replay, doctor, devices, fleet and Google Benchmark JSON, accept's JUnit XML), checked against
its schema where there is one; what cannot be read is a BadInput naming the file. Imported by __main__.py."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from .. import _json, _output, registry
from .common import STREAM_NOTE


class BadInput(Exception):
    """An input the report cannot read; the message names it."""


@functools.lru_cache(maxsize=1)
def validators() -> tuple[Any, Any, Any] | None:
    """The validators of run documents, replay documents and a run stream's lines (results/schema/, through
    memstress/validate.py), or None without jsonschema."""
    try:
        import jsonschema
        import referencing
    except ImportError:
        return None
    from .. import validate

    try:
        schema_dir = validate.ROOT / "results" / "schema"
        run, line, replay = validate.load_schemas(jsonschema, referencing, schema_dir)
    except validate.Unreadable as e:
        raise BadInput(str(e)) from None
    return run, replay, line


def check_schema(path: str, doc: dict, kind: str, where: str = "") -> None:
    """A run or replay document (or a line of a run's stream: kind "line") that does not match its schema is
    named, before anything is drawn from it."""
    found = validators()
    if found is None:
        return
    from .. import validate

    errors = validate.schema_errors(found[{"run": 0, "replay": 1, "line": 2}[kind]], doc)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        schema = "memstress-rows-1 (a line of a run's stream)" if kind == "line" else doc.get("schema")
        raise BadInput(f"{path}: {where}does not match {schema}: {errors[0]}{more}")


def load(path: Path) -> tuple[str, Any]:
    """Returns (kind, document) for one input file; its strings are made encodable (_output.clean)."""
    from . import accept

    name = _output.clean_text(str(path))
    try:
        # memstress's own rules (docs/limits.md, "Files read whole"): a regular file only, opened without
        # blocking (a FIFO with no writer is refused at once), at most 256 MiB, and as much once decompressed (xz, gzip)
        data = _json.read_input(path, what="a report's input")
    except _json.Unreadable as e:
        raise BadInput(f"{name}: {e}") from None
    if accept.is_xml(data):  # JSON never starts with '<'
        try:
            return "junit", accept.read_junit(data)
        except accept.NotAcceptJUnit as e:
            raise BadInput(f"{name}: {e}") from None
    try:
        text = _json.decode(data)
        _json.check_depth(text)  # Python's json recurses once a level: bound the nesting first
    except ValueError as e:  # _json.Unreadable, _json.TooDeep
        raise BadInput(f"{name}: {e}") from None
    encodable = _output.clean if _json.has_surrogate_escape(text) else lambda doc: doc  # the walk only if needed
    if _json.is_stream(text):
        return "run", one_names(encodable(load_stream(name, text)))
    try:
        # memstress's own rules (_json.strict_loads): no key twice, no number beyond a double. Google Benchmark
        # writes NaN and Infinity bare, so they are read here and refused below in any other document.
        doc = _json.strict_loads(text, allow_constants=True)
    except json.JSONDecodeError as e:
        raise BadInput(f"{name}: not JSON ({e.msg}: line {e.lineno}, column {e.colno})") from None
    except _json.Refused as e:
        raise BadInput(f"{name}: {e}") from None
    if isinstance(doc, dict) and ("schema" in doc or not ("benchmarks" in doc and "context" in doc)):
        where = _json.first_constant(text)  # memstress writes null for a value it has not
        if where is not None:
            raise BadInput(f"{name}: {where}: memstress results hold no NaN or Infinity (a value not measured is "
                           "null); a damaged file")
    if not isinstance(doc, dict):
        raise BadInput(f"{name}: not a memstress, compare, replay or Google Benchmark document "
                       f"(a JSON {JSON_TYPES.get(type(doc), 'value')}, not an object)")
    doc = encodable(doc)
    schema = str(doc.get("schema", ""))
    if schema.startswith("memstress.run/"):
        check_schema(name, doc, "run")
        return "run", one_names(doc)
    if schema.startswith("memstress.compare/"):
        return "compare", doc
    if schema.startswith("memstress.replay/"):
        check_schema(name, doc, "replay")
        return "replay", doc
    if schema.startswith("memstress.doctor/"):
        return "doctor", doc
    if schema.startswith("memstress.outliers/"):
        return "outliers", doc  # memstress db outliers --format json [--groups]
    if schema.startswith("memstress.allocators/"):
        return "allocators", doc  # allocators.py's table (scripts/lab/gpu-allocators)
    if schema.startswith("memstress.history/"):
        return "history", doc  # memstress db history --format json
    if "benchmarks" in doc and "context" in doc:
        return "bench", doc
    if not schema and isinstance(doc.get("gpus"), list) and isinstance(doc.get("driver"), dict):
        return "devices", doc  # `memstress devices --format json`
    raise BadInput(f"{name}: a document of no known kind (schema {schema[:80]!r}): not memstress, compare, replay, "
                   "doctor, devices, db outliers, db history, allocator table or Google Benchmark JSON")


def one_names(run: dict) -> dict:
    """A run's rows with their figures under their one names (registry.adopt_one_names), as `memstress compare`
    reads them."""
    for row in run.get("rows") or []:
        if isinstance(row, dict):
            registry.adopt_one_names(row)
    return run


JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def load_stream(path: str, text: str) -> dict:
    """A run's JSON Lines stream (RUN.jsonl: a header line, a row line per finished case, a footer line once the
    run ended) as a run document. As `memstress compare` reads it (harness/results/read.cpp): a run that did not
    finish has no footer, and one killed while writing a row leaves its last line cut short, which is left out.
    The document's STREAM_NOTE says which, for the page."""
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    header: dict | None = None
    rows: list[dict] = []
    footer: dict | None = None
    cut_short = False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"line {i + 1}: "
        try:
            item = _json.strict_loads(line)  # memstress's own rules, as `memstress compare` reads a stream
        except _json.KeyTwice as e:
            raise BadInput(f"{path}: {where}{e}") from None
        except ValueError as e:  # json.JSONDecodeError; _json.Refused: NaN, 1e999 (not JSON to memstress)
            if i == last and footer is None:
                cut_short = True  # the run was killed while writing it
                continue
            raise BadInput(f"{path}: {where}not JSON ({e.msg if isinstance(e, json.JSONDecodeError) else e})") from None
        kind = item.get("type") if isinstance(item, dict) else None
        if not (kind == "header" and header is None or kind in ("row", "footer") and header is not None):
            expected = "a header" if header is None else "a row or footer"
            found = f'"type": {kind!r}' if isinstance(kind, str) else 'no "type"'
            raise BadInput(f"{path}: {where}expected {expected} line, found {found[:80]}")
        check_schema(path, item, "line", where)
        fields = {k: v for k, v in item.items() if k != "type"}
        if kind == "header":
            header = fields
        elif kind == "row":
            rows.append(fields)
        else:
            footer = fields
    assert header is not None  # _json.is_stream: the first line is one
    doc = {**header, "rows": rows}
    if footer is not None:
        doc.update(footer)
    doc[STREAM_NOTE] = {"finished": footer is not None, "cut_short": cut_short}
    return doc
