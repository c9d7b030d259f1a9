"""Find the largest batch a PyTorch program runs with: two recorded trials, ``memstress predict-batch``, one
confirmation.

The largest batch that fits, from three or four trials of the real program, recorded by the memstress recorder
(recorder.py)::

    found = memstress_torch.find_max_batch(lambda n: train_step(model, optimizer, n),
                                           restore=(model, optimizer))
    print(found.batch)

``find_max_batch(step, capacity=None, *, memstress=None, start=None, steps_per_trial=2, ...)``: ``step(n)``
runs one real step at batch size ``n`` (it makes its own inputs). A trial at a batch is what a fresh
process training at that batch would do first: the state put back (below), the cache emptied, then
``steps_per_trial`` steps in a row. Two steps, because the second is the one that runs out: an optimizer
creates its state during the first step, after the activations were freed, and that state lands in the
activations' cached segments, so the second step's activations fit worse (on an H100, a program with fp32 master
weights whose single steps ran at batch 79 under a 2 GiB cap could not run 72 for two steps from a fresh
process). It records a trial at two small batches
(``start``, default 2, and twice that), asks ``memstress predict-batch`` (the ``memstress`` argument, else
``$MEMSTRESS``, else ``memstress`` on ``PATH``) for the largest batch that surely fits ``capacity``
(default: the process's limit, the per-process fraction's share when one is set, else the free memory
plus what PyTorch holds), and confirms predict-batch's estimate with one real trial (its safe end if the
estimate runs out: Note [The estimate is confirmed]). When predict-batch is not sure, or its answer
is more than four times the larger batch recorded, three quarters of the answer is recorded too (a fourth
trial) and predict-batch answers again from nearer (Note [The third recording]; not sure means it said so and
named batches to record). Where predict-batch names no batch it is sure of (the recordings matched
poorly), its estimate is confirmed all the same. A confirmation that runs out of
memory is caught, never raised: the references it held are dropped, the cache emptied, the state
restored, and a smaller batch confirmed instead (predict-batch's safe batch, else the low end of its range,
else 90%; then 80% of the last, at most six confirmations in all).
``restore``: modules and optimizers whose ``state_dict()`` is copied to the CPU before the first trial
and loaded back before every other trial and after the last, so each trial starts as a fresh process would
(an optimizer with no state yet) and the search leaves them as they were (Note [A trial starts fresh]). Left
out (None), they are found: the modules and optimizers that ``step`` reaches (what it names, its closure, a
bound method's object, a partial's arguments, and their attributes, two levels deep). ``restore=()`` says the
step keeps no state between steps (inference). Where none is given or found, each trial starts from what the
one before left, the batch returned was not confirmed from a fresh start, and the search says so
(``FoundBatch.fresh`` is False). It returns a ``FoundBatch``: the batch that ran, every trial
``(batch, kind, ok, seconds, refused)`` with kind ``"record"`` or ``"confirm"`` and ``refused`` the requests
PyTorch refused during it (a trial that ran with some ran on a library's fallbacks, at the edge), the steps
taken, the OOMs met, the seconds taken, predict-batch's JSON, what each trial was put back to (``restored``:
the type of each module and optimizer) and whether every trial started from it (``fresh``).

Without torch, or without a GPU torch can use, it says so in one line and exits 3 (SystemExit), as the recorder
does.

Only PyTorch (and the standard library) is needed. Programs import it as ``memstress_torch`` (python/memstress_torch.py,
which re-exports it with the recorder).
"""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import _launcher
from .recorder import MAX_ENTRIES, PROG, import_torch, memory_fraction, snapshot_metadata, write_pickle
from .recorder_marks import ConvolutionMarks

__all__ = ["FAR", "NEARER", "FoundBatch", "PredictError", "Trial", "find_max_batch", "memstress_binary",
           "process_limit"]

class PredictError(RuntimeError):
    """memstress predict-batch could not be run, failed, or said nothing readable."""


class Trial(NamedTuple):
    batch: int
    kind: str  # "record" or "confirm"
    ok: bool
    seconds: float
    # requests PyTorch refused on the search's device during the trial, the OOM's among them: one that ran with
    # refusals ran at the edge, on a library's fallbacks (cuDNN's smaller workspaces; Note [OOMs that PyTorch
    # survives])
    refused: int = 0


@dataclass
class FoundBatch:
    batch: int  # the largest batch that ran (0: not even the first one did)
    trials: list[Trial] = field(default_factory=list)
    ooms: int = 0
    seconds: float = 0.0
    prediction: dict[str, Any] | None = None  # predict-batch's JSON (the last one asked)
    steps: int = 0  # calls of step(): steps_per_trial a trial, fewer where one ran out
    restored: list[str] = field(default_factory=list)  # the types of what each trial was put back to
    fresh: bool = True  # every trial started as a fresh process would (Note [A trial starts fresh])


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def process_limit(torch: Any, device: int) -> int:
    """The bytes this process's PyTorch may use: the fraction's share when one is set, else free plus reserved."""
    free, total = torch.cuda.mem_get_info(device)
    fraction = memory_fraction(torch, device)
    if fraction is not None:
        return int(fraction * total)
    return int(free + torch.cuda.memory_reserved(device))


def memstress_binary(memstress: str | None = None) -> str:
    """`memstress`, else $MEMSTRESS, else the binary installed with this package (the wheel's), else ``memstress``
    on PATH."""
    found = _launcher.find(memstress)
    if not found:
        raise PredictError(f"{PROG}: no memstress binary: pass memstress=PATH, set MEMSTRESS, or put it on PATH")
    return found


# Note [A trial starts fresh]. A batch that runs in this process after other trials need not run in a fresh one:
# an optimizer creates its state during its first step, after the activations were freed, and that state lands in
# the activations' cached segments, so the second step of a fresh process fits worse than a step whose optimizer
# state was laid out by earlier, smaller trials. Under a 12 GiB cap on an H100, without restore a BERT step's search
# named 44 where a fresh process runs 42, and a checkpointed Llama's 19 where it runs 18; with restore=(model,
# optimizer) 42 and 17. So every trial starts from the state saved before the first (the optimizer as it was, with
# no state where it had none), and the confirming trial is a fresh run's first steps. The state is what the caller
# names, else what the step reaches (_state_holders); where there is none to restore, the search cannot start a
# trial fresh, and says that the batch it returns was not confirmed for a fresh process.
STATE_SEARCH_DEPTH = 2
_STATE_SEARCH_FANOUT = 64  # the items of one container or object looked at


def _state_holders(torch: Any, step: Callable[[int], Any]) -> list[Any]:
    """The modules and optimizers `step` reaches (Note [A trial starts fresh]): its closure and the globals it
    names, a bound method's object, a partial's arguments, a callable object's attributes, and what those hold,
    STATE_SEARCH_DEPTH levels down; a module held by another one found is left to it."""
    kinds = tuple(k for k in (getattr(getattr(torch, "nn", None), "Module", None),
                              getattr(getattr(torch, "optim", None), "Optimizer", None)) if isinstance(k, type))
    if not kinds:
        return []
    found: list[Any] = []
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(step, 0)]
    while todo:
        obj, depth = todo.pop(0)
        if id(obj) in seen or obj is None or isinstance(obj, (types.ModuleType, type, str, bytes, int, float)):
            continue
        seen.add(id(obj))
        if isinstance(obj, kinds):
            found.append(obj)
            continue
        if depth > STATE_SEARCH_DEPTH:
            continue
        try:
            reached = _reaches(obj)[:_STATE_SEARCH_FANOUT]
        except Exception:  # noqa: BLE001 - an object that will not be looked into holds nothing found
            reached = []
        todo.extend((child, depth + 1) for child in reached)
    module = kinds[0] if hasattr(kinds[0], "modules") else None
    inside = {id(sub) for m in found if module and isinstance(m, module) for sub in list(m.modules())[1:]}
    return [m for m in found if id(m) not in inside]


def _reaches(obj: Any) -> list[Any]:
    """What a step's search looks into next: what a function names, a method's object, a partial's arguments, a
    container's items, an object's attributes."""
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if inspect.ismethod(obj):
        return [obj.__self__, obj.__func__]
    if inspect.isfunction(obj):
        try:
            names = inspect.getclosurevars(obj)
        except (TypeError, ValueError):
            return []
        return [*names.nonlocals.values(), *names.globals.values()]
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    held = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    call = vars(type(obj)).get("__call__")  # a callable object's own code
    return [*held, call] if inspect.isfunction(call) else held


def _to_cpu(value: Any, tensor_type: type) -> Any:
    if isinstance(value, tensor_type):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return type(value)((k, _to_cpu(v, tensor_type)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v, tensor_type) for v in value)
    return copy.deepcopy(value)


class _Search:
    """One find_max_batch: its trial steps, the OOMs met, the recordings and the state to put back."""

    def __init__(self, torch: Any, step: Callable[[int], Any], device: int, capacity: int, stacks: str,
                 restore: Iterable[Any], log: Callable[[str], None], steps_per_trial: int = 2,
                 fresh: bool = True) -> None:
        self.torch = torch
        self.step = step
        self.steps_per_trial = max(1, int(steps_per_trial))
        self.steps = 0
        self.pristine = True  # the state is as saved: no step since the last restore
        self.device = device
        self.capacity = capacity
        self.stacks = stacks
        self.log = log
        self.trials: list[Trial] = []
        self.ooms = 0
        self.ran = 0  # the largest batch known to run
        self.recorded: dict[int, str] = {}
        self.work = tempfile.mkdtemp(prefix="memstress-find-")
        self.marks = ConvolutionMarks(torch)
        self.saved = [(obj, _to_cpu(obj.state_dict(), torch.Tensor)) for obj in restore]
        self.fresh = fresh  # every trial starts from the saved state, as a fresh process would

    def restore(self) -> None:
        self.pristine = True
        for obj, state in self.saved:
            obj.load_state_dict(state)
            zero_grad = getattr(obj, "zero_grad", None)
            if zero_grad is not None:
                zero_grad(set_to_none=True)

    def refusals(self) -> int:
        """PyTorch's count of the requests it refused on the search's device so far (0 where it keeps none)."""
        try:
            return int(self.torch.cuda.memory_stats(self.device).get("num_ooms", 0))
        except Exception:  # noqa: BLE001 - a count for the record only: never what stops a search
            return 0

    def clean(self) -> None:
        gc.collect()
        self.torch.cuda.empty_cache()

    def close(self) -> None:
        self.clean()
        self.restore()
        shutil.rmtree(self.work, ignore_errors=True)

    def run(self, batch: int, kind: str) -> bool:
        """One trial: the state put back, then steps_per_trial real steps ("record": with the history on, its
        snapshot kept). False when one ran out of memory: the OOM is caught here, never raised."""
        torch = self.torch
        if not self.pristine:
            self.restore()
        self.clean()
        path = os.path.join(self.work, f"batch{batch}.pickle") if kind == "record" else None
        if path is not None:
            torch.cuda.memory._record_memory_history(
                enabled="all", context=None if self.stacks == "none" else "alloc", stacks="python",
                max_entries=MAX_ENTRIES)
            self.marks.start()
        started = time.perf_counter()
        refused_before = self.refusals()
        message = None
        try:
            for _ in range(self.steps_per_trial):
                self.pristine = False
                self.steps += 1
                self.step(batch)
            torch.cuda.synchronize(self.device)
            if path is not None:
                snapshot = torch.cuda.memory._snapshot()
                snapshot["memstress"] = snapshot_metadata(torch, device=self.device, batch=batch,
                                                          capacity=self.capacity,
                                                          convolutions_marked=self.marks.active)
                write_pickle(path, snapshot)
        except torch.cuda.OutOfMemoryError as e:
            message = (str(e).splitlines() or ["out of memory"])[0]
            traceback.clear_frames(e.__traceback__)  # its frames hold the step's tensors
            e.__traceback__ = None
        finally:
            if path is not None:
                self.marks.stop()
                torch.cuda.memory._record_memory_history(enabled=None)
        seconds = time.perf_counter() - started
        refused = self.refusals() - refused_before
        self.trials.append(Trial(batch, kind, message is None, round(seconds, 4), refused))
        if message is not None:
            self.ooms += 1
            self.log(f"{PROG}: {kind} batch {batch}: out of memory ({message})")
            self.clean()
            return False
        said = f", {refused} request(s) refused on the way" if refused else ""
        self.log(f"{PROG}: {kind} batch {batch}: ran ({seconds:.2f} s{said})")
        self.ran = max(self.ran, batch)
        if path is not None:
            self.recorded[batch] = path
        return True


def _predict(binary: str, search: _Search, a: int, b: int, max_batch: int, alloc_conf: str | None,
             trace_device: str | None) -> dict[str, Any]:
    cmd = [binary, "predict-batch", search.recorded[a], search.recorded[b], "--batch", f"{a},{b}",
           "--capacity", str(int(search.capacity)), "--max-batch", str(max_batch), "--format", "json"]
    if alloc_conf is not None:
        cmd += ["--alloc-conf", alloc_conf]
    if trace_device is not None:
        cmd += ["--trace-device", trace_device]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600,
                              env=_launcher.environment())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PredictError(f"{PROG}: could not run {binary} predict-batch: {e}") from None
    if done.returncode != 0:
        said = done.stderr.strip() or done.stdout.strip()
        raise PredictError(f"{PROG}: memstress predict-batch exited {done.returncode}: {said[-2000:]}")
    try:
        answer = json.loads(done.stdout)
    except ValueError as e:
        raise PredictError(f"{PROG}: memstress predict-batch printed no JSON ({e})") from None
    if not isinstance(answer, dict):
        raise PredictError(f"{PROG}: memstress predict-batch printed a {type(answer).__name__}, not an object")
    return answer


def _positive(value: Any) -> int | None:
    """`value` where it is an integer above 0 (not a boolean)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _estimate(prediction: dict[str, Any]) -> int | None:
    """predict-batch's estimate, where it is a batch."""
    return _positive(prediction.get("estimate"))


def _estimate_refused(prediction: dict[str, Any]) -> bool:
    """Whether the estimate's replay went on past refused convolution workspaces (Note [The estimate is
    confirmed])."""
    return _positive((prediction.get("largest_fit") or {}).get("refusals_survived")) is not None


def _safe_batch(prediction: dict[str, Any]) -> int | None:
    """predict-batch's largest batch that surely runs: "safe_batch", else largest_fit's batch."""
    safe = prediction["safe_batch"] if "safe_batch" in prediction else \
        (prediction.get("largest_fit") or {}).get("batch")
    return int(safe) if isinstance(safe, (int, float)) and not isinstance(safe, bool) and safe >= 0 else None


# An answer more than this many times the larger recorded batch is recorded again nearer before it is confirmed,
# even where predict-batch is sure: from batches 2 and 4, an fp32-master-weights program's "sure" answer was half
# its real largest.
FAR = 4
# Note [The third recording]. Where the first answer is far or predict-batch is not sure, the third trial records
# at this share of it, and predict-batch answers again from that and the larger of the first two. The nearer the
# template to the answer, the less of the program is extrapolated: a backward-pass workspace that stops growing at
# 132 MiB (an encoder's, from its batch 33 under a 2 GiB cap) is then recorded at its cap, not grown past it. On an
# H200, the corpus's eleven trainable programs under 2 GiB (results/h200/find-max-batch-580.159.04/): within 5% of
# PyTorch's largest batch on 10 with the third recording at three quarters, on 7 at half (the encoder found 45
# where half found 44, PyTorch's 47; the variable-length encoder 47 where half found 44, PyTorch's 48). The first
# answer, from batches 2 and 4, was at most 10% over PyTorch's largest there (the GPT with checkpointing: 23, whose
# three quarters, 17, was its third recording, against 21), so three quarters of it ran on all; one that runs out
# is a fourth trial, and the first pair answers again below it.
NEARER = 0.75
# Note [The estimate is confirmed]. predict-batch names a range: its safe end (the largest batch that fits by the
# pessimistic model, what it names to a user who cannot try) and its estimate. The confirmation is a real step, its
# own proof, so it tries the estimate and falls back to the safe end if that runs out (one more trial). The
# estimate was never above PyTorch's largest batch where predict-batch named a safe batch: on the 48 such
# predictions of the H100 corpus (results/h100/doctor-corpus-580.159.04/, 1/8+1/4 and 1/4+1/2 under two caps; the
# estimate was PyTorch's largest on 39) and on the 11 final predictions of find_max_batch on an H200
# (results/h200/find-max-batch-580.159.04/three-quarters-capped/: one to four batches above the safe end on 5).
# Where it names none (runs that match poorly: the corpus's inference with varying lengths, three times) the
# estimate was 83% over; it is confirmed all the same, as the trial is the proof, and the back-off finds a batch.
# An estimate whose replay went on past refused convolution workspaces (Note [A workspace PyTorch does without],
# harness/doctor/batch_model.hpp) counts on fallbacks it cannot size, and was one to two batches above PyTorch's
# largest on the H200 corpus (results/h200/doctor-corpus-580.159.04/: a U-Net's 44 against 43, a ResNet's 168
# against 167): there the safe end is confirmed, in one trial, not two.


def find_max_batch(step: Callable[[int], Any], capacity: int | None = None, *, memstress: str | None = None,
                   start: int | None = None, max_batch: int = 1_000_000, restore: Iterable[Any] | None = None,
                   steps_per_trial: int = 2,
                   alloc_conf: str | None = None, device: Any = None, stacks: str = "python",
                   log: Callable[[str], None] = _stderr) -> FoundBatch:
    """The largest batch `step` runs with in `capacity` bytes: two recorded trials, predict-batch, one confirmation
    (the module's docstring tells the whole of it). Raises PredictError when memstress predict-batch fails."""
    torch = import_torch()  # one line and exit 3 without it, or without a GPU
    began = time.perf_counter()
    index = torch.cuda.current_device() if device is None else _device_index(torch, device)
    capacity = process_limit(torch, index) if capacity is None else int(capacity)
    binary = memstress_binary(memstress)
    max_batch = max(1, int(max_batch))
    trace_device = None if device is None else f"cuda:{index}"
    # Note [A trial starts fresh]: the state to put back, the caller's, else what the step reaches.
    holders = list(restore) if restore is not None else _state_holders(torch, step)
    fresh = restore is not None or bool(holders)
    names = [type(h).__name__ for h in holders]
    if restore is None and holders:
        log(f"{PROG}: each trial starts from the state of {', '.join(names)}, found in the step (restore= to name "
            "them)")
    elif not fresh:
        log(f"{PROG}: no model or optimizer found in the step and no restore= given: each trial starts from what "
            "the one before left, so a fresh process may not run the batch found; pass restore=(model, optimizer)")
    search = _Search(torch, step, index, capacity, stacks, holders, log, steps_per_trial, fresh)
    prediction: dict[str, Any] | None = None

    def found() -> FoundBatch:
        result = FoundBatch(search.ran, search.trials, search.ooms, round(time.perf_counter() - began, 4),
                            prediction, search.steps, names, fresh)
        if not fresh and result.batch:
            log(f"{PROG}: batch {result.batch} ran in this process after the trials before it, not from a fresh "
                "start: not confirmed for a fresh process")
        return result

    try:
        # Two recordings, b1 and 2 * b1; a b1 that does not run is halved, a 2 * b1 that does not run ends it.
        b1 = max(1, min(int(start or 2), max_batch))
        while not search.run(b1, "record"):
            if b1 == 1:
                log(f"{PROG}: not even batch 1 runs in {capacity} bytes")
                return found()
            b1 //= 2
        b2 = min(2 * b1, max_batch)
        if b2 == b1 or not search.run(b2, "record"):
            return found()
        prediction = _predict(binary, search, b1, b2, max_batch, alloc_conf, trace_device)
        wanted = [int(b) for b in prediction.get("record_at") or [] if isinstance(b, int) and 1 <= b <= max_batch]
        first = _safe_batch(prediction)
        first = None if first is None else min(first, max_batch)
        far = first is not None and first > FAR * b2
        basis = first if first is not None else _estimate(prediction)
        if (prediction.get("sure") is False and wanted) or far:
            # Not sure, or sure from far below: one more recording nearer the answer, paired with the largest
            # recorded below it (Note [The third recording], above NEARER).
            new = min(max_batch, round(NEARER * basis)) if basis is not None else max(wanted)
            below = [b for b in search.recorded if b < new]
            if new > b2 and new not in search.recorded and below:
                if search.run(new, "record"):
                    prediction = _predict(binary, search, max(below), new, max_batch, alloc_conf, trace_device)
                else:  # the answer was over: the first pair again, below the batch that ran out
                    prediction = _predict(binary, search, b1, b2, new - 1, alloc_conf, trace_device)
        # The estimate is confirmed, the safe batch is the fallback (Note [The estimate is confirmed], below
        # NEARER).
        safe = _safe_batch(prediction)
        estimate = _estimate(prediction)
        trust_estimate = safe is None or (estimate is not None and estimate >= safe
                                          and not _estimate_refused(prediction))
        answer = estimate if estimate is not None and estimate > search.ran and trust_estimate else safe
        low = (prediction.get("range") or {}).get("low")
        for tries in range(6):  # the answer; the safe batch, else the range's low end, else 90%; then 80% each time
            if answer is None or min(answer, max_batch) <= search.ran:
                break
            answer = min(answer, max_batch)
            if search.run(answer, "confirm"):
                break
            if tries == 0:
                below = [b for b in (safe, low) if isinstance(b, int) and search.ran < b < answer]
                answer = below[0] if below else int(0.9 * answer)
            else:
                answer = int(0.8 * answer)
        return found()
    finally:
        search.close()


def _device_index(torch: Any, device: Any) -> int:
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        return int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
    index = getattr(device, "index", None)
    return torch.cuda.current_device() if index is None else int(index)
