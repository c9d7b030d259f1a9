"""A PyTorch memory snapshot (``torch.cuda.memory._dump_snapshot``) read into a TraceBuilder: every device's
trace entries merged by time, then the blocks and segments the snapshot lists as live (convert.py's docstring
says what each becomes). Every field is checked as it is read: bad input is an InputError naming the entry.

Note [Snapshots that expand]. A pickle stores an object once and refers to it again by its memo: one list of
10,000 entries put 10,000 times into device_traces is a file of 40 KB that reaches 100,000,000 entries, and
walking them took minutes and gigabytes before this check (a MemoryError at 1e8). So before any entry is
walked, the entries and blocks the snapshot reaches are counted, each list as often as it is referred to (the
sum of the lengths of the lists device_traces and each segment's blocks refer to: a cost of one step a list,
not one an entry), and a snapshot that reaches more than item_budget(its pickle's bytes) is refused. Without a
shared list every entry or block reached costs the pickle at least a byte, and PyTorch writes each with its
address, size, stream and time: 52 bytes or more in every real snapshot of results/ (kv_generate, 170,690
entries in 8.9 MB). The budget is one for every 16 bytes of the pickle (4,096 however small it is), and never
more than 2^25 = 33,554,432, what the 1 GiB a snapshot may be (MAX_SNAPSHOT_BYTES, convert.py) holds at 32
bytes an item. Frames are not counted so: real snapshots share one list of frames among the entries of one
stack, and each list is classified once however many entries share it (SiteTable.site_of, by identity), so
what frames cost is bounded by the file's size, not by how often they are referred to.

Note [The recorder's capacity]. The recorder's note (the snapshot's "memstress" key, recorder.py) says how
much memory the GPU had; memstress doctor and predict-batch replay on a simulated device of that capacity and
twice it. A note saying more than MAX_RECORDED_BYTES (8 TiB, the most `memstress doctor --capacity` takes:
the simulated device holds at most 16 TiB) is no GPU's, and it is refused here naming the note: left to the
replay, the message named a --device flag the user never gave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from heapq import merge
from pathlib import Path
from typing import Any

from .snapshot_sites import alloc_conf_of
from .trace_builder import (
    I64_MIN,
    MAX_TIME_US,
    STATE_ALLOCATED,
    STATE_INACTIVE,
    STATES_PENDING,
    U64,
    InputError,
    Summary,
    TraceBuilder,
    show,
)

# Note [Snapshots that expand]: entries and blocks a snapshot may reach, each time it is reached.
BYTES_PER_ITEM = 16
MIN_ITEMS = 4096
MAX_ITEMS = 1 << 25

# Note [The recorder's capacity]: the recorder's figures of the GPU's memory, in bytes, and their bound.
RECORDED_BYTES_KEYS = ("allocator_capacity", "device_total", "device_free", "used_outside_allocator")
MAX_RECORDED_BYTES = 8 << 40


def item_budget(pickle_bytes: int) -> int:
    """The entries and blocks a snapshot whose pickle has `pickle_bytes` bytes may reach (Note [Snapshots that
    expand])."""
    return min(MAX_ITEMS, max(MIN_ITEMS, pickle_bytes // BYTES_PER_ITEM))


# Trace entry actions whose entries carry an address and a size.
ADDRESSED_ACTIONS = (
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field(entry: Any, key: str, where: str, path: Path, *, default: Any = ...) -> int:
    if not isinstance(entry, dict):
        raise InputError(f"{path}: {where}: expected a dict, found {type(entry).__name__}")
    if key not in entry:
        if default is not ...:
            return default
        raise InputError(f"{path}: {where}: no '{key}'")
    value = entry[key]
    if not _is_int(value):
        raise InputError(f"{path}: {where}: '{key}' is {show(value)}, not an integer")
    if not I64_MIN <= value <= U64:
        raise InputError(f"{path}: {where}: '{key}' is {show(value)}, beyond 64 bits")
    return value


def _nonneg(value: int, key: str, where: str, path: Path) -> int:
    if value < 0:
        raise InputError(f"{path}: {where}: '{key}' is negative ({value})")
    return value


@dataclass(order=True)
class _Entry:
    time_us: float
    device_index: int
    index: int
    entry: dict = field(compare=False)


def _device_entries(trace: list, device: int, path: Path, summary: Summary) -> list[_Entry]:
    """One device's entries in recorded order, times clamped to be non-decreasing."""
    result = []
    last: float | None = None
    for i, entry in enumerate(trace):
        where = f"device_traces[{device}][{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{path}: {where}: expected a dict, found {type(entry).__name__}")
        action = entry.get("action")
        if not isinstance(action, str):
            raise InputError(f"{path}: {where}: no 'action' (or not a string)")
        t = entry.get("time_us")
        if t is None:
            summary.untimed += 1
            t = last if last is not None else 0
        elif not isinstance(t, (int, float)) or isinstance(t, bool):
            raise InputError(f"{path}: {where}: 'time_us' is {show(t)}, not a number")
        elif not (isinstance(t, int) or math.isfinite(t)) or abs(t) > MAX_TIME_US:
            raise InputError(f"{path}: {where}: 'time_us' is {show(t)}, not a time (finite, at most 2^53 "
                             "microseconds)")
        if last is not None and t < last:
            summary.clamped += 1
            summary.max_clamp_ns = max(summary.max_clamp_ns, round((last - t) * 1000))
            t = last
        last = t
        result.append(_Entry(t, device, i, entry))
    return result


def _check_expansion(traces: list, segments: list, path: Path, pickle_bytes: int) -> None:
    """Refuses a snapshot that reaches more entries and blocks than its size allows (Note [Snapshots that
    expand]): counted from the lists' lengths, before any entry is walked."""
    budget = item_budget(pickle_bytes)
    entries = sum(len(trace) for trace in traces)
    blocks = sum(len(s["blocks"]) for s in segments if isinstance(s, dict) and isinstance(s.get("blocks"), list))
    if entries + blocks > budget:
        raise InputError(
            f"{path}: reaches {entries:,} trace entries and {blocks:,} blocks (lists the pickle shares counted each "
            f"time they are referred to), more than the {budget:,} a snapshot of {pickle_bytes:,} bytes may hold "
            f"(one per {BYTES_PER_ITEM} bytes, at most {MAX_ITEMS:,}: docs/limits.md): refused")


def _recorder_notes(recorder: Any, path: Path) -> dict[str, Any] | None:
    """The recorder's notes the facts keep: flat, scalars only; a figure of the GPU's memory beyond
    MAX_RECORDED_BYTES is refused naming the note (Note [The recorder's capacity])."""
    if not isinstance(recorder, dict):
        return None
    notes = {k: v for k, v in recorder.items()
             if isinstance(k, str) and (v is None or isinstance(v, (str, bool))
                                        or (_is_int(v) and I64_MIN <= v <= U64)
                                        or (isinstance(v, float) and math.isfinite(v)))}
    limit = recorder.get("limit")
    figures = [(key, notes.get(key)) for key in RECORDED_BYTES_KEYS]
    if isinstance(limit, dict):
        figures.append(("limit.bytes", limit.get("bytes")))
    for key, value in figures:
        if _is_int(value) and value > MAX_RECORDED_BYTES:
            raise InputError(
                f"{path}: the recorder's note (the snapshot's 'memstress' key) says {key} is {_tib(value)} "
                f"({show(value)} bytes), more than the {_tib(MAX_RECORDED_BYTES)} of GPU memory memstress replays "
                "(docs/limits.md): a damaged or edited note, refused")
    return notes


def _tib(n: int) -> str:
    return f"{n / (1 << 40):.2f} TiB" if n < 1 << 80 else show(n)


def convert_snapshot(snapshot: Any, path: Path, summary: Summary, *, pickle_bytes: int) -> TraceBuilder:
    """`pickle_bytes`: the size of the pickle it was loaded from (Note [Snapshots that expand])."""
    summary.source_kind = "PyTorch memory snapshot"
    if isinstance(snapshot, list):
        raise InputError(
            f"{path}: a list of segments with no trace (torch.cuda.memory_snapshot()); record with "
            "torch.cuda.memory._record_memory_history() and save with torch.cuda.memory._dump_snapshot()")
    if not isinstance(snapshot, dict):
        raise InputError(f"{path}: not a PyTorch memory snapshot: the pickle holds a "
                         f"{type(snapshot).__name__}, not a dict with 'segments' and 'device_traces'")
    missing = [key for key in ("segments", "device_traces") if key not in snapshot]
    if missing:
        named = " nor ".join(repr(k) for k in missing)
        keys = sorted(k if isinstance(k, str) and k.isprintable() else show(k) for k in list(snapshot)[:100])
        raise InputError(f"{path}: not a PyTorch memory snapshot: no {named} "
                         f"(keys: {', '.join(keys)[:200]})")
    traces, segments = snapshot["device_traces"], snapshot["segments"]
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise InputError(f"{path}: 'device_traces' is not a list of lists (one per device)")
    if not isinstance(segments, list):
        raise InputError(f"{path}: 'segments' is not a list")
    for key in ("host_traces", "host_segments"):  # pinned host memory: left out, but a snapshot's are lists
        value = snapshot.get(key)
        if value is not None and not isinstance(value, list):
            raise InputError(f"{path}: '{key}' is {type(value).__name__} {show(value)}, not a list")
        if value:
            summary.skipped[f"{key} (pinned host memory)"] += len(value)
    _check_expansion(traces, segments, path, pickle_bytes)
    recorder = _recorder_notes(snapshot.get("memstress"), path)  # before the walk: a bad note is refused at once

    per_device = [_device_entries(trace, d, path, summary) for d, trace in enumerate(traces)]
    timed = [e.time_us for entries in per_device for e in entries]
    t0 = min(timed) if timed else 0
    builder = TraceBuilder(summary)
    for item in merge(*per_device):
        _apply_entry(builder, item, t0, path, summary)
    _apply_segments(builder, segments, path)
    builder.metadata["alloc_conf"] = alloc_conf_of(snapshot.get("allocator_settings"))
    builder.metadata["recorder"] = recorder
    return builder


def _apply_entry(builder: TraceBuilder, item: _Entry, t0: float, path: Path, summary: Summary) -> None:
    entry, device = item.entry, f"cuda:{item.device_index}"
    where = f"device_traces[{item.device_index}][{item.index}] ({show(entry['action'])[1:-1]})"
    action = entry["action"]
    t = round((item.time_us - t0) * 1000)
    if action in ADDRESSED_ACTIONS:
        addr = _nonneg(_field(entry, "addr", where, path), "addr", where, path)
        size = _nonneg(_field(entry, "size", where, path), "size", where, path)
        stream = _field(entry, "stream", where, path)
        if action == "alloc":
            mark = entry.get("user_metadata")
            builder.alloc(t, device, addr, size, stream, builder.sites.site_of(entry.get("frames")),
                          mark if isinstance(mark, str) else "")
        elif action == "free_requested":
            builder.free_requested(t, device, addr, size, stream)
        elif action == "free_completed":
            builder.free_completed(t, device, addr, size, stream)
        elif action == "segment_alloc":
            builder.segment_alloc(t, device, addr, size, stream)
        elif action == "segment_free":
            builder.segment_free(t, device, addr, size, stream)
        else:
            builder.segment_range(t, action, device, size, stream)
    elif action == "oom":
        size = _nonneg(_field(entry, "size", where, path), "size", where, path)
        stream = _field(entry, "stream", where, path)
        device_free = _field(entry, "device_free", where, path, default=None)
        comment = None if device_free is None else f"oom: cudaMemGetInfo reported {device_free} bytes free"
        builder.oom(t, device, size, stream, comment)
        builder.oom_facts.append({"device": device, "bytes": size, "device_free": device_free,
                                  "site": builder.sites.site_of(entry.get("frames"))})
    else:
        summary.skipped[action] += 1


def _apply_segments(builder: TraceBuilder, segments: list, path: Path) -> None:
    for s, segment in enumerate(segments):
        where = f"segments[{s}]"
        device = f"cuda:{_nonneg(_field(segment, 'device', where, path), 'device', where, path)}"
        address = _field(segment, "address", where, path)
        stream = _field(segment, "stream", where, path, default=0)
        blocks = segment.get("blocks")
        if not isinstance(blocks, list):
            raise InputError(f"{path}: {where}: no 'blocks' list")
        offset = address
        for b, block in enumerate(blocks):
            bwhere = f"{where}.blocks[{b}]"
            size = _nonneg(_field(block, "size", bwhere, path), "size", bwhere, path)
            state = block.get("state")
            addr = _field(block, "address", bwhere, path, default=offset)
            offset = addr + size
            if state == STATE_ALLOCATED or state in STATES_PENDING:
                requested = _nonneg(_field(block, "requested_size", bwhere, path, default=size), "requested_size",
                                    bwhere, path)
                builder.live_block(device, addr, state, requested or size, stream, block.get("frames"))
            elif state != STATE_INACTIVE:
                builder.summary.skipped[f"block state {show(state)}"] += 1
        if segment.get("is_expandable"):
            builder.summary.notes["expandable segments: their mappings are not synthesized"] += 1
        else:
            total = _nonneg(_field(segment, "total_size", where, path), "total_size", where, path)
            builder.live_segment(device, address, total, stream)
