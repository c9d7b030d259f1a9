"""An RMM allocation log (``rmm::mr::logging_resource_adaptor``'s CSV) read into a TraceBuilder."""

from __future__ import annotations

import math
import re
from pathlib import Path

from .trace_builder import MAX_TIME_US, U64, InputError, Summary, TraceBuilder, show

RMM_HEADER = "Thread,Time,Action,Pointer,Size,Stream"

_RMM_CLOCK = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_DAY_US = 24 * 3600 * 1_000_000


def _rmm_time_us(text: str) -> float:
    """spdlog's %H:%M:%S.%f (time of day, microseconds), or seconds as a number."""
    match = _RMM_CLOCK.match(text)
    if match:
        h, m, s, frac = match.groups()
        frac_us = int(frac.ljust(6, "0")[:6]) if frac else 0
        return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1_000_000 + frac_us
    seconds = float(text)
    if not math.isfinite(seconds) or abs(seconds) * 1_000_000 > MAX_TIME_US:
        raise ValueError(f"time {text!r} is not finite, or beyond 2^53 microseconds")
    return seconds * 1_000_000


def _rmm_hex(text: str) -> int:
    """%p / std::hex output: '0x7f0...', '7f0...', '(nil)', '0'."""
    text = text.strip()
    if text in ("", "(nil)", "nil", "nullptr", "NULL"):
        return 0
    value = int(text[2:] if text.lower().startswith("0x") else text, 16)
    if value > U64:
        raise ValueError(f"{text[:40]!r} is beyond 64 bits")
    return value


def convert_rmm(text: str, path: Path, device: str, summary: Summary) -> TraceBuilder:
    summary.source_kind = "RMM log"
    lines = text.splitlines()
    rows: list[tuple[float, int, str, int, int, int]] = []
    day = 0.0
    last: float | None = None
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != 6:
            raise InputError(f"{path}:{number}: {len(fields)} fields where {RMM_HEADER!r} has 6")
        _thread, time_text, action, pointer, size_text, stream_text = (f.strip() for f in fields)
        try:
            t = _rmm_time_us(time_text) + day
            if last is not None and t < last - _DAY_US / 2:  # the clock passed midnight
                day += _DAY_US
                t += _DAY_US
            if t > MAX_TIME_US:  # midnights added up (times alternating far apart): time_ns would pass 2^64
                raise ValueError(f"time {time_text[:40]!r} after {day // _DAY_US} midnights is beyond 2^53 "
                                 "microseconds")
            ptr = _rmm_hex(pointer)
            size = int(size_text)
            stream = _rmm_hex(stream_text)
            if size > U64:
                raise ValueError(f"size {size_text[:40]!r} is beyond 64 bits")
        except ValueError as e:
            raise InputError(f"{path}:{number}: cannot read {show(line)}: {e}") from None
        if size < 0:
            raise InputError(f"{path}:{number}: negative size {size}")
        if last is not None and t < last:
            summary.clamped += 1
            summary.max_clamp_ns = max(summary.max_clamp_ns, round((last - t) * 1000))
            t = last
        last = t
        rows.append((t, number, action, ptr, size, stream))
    t0 = rows[0][0] if rows else 0
    builder = TraceBuilder(summary)
    for t, _number, action, ptr, size, stream in rows:
        tns = round((t - t0) * 1000)
        if action == "allocate":
            builder.alloc(tns, device, ptr, size, stream)
        elif action == "free":
            # RMM has no free_completed: its address is reusable once freed.
            builder.free_requested(tns, device, ptr, size, stream)
            builder.blocks.pop((device, ptr), None)
        elif action == "allocate failure":
            builder.oom(tns, device, size, stream)
        else:
            summary.skipped[action] += 1
    return builder


def rmm_device(path: Path) -> str:
    """RMM's Python logging names each device's file '<name>.dev<N>'."""
    match = re.search(r"\.dev(\d+)(?:\.csv)?(?:\.gz)?$", path.name)
    return f"cuda:{match.group(1)}" if match else "cuda:0"
