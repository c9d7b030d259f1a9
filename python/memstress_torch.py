"""Record a PyTorch program's GPU memory for ``memstress doctor``, in two lines or none.

In the training script::

    import memstress_torch
    memstress_torch.record("run.snapshot.pickle", batch=32)   # before the model is built

or around an unchanged one::

    python -m memstress_torch -o run.snapshot.pickle --batch 32 train.py --its --own --args

Recording turns on PyTorch's memory history with the Python stack of every allocation
(``torch.cuda.memory._record_memory_history(stacks="python")``), so ``memstress doctor`` can name the
line that holds the memory. The snapshot is written when the program runs out of memory (PyTorch's
out-of-memory observer: even if the OOM ends the program, the snapshot is there) and again at exit,
and each time the ``memstress doctor`` command to run is printed on stderr.

Beside PyTorch's own keys the snapshot gets ``"memstress"``: the GPU's name and memory, the memory
PyTorch's allocator could use (the GPU's memory less what the CUDA context and other processes held
when the snapshot was written, or the per-process memory fraction's share when one is set), the batch
size if given, and versions. ``memstress doctor`` judges the recorded GPU's capacity from it;
pytorch.org/memory_viz and PyTorch's tools ignore the extra key.

Only PyTorch (and the standard library) is needed; this file is installed with memstress under
``share/memstress/python`` (in a checkout: ``python/``), so ``PYTHONPATH`` names that directory.
"""

from __future__ import annotations

import argparse
import atexit
import os
import pickle
import runpy
import sys
import threading
from typing import Any

PROG = "memstress_torch"
MAX_ENTRIES = 1_000_000


class Recorder:
    """One recording: history on, an OOM observer and an exit hook that write the snapshot."""

    def __init__(self, path: str, *, batch: int | None = None, stacks: str = "python",
                 max_entries: int = MAX_ENTRIES, capacity: int | None = None, torch: Any = None) -> None:
        if torch is None:
            import torch  # noqa: PLC0415 - the recorder is imported before torch in some scripts
        self.torch = torch
        self.path = os.path.abspath(path)
        self.batch = batch
        self.capacity = capacity  # what PyTorch may use, when the caller knows better than the GPU's figures
        self.stacks = stacks
        self.written = 0
        self._lock = threading.Lock()
        if stacks not in ("python", "all", "none"):
            raise ValueError(f"{PROG}: stacks must be 'python', 'all' or 'none', not {stacks!r}")
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None if stacks == "none" else "alloc",
            stacks="python" if stacks == "none" else stacks, max_entries=max_entries)
        torch._C._cuda_attach_out_of_memory_observer(self._on_oom)
        atexit.register(self._dump_at_exit)

    def stop(self) -> None:
        """No snapshot at exit (the OOM observer stays: PyTorch cannot detach one)."""
        atexit.unregister(self._dump_at_exit)

    def _dump_at_exit(self) -> None:
        try:
            self.dump()
        except (OSError, RuntimeError) as e:  # a full disk or a CUDA context already torn down
            print(f"{PROG}: could not write {self.path} at exit: {e}", file=sys.stderr)

    def _on_oom(self, device: int, alloc: int, device_alloc: int, device_free: int) -> None:
        print(f"{PROG}: out of memory on cuda:{device} (asked for {alloc} bytes, {device_free} free): "
              "writing the snapshot", file=sys.stderr)
        self.dump()

    def metadata(self) -> dict[str, Any]:
        torch = self.torch
        device = torch.cuda.current_device()
        free, total = torch.cuda.mem_get_info(device)
        reserved = torch.cuda.memory_reserved(device)
        outside = max(total - free - reserved, 0)  # the CUDA context, libraries, other processes
        capacity = total - outside
        fraction = None
        getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
        if getter is not None:
            try:
                fraction = float(getter(device))
            except (RuntimeError, TypeError, ValueError):
                fraction = None
        if fraction is not None and 0 < fraction < 1:
            capacity = min(capacity, int(fraction * total))
        if self.capacity is not None:
            capacity = int(self.capacity)
        meta = {
            "recorded_by": PROG,
            "device": f"cuda:{device}",
            "device_name": torch.cuda.get_device_name(device),
            "device_total": int(total),
            "used_outside_allocator": int(outside),
            "allocator_capacity": int(capacity),
            "memory_fraction": fraction,
            "torch": str(torch.__version__),  # a TorchVersion: plain data only in a snapshot
            "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
            "argv": list(sys.argv),
        }
        if self.batch is not None:
            meta["batch"] = int(self.batch)
        return meta

    def dump(self) -> None:
        """Writes the snapshot (atomically: a temporary file renamed over the path)."""
        with self._lock:
            torch = self.torch
            snapshot = torch.cuda.memory._snapshot()
            snapshot["memstress"] = self.metadata()
            tmp = f"{self.path}.tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                pickle.dump(snapshot, f)
            os.replace(tmp, self.path)
            self.written += 1
            events = sum(len(t) for t in snapshot.get("device_traces", []))
            print(f"{PROG}: wrote {self.path} ({events} events); diagnose it with:\n"
                  f"  memstress doctor {self.path}", file=sys.stderr)


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
