"""JSON input with its nesting bounded, for the programs that read results from other machines.

The same bound as the C++ readers (Note [Bounded JSON input] in harness/core/json_input.hpp): a text whose
arrays and objects nest more than MAX_DEPTH levels is refused before it is parsed. Python's json module
recurses once a level and raises RecursionError deep down (and jsonschema, walking what it parsed, would
recurse again), so the depth is counted first, in one scan that skips strings.

    from memstress import _json
    text = _json.read_text(path)   # raises Unreadable (a ValueError): cannot be read, not UTF-8
    _json.check_depth(text)        # raises TooDeep (a ValueError) with the line and column
    doc = _json.loads(text)        # check_depth, then json.loads(text, **kwargs)
    _json.first_line(text)         # the first non-blank line, parsed (None: not JSON): is it a stream's header?

Messages do not name the file: the caller, which knows how it was named, prefixes it.
"""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

MAX_DEPTH = 128

# A whole string (escapes included; one left open runs to the end of its line: a JSON string never holds a
# raw newline, so each line of a stream is scanned as if alone), or a bracket.
_TOKEN = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?|[\[\]{}]')


# A JSON escape of a UTF-16 surrogate (\ud800-\udfff): json.loads turns a lone one into a str that UTF-8 cannot
# encode (_output.py, clean). Text read as UTF-8 holds no surrogate otherwise.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def has_surrogate_escape(text: str) -> bool:
    """Whether the JSON `text` may decode to strings holding surrogates (a pair is harmless, but rare)."""
    return _SURROGATE_ESCAPE.search(text) is not None


class TooDeep(ValueError):
    """The text nests arrays and objects deeper than the limit."""


class Unreadable(ValueError):
    """The file cannot be read, or is not UTF-8 text (JSON is UTF-8: RFC 8259)."""


def read_text(path: Path | str) -> str:
    """The file's text, or Unreadable saying why not (a directory, missing, not UTF-8 and where)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise Unreadable(f"cannot be read: {e.strerror or e}") from None
    return decode(data)


def decode(data: bytes) -> str:
    """`data` as UTF-8, or Unreadable naming the first byte that is not (line and byte offset)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise Unreadable(f"not UTF-8 text (byte 0x{data[e.start]:02x} on line {line}, at offset {e.start}): "
                         "not JSON") from None


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                column = start - (text.rfind("\n", 0, start) + 1) + 1
                raise TooDeep(f"nested more than {limit} levels deep (line {line}, column {column}): refused")
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)


def loads(text: str, **kwargs: Any) -> Any:
    """json.loads(text, **kwargs) on a text whose depth is checked first (TooDeep, a ValueError)."""
    check_depth(text)
    return json.loads(text, **kwargs)


def first_line(text: str) -> Any:
    """The first non-blank line of `text`, parsed as JSON (None where it is not JSON or is nested too deep):
    a memstress stream (`RUN.jsonl`) starts with an object whose "type" is "header", a whole document never
    does (the C++ readers tell them apart so too: harness/results/read.cpp)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip():
            try:
                return loads(line)
            except ValueError:
                return None
        start = end + 1
    return None


def is_stream(text: str) -> bool:
    """Whether `text` is a memstress stream: its first non-blank line is a header (first_line)."""
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    if '"header"' not in text[start:len(text) if end < 0 else end]:  # a document: not parsed twice
        return False
    head = first_line(text)
    return isinstance(head, dict) and head.get("type") == "header"


def read_stored(path: Path | str) -> Any:
    """The JSON document at PATH or, where only that exists, at PATH.xz (big results are committed compressed).
    Raises ValueError (Unreadable, TooDeep, or lzma's error as one) naming the file."""
    path = Path(path)
    packed = path.with_name(path.name + ".xz")
    try:
        if not path.exists() and packed.exists():
            return loads(decode(lzma.decompress(packed.read_bytes())))
        return loads(read_text(path))
    except lzma.LZMAError as e:
        raise ValueError(f"{packed}: {e}") from None


def passed_rows(path: Path | str) -> list[dict]:
    """The rows of the memstress results document at PATH (or PATH.xz) that passed. ValueError saying why
    not (the caller names the file): unreadable, not JSON, or no rows."""
    doc = read_stored(path)
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise ValueError("no rows")
    return [r for r in rows if isinstance(r, dict) and r.get("verdict") == "pass"]
