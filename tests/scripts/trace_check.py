"""A strict reader of memstress trace v1 for the tests: the rules of read_trace (trace_reader.cpp).

It checks what the C++ reader checks — the two header lines, the number of fields, non-negative 64-bit
integers, well-formed action names, strictly increasing seq, ids on alloc/free and none on oom, a
non-empty device, allocs and frees pairing up with equal bytes, a newline at the end — and what the
format promises beyond it: time_ns never decreasing. Lines of other actions are counted and skipped,
as read_trace skips them. Ids of the later actions are checked too: a free_completed names an id that
was freed and not yet completed, segment_free a live segment id; alloc and segment_alloc ids count
0, 1, 2, … in file order, each on its own.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

MAGIC = "# memstress-trace v1"
COLUMNS = ["seq", "time_ns", "action", "id", "bytes", "stream", "device"]
ACTION = re.compile(r"[a-z][a-z0-9_]*")


@dataclass
class Event:
    seq: int
    time_ns: int
    action: str
    id: int | None
    nbytes: int
    stream: int
    device: str


@dataclass
class Trace:
    events: list[Event] = field(default_factory=list)  # the v1 events (alloc, free, oom)
    lines: list[Event] = field(default_factory=list)  # every data line, the later actions too
    skipped: Counter = field(default_factory=Counter)
    comments: list[str] = field(default_factory=list)
    live: dict[int, int] = field(default_factory=dict)  # ids live at the end -> bytes
    allocs: int = 0  # alloc lines seen (the next id)
    segments: int = 0  # segment_alloc lines seen


class TraceError(AssertionError):
    pass


def _number(text: str, column: str, where: str) -> int:
    if not text.isdigit() or int(text) >= 1 << 64:
        raise TraceError(f"{where}: column '{column}': '{text}' is not a non-negative 64-bit integer")
    return int(text)


def parse_trace(text: str, name: str = "trace") -> Trace:
    if not text.endswith("\n"):
        raise TraceError(f"{name}: the last line has no newline")
    lines = text[:-1].split("\n")
    if lines[0] != MAGIC:
        raise TraceError(f"{name}:1: not '{MAGIC}': {lines[0]!r}")
    header = lines[1].split(",") if len(lines) > 1 else []
    if header[:len(COLUMNS)] != COLUMNS:
        raise TraceError(f"{name}:2: bad column header {lines[1] if len(lines) > 1 else ''!r}")
    trace = Trace()
    last_seq = last_time = -1
    live: dict[int, int] = {}
    freed: dict[int, int] = {}  # freed, not yet free_completed
    segments: dict[int, int] = {}
    for number, line in enumerate(lines[2:], start=3):
        where = f"{name}:{number}"
        if not line or line.startswith("#"):
            if line:
                trace.comments.append(line[1:].strip())
            continue
        f = line.split(",")
        if len(f) != len(header):
            raise TraceError(f"{where}: {len(f)} fields where the header has {len(header)}")
        seq, time_ns = _number(f[0], "seq", where), _number(f[1], "time_ns", where)
        if seq <= last_seq:
            raise TraceError(f"{where}: seq {seq} does not follow seq {last_seq}")
        if time_ns < last_time:
            raise TraceError(f"{where}: time_ns {time_ns} is before {last_time}")
        last_seq, last_time = seq, time_ns
        action = f[2]
        if not ACTION.fullmatch(action):
            raise TraceError(f"{where}: bad action {action!r}")
        ident = None if f[3] == "" else _number(f[3], "id", where)
        nbytes, stream = _number(f[4], "bytes", where), _number(f[5], "stream", where)
        if not f[6]:
            raise TraceError(f"{where}: column 'device' is empty")
        event = Event(seq, time_ns, action, ident, nbytes, stream, f[6])
        trace.lines.append(event)
        if action == "oom":
            if ident is not None:
                raise TraceError(f"{where}: an oom line has no id")
        elif action in ("alloc", "free"):
            if ident is None:
                raise TraceError(f"{where}: {action} needs an id")
            if action == "alloc":
                if ident != trace.allocs:
                    raise TraceError(f"{where}: alloc of id {ident}; ids count 0, 1, 2, … "
                                     f"(next: {trace.allocs})")
                trace.allocs += 1
                live[ident] = nbytes
            else:
                if ident not in live:
                    raise TraceError(f"{where}: free of id {ident}, which is not live")
                if live[ident] != nbytes:
                    raise TraceError(f"{where}: free of id {ident} names {nbytes} bytes, not {live[ident]}")
                freed[ident] = live.pop(ident)
        else:
            trace.skipped[action] += 1
            if action == "free_completed":
                if ident not in freed or freed[ident] != nbytes:
                    raise TraceError(f"{where}: free_completed of id {ident}, which was not freed "
                                     "(or other bytes)")
                del freed[ident]
            elif action == "segment_alloc":
                if ident != trace.segments:
                    raise TraceError(f"{where}: segment_alloc of id {ident} (next: {trace.segments})")
                trace.segments += 1
                segments[ident] = nbytes
            elif action == "segment_free":
                if segments.get(ident) != nbytes:
                    raise TraceError(f"{where}: segment_free of id {ident}, not a live segment of {nbytes}")
                del segments[ident]
            continue
        trace.events.append(event)
    trace.live = live
    return trace
