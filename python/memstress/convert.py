"""Convert a PyTorch memory snapshot (or an RMM allocation log) into a memstress trace.

    python3 -m memstress.convert SNAPSHOT -o TRACE [--device LABEL] [--facts FACTS.json]

(PYTHONPATH naming python/ of the checkout, or share/memstress/python installed; ``memstress replay`` and
``memstress doctor`` run it so. Its usage, messages and the traces it writes still name it
torch_snapshot_to_trace, its old name.)

SNAPSHOT is either

* a PyTorch memory snapshot: the pickle that ``torch.cuda.memory._dump_snapshot(path)`` writes
  after ``torch.cuda.memory._record_memory_history(...)``, the file pytorch.org/memory_viz reads; or
* an RMM log: the CSV that ``rmm::mr::logging_resource_adaptor`` writes (header
  ``Thread,Time,Action,Pointer,Size,Stream``; actions ``allocate``, ``free``, ``allocate failure``).

The kind is told from the content, not the name; either may be gzip-compressed. TRACE is a memstress
trace v1 (``harness/trace/trace_format.md``, whose section "Converted traces" is the contract this
script keeps); a name ending in ``.gz`` is written gzip-compressed. A summary goes to stderr.
Exit codes: 0 converted; 2 bad usage or input (the message names the file), never a traceback. Bad input
includes a corrupt gzip, a field of the wrong type (``host_traces`` that is not a list, say), times that are
not finite or beyond 2^53 microseconds, sizes and streams beyond 64 bits, and an output (``-o``, ``--facts``)
that exists and is not a regular file (_output.py: ``-o /dev/null`` is refused, not replaced).
Strings the snapshot holds that UTF-8 cannot encode (a file name's stray bytes in a frame) are written as
U+FFFD; a ``--device`` label with such bytes is refused.

Design
------
What a replay needs is what the *program* asked of the allocator, so that the replaying allocator does
its own rounding, splitting and caching. PyTorch's trace is the allocator's own record
(``TraceEntry`` in ``c10/cuda/CUDACachingAllocator.cpp``), and it maps as follows:

* ``alloc`` (recorded in ``alloc_found_block`` with ``orig_size``, the size the program asked for,
  before ``round_size``) becomes ``alloc`` with that size and a new id.
* ``free_requested`` (the program gave the block back; recorded with ``block->requested_size``)
  becomes v1's ``free``: that *is* the deallocate call a replay must make, so v1 readers replay
  converted traces as they are.
* ``free_completed`` (``free_block``: the allocator may reuse the block, after the events of the other
  streams it was used on completed) becomes ``free_completed`` with the same id: a later-version action
  that v1 readers skip.
* ``segment_alloc``/``segment_free`` (cudaMalloc/cudaFree of a whole segment) and
  ``segment_map``/``segment_unmap`` (expandable segments growing and shrinking) are kept under their
  names, with segment ids of their own; ``oom`` becomes ``oom`` (PyTorch records the *rounded* size).
* ``snapshot``, ``annotate`` and any other action are left out and counted in the summary.

Addresses become ids (position-independent traces): an id is given at ``alloc``, and every later line
about that block names it; the address is free for reuse from ``free_completed`` on. Times are
``time_us`` (microseconds since the epoch) turned into nanoseconds since the earliest entry; devices'
traces are merged by time, and an entry earlier than its predecessor on the same device is clamped to
it (counted), so ``time_ns`` never decreases and ``seq`` strictly increases.

The trace begins when recording began (or, once ``max_entries`` wrapped around, at the oldest entry
kept), so the program may free blocks it allocated before. Such blocks get an ``alloc`` line at time 0,
before every event, with the size the free names. Blocks the snapshot's ``segments`` list as
``active_allocated`` that the trace never mentions were allocated before recording and are still live:
they get an ``alloc`` at time 0 too (size: the block's ``requested_size``). Blocks the snapshot lists as
freed but not yet reusable (``active_pending_free``; PyTorch's docs call it ``active_awaiting_free``)
that the trace never mentions get an ``alloc`` and a ``free`` at time 0. Segments (not expandable ones)
that the trace never allocated get a ``segment_alloc`` at time 0. Every synthesized line is counted.

``--facts FACTS.json`` also writes what the trace has no column for (``memstress doctor`` reads it;
schema ``memstress.snapshot-facts/1``): each allocation's *site* (the first frame of its stack outside
torch and Python's standard library: the user's line that asked for the memory), one example stack per
site, the snapshot's ``allocator_settings`` (as a ``PYTORCH_CUDA_ALLOC_CONF`` string), what each ``oom``
entry says of the device (``device_free``) and what the memstress recorder (recorder.py)
wrote beside the snapshot under the key ``memstress`` (the GPU, its memory, the batch size). Sites are
listed by first appearance; ``alloc_sites[id]`` is the site of the allocation with that trace id (-1:
no frames were recorded for it, as for allocations from C++ such as PyTorch's backward pass; -2: it was
allocated before the recording began). ``segment_addresses[id]`` is where the CUDA driver placed the segment
with that id (0: not known), which lets a replay of the recorded setting place its segments likewise. Where
some allocation carries one of the recorder's marks in PyTorch's ``user_metadata`` (those made inside a
convolution: recorder_marks.py), ``marks`` lists them and ``alloc_marks[id]`` indexes it (-1: none; a program's
own metadata is left out).

Safety: a pickle can run code when loaded. Snapshots hold only dicts, lists, tuples, strings, numbers,
booleans and None, so this script unpickles with ``find_class`` refusing every global: a pickle that
tries to call anything (``os.system``, say) is rejected before anything runs.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import os
import pickle
import re
import reprlib
import stat
import sys
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from heapq import merge
from pathlib import Path
from typing import IO, Any

from . import _output
from .snapshot_sites import SiteTable, alloc_conf_of

PROG = "torch_snapshot_to_trace"
EXIT_OK, EXIT_INPUT = 0, 2

TRACE_MAGIC = "# memstress-trace v1"
TRACE_COLUMNS = "seq,time_ns,action,id,bytes,stream,device"
RMM_HEADER = "Thread,Time,Action,Pointer,Size,Stream"
GZIP_MAGIC = b"\x1f\x8b"
U64 = (1 << 64) - 1
I64_MIN = -(1 << 63)  # streams are pointers: PyTorch may record one as a negative int64 (written & U64)
MAX_TIME_US = 1 << 53  # floats hold microseconds exactly to here (285 years); x1000 still fits 64 bits
# The largest snapshot read, compressed or not, and decompressed (docs/limits.md): a gzip of 2 MB can inflate
# to gigabytes, and unpickling takes a few times what it inflates to.
MAX_SNAPSHOT_BYTES = 1 << 30


class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        # repr() refuses integers beyond sys.get_int_max_str_digits() (4300 digits) with a ValueError.
        return f"<an integer of {x.bit_length()} bits>" if x.bit_length() > 1000 else super().repr_int(x, level)


_REPR = _ShortRepr()
_REPR.maxstring = _REPR.maxother = 80


def show(value: Any) -> str:
    """A short, safe repr for messages: a value from the input may be huge or nested 100,000 levels deep."""
    return _REPR.repr(value)

# PyTorch's block states (torch/csrc/cuda/memory_snapshot.cpp writes active_pending_free; the
# docstring of torch.cuda.memory._snapshot calls the same state active_awaiting_free).
STATE_ALLOCATED = "active_allocated"
STATES_PENDING = ("active_pending_free", "active_awaiting_free")
STATE_INACTIVE = "inactive"

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


BEFORE_RECORDING = -2  # the facts' site of a block allocated before the recording began


MARK_PREFIX = "memstress."  # the recorder's marks (recorder_marks.py): the only user_metadata the facts keep


class InputError(Exception):
    """Bad input or usage: exit 2 with this message (which names the file)."""


# --- the trace being built ---------------------------------------------------------------------------


@dataclass
class Block:
    """One allocation (or one segment): its id is given when its alloc line is written."""

    device: str
    stream: int
    nbytes: int
    id: int | None = None
    freed: bool = False  # a free (v1) line was emitted for it
    site: int = -1  # index into the facts' sites (allocations with recorded frames)
    addr: int | None = None  # a segment's address, as the driver placed it
    mark: str = ""  # the trace entry's user_metadata (the recorder's marks: recorder_marks.py)


@dataclass
class Line:
    """One trace line before ids are assigned; ``block`` is what its id names."""

    time_ns: int
    action: str
    device: str
    stream: int
    nbytes: int = 0
    block: Block | None = None
    comment: str | None = None  # written as a '#' line just before this one


@dataclass
class Summary:
    """What the conversion did, for the stderr report (and the tests)."""

    source_kind: str = ""
    written: Counter = field(default_factory=Counter)
    synthesized: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    devices: set = field(default_factory=set)
    streams: set = field(default_factory=set)
    clamped: int = 0
    max_clamp_ns: int = 0
    untimed: int = 0


class TraceBuilder:
    """Turns address-keyed allocator events into id-keyed trace lines (see the module docstring).

    Events must come in the order they happened; ``prelude`` collects the lines synthesized at time 0.
    """

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.sites = SiteTable()
        self.prelude: list[Line] = []
        self.events: list[Line] = []
        # (device, address) -> the block there, while its address is not yet reusable.
        self.blocks: dict[tuple[str, int], Block] = {}
        self.segments: dict[tuple[str, int], Block] = {}
        self.oom_facts: list[dict[str, Any]] = []  # each oom line's device_free and site, in order
        self.metadata: dict[str, Any] = {}  # allocator settings, the recorder's notes

    # Allocations ---------------------------------------------------------------------------------

    def _synthesize(self, device: str, stream: int, nbytes: int, reason: str, site: int = -1) -> Block:
        # Without frames of its own, a block from before the recording is told apart from an allocation made
        # with no Python frames (PyTorch's backward pass runs on a C++ thread): BEFORE_RECORDING.
        block = Block(device, stream, nbytes, site=site if site >= 0 else BEFORE_RECORDING)
        self.prelude.append(Line(0, "alloc", device, stream, block=block))
        self.summary.synthesized[reason] += 1
        return block

    def _free(self, t: int, block: Block) -> None:
        self.events.append(Line(t, "free", block.device, block.stream, block=block))
        block.freed = True

    def alloc(self, t: int, device: str, addr: int, nbytes: int, stream: int, site: int = -1,
              mark: str = "") -> None:
        old = self.blocks.pop((device, addr), None)
        if old is not None:
            # The address was handed out again with no free_completed seen for its last block
            # (skip_actions, or a free logged by another tool): that block was freed by now.
            if not old.freed:
                self._free(t, old)
            self.summary.notes["alloc at an address still in use: earlier block taken as freed"] += 1
        block = Block(device, stream, nbytes, site=site, mark=mark)
        self.blocks[(device, addr)] = block
        self.events.append(Line(t, "alloc", device, stream, block=block))

    def free_requested(self, t: int, device: str, addr: int, nbytes: int, stream: int) -> Block:
        block = self.blocks.get((device, addr))
        if block is None:
            block = self._synthesize(device, stream, nbytes,
                                     "allocations made before the trace began, freed in it")
            self.blocks[(device, addr)] = block
        elif block.freed:
            self.summary.notes["second free of a block: ignored"] += 1
            return block
        if nbytes != block.nbytes:
            self.summary.notes["free naming another size than its alloc: the alloc's size kept"] += 1
        self._free(t, block)
        return block

    def free_completed(self, t: int, device: str, addr: int, nbytes: int, stream: int) -> None:
        block = self.blocks.get((device, addr))
        if block is None or not block.freed:
            if block is not None:
                self.summary.notes["free_completed without free_requested: free taken at completion"] += 1
            block = self.free_requested(t, device, addr, nbytes, stream)
        del self.blocks[(device, addr)]
        self.events.append(Line(t, "free_completed", device, block.stream, block=block))

    def oom(self, t: int, device: str, nbytes: int, stream: int, comment: str | None = None) -> None:
        self.events.append(Line(t, "oom", device, stream, nbytes=nbytes, comment=comment))

    # Segments ------------------------------------------------------------------------------------

    def segment_alloc(self, t: int, device: str, addr: int, nbytes: int, stream: int) -> None:
        if (device, addr) in self.segments:
            self.summary.notes["segment_alloc at a live segment's address: earlier one dropped"] += 1
        segment = Block(device, stream, nbytes, addr=addr)
        self.segments[(device, addr)] = segment
        self.events.append(Line(t, "segment_alloc", device, stream, block=segment))

    def segment_free(self, t: int, device: str, addr: int, nbytes: int, stream: int) -> None:
        segment = self.segments.pop((device, addr), None)
        if segment is None:
            segment = Block(device, stream, nbytes, addr=addr)
            self.prelude.append(Line(0, "segment_alloc", device, stream, block=segment))
            self.summary.synthesized["segments made before the trace began, freed in it"] += 1
        self.events.append(Line(t, "segment_free", device, segment.stream, block=segment))

    def segment_range(self, t: int, action: str, device: str, nbytes: int, stream: int) -> None:
        """segment_map / segment_unmap: a range of an expandable segment; no id."""
        self.events.append(Line(t, action, device, stream, nbytes=nbytes))

    # The end of the trace ------------------------------------------------------------------------

    def live_block(self, device: str, addr: int, state: str, requested: int, stream: int, frames: Any = None) -> None:
        """A block the snapshot lists as active (allocated or pending free) when the trace ended."""
        block = self.blocks.get((device, addr))
        pending = state in STATES_PENDING
        if block is None:
            site = self.sites.site_of(frames)
            if pending:
                block = self._synthesize(device, stream, requested,
                                         "blocks freed before the trace began, still pending in the snapshot",
                                         site)
                self.prelude.append(Line(0, "free", device, stream, block=block))
                block.freed = True
            else:
                block = self._synthesize(device, stream, requested,
                                         "blocks live in the snapshot, allocated before the trace began", site)
            self.blocks[(device, addr)] = block
            return
        if block.freed != pending:
            self.summary.notes["snapshot block state disagrees with the trace: trace kept"] += 1
        if requested != block.nbytes and requested > 0:
            # Traces of PyTorch versions that recorded rounded sizes: the snapshot knows better.
            block.nbytes = requested
            self.summary.notes["live block sizes taken from the snapshot's requested_size"] += 1

    def live_segment(self, device: str, addr: int, nbytes: int, stream: int) -> None:
        if (device, addr) in self.segments:
            return
        segment = Block(device, stream, nbytes, addr=addr)
        self.segments[(device, addr)] = segment
        self.prelude.append(Line(0, "segment_alloc", device, stream, block=segment))
        self.summary.synthesized["segments in the snapshot, made before the trace began"] += 1


# --- writing ------------------------------------------------------------------------------------------


@dataclass
class Written:
    """By id, what write_trace gave ids to: each allocation's site and mark, each segment's address (0: not
    known)."""

    alloc_sites: list[int] = field(default_factory=list)
    alloc_marks: list[str] = field(default_factory=list)
    segment_addresses: list[int] = field(default_factory=list)


def write_trace(out: IO[str], lines: Iterable[Line], header_comments: list[str], summary: Summary) -> Written:
    """Writes v1 lines: ids are given in file order (allocations and segments have separate counters)."""
    written = Written()
    out.write(f"{TRACE_MAGIC}\n{TRACE_COLUMNS}\n")
    for text in header_comments:
        out.write(f"# {text}\n")
    next_id = {"alloc": 0, "segment_alloc": 0}
    last_time = 0
    for seq, line in enumerate(lines):
        assert line.time_ns >= last_time, "lines must come in time order"
        last_time = line.time_ns
        ident = ""
        nbytes = line.nbytes
        if line.block is not None:
            if line.action in next_id:
                line.block.id = next_id[line.action]
                next_id[line.action] += 1
                if line.action == "alloc":
                    written.alloc_sites.append(line.block.site)
                    written.alloc_marks.append(line.block.mark)
                else:
                    written.segment_addresses.append(line.block.addr or 0)
            assert line.block.id is not None, f"{line.action} before its block's alloc"
            ident = str(line.block.id)
            nbytes = line.block.nbytes
        if line.comment:
            out.write(f"# {line.comment}\n")
        out.write(f"{seq},{line.time_ns},{line.action},{ident},{nbytes},{line.stream & U64},{line.device}\n")
        summary.written[line.action] += 1
        summary.devices.add(line.device)
        summary.streams.add(line.stream & U64)
    return written


def open_output(path: Path) -> tuple[IO[str], _output.AtomicFile]:
    """A temporary file beside `path` (renamed over it by its commit()), gzip when the name ends in .gz; a
    `path` that exists and is not a regular file is refused (_output)."""
    try:
        atomic = _output.AtomicFile(path, "-o")
    except _output.OutputError as e:
        raise InputError(str(e)) from None
    raw = atomic.file
    if path.name.endswith(".gz"):
        binary: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
    else:
        binary = raw
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
    if binary is not raw:
        # Closing the text wrapper closes the GzipFile, which leaves the file it wraps open.
        text._memstress_raw = raw  # type: ignore[attr-defined]
    return text, atomic


def close_output(text: IO[str]) -> None:
    raw = getattr(text, "_memstress_raw", None)
    text.close()
    if raw is not None:
        raw.close()


# --- reading the input ----------------------------------------------------------------------------------


class _DataOnlyUnpickler(pickle.Unpickler):
    """Loads plain data only: any global (class, function) is refused before it is looked up."""

    def find_class(self, module: str, name: str) -> Any:
        asked = f"{module}.{name}"
        if not asked.isprintable():  # STACK_GLOBAL's names are any strings: a line break would split the message
            asked = show(asked)
        raise pickle.UnpicklingError(
            f"the pickle asks for {asked}; a memory snapshot holds only plain data "
            "(dicts, lists, strings, numbers), so it was refused without running anything")


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.2f} MiB"


def read_input(path: Path) -> bytes | bytearray:
    """The file's bytes, gunzipped: a regular file only (a FIFO would block, /dev/zero never end), at most
    MAX_SNAPSHOT_BYTES before and after decompression, which stops as soon as it passes that."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise InputError(f"{path}: cannot read: {kind}; a snapshot is read from a regular file only")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_SNAPSHOT_BYTES:
            raise InputError(f"{path}: {_gib(st.st_size)}, larger than the {_gib(MAX_SNAPSHOT_BYTES)} a snapshot "
                             "may be (docs/limits.md)")
        os.set_blocking(fd, True)
        try:
            data = f.read(MAX_SNAPSHOT_BYTES + 1)
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise InputError(f"{path}: grew past the {_gib(MAX_SNAPSHOT_BYTES)} a snapshot may be while it was read")
    if not data.startswith(GZIP_MAGIC):
        return data
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as z:
            while chunk := z.read(1 << 20):
                out += chunk
                if len(out) > MAX_SNAPSHOT_BYTES:
                    raise InputError(f"{path}: decompresses to more than {_gib(MAX_SNAPSHOT_BYTES)}, the most a "
                                     "snapshot may be (docs/limits.md): refused")
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError; zlib.error is not
        raise InputError(f"{path}: broken gzip file: {e}") from None
    return out


def load_pickle(data: bytes | bytearray, path: Path) -> Any:
    try:
        return _DataOnlyUnpickler(io.BytesIO(data)).load()
    except Exception as e:  # noqa: BLE001 - a corrupt pickle fails in many ways; none is a traceback
        if isinstance(e, pickle.UnpicklingError) and "refused without running anything" in str(e):
            raise InputError(f"{path}: refused: {e}") from None
        raise InputError(
            f"{path}: not a PyTorch memory snapshot (a pickle) nor an RMM log (a CSV starting "
            f"'{RMM_HEADER}'): cannot unpickle it: {type(e).__name__}: {e}") from None


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


def convert_snapshot(snapshot: Any, path: Path, summary: Summary) -> TraceBuilder:
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

    per_device = [_device_entries(trace, d, path, summary) for d, trace in enumerate(traces)]
    timed = [e.time_us for entries in per_device for e in entries]
    t0 = min(timed) if timed else 0
    builder = TraceBuilder(summary)
    for item in merge(*per_device):
        _apply_entry(builder, item, t0, path, summary)
    _apply_segments(builder, segments, path)
    builder.metadata["alloc_conf"] = alloc_conf_of(snapshot.get("allocator_settings"))
    recorder = snapshot.get("memstress")  # the recorder's notes: flat, and only scalars are kept
    builder.metadata["recorder"] = {k: v for k, v in recorder.items()
                                    if isinstance(k, str) and (v is None or isinstance(v, (str, bool))
                                                               or (_is_int(v) and I64_MIN <= v <= U64)
                                                               or (isinstance(v, float) and math.isfinite(v)))} \
        if isinstance(recorder, dict) else None
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


# RMM ----------------------------------------------------------------------------------------------------

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


# --- the command ---------------------------------------------------------------------------------------


def _rmm_device(path: Path) -> str:
    """RMM's Python logging names each device's file '<name>.dev<N>'."""
    match = re.search(r"\.dev(\d+)(?:\.csv)?(?:\.gz)?$", path.name)
    return f"cuda:{match.group(1)}" if match else "cuda:0"


def facts_document(builder: TraceBuilder, written: Written, summary: Summary) -> dict[str, Any]:
    """What --facts writes (the module docstring; schema memstress.snapshot-facts/1)."""
    document = {
        "schema": "memstress.snapshot-facts/1",
        "source": summary.source_kind,
        "frames_recorded": builder.sites.with_frames > 0,
        "sites": builder.sites.sites,
        "alloc_sites": written.alloc_sites,
        "segment_addresses": written.segment_addresses,
        "ooms": builder.oom_facts,
        "alloc_conf": builder.metadata.get("alloc_conf"),
        "recorder": builder.metadata.get("recorder"),
    }
    # The recorder's marks only (a program's own metadata can be anything, a counter a step): where some allocation
    # has one; a plain snapshot's facts stay as they were.
    names = sorted({mark for mark in written.alloc_marks if mark.startswith(MARK_PREFIX) and len(mark) <= 64})
    if names:
        index = {name: i for i, name in enumerate(names)}
        document["marks"] = names
        document["alloc_marks"] = [index.get(mark, -1) for mark in written.alloc_marks]
    return document


def write_facts(path: Path, document: dict[str, Any]) -> None:
    """The facts as JSON, its strings made encodable first (a frame's file name may hold stray bytes: U+FFFD)."""
    text = json.dumps(_output.clean(document), separators=(",", ":"), default=str, allow_nan=False)
    try:
        _output.write_text(path, "--facts", text)
    except _output.OutputError as e:
        raise InputError(str(e)) from None


def convert(source: Path, target: Path, device: str | None = None, facts: Path | None = None) -> Summary:
    """Converts `source` into the trace `target` (and its facts into `facts`); raises InputError on bad
    input."""
    summary = Summary()
    data = read_input(source)
    head = data[:len(RMM_HEADER) + 3].decode("utf-8", errors="replace").lstrip("\ufeff")
    if head.startswith(RMM_HEADER):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{source}: an RMM log that is not UTF-8 text: {e}") from None
        builder = convert_rmm(text.lstrip("\ufeff"), source, device or _rmm_device(source), summary)
    else:
        if device is not None:
            raise InputError(f"--device applies to RMM logs; {source} is not one (PyTorch snapshots "
                             "name their devices)")
        builder = convert_snapshot(load_pickle(data, source), source, summary)

    name = _output.clean_text(source.name)  # a name's stray bytes as U+FFFD: the trace is UTF-8
    comments = [f"converted from {summary.source_kind} {name} by scripts/torch_snapshot_to_trace.py "
                "(harness/trace/trace_format.md, 'Converted traces')"]
    if builder.prelude:
        comments.append(f"the first {len(builder.prelude)} lines (time 0) are synthesized: "
                        "blocks and segments that existed before the trace began")
    # Synthesized segments first, then synthesized blocks (each pending one's alloc and free together).
    prelude = sorted(builder.prelude, key=lambda line: line.action != "segment_alloc")
    out, atomic = open_output(target)
    try:
        written = write_trace(out, [*prelude, *builder.events], comments, summary)
        close_output(out)
        atomic.commit()
    except _output.OutputError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        atomic.discard()
        raise InputError(f"-o {target}: cannot write the trace: {e.strerror or e}") from None
    except BaseException:
        atomic.discard()
        raise
    if facts is not None:
        write_facts(facts, facts_document(builder, written, summary))
    return summary


def _counts(counter: Counter) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


def report(summary: Summary, source: Path, target: Path) -> Iterator[str]:
    total = sum(summary.written.values())
    yield f"{PROG}: {source} ({summary.source_kind}) -> {target}: {total} lines"
    yield f"  by action: {_counts(summary.written) or 'none'}"
    yield f"  devices: {', '.join(sorted(summary.devices)) or 'none'}; " \
          f"streams: {', '.join(map(str, sorted(summary.streams))) or 'none'}"
    if summary.synthesized:
        yield f"  synthesized at time 0: {sum(summary.synthesized.values())}"
        for reason, n in summary.synthesized.most_common():
            yield f"    {n} {reason}"
    else:
        yield "  synthesized at time 0: none"
    if summary.skipped:
        yield f"  input left out: {_counts(summary.skipped)}"
    if summary.clamped:
        yield f"  times clamped to keep them non-decreasing: {summary.clamped} " \
              f"(at most {summary.max_clamp_ns} ns back)"
    if summary.untimed:
        yield f"  entries without time_us (given the time of the entry before): {summary.untimed}"
    for note, n in summary.notes.most_common():
        yield f"  note: {n} {note}"
    if not total:
        yield "  warning: nothing to write: was _record_memory_history(enabled='all') on?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="torch_snapshot_to_trace.py",
        description="Convert a PyTorch memory snapshot pickle (torch.cuda.memory._dump_snapshot) or an "
                    "RMM logging_resource_adaptor CSV into a memstress trace v1.")
    parser.add_argument("snapshot", type=Path, help="the snapshot pickle or RMM CSV (gzip allowed)")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the trace to write; a name ending in .gz is gzip-compressed")
    parser.add_argument("--facts", type=Path, help="also write the snapshot's facts the trace has no column "
                                                   "for (allocation sites, allocator settings; JSON)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr (errors still are)")
    parser.add_argument("--device", help="device label for an RMM log (default: cuda:N from a '.devN' "
                                         "file name, else cuda:0)")
    args = parser.parse_args(argv)
    from . import _pyenv

    _pyenv.ensure(PROG, __file__, [])  # the project's .venv when there is one (stdlib only otherwise)
    if args.device is not None and not re.fullmatch(r"[^,\s]+", args.device):
        parser.error(f"--device '{args.device}': a label has no commas or spaces (e.g. cuda:0)")
    if args.device is not None and _output.clean_text(args.device) != args.device:
        parser.error(f"--device '{_output.clean_text(args.device)}': not UTF-8 text (a label is written into the "
                     "trace)")
    try:
        for flag, path in (("-o", args.output), ("--facts", args.facts)):
            if path is not None:
                _output.check_target(path, flag)  # before the work, not after it
        summary = convert(args.snapshot, args.output, args.device, args.facts)
    except (InputError, _output.OutputError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    if not args.quiet:
        for line in report(summary, args.snapshot, args.output):
            print(line, file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
