"""Property-based tests of the snapshot converter, python/memstress/convert.py: hypothesis draws the inputs.

test_torch_snapshot_to_trace.py checks hand-made scenarios line by line and test_audit_inputs.py breaks one value
of one scenario at a time with a seeded sweep; here the same promises are stated as properties over inputs that
hypothesis generates, and shrinks to a smallest counterexample when one fails:

1. Any input converts or is refused (BadInput, CommandLine): any bytes (gzip-wrapped or not, behind a pickle's or
   an RMM log's first bytes, a valid pickle with bytes overwritten), the pickle of any plain data (dicts, lists,
   tuples, strings with lone surrogates, bytes, integers of any size, floats with NaN and infinities, booleans,
   None), of snapshot-shaped data whose every field may hold any of those, of a valid snapshot with values
   dropped, retyped, replaced or added, and any text behind an RMM log's header. Each converts into a trace that
   memstress's reader accepts (trace_check.py) and facts that are JSON, or is refused with the converter's
   InputError: one line naming the file, no output left behind. Never another exception, never a hang (each
   conversion runs under a timer). Through main(argv) and as a process: exit 0 or 2, one line on refusal.
2. What a conversion keeps (ValidInput): snapshots that snapshot_fixtures.FakeCachingAllocator records from any
   program of mallocs (with or without stack frames), frees (some pending on another stream), completions, OOMs
   and empty_cache calls on up to three devices and four streams (one negative, as PyTorch may pickle a
   cudaStream_t), with recording switched on at any point, convert into exactly the blocks, segments and OOMs
   harness/trace/trace_format.md ("Converted traces") says: a block from before the recording at time 0, a free
   where the program freed (or where a free pending when recording began completed), bytes the requested size,
   a free's stream its alloc's, sites from the user's frame (-2: allocated before the recording), synthesized
   lines first (segments, then blocks) and counted in the header. RMM logs of any allocations, frees (of blocks
   from before the log too), failures and clock times (across midnight) likewise.
3. A pickle that asks for a global (a callable to run, a class, a function, a value such as complex or
   Ellipsis that pickles through one; by GLOBAL, STACK_GLOBAL or INST with any names), anywhere in a snapshot,
   is refused naming the refusal, and nothing runs (Globals).

Hypothesis runs derandomized (the same examples every run), with no example database and its caches in a
temporary directory (nothing is written into the checkout), bounded example counts (the file runs in well under a
minute on one slow core) and no deadline (each conversion has HANG_S seconds instead). Without hypothesis
(requirements.txt) every test says "skipped 'needs hypothesis ...'", which CTest counts as skipped, unless
MEMSTRESS_REQUIRE_PYDEPS=1 (CI): then they fail. Converter bugs these properties found are kept as @example
regressions, each with its reason.
"""

from __future__ import annotations

import atexit
import builtins
import collections
import contextlib
import datetime
import decimal
import fractions
import functools
import gzip
import io
import json
import os
import pathlib
import pickle
import pickletools
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import memstress_package  # noqa: E402
import snapshot_fixtures as fx  # noqa: E402
from memstress import convert as converter  # noqa: E402
from memstress import torch_snapshot  # noqa: E402
from trace_check import Trace, parse_trace  # noqa: E402
from value_paths import paths_of  # noqa: E402

try:
    from hypothesis import HealthCheck, assume, example, given, settings
    from hypothesis import strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError:  # each test says so when it runs (PropertyTest.setUp): skipped, or failed under CI
    st = None
else:
    # Hypothesis keeps caches (the Unicode table, constants) in ./.hypothesis even without an example database:
    # in a temporary directory instead, nothing is written into the checkout.
    _HOME = tempfile.mkdtemp(prefix="memstress-hypothesis-")
    atexit.register(shutil.rmtree, _HOME, True)
    set_hypothesis_home_dir(_HOME)

HANG_S = 30  # one conversion takes milliseconds; this much on a loaded core is a hang
U64 = (1 << 64) - 1
PRE = -1  # a model event that happened before the recording began
DAY_US = 24 * 3600 * 1_000_000
RMM_HEADER = converter.RMM_HEADER
SURROGATES = ("\udcff", "\ud800", "\udce9")
HUGE = (2**63 - 1, 2**63, U64, 2**64, -(2**63), -(2**63) - 1, 2**70, -(2**70), 10**4300, 10**5000, -(10**5000))
STREAMS = (0, fx.SIDE_STREAM, fx.DEV1_STREAM, -0x7E5700001000)
WHERES = ("model.py", "train.py", "data/loader.py")
ENTRY_KEYS = ("action", "addr", "size", "stream", "time_us", "device_free", "frames")
ACTIONS = torch_snapshot.ADDRESSED_ACTIONS + ("oom", "snapshot", "annotate", "")
STATES = ("active_allocated", "active_pending_free", "active_awaiting_free", "inactive", "")


def checked(max_examples: int) -> Any:
    """Hypothesis' settings here: the same examples on every run, none stored, no deadline (as_users_run_it has the
    hang check), every health check off (inputs are large and slow to generate by design)."""
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


class Hang(BaseException):
    """A conversion ran past HANG_S. A BaseException, so that no `except Exception` in the converter can take it
    for a refusal."""


# Integers beyond 4300 digits: str() and repr() refuse them unless this limit is lifted (python >= 3.11, and the
# security releases of 3.8 to 3.10). Hypothesis shows its strategies and examples with repr(), so the limit is
# lifted here, and put back to python's default while the converter runs: a user's python has it.
INT_DIGITS_LIMIT = 4300
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)


@contextlib.contextmanager
def as_users_run_it(seconds: float = HANG_S) -> Any:
    """The converter's conditions: python's default limit on integer digits, and a timer (a hang fails)."""
    def expired(_signum: int, _frame: Any) -> None:
        raise Hang(f"the conversion still ran after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(INT_DIGITS_LIMIT)
    try:
        yield
    finally:
        if hasattr(sys, "set_int_max_str_digits"):
            sys.set_int_max_str_digits(0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- strategies: any data --------------------------------------------------------------------------------------
# Functions, not module constants: hypothesis may be missing, and each is built once (lru_cache).


@functools.lru_cache(maxsize=None)
def texts() -> Any:
    """Any string, lone surrogates, commas and line breaks included."""
    return st.lists(st.characters() | st.sampled_from(SURROGATES + ("\n", ",", "\r", "\x00")), max_size=10) \
        .map("".join)


@functools.lru_cache(maxsize=None)
def integers() -> Any:
    """Integers of any size: small, around 64 bits, and beyond the 4300 digits str() converts."""
    return st.integers() | st.integers(-(2**70), 2**70) | st.sampled_from(HUGE)


@functools.lru_cache(maxsize=None)
def scalars() -> Any:
    return st.none() | st.booleans() | integers() | st.floats() | texts() | st.binary(max_size=10)


@functools.lru_cache(maxsize=None)
def keys() -> Any:
    return scalars() | st.tuples(integers(), texts())


@functools.lru_cache(maxsize=None)
def plain_data() -> Any:
    """What a data-only pickle can hold: scalars in dicts, lists and tuples, nested."""
    return st.recursive(scalars(), lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
                        | st.dictionaries(keys(), inner, max_size=4), max_leaves=20)


@functools.lru_cache(maxsize=None)
def field_values() -> Any:
    """A snapshot field's value: a small int (addresses that collide), an int beyond 64 bits or 4300 digits, or
    anything."""
    return st.integers(0, 8).map(lambda i: i * 4096) | st.sampled_from(HUGE) | integers() | scalars() | plain_data()


@functools.lru_cache(maxsize=None)
def frames() -> Any:
    frame = st.fixed_dictionaries({"filename": st.sampled_from(("project/model.py", "??", "<frozen os>")) | texts(),
                                   "line": integers(), "name": texts()}) | plain_data()
    return st.lists(frame, max_size=3) | field_values()


@functools.lru_cache(maxsize=None)
def shaped_snapshots() -> Any:
    """Dicts with a snapshot's keys at every level, every value possibly of another type."""
    entry = st.fixed_dictionaries(
        {"action": st.sampled_from(ACTIONS) | field_values()},
        optional={"addr": field_values(), "size": field_values(), "stream": st.sampled_from(STREAMS) | field_values(),
                  "time_us": st.integers(0, 100) | field_values(), "device_free": field_values(),
                  "frames": frames()}) | field_values()
    block = st.fixed_dictionaries(
        {"size": field_values()},
        optional={"address": field_values(), "requested_size": field_values(),
                  "state": st.sampled_from(STATES) | field_values(), "frames": frames()}) | field_values()
    segment = st.fixed_dictionaries(
        {"device": st.integers(0, 3) | field_values(), "address": field_values(),
         "blocks": st.lists(block, max_size=3) | field_values()},
        optional={"total_size": field_values(), "stream": field_values(),
                  "is_expandable": st.booleans() | field_values()}) | field_values()
    settings_keys = st.sampled_from(("PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
                                     "expandable_segments"))
    return st.fixed_dictionaries(
        {"segments": st.lists(segment, max_size=3) | field_values(),
         "device_traces": st.lists(st.lists(entry, max_size=8), max_size=3) | field_values()},
        optional={"host_traces": st.lists(field_values(), max_size=2) | field_values(),
                  "host_segments": field_values(),
                  "allocator_settings": st.dictionaries(settings_keys, field_values(), max_size=4) | field_values(),
                  "memstress": st.dictionaries(keys(), field_values(), max_size=4) | field_values()})


def pickled(strategy: Any) -> Any:
    """The pickle of what `strategy` draws, in any protocol, gzip-compressed or not."""
    return st.tuples(strategy, st.integers(0, pickle.HIGHEST_PROTOCOL), st.booleans()).map(
        lambda t: maybe_gzip(pickle.dumps(t[0], protocol=t[1]), t[2]))


def maybe_gzip(data: bytes, packed: bool) -> bytes:
    return gzip.compress(data, mtime=0) if packed else data


@functools.lru_cache(maxsize=None)
def any_bytes() -> Any:
    """Bytes: any, behind the first bytes of a pickle, a gzip file or an RMM log; gzip-wrapped whole or cut
    short; a valid snapshot's pickle with a few bytes overwritten."""
    starts = st.sampled_from((b"", b"\x80\x02", b"\x80\x04\x95", b"\x80\x05", b"(dp0\n", b"}q\x00(", b"\x1f\x8b",
                              RMM_HEADER.encode() + b"\n", b"\xef\xbb\xbf" + RMM_HEADER.encode() + b"\r\n"))
    joined = st.tuples(starts, st.binary(max_size=600)).map(b"".join)
    packed = st.tuples(joined, st.integers(0, 400)).map(lambda t: gzip.compress(t[0], mtime=0)[:max(t[1], 10)])
    scenario = pickle.dumps(fx.scenario()[0], protocol=4)
    overwritten = st.lists(st.tuples(st.integers(0, len(scenario) - 1), st.integers(0, 255)), min_size=1,
                           max_size=4).map(lambda changes: overwrite(scenario, changes))
    return joined | packed | overwritten | st.binary(max_size=2000)


def overwrite(data: bytes, changes: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for at, value in changes:
        out[at] = value
    return bytes(out)


# --- strategies: RMM logs --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def rmm_fields() -> Any:
    clock = st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
                      st.text("0123456789", max_size=12)).map(lambda t: f"{t[0]}:{t[1]:02d}:{t[2]:02d}"
                                                                        + (f".{t[3]}" if t[3] else ""))
    words = st.sampled_from(("nan", "inf", "-inf", "1e400", "-1e400", "1e-400", "(nil)", "nil", "NULL", "0x", "0x-5",
                             "-0x5", "allocate", "free", "allocate failure", " ", "", "1_000", "\u0663"))
    return (integers().map(str) | clock | st.floats().map(repr) | words | st.integers(0, 2**66).map(hex)
            | st.integers(-(2**53), 2**53).map(lambda us: f"{us / 1e6}") | texts())


@functools.lru_cache(maxsize=None)
def rmm_logs() -> Any:
    """An RMM log's header (with a BOM or not), then any rows: six fields of the kinds RMM writes and of any
    other, or any number of fields; CRLF or LF; as UTF-8 (lone surrogates make it invalid), gzip or not."""
    action = st.sampled_from(("allocate", "free", "allocate failure")) | rmm_fields()
    six = st.tuples(rmm_fields(), rmm_fields(), action, rmm_fields(), rmm_fields(), rmm_fields()).map(",".join)
    row = six | six | st.lists(rmm_fields(), max_size=8).map(",".join) | texts()
    log = st.tuples(st.sampled_from(("", "\ufeff")), st.lists(row, max_size=12), st.sampled_from(("\n", "\r\n")),
                    st.booleans())
    text = log.map(lambda t: t[0] + RMM_HEADER + t[2] + t[2].join(t[1]) + (t[2] if t[3] else ""))
    return st.tuples(text, st.booleans()).map(lambda t: maybe_gzip(t[0].encode("utf-8", "surrogatepass"), t[1]))


def midnight_overflow_log() -> bytes:
    """Regression: times alternating between -2^53 and +2^53 us, each step back taken for a clock passing midnight,
    added a day per row pair until time_ns passed 2^64 (after 5,000 pairs), which no trace reader accepts."""
    far = (1 << 53) // 1_000_000
    rows = [f"1,{far if i % 2 else -far},allocate,{0x1000 + i:#x},1,0" for i in range(12_000)]
    return "\n".join([RMM_HEADER, *rows, ""]).encode()


# --- strategies: programs, run on the fake caching allocator ----------------------------------------------------


@dataclass
class Program:
    devices: int
    ops: list[tuple]
    record_from: int  # recording is switched on before this op (at the end: only the snapshot; past it: never)


@functools.lru_cache(maxsize=None)
def programs() -> Any:
    device = st.integers(0, 2)
    stream = st.integers(0, len(STREAMS) - 1)
    size = st.integers(1, 4 << 20) | st.sampled_from((1, 511, 512, 513, 1 << 20, (1 << 20) + 1, 3 << 20, 40 << 20))
    where = st.none() | st.tuples(st.sampled_from(WHERES), st.integers(1, 999))
    args = {"malloc": st.tuples(device, size, stream, where), "free": st.tuples(st.integers(0, 63), st.booleans()),
            "complete": st.tuples(st.integers(0, 63)), "oom": st.tuples(device, size, stream, st.integers(0, 1 << 40)),
            "empty_cache": st.just(())}
    # Weights by repetition in sampled_from (one_of drops repeated strategies): mallocs, then frees and completions,
    # come up most, so that blocks and segments go through every state before and after the recording starts.
    kinds = st.sampled_from(("malloc",) * 3 + ("free",) * 2 + ("complete",) * 2 + ("oom", "empty_cache"))
    op = kinds.flatmap(lambda kind: args[kind].map(lambda a: (kind, *a)))
    return st.lists(op, max_size=40).flatmap(lambda ops: st.builds(Program, devices=st.integers(1, 3), ops=st.just(ops),
                                                                   record_from=st.integers(0, len(ops) + 1)))


@dataclass
class ModelBlock:
    """One allocation as the program made it; times are the recorded entries' time_us, PRE or None (not yet)."""

    device: int
    size: int
    stream: int
    site: tuple | None  # (filename, line, function) of the user's frame
    alloc: int
    free: int | None = None
    done: int | None = None


@dataclass
class ModelSegment:
    device: int
    address: int
    size: int
    stream: int
    alloc: int
    free: int | None = None


@dataclass
class Model:
    """What a program did, from its side: what the converted trace must hold."""

    devices: int
    blocks: list[ModelBlock] = field(default_factory=list)
    segments: list[ModelSegment] = field(default_factory=list)
    ooms: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # device, time_us, bytes, stream, free
    recording_at_end: bool = False


def run_program(program: Program) -> tuple[dict[str, Any], Model]:
    """Runs `program` on FakeCachingAllocator; returns its snapshot and the model of what happened."""
    fake = fx.FakeCachingAllocator(devices=program.devices)
    model = Model(program.devices)
    live: list[tuple[int, int, ModelBlock]] = []  # device, address, block
    pending: list[tuple[int, int, ModelBlock]] = []
    segments: dict[int, tuple[Any, ModelSegment]] = {}  # id(FakeSegment) -> it (kept: ids stay unique), its model

    def new_entries(before: list[int], action: str) -> list[dict[str, Any]]:
        return [e for d, n in enumerate(before) for e in fake.traces[d][n:] if e["action"] == action]

    def time_of(before: list[int], action: str, address: int | None = None) -> int:
        if not fake.recording:
            return PRE
        found = [e for e in new_entries(before, action) if address is None or e.get("addr") == address]
        assert len(found) == 1, (action, found)
        return found[0]["time_us"]

    for i, op in enumerate(program.ops):
        fake.recording = i >= program.record_from
        before = [len(t) for t in fake.traces]
        if op[0] == "malloc":
            _, device, size, stream_index, where = op
            device %= program.devices
            stack = None if where is None else fx.frames_at(where[0], where[1], "forward")
            address = fake.malloc(device, size, STREAMS[stream_index], frames=stack)
            site = None if stack is None else (stack[1]["filename"], stack[1]["line"], stack[1]["name"])
            block = ModelBlock(device, size, STREAMS[stream_index], site, time_of(before, "alloc"))
            model.blocks.append(block)
            live.append((device, address, block))
            for segment in fake.segments:
                if id(segment) not in segments:
                    segments[id(segment)] = segment, ModelSegment(segment.device, segment.address, segment.total_size,
                                                                  segment.stream, time_of(before, "segment_alloc"))
                    model.segments.append(segments[id(segment)][1])
        elif op[0] == "free" and live:
            device, address, block = live.pop(op[1] % len(live))
            fake.free(device, address, pending=op[2])
            block.free = time_of(before, "free_requested")
            if op[2]:
                pending.append((device, address, block))
            else:
                block.done = time_of(before, "free_completed")
        elif op[0] == "complete" and pending:
            device, address, block = pending.pop(op[1] % len(pending))
            fake.complete(device, address)
            block.done = time_of(before, "free_completed")
        elif op[0] == "oom":
            _, device, size, stream_index, device_free = op
            device %= program.devices
            fake.oom(device, size, STREAMS[stream_index], device_free=device_free)
            if fake.recording:
                model.ooms.append((device, time_of(before, "oom"), fx.round_size(size), STREAMS[stream_index],
                                   device_free))
        elif op[0] == "empty_cache":
            kept = {id(s) for s in fake.segments}
            fake.empty_cache()
            gone = kept - {id(s) for s in fake.segments}
            for key in gone:
                segments[key][1].free = time_of(before, "segment_free", segments[key][1].address)
    fake.recording = program.record_from <= len(program.ops)
    model.recording_at_end = fake.recording
    return fake.snapshot(), model


# --- what the trace must hold ----------------------------------------------------------------------------------


CASES = ("recorded alloc", "recorded alloc with frames", "recorded free", "recorded free_completed",
         "allocated before, freed in the trace", "live before and after", "pending before and after",
         "pending before, completed in the trace", "segment before, freed in the trace", "segment before and after",
         "recorded segment", "oom")


EVERY_CASE = Program(devices=1, record_from=6, ops=[
    ("malloc", 0, 512, 2, None),  # K: live before and after (on a stream of its own: a segment of its own)
    ("malloc", 0, 4096, 3, None),  # D
    ("free", 1, True),  # D: pending before and after
    ("malloc", 0, 1000, 0, None),  # A
    ("malloc", 0, 3 << 20, 1, None),  # B: a large segment of its own
    ("free", 1, True),  # A pending; live: K, B
    ("malloc", 0, 700, 0, ("model.py", 7)),  # the recording starts: G, with frames, in A's segment
    ("complete", 1),  # A completes in the trace
    ("free", 1, False),  # B, allocated before, freed in the trace
    ("free", 1, False),  # G
    ("empty_cache",),  # B's segment, made before, freed in the trace
    ("malloc", 0, 5 << 20, 0, None),  # a segment recorded
    ("oom", 0, 1 << 40, 0, 123 << 20)])
"""A program that shows every one of CASES (an explicit example: some are rare among the drawn ones)."""


def cases_of(model: Model) -> set[str]:
    """Which CASES a program's model shows."""
    cases = set()
    for b in model.blocks:
        recorded = b.alloc != PRE
        cases |= {"recorded alloc"} if recorded else set()
        cases |= {"recorded alloc with frames"} if recorded and b.site else set()
        cases |= {"recorded free"} if b.free not in (None, PRE) else set()
        cases |= {"recorded free_completed"} if b.done not in (None, PRE) else set()
        if not recorded:
            cases |= {"allocated before, freed in the trace"} if b.free not in (None, PRE) else set()
            cases |= {"live before and after"} if b.free is None else set()
            cases |= {"pending before and after"} if b.free == PRE and b.done is None else set()
            completed = b.free == PRE and b.done not in (None, PRE)
            cases |= {"pending before, completed in the trace"} if completed else set()
    for s in model.segments:
        cases |= {"recorded segment"} if s.alloc != PRE else set()
        cases |= {"segment before, freed in the trace"} if s.alloc == PRE and s.free not in (None, PRE) else set()
        cases |= {"segment before and after"} if s.alloc == PRE and s.free is None else set()
    return cases | ({"oom"} if model.ooms else set())


RMM_CASES = ("free", "free_unknown", "allocate failure", "other", "clock past midnight")


def model_t0(model: Model) -> int:
    """The earliest recorded time_us: what converted times count from."""
    recorded = [t for b in model.blocks for t in (b.alloc, b.free, b.done) if t not in (None, PRE)]
    recorded += [t for s in model.segments for t in (s.alloc, s.free) if t not in (None, PRE)]
    recorded += [o[1] for o in model.ooms]
    return min(recorded, default=0)  # nothing recorded: every line is at time 0


def rmm_program(ops: list, start_us: int, form: str) -> tuple[list[str], Counter, list, int, set[str]]:
    """An RMM log's rows for `ops` (each after its step in microseconds, from `start_us` into the day), and what
    the trace must hold: blocks (time, bytes, stream, free time), OOMs and how many rows are left out; and which
    RMM_CASES the log shows."""
    base, unknown = 0x7F0000000000, 0x500000000000
    live: dict[int, tuple[int, int, int, list]] = {}  # pointer -> size, stream, alloc time, model row
    rows, blocks, ooms, skipped = [], [], [], 0
    now = start_us
    first = None
    freed = False  # a block allocated in the log was freed
    for (kind, *args), step in ops:
        if kind == "free" and not live:
            continue  # nothing to free: no row
        now += step
        first = now if first is None else first
        t_ns = (now - first) * 1000
        stamp = (f"{now // 3_600_000_000 % 24:02d}:{now // 60_000_000 % 60:02d}:{now // 1_000_000 % 60:02d}"
                 f".{now % 1_000_000:06d}" if form == "clock" else f"{now // 1_000_000}.{now % 1_000_000:06d}")
        if kind == "allocate":
            pointer = next(base + i * 0x100 for i in range(len(live) + 1) if base + i * 0x100 not in live)
            stream = STREAMS[1 + args[1]] if args[1] < 2 else 0
            block = [t_ns, args[0], stream, None]
            live[pointer] = (args[0], stream, t_ns, block)
            blocks.append(block)
            rows.append(f"7,{stamp},allocate,{pointer:#x},{args[0]},{stream:#x}")
        elif kind == "free":
            pointer = sorted(live)[args[0] % len(live)]
            size, stream, _, block = live.pop(pointer)
            block[3] = t_ns
            freed = True
            rows.append(f"7,{stamp},free,{pointer:#x},{size},{stream:#x}")
        elif kind == "free_unknown":
            stream = STREAMS[1 + args[1]] if args[1] < 2 else 0
            blocks.append([0, args[0], stream, t_ns])  # allocated before the log began
            rows.append(f"8,{stamp},free,{unknown:#x},{args[0]},{stream:#x}")
            unknown += 0x100
        elif kind == "allocate failure":
            stream = STREAMS[1 + args[1]] if args[1] < 2 else 0
            ooms.append((t_ns, args[0], stream))
            rows.append(f"7,{stamp},allocate failure,(nil),{args[0]},{stream:#x}")
        elif kind == "other":
            skipped += 1
            rows.append(f"7,{stamp},{args[0]},0x0,0,0x0")
    cases = {kind for (kind, *_args), _step in ops} - {"allocate", "free"} | ({"free"} if freed else set())
    if form == "clock" and first is not None and now // DAY_US > first // DAY_US:
        cases.add("clock past midnight")
    return rows, Counter(tuple(b) for b in blocks), ooms, skipped, cases


# --- strategies: valid snapshots, broken ----------------------------------------------------------------------


RETYPES: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("str", repr), ("float", float), ("negated", lambda v: -v), ("+2^64", lambda v: v + 2**64),
    ("bool", bool), ("in a list", lambda v: [v]), ("in a tuple", lambda v: (v,)), ("in a dict", lambda v: {"v": v}),
    ("bytes", lambda v: repr(v).encode()), ("None", lambda v: None), ("list of items", lambda v: list(v.items())),
    ("tuple", tuple), ("times 1000.5", lambda v: v * 1000.5),
)


def _broken_snapshot(draw: Any) -> dict[str, Any]:
    """A valid snapshot (a program's), then one to four values dropped, retyped, replaced by any data, or added
    (a trace entry, a block, a key), anywhere."""
    snapshot, _ = run_program(draw(programs()))
    for _ in range(draw(st.integers(1, 4))):
        paths = paths_of(snapshot)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = snapshot
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        how = draw(st.sampled_from(("drop", "retype", "replace", "add")))
        if how == "drop":
            del parent[key]
        elif how == "retype":
            _name, change = draw(st.sampled_from(RETYPES))
            try:
                parent[key] = change(parent[key])
            except (TypeError, ValueError, AttributeError, OverflowError):
                parent[key] = None
        elif how == "replace":
            parent[key] = draw(field_values())
        elif isinstance(parent, list):
            parent.insert(key, draw(st.fixed_dictionaries({"action": st.sampled_from(ACTIONS)},
                                                          optional={k: field_values() for k in ENTRY_KEYS[1:]})
                                    | field_values()))
        else:
            parent[draw(st.sampled_from(ENTRY_KEYS + ("blocks", "address", "state", "requested_size")) | keys())] = \
                draw(field_values())
    return snapshot


@functools.lru_cache(maxsize=None)
def broken_snapshots() -> Any:
    return st.composite(_broken_snapshot)()


def any_input() -> Any:
    """(file name, bytes) of any kind above."""
    return st.one_of(any_bytes().map(lambda b: ("input.bin", b)),
                     pickled(plain_data()).map(lambda b: ("plain.pickle", b)),
                     pickled(shaped_snapshots()).map(lambda b: ("shaped.pickle", b)),
                     pickled(broken_snapshots()).map(lambda b: ("broken.pickle", b)),
                     rmm_logs().map(lambda b: ("log.csv", b)))


# --- strategies: globals -------------------------------------------------------------------------------------


class Calls:
    """Pickles into a call of `function(*args)`: what a malicious snapshot holds."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self.function, self.args = function, args

    def __reduce__(self) -> tuple[Any, tuple]:
        return self.function, self.args


def payloads(marker: Path) -> list[Calls]:
    """Calls that each create `marker`, if anything runs them."""
    return [Calls(os.system, f"touch '{marker}'"), Calls(builtins.exec, f"open({str(marker)!r}, 'w').close()"),
            Calls(builtins.eval, f"open({str(marker)!r}, 'w').close()"), Calls(subprocess.call, ["touch", str(marker)]),
            Calls(pathlib.Path.touch, pathlib.Path(marker))]


# Plain-looking values that pickle through a global (a class, a function, a singleton): a snapshot holds none.
GLOBAL_VALUES = (complex(1, 2), int, len, os.system, Ellipsis, NotImplemented, range(3), slice(1, 2),
                 collections.OrderedDict(a=1), decimal.Decimal("1.5"), fractions.Fraction(1, 3),
                 datetime.date(2025, 1, 1), pathlib.PurePosixPath("/x"), collections.Counter("ab"), frozenset({1}),
                 set(), bytearray(b"x"), b"bytes", type(None))

GLOBAL_OPCODES = {"GLOBAL", "STACK_GLOBAL", "INST"}


def asks_for_a_global(data: bytes) -> bool:
    return any(op.name in GLOBAL_OPCODES for op, _arg, _pos in pickletools.genops(data))


def raw_global(kind: str, module: str, name: str, call: bool) -> bytes:
    """A protocol-2 pickle that asks for module.name by GLOBAL, STACK_GLOBAL or INST (and calls it, with `call`)."""
    if kind == "STACK_GLOBAL":
        def string(s: str) -> bytes:
            encoded = s.encode("utf-8", "surrogatepass")
            return b"X" + len(encoded).to_bytes(4, "little") + encoded
        ask = string(module) + string(name) + b"\x93"
    elif kind == "GLOBAL":
        ask = b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    else:
        return b"\x80\x02(X\x01\x00\x00\x00xi" + module.encode() + b"\n" + name.encode() + b"\n."
    return b"\x80\x02" + ask + (b"X\x01\x00\x00\x00x\x85R" if call else b"") + b"."


# --- the tests ------------------------------------------------------------------------------------------------


@dataclass
class Result:
    refused: str | None = None
    text: str = ""
    trace: Trace | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    summary: Any = None


class PropertyTest(unittest.TestCase):
    def setUp(self) -> None:
        if st is None:
            if os.environ.get("MEMSTRESS_REQUIRE_PYDEPS") == "1":
                self.fail("hypothesis is missing (requirements.txt; scripts/setup installs it into .venv), and "
                          "MEMSTRESS_REQUIRE_PYDEPS=1 requires it")
            self.skipTest("needs hypothesis (requirements.txt)")
        tmp = tempfile.TemporaryDirectory(prefix="memstress-properties-")
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)

    def convert(self, data: bytes, name: str, *, device: str | None = None, packed: bool = False) -> Result:
        """Converts `data` (written to `name`) in-process: a trace trace_check accepts and JSON facts, or an
        InputError of one line naming the file, with nothing left behind. Any other exception fails the test."""
        source = self.dir / name
        source.write_bytes(data)
        target = self.dir / ("out.trace.csv.gz" if packed else "out.trace.csv")
        facts = self.dir / "facts.json"
        for old in self.dir.iterdir():  # what the last example left (a trace of the other name, say)
            if old != source:
                old.unlink()
        try:
            with as_users_run_it():
                summary = converter.convert(source, target, device, facts)
        except converter.InputError as e:
            message = str(e)
            self.assertIn(str(source), message)
            self.assertEqual(len(message.splitlines()), 1, f"a refusal is one line: {message!r}")
            self.assertEqual(sorted(p.name for p in self.dir.iterdir()), [name], "a refusal leaves nothing behind")
            return Result(refused=message)
        raw = target.read_bytes()
        text = (gzip.decompress(raw) if packed else raw).decode("utf-8")
        return Result(text=text, trace=parse_trace(text, target.name), facts=json.loads(facts.read_bytes().decode()),
                      summary=summary)


class BadInput(PropertyTest):
    """Any input converts into a valid trace or is refused with an InputError naming the file (in-process)."""

    def sweep(self, strategy: Any, name: str, examples: int, *, both: bool = True, regressions: tuple = ()) -> None:
        outcomes: Counter = Counter()

        def check(data: bytes, packed: bool) -> None:
            outcomes["refused" if self.convert(data, name, packed=packed).refused else "converted"] += 1

        for regression in regressions:
            check = example(regression, False)(check)
        given(strategy, st.booleans())(checked(examples)(check))()
        if both:  # the strategy reaches both outcomes: neither property holds vacuously
            self.assertGreater(outcomes["converted"], 0, outcomes)
        self.assertGreater(outcomes["refused"], 0, outcomes)

    def test_any_bytes(self) -> None:
        self.sweep(any_bytes(), "input.bin", 150, both=False)

    def test_pickles_of_any_plain_data(self) -> None:
        big = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 10**5000, "stream": 0}]]}
        self.sweep(pickled(plain_data()), "plain.pickle", 100, both=False, regressions=(
            # show() of an integer beyond 4300 digits (str() refuses it) raised ValueError: a traceback.
            pickle.dumps({10**5000: 1}), pickle.dumps(big),
            # The keys of a dict that is no snapshot were listed as they are: a line break split the message.
            pickle.dumps({"a\nb": 1})))

    def test_snapshot_shaped_pickles_with_any_fields(self) -> None:
        line = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 1, "stream": 0,
                                                    "frames": [{"filename": "/u/a.py", "line": 10**5000,
                                                                "name": "f"}]}]]}
        settings_ = {"segments": [], "device_traces": [], "allocator_settings": {"garbage_collection_threshold":
                                                                                 10**5000}}
        self.sweep(pickled(shaped_snapshots()), "shaped.pickle", 200, regressions=(
            # A frame's line or a setting beyond 4300 digits: str() raised ValueError in the site and the settings.
            pickle.dumps(line), pickle.dumps(settings_)))

    def test_valid_snapshots_broken_anywhere(self) -> None:
        self.sweep(pickled(broken_snapshots()), "broken.pickle", 150)

    def test_rmm_logs_with_any_rows(self) -> None:
        self.sweep(rmm_logs(), "log.csv", 200, regressions=(midnight_overflow_log(),))


class ValidInput(PropertyTest):
    """What a correct conversion keeps, against a model of what the program did."""

    def test_programs_on_the_fake_allocator(self) -> None:
        seen: Counter = Counter()

        @checked(200)
        @given(programs(), st.booleans())
        @example(EVERY_CASE, False)
        def check(program: Program, packed: bool) -> None:
            snapshot, model = run_program(program)
            result = self.convert(maybe_gzip(pickle.dumps(snapshot), packed), "snap.pickle", packed=packed)
            self.assertIsNone(result.refused)
            self.assert_keeps(result, model)
            seen.update(cases_of(model))

        check()
        # Every case of trace_format.md's "what happened before recording began" came up, most many times over.
        self.assertEqual(set(seen), set(CASES), seen)

    def assert_keeps(self, result: Result, model: Model) -> None:
        trace, facts = result.trace, result.facts
        t0 = model_t0(model)

        def ns(t: int | None) -> int | None:
            return None if t is None else 0 if t == PRE else (t - t0) * 1000

        expected_blocks: Counter = Counter()
        prelude = 0
        for b in model.blocks:
            if b.alloc == PRE and b.free == PRE and b.done == PRE:
                continue  # gone before the recording began: no trace of it
            if b.free == PRE:
                free = 0 if b.done is None else ns(b.done)  # pending at the snapshot, or completed in the trace
                prelude += b.done is None
            else:
                free = ns(b.free)
            site = -2 if b.alloc == PRE else b.site if b.site else -1
            prelude += b.alloc == PRE
            expected_blocks[(f"cuda:{b.device}", ns(b.alloc), b.size, b.stream & U64, free, ns(b.done), site)] += 1
        expected_segments: Counter = Counter()
        for s in model.segments:
            if s.alloc == PRE and s.free == PRE:
                continue
            prelude += s.alloc == PRE
            expected_segments[(f"cuda:{s.device}", ns(s.alloc), s.size, s.stream & U64, ns(s.free), s.address)] += 1

        blocks: dict[int, list] = {}
        segments: dict[int, list] = {}
        for e in trace.lines:
            self.assertIn(e.action, ("alloc", "free", "free_completed", "segment_alloc", "segment_free", "oom"))
            if e.action == "alloc":
                site = facts["alloc_sites"][e.id]
                if site >= 0:
                    site = tuple(facts["sites"][site][k] for k in ("filename", "line", "function"))
                blocks[e.id] = [e.device, e.time_ns, e.nbytes, e.stream, None, None, site]
            elif e.action in ("free", "free_completed"):
                self.assertEqual((e.device, e.stream), (blocks[e.id][0], blocks[e.id][3]), "a free carries its "
                                 "alloc's device and stream")
                blocks[e.id][4 if e.action == "free" else 5] = e.time_ns
            elif e.action == "segment_alloc":
                segments[e.id] = [e.device, e.time_ns, e.nbytes, e.stream, None, facts["segment_addresses"][e.id]]
            elif e.action == "segment_free":
                segments[e.id][4] = e.time_ns
            if e.action != "oom":
                self.assertGreater(e.nbytes, 0)
        self.assertEqual(Counter(tuple(b) for b in blocks.values()), expected_blocks)
        self.assertEqual(Counter(tuple(s) for s in segments.values()), expected_segments)
        self.assertEqual([(e.device, e.time_ns, e.nbytes, e.stream) for e in trace.lines if e.action == "oom"],
                         [(f"cuda:{d}", ns(t), n, s & U64) for d, t, n, s, _ in model.ooms])
        self.assertEqual([o["device_free"] for o in facts["ooms"]], [o[4] for o in model.ooms])

        # Synthesized lines first, at time 0, segments before blocks, counted in the header; nothing else added.
        head = trace.lines[:prelude]
        self.assertTrue(all(e.time_ns == 0 for e in head))
        actions = [e.action for e in head]
        self.assertEqual(actions, sorted(actions, key=lambda a: a != "segment_alloc"))
        said = [c for c in trace.comments if "are synthesized" in c]
        self.assertEqual(said, [f"the first {prelude} lines (time 0) are synthesized: blocks and segments that "
                                "existed before the trace began"] if prelude else [])
        self.assertEqual(sum(result.summary.synthesized.values()),
                         prelude - sum(b.alloc == b.free == PRE and b.done is None for b in model.blocks))
        self.assertEqual(result.summary.skipped.get("snapshot", 0), model.devices if model.recording_at_end else 0)
        self.assertEqual(result.summary.clamped, 0)

    def test_rmm_logs_of_any_program(self) -> None:
        op = (st.tuples(st.just("allocate"), st.integers(0, 1 << 30), st.integers(0, 2))
              | st.tuples(st.just("free"), st.integers(0, 63))
              | st.tuples(st.just("free_unknown"), st.integers(0, 1 << 30), st.integers(0, 2))
              | st.tuples(st.just("allocate failure"), st.integers(0, 1 << 40), st.integers(0, 2))
              | st.tuples(st.just("other"), st.sampled_from(("reallocate", "allocate_async", ""))))
        steps = st.integers(0, 10_000) | st.integers(0, 3_600_000_000)  # microseconds; up to an hour
        start = st.integers(0, DAY_US - 1) | st.integers(0, 60_000_000).map(lambda us: DAY_US - 1 - us)  # or near 0:00

        seen: Counter = Counter()

        @checked(120)
        @given(st.lists(st.tuples(op, steps), max_size=30), start,
               st.sampled_from(("clock", "seconds")), st.sampled_from((None, "name", "option")), st.booleans())
        def check(ops: list, start_us: int, form: str, device_from: str | None, crlf: bool) -> None:
            rows, expected, ooms, skipped, cases = rmm_program(ops, start_us, form)
            seen.update(cases)
            device, name, option = "cuda:0", "log.csv", None
            if device_from == "name":
                device, name = "cuda:3", "rmm_log.csv.dev3"
            elif device_from == "option":
                device = option = "sim:80G"
            text = (RMM_HEADER + "\n" + "".join(r + "\n" for r in rows)).replace("\n", "\r\n" if crlf else "\n")
            result = self.convert(text.encode(), name, device=option)
            self.assertIsNone(result.refused)
            blocks: dict[int, list] = {}
            for e in result.trace.lines:
                self.assertEqual(e.device, device)
                if e.action == "alloc":
                    blocks[e.id] = [e.time_ns, e.nbytes, e.stream, None]
                elif e.action == "free":
                    self.assertEqual(e.stream, blocks[e.id][2])
                    blocks[e.id][3] = e.time_ns
            self.assertEqual(Counter(tuple(b) for b in blocks.values()), expected)
            self.assertEqual([(e.time_ns, e.nbytes, e.stream) for e in result.trace.lines if e.action == "oom"], ooms)
            self.assertEqual(sum(result.summary.skipped.values()), skipped)
            self.assertEqual(result.summary.clamped, 0)

        check()
        self.assertEqual(set(seen), set(RMM_CASES), seen)


class Globals(PropertyTest):
    """A pickle that asks for any global is refused before anything runs."""

    def assert_refused_unrun(self, data: bytes, marker: Path | None = None) -> None:
        result = self.convert(data, "evil.pickle")
        self.assertIsNotNone(result.refused)
        self.assertIn("refused without running anything", result.refused)
        if marker is not None:
            self.assertFalse(marker.exists(), "the pickle's code ran")

    def test_the_payloads_do_run_when_unpickled_naively(self) -> None:
        """The control: each payload below creates its marker when pickle.loads runs it."""
        for i, payload in enumerate(payloads(self.dir / "marker")):
            with self.subTest(i):
                pickle.loads(pickle.dumps(payload))
                self.assertTrue((self.dir / "marker").exists())
                (self.dir / "marker").unlink()

    def test_calls_and_global_values_anywhere_in_a_snapshot(self) -> None:
        marker = self.dir / "marker"
        values = st.sampled_from(payloads(marker)) | st.sampled_from(GLOBAL_VALUES)

        @checked(120)
        @given(programs(), st.data(), values, st.integers(0, pickle.HIGHEST_PROTOCOL), st.booleans())
        def check(program: Program, data: Any, value: Any, protocol: int, packed: bool) -> None:
            snapshot, _ = run_program(program)
            paths = paths_of(snapshot)
            path = data.draw(st.sampled_from(paths)) if paths and data.draw(st.booleans()) else ()
            if path:
                parent = snapshot
                for key in path[:-1]:
                    parent = parent[key]
                parent[path[-1]] = value
            else:
                snapshot = value if data.draw(st.booleans()) else [snapshot, value]
            raw = pickle.dumps(snapshot, protocol=protocol)
            assume(asks_for_a_global(raw))  # set, frozenset and bytearray have opcodes of their own in newer protocols
            self.assert_refused_unrun(maybe_gzip(raw, packed), marker)

        check()

    def test_global_opcodes_with_any_names(self) -> None:
        # GLOBAL and INST read a line of ASCII (the unpickler refuses other bytes before it asks find_class).
        line_text = st.text(st.characters(max_codepoint=127, exclude_characters="\n"), min_size=1, max_size=20)

        @checked(120)
        @given(st.sampled_from(("GLOBAL", "STACK_GLOBAL", "INST")), line_text, line_text, texts(), texts(),
               st.booleans())
        @example("STACK_GLOBAL", "x", "x", "posix", "sys\ntem", True)  # the name, as it was, split the message
        def check(kind: str, module: str, name: str, any_module: str, any_name: str, call: bool) -> None:
            if kind == "STACK_GLOBAL":  # strings on the stack: any text, line breaks and lone surrogates too
                module, name = any_module, any_name
            self.assert_refused_unrun(raw_global(kind, module, name, call))

        check()


class CommandLine(PropertyTest):
    """As users run it: main(argv) in-process, and a few runs as a process; exit 0 or 2, one line naming the file."""

    def test_main(self) -> None:
        @checked(60)
        @given(any_input())
        def check(named: tuple[str, bytes]) -> None:
            name, data = named
            source, target = self.dir / name, self.dir / "t.csv"
            source.write_bytes(data)
            target.unlink(missing_ok=True)
            stderr = io.StringIO()
            with as_users_run_it(), contextlib.redirect_stderr(stderr):
                code = converter.main([str(source), "-o", str(target), "--facts", str(self.dir / "f.json")])
            self.assert_exit(code, stderr.getvalue(), source, target)

        check()

    def test_as_a_process(self) -> None:
        @checked(4)
        @given(any_bytes() | pickled(shaped_snapshots()))
        def check(data: bytes) -> None:
            source, target = self.dir / "input", self.dir / "t.csv"
            source.write_bytes(data)
            target.unlink(missing_ok=True)
            done = subprocess.run(memstress_package.command("memstress.convert", source, "-o", target,
                                                            python=sys.executable),
                                  capture_output=True, text=True, timeout=120, check=False,
                                  env=memstress_package.environment())
            self.assert_exit(done.returncode, done.stderr, source, target)

        check()

    def assert_exit(self, code: int, stderr: str, source: Path, target: Path) -> None:
        self.assertNotIn("Traceback", stderr)
        self.assertIn(code, (0, 2), stderr)
        if code == 2:
            self.assertEqual(len(stderr.splitlines()), 1, stderr)
            self.assertTrue(stderr.startswith(f"python3 -m memstress.convert: error: {source}"), stderr)
            self.assertFalse(target.exists())
        else:
            self.assertTrue(stderr.startswith(f"python3 -m memstress.convert: {source} ("), stderr)
            parse_trace(target.read_text(encoding="utf-8"), target.name)


if __name__ == "__main__":
    unittest.main()
