"""Record a PyTorch program's GPU memory for ``memstress doctor``.

In the training script::

    import memstress_torch
    memstress_torch.record("run.snapshot.pickle", batch=32)   # before the model is built

or around an unchanged one::

    python -m memstress_torch -o run.snapshot.pickle --batch 32 train.py --its --own --args

Recording turns on PyTorch's memory history with the Python stack of every allocation
(``torch.cuda.memory._record_memory_history(stacks="python")``), so ``memstress doctor`` can name the
line that holds the memory. The snapshot is written when the program runs out of memory (PyTorch's
out-of-memory observer: even if the OOM ends the program, the snapshot is there) and again at exit,
and each time the ``memstress doctor`` command to run is printed on stderr. Out-of-memory errors that come
in a burst (cuDNN's refused workspaces, which the program survives) write one snapshot, then one when a
short pause ends, not one each (Note [OOMs that PyTorch survives]). What ``torch.nn`` convolutions allocate is
marked (PyTorch's per-allocation ``user_metadata``), so that ``memstress predict-batch`` knows the cuDNN
workspaces PyTorch does without when refused (Note [Marking the convolutions], recorder_marks.py).

Beside PyTorch's own keys the snapshot gets ``"memstress"``: the GPU's name and memory, the bytes free on
it when the snapshot was written (``device_free``), ``CUDA_VISIBLE_DEVICES``, whether the device is a MIG
slice (``mig``), the per-process memory fraction (read when recording starts and again when the snapshot
is written: a fraction set after ``record()`` counts), and the limit in force, ``limit``:
``{"bytes": N, "source": "memory_fraction" | "capacity argument" | "device"}``. ``allocator_capacity`` is
the same N: the memory PyTorch's allocator could use (the GPU's memory less what the CUDA context and
other processes held when the snapshot was written; the fraction's share when one is set and smaller;
the ``capacity`` argument when given), what ``memstress doctor`` judges the recorded GPU's capacity
from. Then the batch size if given, and versions. pytorch.org/memory_viz and PyTorch's tools ignore the
extra key.

The largest batch that fits, from three or four trials of the real program, is ``find_max_batch``
(memstress.find_max, find_max.py; ``memstress_torch`` exports both).

Only PyTorch (and the standard library) is needed. This is ``memstress.recorder``; programs import it as
``memstress_torch`` (python/memstress_torch.py, which re-exports it). Both are installed with memstress under
``share/memstress/python`` (in a checkout: ``python/``), so ``PYTHONPATH`` names that directory.
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import os
import pickle
import runpy
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .recorder_marks import ConvolutionMarks

__all__ = ["MAX_ENTRIES", "MIN_PAUSE", "PAUSE_PER_DUMP", "PROG", "Recorder", "main", "record", "snapshot_metadata"]

PROG = "memstress_torch"
EXIT_ENV = 3
MAX_ENTRIES = 1_000_000
# Note [OOMs that PyTorch survives]. PyTorch calls the out-of-memory observer at every refused request, also those
# the program survives: cuDNN asks for a workspace, is refused and falls back to an algorithm that needs less (a
# U-Net under a 2 GiB cap on an H200 met 64 such refusals in two steps at its largest batch, which ran). Writing the
# snapshot at each would stall the program for the length of a write each time. So after a write the observer
# writes no other for PAUSE_PER_DUMP times as long as the write took, and at least MIN_PAUSE seconds: at most a
# tenth of the run goes to writes. What a pause skipped is written when it ends (a timer) and by the exit hook, or
# by stop(); each snapshot's history holds every OOM so far (each an "oom" event). Until then the file on disk
# names an earlier OOM: a process that ends by a signal or os._exit within the pause of a skipped OOM that ended
# it keeps that file.
PAUSE_PER_DUMP = 10
MIN_PAUSE = 1.0


def import_torch() -> Any:
    """torch, imported when recording starts (programs import this module first). Without it, or without a GPU it
    can use, one line on stderr naming what is missing and SystemExit(3), not a traceback: nothing can be recorded
    then, and the line says what to install or where to run."""
    try:
        import torch  # noqa: PLC0415
    except ImportError as e:
        _missing(f"needs PyTorch, which {sys.executable} cannot import ({e}): install torch in this environment "
                 "(pip install torch), or run with the python that has it")
    if not torch.cuda.is_available():
        built = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "built without CUDA"
        _missing(f"needs a CUDA GPU, and torch {torch.__version__} ({built}) sees none "
                 "(torch.cuda.is_available() is False): run where the program trains")
    return torch


def _missing(what: str) -> None:
    print(f"{PROG}: error: {what}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_ENV)


def memory_fraction(torch: Any, device: int) -> float | None:
    """The per-process memory fraction in force, or None (none set, or this PyTorch cannot say)."""
    getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    if getter is None:
        return None
    try:
        fraction = float(getter(device))
    except (RuntimeError, TypeError, ValueError, AttributeError):
        return None
    return fraction if 0 < fraction < 1 else None


def _is_mig(torch: Any, device: int, name: str) -> bool:
    if "MIG" in name:
        return True
    try:
        uuid = str(torch.cuda.get_device_properties(device).uuid)
    except Exception:  # noqa: BLE001 - an older PyTorch, a stand-in, a device that cannot say
        return False
    return uuid.upper().startswith("MIG-")


def snapshot_metadata(torch: Any, *, device: int | None = None, batch: int | None = None,
                      capacity: int | None = None, fraction_at_record: float | None = None,
                      convolutions_marked: bool | None = None) -> dict[str, Any]:
    """The snapshot's ``"memstress"`` key: the device, the limit in force and where it came from, versions."""
    if device is None:
        device = torch.cuda.current_device()
    free, total = torch.cuda.mem_get_info(device)
    reserved = torch.cuda.memory_reserved(device)
    outside = max(total - free - reserved, 0)  # the CUDA context, libraries, other processes
    fraction = memory_fraction(torch, device)
    if fraction is None:
        fraction = fraction_at_record
    limit, source = total - outside, "device"
    if fraction is not None and int(fraction * total) < limit:
        limit, source = int(fraction * total), "memory_fraction"
    if capacity is not None:
        limit, source = int(capacity), "capacity argument"
    try:
        name = str(torch.cuda.get_device_name(device))
    except Exception:  # noqa: BLE001 - the name is information, never a reason to lose the snapshot
        name = "unknown"
    meta = {
        "recorded_by": PROG,
        "device": f"cuda:{device}",
        "device_name": name,
        "device_total": int(total),
        "device_free": int(free),
        "used_outside_allocator": int(outside),
        "allocator_capacity": int(limit),
        "limit": {"bytes": int(limit), "source": source},
        "memory_fraction": fraction,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "mig": _is_mig(torch, device, name),
        "torch": str(torch.__version__),  # a TorchVersion: plain data only in a snapshot
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "argv": list(sys.argv),
    }
    meta.update(_gpu_shape(torch, device))
    if batch is not None:
        meta["batch"] = int(batch)
    if convolutions_marked is not None:  # Note [Marking the convolutions], recorder_marks.py
        meta["convolutions_marked"] = bool(convolutions_marked)
    return meta


def _gpu_shape(torch: Any, device: int) -> dict[str, int]:
    """The GPU's multiprocessors and threads a multiprocessor, which set where the scratch of PyTorch's
    reductions stops growing (predict-batch, Note [A reduction's scratch stops growing]); none where the
    device or an older PyTorch cannot say, and none on ROCm."""
    if getattr(getattr(torch, "version", None), "hip", None):
        return {}  # ROCm's reductions follow another law: predict-batch caps nothing there
    try:
        props = torch.cuda.get_device_properties(device)
    except Exception:  # noqa: BLE001 - the shape is information, never a reason to lose the snapshot
        return {}
    shape = {}
    for key, attribute in (("multiprocessors", "multi_processor_count"),
                           ("threads_per_multiprocessor", "max_threads_per_multi_processor")):
        value = getattr(props, attribute, None)
        if isinstance(value, int) and value > 0:
            shape[key] = value
    return shape


class Recorder:
    """One recording: history on, an OOM observer and an exit hook that write the snapshot."""

    def __init__(self, path: str, *, batch: int | None = None, stacks: str = "python",
                 max_entries: int = MAX_ENTRIES, capacity: int | None = None, torch: Any = None) -> None:
        if torch is None:
            torch = import_torch()
        self.torch = torch
        self.path = os.path.abspath(path)
        self.batch = batch
        self.capacity = capacity  # what PyTorch may use, when the caller knows better than the GPU's figures
        self.stacks = stacks
        self.written = 0
        # Note [OOMs that PyTorch survives]: the OOMs met too soon after a snapshot to write another, whether one
        # is waiting for the pause's end, the clock, and how to run a function after a delay (a daemon timer).
        self.skipped = 0
        self.pending = False
        self.clock: Callable[[], float] = time.monotonic
        self.schedule: Callable[[float, Callable[[], None]], None] = _after
        self._next_dump = float("-inf")  # the clock's reading before which an OOM writes no snapshot; inf: writing
        self._scheduled = False
        self._told = False  # the burst's first skip was said
        self._at_exit = True
        self._decide = threading.Lock()  # the pause's state; never held while waiting for _lock
        self._lock = threading.Lock()
        if stacks not in ("python", "all", "none"):
            raise ValueError(f"{PROG}: stacks must be 'python', 'all' or 'none', not {stacks!r}")
        try:
            self.fraction_at_record = memory_fraction(torch, torch.cuda.current_device())
        except Exception:  # noqa: BLE001 - read again at dump time
            self.fraction_at_record = None
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None if stacks == "none" else "alloc",
            stacks="python" if stacks == "none" else stacks, max_entries=max_entries)
        self.marks = ConvolutionMarks(torch)
        self.marks.start()
        torch._C._cuda_attach_out_of_memory_observer(self._on_oom)
        atexit.register(self._dump_at_exit)

    def stop(self) -> None:
        """No snapshot at exit (the OOM observer stays: PyTorch cannot detach one); an OOM the pause skipped
        is written now."""
        atexit.unregister(self._dump_at_exit)
        self._at_exit = False
        self._write_pending()
        self.marks.stop()

    def _dump_at_exit(self) -> None:
        try:
            self.dump()
        except (OSError, RuntimeError) as e:  # a full disk or a CUDA context already torn down
            print(f"{PROG}: could not write {self.path} at exit: {e}", file=sys.stderr)

    def _on_oom(self, device: int, alloc: int, device_alloc: int, device_free: int) -> None:
        with self._decide:
            write = self.clock() >= self._next_dump
            if write:
                self._next_dump = float("inf")  # one OOM's write at a time; the pause is set when it is done
            else:
                self.skipped += 1
                self.pending = True
                say = not self._told
                self._told = True
        if not write:
            if say:
                print(f"{PROG}: out of memory again on cuda:{device} (asked for {alloc} bytes): the snapshot is "
                      f"written again when a short pause ends{', and at exit' if self._at_exit else ''}",
                      file=sys.stderr)
            self._arm()
            return
        print(f"{PROG}: out of memory on cuda:{device} (asked for {alloc} bytes, {device_free} free): "
              "writing the snapshot", file=sys.stderr)
        self._write_and_pause()

    def _arm(self) -> None:
        """A timer for the pause's end, where an OOM is pending and none is set; none while a write runs (it
        arms one when done)."""
        with self._decide:
            if self._scheduled or not self.pending or self._next_dump == float("inf"):
                return
            wait = max(0.0, self._next_dump - self.clock())
            self._scheduled = True
        try:
            self.schedule(wait, self._write_pending)
        except RuntimeError:  # no new thread at interpreter shutdown: the exit hook writes
            with self._decide:
                self._scheduled = False

    def _write_and_pause(self) -> None:
        began = self.clock()
        try:
            self.dump()
        finally:
            ended = self.clock()
            with self._decide:
                self._next_dump = ended + max(MIN_PAUSE, PAUSE_PER_DUMP * (ended - began))
                self._told = False
            self._arm()  # what came during the write

    def _write_pending(self) -> None:
        with self._decide:
            self._scheduled = False
            if not self.pending or self._next_dump == float("inf"):  # nothing, or a write that re-arms
                return
            self._next_dump = float("inf")
        try:
            self._write_and_pause()
        except Exception as e:  # noqa: BLE001 - a timer's thread at shutdown: say so, never raise there
            print(f"{PROG}: could not write {self.path}: {e}", file=sys.stderr)

    def metadata(self) -> dict[str, Any]:
        return snapshot_metadata(self.torch, batch=self.batch, capacity=self.capacity,
                                 fraction_at_record=self.fraction_at_record,
                                 convolutions_marked=self.marks.active)

    def dump(self) -> None:
        """Writes the snapshot (atomically: a temporary file renamed over the path)."""
        with self._lock:
            with self._decide:
                self.pending = False  # the history holds every OOM so far
            try:
                snapshot = self.torch.cuda.memory._snapshot()
                snapshot["memstress"] = self.metadata()
                write_pickle(self.path, snapshot)
            except BaseException:
                with self._decide:
                    self.pending = True  # not written: still to write
                raise
            self.written += 1
            events = sum(len(t) for t in snapshot.get("device_traces", []))
            print(f"{PROG}: wrote {self.path} ({events} events); diagnose it with:\n"
                  f"  memstress doctor {self.path}", file=sys.stderr)


def _after(delay: float, function: Callable[[], None]) -> None:
    timer = threading.Timer(delay, function)
    timer.daemon = True  # the exit hook writes at exit
    timer.start()


def write_pickle(path: str, snapshot: dict[str, Any]) -> None:
    """The snapshot at `path`, gzip-compressed where the name ends in .gz (a tenth of the size; `memstress doctor`
    reads either), else as PyTorch's _dump_snapshot writes it."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        if path.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as g:
                pickle.dump(snapshot, g)
        else:
            pickle.dump(snapshot, f)
    os.replace(tmp, path)


def record(path: str = "run.snapshot.pickle", *, batch: int | None = None, stacks: str = "python",
           max_entries: int = MAX_ENTRIES, capacity: int | None = None) -> Recorder:
    """Starts recording; the snapshot is written at an OOM and at exit (Recorder.dump writes it now).
    `capacity`: the bytes PyTorch may use, when the program limits itself in a way the recorder cannot see
    (it sees torch.cuda.set_per_process_memory_fraction where PyTorch can report it)."""
    return Recorder(path, batch=batch, stacks=stacks, max_entries=max_entries, capacity=capacity)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memstress_torch",
        description="Run a PyTorch script with its GPU memory recorded for memstress doctor.")
    parser.add_argument("-o", "--output", default="run.snapshot.pickle", help="the snapshot to write")
    parser.add_argument("--batch", type=int, help="the batch size, recorded for memstress predict-batch")
    parser.add_argument("--stacks", default="python", choices=("python", "all", "none"),
                        help="stack frames per allocation: Python's, Python's and C++'s, or none")
    parser.add_argument("--max-entries", type=int, default=MAX_ENTRIES, help="the history's length")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args(argv)
    record(args.output, batch=args.batch, stacks=args.stacks, max_entries=args.max_entries)
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    runpy.run_path(args.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
