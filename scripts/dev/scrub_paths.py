#!/usr/bin/env python3
"""scripts/dev/scrub_paths.py [--check] [--show] FILE...: rewrite, in place, the absolute paths of the
machines a log or record was made on into relative or neutral forms, the same way every time.

Logs, JUnit files, results documents and snapshots name the folders they were made in: the checkout
(`/work/<name>/`, a fresh copy in `/tmp/fresh/`), the folder a GPU run wrote into (`/root/out/`), scratch
directories (`/tmp/...`), a home directory. Those say nothing about memstress and differ from one machine
to the next. Each path is rewritten by the first rule that matches where it starts:

    /root/out/..., /tmp/<dir>/out/...    ->  $OUT/...      the output folder of the run
    /work/<checkout>/..., /tmp/fresh/... ->  ...           a checkout of this repository: relative to it
    /tmp/<prefix><random>/...            ->  $TMPDIR/<prefix>XXXXXX/...
                                             a directory made by mktemp or mkdtemp (6 to 8 random letters
                                             and digits, at least one a digit or a capital): its template
    /tmp/...                             ->  $TMPDIR/...   any other scratch path
    /root/..., /home/<user>/...          ->  ~/...

A path starts at a `/` that follows no letter, digit, `_`, `.`, `-`, `~` or `$` (so `/usr/tmp/` is left as
it is). Nothing else in a file changes:

- text files (UTF-8, or any bytes kept as they are) are rewritten as text; a file that was valid JSON,
  each line of a .jsonl that was, and XML that parsed still are (checked before writing);
- gzip files are rewritten inside and compressed again under their own header (name, time, flags), at the
  level the header names (-9, -1, else 6); a gzip stream cut short is left as it is and named;
- pickles (PyTorch memory snapshots; inside gzip too) are rewritten opcode by opcode: each string that holds
  a path is written again with its new length, every other opcode is copied and frame lengths follow, so
  the memo and the structure stay the same; the result is checked opcode against opcode and must load
  (a pickle that asks for a global is refused: the snapshots are plain data);
- other binary files are left as they are and named if they hold a path.

--check writes nothing and exits 1 if a file would change; --show prints each distinct rewrite per file.
Exit 0 when done, 1 for --check with changes, 2 when a file cannot be read or would not stay valid (none
is written then).
"""

from __future__ import annotations

import argparse
import io
import json
import pickle
import pickletools
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from pathlib import Path

PATH = re.compile(
    r"""(?<![\w.~$-])(?:
        (?P<out>/root/out|/tmp/[\w.-]+/out)(?![\w.-])
      | (?P<checkout>/work/[\w.-]+/|/tmp/fresh/)
      | /tmp/(?P<prefix>[\w.-]*?[.-])(?P<random>(?=\w*[0-9A-Z])[A-Za-z0-9_]{6,8})(?![\w.-])
      | (?P<tmp>/tmp/)
      | (?P<home>/root/|/home/[\w.-]+/)
    )""",
    re.X,
)


def replacement(m: re.Match[str]) -> str:
    if m["out"]:
        return "$OUT"
    if m["checkout"]:
        return ""
    if m["random"]:
        return f"$TMPDIR/{m['prefix']}{'X' * len(m['random'])}"
    if m["tmp"]:
        return "$TMPDIR/"
    return "~/"


def scrub_text(text: str, seen: Counter[tuple[str, str]]) -> str:
    def sub(m: re.Match[str]) -> str:
        new = replacement(m)
        # What the rewrite covers, as far as the path goes, for --show.
        end = re.match(r"[^\s\"'<>|;,()\[\]{}`\\]*", text[m.end():])
        tail = end.group(0) if end else ""
        seen[(m.group(0) + tail, new + tail)] += 1
        return new

    return PATH.sub(sub, text)


class Invalid(Exception):
    pass


# Text: the bytes as they are (surrogateescape keeps what is not UTF-8), and each kind that has a grammar
# checked before and after.

def _json_ok(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _xml_ok(text: str) -> bool:
    try:
        ET.fromstring(text.encode("utf-8", "surrogateescape"))
    except ET.ParseError:
        return False
    return True


def check_text(name: str, old: str, new: str) -> None:
    if name.endswith(".json") and _json_ok(old) and not _json_ok(new):
        raise Invalid("no longer valid JSON")
    if name.endswith(".jsonl"):
        for i, (a, b) in enumerate(zip(old.splitlines(), new.splitlines()), 1):
            if a.strip() and _json_ok(a) and not _json_ok(b):
                raise Invalid(f"line {i} no longer valid JSON")
    if name.endswith(".xml") and _xml_ok(old) and not _xml_ok(new):
        raise Invalid("no longer well-formed XML")


# Pickles.

_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"}
_TEXT_OPS = {"UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING"}  # protocol 0-2 forms, never rewritten


def is_pickle(data: bytes) -> bool:
    return len(data) > 2 and data[0] == 0x80 and 2 <= data[1] <= 5


def _encode_string(opname: str, value: str) -> bytes:
    raw = value.encode("utf-8", "surrogatepass")
    if opname == "SHORT_BINUNICODE" and len(raw) < 256:
        return b"\x8c" + bytes([len(raw)]) + raw
    if opname == "BINUNICODE8":
        return b"\x8d" + struct.pack("<Q", len(raw)) + raw
    return b"X" + struct.pack("<I", len(raw)) + raw


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        raise Invalid(f"the pickle asks for a global ({module}.{name}): not plain data, left as it is")


def scrub_pickle(data: bytes, seen: Counter[tuple[str, str]]) -> bytes:
    ops = list(pickletools.genops(data))
    if not ops or ops[-1][0].name != "STOP":
        raise Invalid("a pickle that does not end in STOP")
    starts = [pos for _, _, pos in ops] + [ops[-1][2] + 1]
    out = bytearray()
    at: dict[int, int] = {}  # input offset of each opcode -> output offset
    frames: list[tuple[int, int]] = []  # (output offset of the length field, input offset where the frame ends)
    for i, (op, arg, pos) in enumerate(ops):
        at[pos] = len(out)
        chunk = data[pos:starts[i + 1]]
        if op.name in _STRINGS and isinstance(arg, str):
            new = scrub_text(arg, seen)
            if new != arg:
                chunk = _encode_string(op.name, new)
        elif op.name in _TEXT_OPS and isinstance(arg, (str, bytes)):
            text = arg if isinstance(arg, str) else arg.decode("latin-1")
            if PATH.search(text):
                raise Invalid(f"a path in a {op.name} opcode, which this does not rewrite")
        elif op.name == "FRAME":
            frames.append((len(out) + 1, pos + 9 + arg))
        out += chunk
    at[starts[-1]] = len(out)
    if len(data) > starts[-1]:
        raise Invalid("bytes after the pickle's STOP")
    for field, end in frames:
        if end not in at:
            raise Invalid("a frame that ends inside an opcode")
        out[field:field + 8] = struct.pack("<Q", at[end] - (field + 8))
    new = bytes(out)
    _check_pickle(data, new)
    return new


def _check_pickle(old: bytes, new: bytes) -> None:
    """Opcode against opcode: the same opcodes, the same arguments but for rewritten strings and the frames'
    lengths; and the new pickle loads as plain data."""
    a, b = list(pickletools.genops(old)), list(pickletools.genops(new))
    if len(a) != len(b):
        raise Invalid("the rewritten pickle has another number of opcodes")
    for (op1, arg1, _), (op2, arg2, _) in zip(a, b):
        same_kind = op1.name == op2.name or {op1.name, op2.name} <= _STRINGS
        if not same_kind:
            raise Invalid(f"opcode {op1.name} became {op2.name}")
        if op1.name == "FRAME" or arg1 == arg2:
            continue
        if not (op1.name in _STRINGS and scrub_text(arg1, Counter()) == arg2):
            raise Invalid(f"the argument of a {op1.name} changed beyond its paths")
    _PlainData(io.BytesIO(new)).load()


# gzip: the header kept, the deflate stream written again.

def _gzip_header(raw: bytes) -> bytes:
    if raw[:3] != b"\x1f\x8b\x08":
        raise Invalid("not a gzip file")
    flags, pos = raw[3], 10
    if flags & 4:
        pos += 2 + int.from_bytes(raw[pos:pos + 2], "little")
    for bit in (8, 16):
        if flags & bit:
            pos = raw.index(b"\0", pos) + 1
    if flags & 2:
        pos += 2
    return raw[:pos]


def gunzip(raw: bytes) -> tuple[bytes, bool]:
    """The content and whether the stream is whole (one member, nothing after it)."""
    d = zlib.decompressobj(wbits=31)
    data = d.decompress(raw)
    return data, d.eof and not d.unused_data


def gzip_again(raw: bytes, data: bytes) -> bytes:
    header = _gzip_header(raw)
    level = {2: 9, 4: 1}.get(raw[8], 6)
    c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = c.compress(data) + c.flush()
    new = header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if gunzip(new) != (data, True):
        raise Invalid("the gzip written again does not read back")
    return new


def scrub_content(name: str, data: bytes, seen: Counter[tuple[str, str]]) -> bytes:
    if is_pickle(data):
        return scrub_pickle(data, seen)
    if b"\0" in data[:8192]:
        if re.search(rb"(?<![\w.~$-])/(?:work|root|home|tmp)/", data):
            raise Invalid("binary, not a pickle, holds a path: left as it is")
        return data
    old = data.decode("utf-8", "surrogateescape")
    new = scrub_text(old, seen)
    if new != old:
        check_text(name, old, new)
    return new.encode("utf-8", "surrogateescape")


def scrub_file(path: Path, seen: Counter[tuple[str, str]]) -> bytes | None:
    """The file's new bytes, or None where nothing changes."""
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        data, whole = gunzip(raw)
        new = scrub_content(path.name[:-3], data, seen)
        if new == data:
            return None
        if not whole:
            raise Invalid("a gzip stream cut short (or of several members) holds a path: left as it is")
        return gzip_again(raw, new)
    new = scrub_content(path.name, raw, seen)
    return None if new == raw else new


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    ap.add_argument("--show", action="store_true", help="print each distinct rewrite of each file")
    args = ap.parse_args(argv)

    changed: dict[Path, bytes] = {}
    failed = 0
    total = 0
    for path in args.files:
        seen: Counter[tuple[str, str]] = Counter()
        try:
            new = scrub_file(path, seen)
        except (OSError, Invalid, ValueError, zlib.error, pickle.UnpicklingError, EOFError) as e:
            print(f"scrub_paths: {path}: {e}", file=sys.stderr)
            failed += 1
            continue
        if new is None:
            continue
        changed[path] = new
        count = sum(seen.values())
        total += count
        print(f"{path}: {count} path(s)")
        if args.show:
            for (before, after), n in sorted(seen.items()):
                print(f"    {before} -> {after or '(relative)'}" + (f"  x{n}" if n > 1 else ""))
    if failed:
        print(f"scrub_paths: {failed} file(s) not rewritten; nothing written", file=sys.stderr)
        return 2
    if args.check:
        print(f"scrub_paths: {len(changed)} file(s) would change ({total} paths)")
        return 1 if changed else 0
    for path, new in changed.items():
        path.write_bytes(new)
    print(f"scrub_paths: {len(changed)} file(s) rewritten ({total} paths)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
