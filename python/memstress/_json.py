"""JSON input with its nesting bounded, for the programs that read results from other machines.

The same bound as the C++ readers (Note [Bounded JSON input] in harness/core/json_input.hpp): a text whose
arrays and objects nest more than MAX_DEPTH levels is refused before it is parsed. Python's json module
recurses once a level and raises RecursionError deep down (and jsonschema, walking what it parsed, would
recurse again), so the depth is counted first, in one scan that skips strings.

    from memstress import _json
    data = _json.read_bytes(path)  # raises Unreadable (a ValueError): not a regular file, too large, unreadable
    data = _json.read_input(path)  # the same, decompressed where it is xz or gzip (Unreadable: damaged, too large)
    text = _json.read_text(path)   # read_input, then UTF-8 (Unreadable: not UTF-8)
    _json.check_depth(text)        # raises TooDeep (a ValueError) with the line and column
    doc = _json.loads(text)        # check_depth, then json.loads(text, **kwargs)
    doc = _json.strict_loads(text) # memstress's own rules (Refused, a ValueError: a key twice, NaN, 1e999)
    _json.first_line(text)         # the first non-blank line, parsed (None: not JSON): is it a stream's header?

read_input (read_bytes, decompressed) and strict_loads are the rules of memstress's own readers (docs/limits.md,
"Files read whole"; harness/core/input_file.cpp, harness/results/compressed.hpp, harness/core/json_input.hpp), so
that a Python reader (the validator, the report) accepts what memstress accepts and nothing else: only regular
files, opened without blocking (a FIFO with no writer is refused at once, not waited on), at most
MAX_RESULTS_BYTES (256 MiB) by their size before a byte is read and while they are read, and as much once
decompressed where they are xz or gzip (told by their first bytes, never by their name: `run.json.xz`); JSON
nested at most 128 levels, no key twice in one object, no NaN or Infinity (Google Benchmark JSON may hold them:
allow_constants) and no number beyond a double (1e999, read as inf).

Messages do not name the file: the caller, which knows how it was named, prefixes it.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import math
import os
import re
import stat
import zlib
from pathlib import Path
from typing import Any

MAX_DEPTH = 128
MAX_RESULTS_BYTES = 256 << 20  # kMaxResultsFileBytes, harness/results/read.hpp
XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
XZ_DECODER_MEMORY = 256 << 20  # the xz decoder's own memory, whatever the header asks for (as compressed.cpp)
_PIECE = 1 << 20

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


class Refused(ValueError):
    """JSON that memstress's own readers refuse: NaN or Infinity, a number beyond a double (not JSON to them, so
    a stream's last line that holds one is cut short, as a line that does not parse), or a key twice."""


class KeyTwice(Refused):
    """An object holds a key twice: refused wherever it is, a stream's last line too (Note [Duplicate keys],
    harness/core/json_input.hpp)."""


def _size(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.2f} MiB"


def _kind(mode: int) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def read_bytes(path: Path | str, limit: int = MAX_RESULTS_BYTES, what: str = "a results file") -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them, or Unreadable saying why not (as
    read_input_file, harness/core/input_file.cpp): missing, a FIFO, a device, a directory or a socket (opened
    without blocking, so a FIFO with no writer is refused at once), larger than `limit` (by its size, before a
    byte is read) or grown past it while read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise Unreadable(f"cannot be read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"cannot be read: {_kind(st.st_mode)}, not a regular file; {what} is read from a "
                             "regular file only")
        if st.st_size > limit:
            raise Unreadable(f"{_size(st.st_size)}, larger than the {_size(limit)} {what} may be (docs/limits.md)")
        os.set_blocking(fd, True)  # a regular file never blocks: reads wait for the disk as usual
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise Unreadable(f"grew past the {_size(limit)} {what} may be while it was read (docs/limits.md)")
    except OSError as e:
        raise Unreadable(f"cannot be read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_input(path: Path | str, limit: int = MAX_RESULTS_BYTES, what: str = "a results file") -> bytes:
    """The file's bytes (read_bytes) as they were before compression (decompressed), or Unreadable saying why
    not."""
    return decompressed(read_bytes(path, limit, what), limit, what)


def decompressed(data: bytes, limit: int = MAX_RESULTS_BYTES, what: str = "a results file") -> bytes:
    """`data` as it was before compression where it is xz or gzip (told by its magic bytes, as
    harness/results/compressed.cpp tells them), else `data` itself. Decompressed in pieces that stop once the
    text passes `limit` (a small file that inflates without end is refused as a large one is); Unreadable
    saying which format and what is wrong with a damaged stream, or that it inflates past the limit."""
    if data.startswith(XZ_MAGIC):
        return _unxz(data, limit, what)
    if data.startswith(GZIP_MAGIC):
        return _gunzip(data, limit, what)
    return data


def _too_large(limit: int, what: str) -> Unreadable:
    return Unreadable(f"decompresses to more than the {_size(limit)} {what} may be (docs/limits.md)")


def _unxz(data: bytes, limit: int, what: str) -> bytes:
    out = bytearray()
    rest = data
    try:
        while rest:  # concatenated streams, as xz writes and reads them
            z = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_DECODER_MEMORY)
            out += z.decompress(rest, limit + 1 - len(out))
            while not z.eof and len(out) <= limit:
                if z.needs_input:
                    raise Unreadable("xz: cut short")
                out += z.decompress(b"", limit + 1 - len(out))
            if len(out) > limit:
                raise _too_large(limit, what)
            rest = z.unused_data.lstrip(b"\0")  # stream padding
    except lzma.LZMAError as e:
        memory = "Memory usage limit" in str(e)
        raise Unreadable("xz: needs more memory to decompress than 256 MiB" if memory else f"xz: damaged ({e})") \
            from None
    return bytes(out)


def _gunzip(data: bytes, limit: int, what: str) -> bytes:
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as z:
            while piece := z.read(min(_PIECE, limit + 1 - len(out))):
                out += piece
                if len(out) > limit:
                    raise _too_large(limit, what)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError; a cut stream an EOFError
        raise Unreadable(f"gzip: damaged or cut short ({e})") from None
    return bytes(out)


def read_text(path: Path | str, limit: int = MAX_RESULTS_BYTES, what: str = "a results file") -> str:
    """The file's text (read_input, then UTF-8), or Unreadable saying why not (a directory, missing, a FIFO, too
    large, damaged or too large once decompressed, not UTF-8 and where)."""
    return decode(read_input(path, limit, what))


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


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key[:80])
                raise KeyTwice(f"key {shown} twice in one object: refused (memstress reads no object with a key twice)")
            seen.add(key)
    return doc


# A whole string (as _TOKEN) or the word that follows: where a bare constant or a number is, outside strings.
_STRING_OR = r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?|(?<![\w.+-])({})(?![\w.+-])'
_CONSTANT = re.compile(_STRING_OR.format(r"-?Infinity|NaN"))


def _where(text: str, pattern: re.Pattern[str]) -> str | None:
    """The first match of `pattern`'s group outside strings, with its line and column ("NaN (line 3, column
    17)"), None where there is none."""
    for match in pattern.finditer(text):
        if match.group(1):
            start = match.start(1)
            line = text.count("\n", 0, start) + 1
            column = start - (text.rfind("\n", 0, start) + 1) + 1
            word = match.group(1) if len(match.group(1)) <= 40 else match.group(1)[:40] + "..."
            return f"{word} (line {line}, column {column})"
    return None


def first_constant(text: str) -> str | None:
    """Where the first bare NaN or Infinity of `text` is ("NaN (line 3, column 17)"), None where it has none."""
    return _where(text, _CONSTANT)


def strict_loads(text: str, allow_constants: bool = False) -> Any:
    """One JSON value by memstress's own rules (harness/core/json_input.hpp): nested at most MAX_DEPTH levels
    (TooDeep), no key twice in one object, no number beyond a double (1e999), and no NaN or Infinity unless
    `allow_constants` (Google Benchmark writes them bare); Refused saying which and where. Not JSON at all:
    json.JSONDecodeError (a ValueError) as json.loads raises it."""
    def constant(name: str) -> float:
        if not allow_constants:
            where = first_constant(text) or name
            raise Refused(f"{where}: not JSON (memstress results hold no NaN or Infinity; a value not measured "
                          "is null)")
        return float(name)

    def too_large(number: str) -> Refused:
        where = _where(text, re.compile(_STRING_OR.format(re.escape(number)))) or number[:40]
        return Refused(f"{where}: a number too large for a double: refused (memstress reads numbers as doubles)")

    def finite_float(number: str) -> float:
        value = float(number)
        if math.isinf(value):
            raise too_large(number)
        return value

    def bounded_int(number: str) -> int:
        if len(number) > 309 and math.isinf(float(number)):  # 10^308: no double is larger
            raise too_large(number)
        return int(number)

    return loads(text, object_pairs_hook=_no_key_twice, parse_float=finite_float, parse_int=bounded_int,
                 parse_constant=constant)


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
    """The JSON document at PATH or, where only that exists, at PATH.xz (big results are committed compressed),
    read as read_text reads it. Raises ValueError (Unreadable or TooDeep; the caller names the file)."""
    path = Path(path)
    packed = path.with_name(path.name + ".xz")
    return loads(read_text(packed if not path.exists() and packed.exists() else path))


def passed_rows(path: Path | str) -> list[dict]:
    """The rows of the memstress results document at PATH (or PATH.xz) that passed. ValueError saying why
    not (the caller names the file): unreadable, not JSON, or no rows."""
    doc = read_stored(path)
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise ValueError("no rows")
    return [r for r in rows if isinstance(r, dict) and r.get("verdict") == "pass"]
