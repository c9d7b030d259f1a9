"""The trace being built and written: allocator events keyed by address become trace lines keyed by id
(memstress trace v1, ``harness/trace/trace_format.md``). What each PyTorch action becomes is the design in
convert.py's docstring; the readers of the inputs are torch_snapshot.py and rmm_log.py."""

from __future__ import annotations

import gzip
import io
import reprlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import _output
from .snapshot_sites import SiteTable

TRACE_MAGIC = "# memstress-trace v1"
TRACE_COLUMNS = "seq,time_ns,action,id,bytes,stream,device"
U64 = (1 << 64) - 1
I64_MIN = -(1 << 63)  # streams are pointers: PyTorch may record one as a negative int64 (written & U64)
MAX_TIME_US = 1 << 53  # floats hold microseconds exactly to here (285 years); x1000 still fits 64 bits


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

BEFORE_RECORDING = -2  # the facts' site of a block allocated before the recording began


class InputError(Exception):
    """Bad input or usage: exit 2 with this message (which names the file)."""


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
    """Turns address-keyed allocator events into id-keyed trace lines (convert.py's docstring).

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
