"""Convert a PyTorch memory snapshot (or an RMM allocation log) into a memstress trace.

    python3 -m memstress.convert SNAPSHOT -o TRACE [--device LABEL] [--facts FACTS.json]

(PYTHONPATH naming python/ of the checkout, or share/memstress/python installed; ``memstress replay`` and
``memstress doctor`` run it so. Its usage and messages name it as it was run: ``memstress`` where the binary
ran it, so that its refusal of an input reads as the binary's own error; the traces it writes still name
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
not finite or beyond 2^53 microseconds, sizes and streams beyond 64 bits, a pickle whose lists, shared by its
memo, reach more trace entries and blocks than its size allows (one per 16 bytes, at most 2^25: Note [Snapshots
that expand], torch_snapshot.py), a recorder's note of more than 8 TiB of GPU memory (Note [The recorder's
capacity]), and an output (``-o``, ``--facts``) that exists and is not a regular file (_output.py: ``-o
/dev/null`` is refused, not replaced). An input refused writes nothing.
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

Where it is done: this module reads the input and writes the files; torch_snapshot.py walks a snapshot and
rmm_log.py an RMM log, each into the TraceBuilder of trace_builder.py, which gives the ids and writes the lines.

Safety: a pickle can run code when loaded. Snapshots hold only dicts, lists, tuples, strings, numbers,
booleans and None, so this script unpickles with ``find_class`` refusing every global: a pickle that
tries to call anything (``os.system``, say) is rejected before anything runs.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import pickle
import re
import stat
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import _output
from .rmm_log import RMM_HEADER, convert_rmm, rmm_device
from .torch_snapshot import convert_snapshot
from .trace_builder import InputError, Summary, TraceBuilder, Written, close_output, open_output, show, write_trace

EXIT_OK, EXIT_INPUT = 0, 2
GZIP_MAGIC = b"\x1f\x8b"
# The largest snapshot read, compressed or not, and decompressed (docs/limits.md): a gzip of 2 MB can inflate
# to gigabytes, and unpickling takes a few times what it inflates to.
MAX_SNAPSHOT_BYTES = 1 << 30
MARK_PREFIX = "memstress."  # the recorder's marks (recorder_marks.py): the only user_metadata the facts keep


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
            # As much as its size says, and the byte that finds its end (a read of the limit would reserve 1 GiB
            # however small the file); one that grows while read is read on, up to the limit and one byte.
            data: bytes | bytearray = f.read(st.st_size + 1)
            if len(data) > st.st_size:
                data = bytearray(data)
                while len(data) <= MAX_SNAPSHOT_BYTES:
                    more = f.read(min(1 << 20, MAX_SNAPSHOT_BYTES + 1 - len(data)))
                    if not more:
                        break
                    data += more
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


# --- the command ---------------------------------------------------------------------------------------


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
        builder = convert_rmm(text.lstrip("\ufeff"), source, device or rmm_device(source), summary)
    else:
        if device is not None:
            raise InputError(f"--device applies to RMM logs; {source} is not one (PyTorch snapshots "
                             "name their devices)")
        builder = convert_snapshot(load_pickle(data, source), source, summary, pickle_bytes=len(data))

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


def report(summary: Summary, source: Path, target: Path, prog: str = "python3 -m memstress.convert") -> Iterator[str]:
    total = sum(summary.written.values())
    yield f"{prog}: {source} ({summary.source_kind}) -> {target}: {total} lines"
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
    from . import _pyenv

    prog = _pyenv.prog("memstress.convert")
    parser = argparse.ArgumentParser(
        prog=prog,
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
    _pyenv.ensure(prog, __file__, [])  # the project's .venv when there is one (stdlib only otherwise)
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
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    if not args.quiet:
        for line in report(summary, args.snapshot, args.output, prog):
            print(line, file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
