"""memstress from Python, for notebooks: the doctor's and predict-batch's answers as dicts.

    import memstress
    answer = memstress.doctor("run.snapshot.pickle")              # the memstress.doctor/1 document
    answer["oom"]["cause"], answer["oom"]["recommended"]
    memstress.doctor("run.snapshot.pickle", capacity="24G,40G")
    memstress.predict_batch("b8.pickle", "b16.pickle", batches=(8, 16), capacity="40G")["safe_batch"]

Each runs the memstress binary (the wheel's, installed beside this package; else $MEMSTRESS, else ``memstress`` on
PATH: _launcher.find) with ``--format json`` and returns what it printed, parsed: byte for byte the document
``memstress doctor SNAPSHOT --format json`` prints (docs/doctor.md). What the binary refuses raises MemstressError,
holding its one line and its exit code (2: the input, 3: something missing). Only the standard library is used.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from typing import Any

from . import _launcher

__all__ = ["MemstressError", "doctor", "predict_batch"]


class MemstressError(RuntimeError):
    """The memstress binary refused or failed: `message` is what it said (one line), `exit_code` its exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def _sizes(value: int | str | Sequence[int | str]) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _run(args: list[str], memstress: str | None) -> dict[str, Any]:
    binary = _launcher.find(memstress)
    if binary is None:
        raise MemstressError("no memstress binary: install the memstress wheel, pass memstress=PATH or set MEMSTRESS",
                             3)
    try:
        done = subprocess.run([binary, *args, "--format", "json"], capture_output=True, text=True, check=False,
                              env=_launcher.environment())
    except OSError as e:
        raise MemstressError(f"cannot run {binary}: {e.strerror}", 3) from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exited {done.returncode}"]
        raise MemstressError(said[-1], done.returncode)
    try:
        answer = json.loads(done.stdout)
    except ValueError as e:
        raise MemstressError(f"{binary} printed no JSON ({e})", 1) from None
    return answer


def doctor(snapshot: str | os.PathLike[str], *, capacity: int | str | Sequence[int | str] | None = None,
           alloc_conf: str | None = None, batch_runs: Sequence[str | os.PathLike[str]] | None = None,
           batch: Sequence[int] | None = None, memstress: str | None = None) -> dict[str, Any]:
    """`memstress doctor SNAPSHOT --format json`, parsed: the capacities to judge (bytes, or sizes such as "24G";
    several as a list), the allocator settings it ran with (PyTorch's syntax), and two runs at smaller batches
    with the batches of the three (--batch-runs, --batch)."""
    args = ["doctor", os.fspath(snapshot)]
    if capacity is not None:
        args += ["--capacity", _sizes(capacity)]
    if alloc_conf is not None:
        args += ["--alloc-conf", alloc_conf]
    if batch_runs is not None:
        args += ["--batch-runs", ",".join(os.fspath(p) for p in batch_runs)]
    if batch is not None:
        args += ["--batch", ",".join(str(b) for b in batch)]
    return _run(args, memstress)


def predict_batch(small: str | os.PathLike[str], large: str | os.PathLike[str], *, batches: Sequence[int],
                  capacity: int | str, multiprocessors: int | None = None,
                  memstress: str | None = None) -> dict[str, Any]:
    """`memstress predict-batch SMALL LARGE --batch A,B --capacity C --format json`, parsed."""
    args = ["predict-batch", os.fspath(small), os.fspath(large), "--batch", ",".join(str(b) for b in batches),
            "--capacity", _sizes(capacity)]
    if multiprocessors is not None:
        args += ["--multiprocessors", str(multiprocessors)]
    return _run(args, memstress)
