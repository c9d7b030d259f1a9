#!/usr/bin/env python3
"""scripts/lab/doctor_corpus.py OUTDIR [--caps 2G,4G] [--jobs N] [--programs a,b] [--memstress BIN] [--quick]:
the proof corpus for `memstress doctor` and `predict-batch`: PyTorch's own answers, on a real GPU, for every
program of scripts/lab/doctor_programs.py, each run in a process of its own, up to --jobs side by side (each capped
with torch.cuda.set_per_process_memory_fraction, so that they share the GPU).

For each normal program and each cap (--caps, default 2G,4G):
  largest     its largest batch, by real runs: up from a start until one runs out, then bisection, probing where
              PyTorch's own allocated peaks of the runs that fit, in a line, reach the cap while that halves the
              bracket, else its midpoint (search_largest); every run kept (batch, cap, ok or OOM, the peaks)
  repeat      the largest and the first that ran out, run once more: "stable" when they do the same again and
              no batch ran above one that ran out
  recordings  the program recorded (the memstress recorder, no stacks) at an eighth, a quarter and a half of it
and under the smaller cap:
  oom         a batch that runs out (the larger of the first that did and 1.2 times the largest), recorded with
              Python stacks, PyTorch's first line of the OOM message; then that batch and cap under each setting
              (SETTINGS): ok or OOM. The cause: "fragmentation" when a setting other than PyTorch's defaults ran
              it, "exhaustion" when none did, "flaky" when the defaults ran it after all.
For each fragmentation program: its peaks at a batch under PyTorch's defaults and under expandable_segments:True,
then caps between the two until the defaults run out and expandable segments do not (every run kept); then the
OOM recording and the settings, as above (the cause must come out "fragmentation").
With --memstress BIN, for each trainable program under the smaller cap, each in a process of its own:
memstress_torch.find_max_batch and Lightning's batch-size finder (doctor_programs.py --find-max), each trying
a batch with two steps as the real runs do: the batch each found against the real largest, their trials,
steps, OOMs, seconds, and whether they failed. And for every OOM: what `memstress doctor` says of its snapshot
(alone, and with the runs at a quarter and a half of the largest batch), and PyTorch at that batch and cap
under each setting the doctor names that SETTINGS lacks, so that every setting it names is one PyTorch ran.

Writes OUTDIR/truth.json (schema memstress.doctor-corpus/1: TRUTH_KEYS below), OUTDIR/summary.txt (tables),
OUTDIR/corpus.log (the progress lines printed) and OUTDIR/snapshots/*.pickle.gz; every path in them relative to
OUTDIR, and the repository's own files named relative to it inside the snapshots too. --quick: two programs (one
of each kind) under one cap, to try the plumbing. Exit 0 when every program was measured and every fragmentation
program's OOM came out "fragmentation", 1 otherwise, 3 without nvidia-smi or PyTorch's CUDA.

Only the standard library here; the programs need PyTorch (and torchvision, Lightning for --memstress).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import math
import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lab"))
import doctor_programs as dp  # noqa: E402 - only its table of programs: torch is imported by the runs
from memstress.recorder import write_pickle  # noqa: E402 - on the path doctor_programs puts python/ on

SCHEMA = "memstress.doctor-corpus/1"
SETTINGS = ["", "expandable_segments:True", "max_split_size_mb:64", "max_split_size_mb:128", "max_split_size_mb:512",
            "roundup_power2_divisions:4", "roundup_power2_divisions:8", "garbage_collection_threshold:0.8"]
STEPS = 2  # steps a run: the variable-length program's longest length comes second
START = {"leak_train": 4096, "fixed_train": 4096, "kv_generate": 64, "master_weights": 16, "cnn_train": 16,
         "infer_varying": 16}  # the first batch tried (default 8): well below the largest under 2G
FRAG_BATCHES = (64, 48, 96)  # the fragmentation programs' batches, tried in this order
QUICK = ("vit_train", "frag_split")
# truth.json: TRUTH_KEYS; each of "programs": PROGRAM_KEYS, where
#   caps            {str(cap): {"largest", "first_oom", "stable", "runs": [Run.row()], "repeat": [Run.row()],
#                               "recordings": {str(batch): "snapshots/....pickle.gz"}}}   (normal programs)
#   search          [Run.row()]: the fragmentation program's batches and caps tried               (else null)
#   oom             {"batch", "cap", "snapshot", "message", "settings": {conf: "ok" | "oom"}, "cause", "runs",
#                    "doctor": {"alone" | "with_runs": {"cause", "named": conf or null}} (with --memstress)}
#   find_max_batch  doctor_programs.py --find-max memstress's result and "largest" (the real one), or null
#   lightning       the same from Lightning's batch-size finder, or null
#   error           why the program's measurements stopped, or null
TRUTH_KEYS = ("schema", "gpu", "driver", "torch", "cuda", "python", "lightning", "memstress", "date", "caps",
              "settings", "steps", "jobs", "seconds", "programs")
PROGRAM_KEYS = ("program", "shape", "kind", "caps", "search", "oom", "find_max_batch", "lightning", "error")
MAX_BATCH = 1 << 20


# ---------------------------------------------------------------------------------------------------------------
# The pure logic: sizes, the search for the largest batch, the fractions, the cause, the tables.


def parse_size(text: str) -> int:
    """'2G' -> 2 GiB in bytes (K, M, G, T: powers of 1024; a plain number: bytes)."""
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    number = float(text[:-1] if scale > 1 else text)
    if not number > 0:
        raise ValueError(f"a size must be more than 0, not {text!r}")
    return int(number * scale)


def cap_name(cap: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20)):
        if cap % scale == 0:
            return f"{cap // scale}{unit}"
    return str(cap)


@dataclass
class Run:
    """One run's outcome, as the corpus keeps it."""

    batch: int
    cap: int | None
    alloc_conf: str
    ok: bool
    peak_reserved: int
    oom: str | None = None  # PyTorch's first line
    peak_allocated: int = 0

    def row(self) -> dict[str, Any]:
        return {"batch": self.batch, "cap": self.cap, "alloc_conf": self.alloc_conf, "ok": self.ok,
                "peak_reserved": self.peak_reserved, "peak_allocated": self.peak_allocated, "oom": self.oom}


def estimate(fits: dict[int, tuple[int, int]], cap: int) -> int | None:
    """The batch at which a program's peaks reach `cap`: its allocated peaks (batch -> (reserved, allocated)) on the
    line through the largest batch that ran and the one nearest half of it, up to the cap less the cache the largest
    held beside them. Allocated, as under a cap PyTorch lets its cache go and tries again before it runs out, so the
    reserved peaks stop growing near the cap; the cache held is taken off only when the reserved peak is not there."""
    if len(fits) < 2:
        return None
    top = max(fits)
    base = min((b for b in fits if b != top), key=lambda b: (abs(2 * b - top), -b))
    (reserved, allocated), (_, allocated_base) = fits[top], fits[base]
    slope = (allocated - allocated_base) / (top - base)
    if slope <= 0:
        return None
    held = reserved - allocated if reserved < 0.95 * cap else 0
    return int(top + (cap - held - allocated) / slope)


def search_largest(run: Callable[[int], Run], start: int, cap: int,
                   max_batch: int = MAX_BATCH) -> tuple[int, int | None, list[Run]]:
    """(largest batch that ran, first batch above it that ran out or None, every run). From `start` (halved until
    it runs) up until a run runs out: to just past the estimate (PyTorch's allocated peaks, in a line, reaching the
    cap; at least an eighth more, at most 4 times as much), doubling while there is none. Then between the largest
    that ran and the smallest that did not: at the estimate, kept strictly between the two, while each probe halves
    the gap at least, else at the midpoint (then the estimate again)."""
    runs: list[Run] = []
    fits: dict[int, tuple[int, int]] = {}
    lo, hi = 0, None

    def probe(batch: int) -> None:
        nonlocal lo, hi
        r = run(batch)
        runs.append(r)
        if r.ok:
            fits[batch] = (r.peak_reserved, r.peak_allocated or r.peak_reserved)
            lo = max(lo, batch)
        else:
            hi = batch if hi is None else min(hi, batch)

    b = max(1, start)
    probe(b)
    while lo == 0 and b > 1:  # a start too large: halve it until one runs
        b //= 2
        probe(b)
    if lo == 0:
        return 0, hi, runs
    while hi is None and lo < max_batch:
        guess = estimate(fits, cap)
        nxt = 2 * lo if guess is None or guess <= lo else min(4 * lo, max(lo + lo // 8 + 1, guess + guess // 50 + 1))
        probe(min(nxt, max_batch))
    at_estimate = True
    while hi is not None and hi - lo > 1:
        width = hi - lo
        guess = estimate(fits, cap) if at_estimate else None
        probe((lo + hi) // 2 if guess is None else min(max(guess, lo + 1), hi - 1))
        at_estimate = hi - lo <= width // 2  # the estimate again while each probe halves the bracket at least
    return lo, hi, runs


def monotonic(runs: list[Run]) -> bool:
    """False when a batch ran above one that ran out: the largest batch found is then one boundary of several."""
    failed = [r.batch for r in runs if not r.ok]
    return not any(r.ok and r.batch > min(failed) for r in runs) if failed else True


def fractions(largest: int) -> list[int]:
    """The batches to record: about an eighth, a quarter and a half of `largest`, at least 1, distinct, below it."""
    out: list[int] = []
    for share in (8, 4, 2):
        b = max(largest // share, out[-1] + 1 if out else 1)
        if b < largest:
            out.append(b)
    return out


def recorded(at: dict[str, Any]) -> list[int]:
    """The batches recorded under a cap (a cap's entry of truth.json): an eighth, a quarter and a half of the largest."""
    return sorted(int(b) for b in at.get("recordings", {}))


def recording_pairs(at: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The pairs predict-batch is held to: an eighth and a quarter, a quarter and a half; none unless all three."""
    batches = recorded(at)
    if len(batches) != 3:
        return []
    eighth, quarter, half = batches
    return [("1/8+1/4", eighth, quarter), ("1/4+1/2", quarter, half)]


def oom_batch(largest: int, first_oom: int | None) -> int:
    return max(first_oom or 0, math.ceil(1.2 * largest), largest + 1)


def cause(settings: dict[str, str]) -> str:
    """fragmentation: a setting other than the defaults ran it; exhaustion: none did; flaky: the defaults did."""
    if settings.get("") == "ok":
        return "flaky"
    return "fragmentation" if any(v == "ok" for k, v in settings.items() if k) else "exhaustion"


def frag_caps(defaults_peak: int, expandable_peak: int) -> list[int]:
    """Caps to try for a fragmentation program, between its peaks under expandable segments and the defaults (MiB)."""
    lo, hi = expandable_peak, defaults_peak
    return [((lo + int(f * (hi - lo))) >> 20) << 20 for f in (0.5, 0.25, 0.75, 0.125)] if hi > lo else []


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows) + "\n"


def _found(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "-"
    if entry.get("error") and entry.get("batch") is None:
        return "failed" if entry.get("crashed") else "n/a"
    trials = f"{entry['trial_count']} trials, " if "trial_count" in entry else ""
    return (f"{entry.get('batch')} ({trials}{entry.get('trial_steps')} steps, {entry.get('ooms')} OOM, "
            f"{entry.get('seconds', 0):.1f} s)")


def _said(verdict: dict[str, Any] | None, settings: dict[str, str]) -> str:
    if not verdict:
        return "-"
    named = verdict.get("named")
    return verdict["cause"] + (f": {named} ({settings.get(named, 'not run')})" if named else "")


def summary_text(truth: dict[str, Any]) -> str:
    out = (f"memstress doctor corpus: PyTorch {truth['torch']} (CUDA {truth['cuda']}) on {truth['gpu']} "
           f"(driver {truth['driver']}), {truth['date']}, {truth['seconds']:.0f} s\n")
    caps = [str(c) for c in truth["caps"]]
    out += "\nlargest batch by real runs (runs taken), and the batches recorded\n"
    rows = [["PROGRAM", "KIND", *[f"LARGEST @{cap_name(int(c))}" for c in caps], "RECORDED"]]
    for p in truth["programs"]:
        at = p.get("caps") or {}
        rows.append([p["program"], p["kind"],
                     *[f"{at[c]['largest']} ({len(at[c]['runs'])}){'' if at[c].get('stable', True) else ' unstable'}"
                       if c in at else "-" for c in caps],
                     "; ".join(",".join(at[c]["recordings"]) for c in caps if c in at) or "-"])
    out += table(rows)
    out += "\nOOM under a cap: the batch under each setting (PyTorch's own runs)\n"
    short = ["defaults", "expandable", "split64", "split128", "split512", "round4", "round8", "gc0.8"]
    rows = [["PROGRAM", "BATCH", "CAP", *short, "CAUSE"]]
    for p in truth["programs"]:
        oom = p.get("oom")
        if oom:
            rows.append([p["program"], str(oom["batch"]), cap_name(oom["cap"]),
                         *[{"ok": "ok", "oom": "OOM"}.get(oom["settings"].get(s, ""), "-") for s in truth["settings"]],
                         oom["cause"]])
    out += table(rows)
    said = [p for p in truth["programs"] if (p.get("oom") or {}).get("doctor")]
    if said:
        out += "\nmemstress doctor on each OOM snapshot (alone; with the runs at 1/4 and 1/2): its cause, the setting it names and PyTorch under it\n"
        rows = [["PROGRAM", "PYTORCH", "DOCTOR", "WITH RUNS"]]
        for p in said:
            oom = p["oom"]
            rows.append([p["program"], oom["cause"],
                         *[_said(oom["doctor"].get(how), oom["settings"]) for how in ("alone", "with_runs")]])
        out += table(rows)
    finders = [p for p in truth["programs"] if p.get("find_max_batch") or p.get("lightning")]
    if finders:
        out += "\nlargest batch found in one process under the smaller cap: batch (trials, steps, OOMs, seconds)\n"
        rows = [["PROGRAM", "REAL", "FIND_MAX_BATCH", "LIGHTNING"]]
        for p in finders:
            real = (p.get("caps") or {}).get(str(min(truth["caps"])), {}).get("largest")
            rows.append([p["program"], str(real), _found(p.get("find_max_batch")), _found(p.get("lightning"))])
        out += table(rows)
    problems = [f"{p['program']}: {p['error']}" for p in truth["programs"] if p.get("error")]
    problems += [f"{p['program']}: a fragmentation program's OOM came out {p['oom']['cause']!r}"
                 for p in truth["programs"] if p["kind"] == "fragmentation" and p.get("oom")
                 and p["oom"]["cause"] != "fragmentation"]
    out += "\n" + ("problems:\n" + "".join(f"  {x}\n" for x in problems) if problems else "no problems\n")
    return out


# ---------------------------------------------------------------------------------------------------------------
# The runs.


class Lab:
    """Runs doctor_programs.py, at most `jobs` at once, and keeps the snapshots; logs without absolute paths."""

    def __init__(self, out: Path, work: Path, jobs: int, memstress: Path | None, log_name: str = "corpus.log") -> None:
        self.out, self.work, self.memstress = out, work, memstress
        self.slots = threading.BoundedSemaphore(jobs)
        self.finder_slots = threading.BoundedSemaphore(max(1, jobs // 4))  # the searches go first
        self.lock = threading.Lock()
        self.count = 0
        self.started = time.perf_counter()
        self.echo = True  # print the progress lines too
        self.log_file = open(out / log_name, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def close(self) -> None:
        self.log_file.close()

    def clean(self, text: str) -> str:
        """Text with this machine's paths taken out: the work folder's, the output folder's, the repository's."""
        for path, name in ((self.work, "<work>"), (self.out, "OUTDIR"), (ROOT, ".")):
            text = text.replace(f"{path}{os.sep}", "" if name == "OUTDIR" else f"{name}/").replace(str(path), name)
        return text

    def log(self, message: str) -> None:
        line = f"[{time.perf_counter() - self.started:6.1f}s] {self.clean(message)}"
        with self.lock:
            if self.echo:
                print(line, flush=True)
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def program(self, name: str, *extra: str, conf: str = "") -> dict[str, Any]:
        with self.lock:
            self.count += 1
            result = self.work / f"result-{self.count}.json"
        cmd = [sys.executable, "scripts/lab/doctor_programs.py", name, "--out", str(result), *extra]
        # PyTorch's modules compiled once for all the runs (its own folder may not be writable), the hashes fixed.
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="2",
                   PYTHONHASHSEED="0", PYTHONPYCACHEPREFIX=str(self.work / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        with self.slots:
            done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0 or not result.exists():
            raise RuntimeError(self.clean(f"{name} {' '.join(extra)} (conf {conf!r}): exit {done.returncode}: "
                                          f"{done.stderr.strip()[-1500:]}"))
        return json.loads(result.read_text())

    def run(self, name: str, batch: int, cap: int | None, conf: str = "", *, steps: int = STEPS,
            record: Path | None = None, stacks: str = "none") -> Run:
        extra = ["--batch", str(batch), "--steps", str(steps)]
        if cap:
            extra += ["--cap", str(cap)]
        if record is not None:
            extra += ["--record", str(record), "--stacks", stacks]
        r = self.program(name, *extra, conf=conf)
        oom = r["oom"].splitlines()[0] if r["oom"] else None
        return Run(batch, cap, conf, oom is None, int(r["peak_reserved"]), oom, int(r.get("peak_allocated", 0)))

    def doctor(self, oom: dict[str, Any], runs: list[str], batches: list[int]) -> dict[str, Any]:
        """memstress doctor's cause for the OOM snapshot and the setting it names (alone, or with two batch runs)."""
        cmd = [str(self.memstress), "doctor", str(self.out / oom["snapshot"]), "--format", "json"]
        if runs:
            cmd += ["--batch-runs", ",".join(str(self.out / r) for r in runs), "--batch", ",".join(map(str, batches))]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise RuntimeError(self.clean(f"memstress doctor {oom['snapshot']}: exit {done.returncode}: "
                                         f"{done.stderr.strip()[-1500:]}"))
        verdict = json.loads(done.stdout)["oom"]
        named = verdict.get("named") if verdict.get("cause") == "fragmentation" else None
        return {"cause": verdict.get("cause"), "named": named["pytorch_alloc_conf"] if named else None}

    def keep(self, snapshot: Path, name: str) -> str:
        """The snapshot gzip-compressed under OUTDIR/snapshots, the repository's files named relative to it."""
        with open(snapshot, "rb") as f:
            data = pickle.load(f)  # the recorder's own output: plain data
        relative_frames(data, f"{ROOT}{os.sep}")
        meta = data.get("memstress")
        if isinstance(meta, dict) and isinstance(meta.get("argv"), list):
            meta["argv"] = [self.clean(str(a)) for a in meta["argv"]]
        rel = f"snapshots/{name}.pickle.gz"
        write_pickle(str(self.out / rel), data)  # gzip-compressed: the name ends in .gz
        snapshot.unlink()
        return rel


def relative_frames(value: Any, prefix: str) -> None:
    """Every frame's filename under `prefix` made relative to it, in place."""
    if isinstance(value, dict):
        name = value.get("filename")
        if isinstance(name, str) and name.startswith(prefix):
            value["filename"] = name[len(prefix):]
        for v in value.values():
            if isinstance(v, (dict, list)):
                relative_frames(v, prefix)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                relative_frames(v, prefix)


def run_settings(lab: Lab, pool: cf.Executor, name: str, batch: int, cap: int, tag: str) -> dict[str, Any]:
    """The OOM recording (Python stacks, PyTorch's defaults) and the same batch and cap under every other setting."""
    snap = lab.work / f"{name}-oom.pickle"
    jobs = {conf: pool.submit(lab.run, name, batch, cap, conf, record=snap if conf == "" else None,
                              stacks="python") for conf in SETTINGS}
    runs = {conf: job.result() for conf, job in jobs.items()}
    settings = {conf: "ok" if r.ok else "oom" for conf, r in runs.items()}
    entry = {"batch": batch, "cap": cap, "snapshot": lab.keep(snap, f"{name}-oom-{tag}-b{batch}"),
             "message": runs[""].oom, "settings": settings, "cause": cause(settings),
             "runs": [r.row() for r in runs.values()]}
    lab.log(f"{name}: OOM at batch {batch} under {cap_name(cap)}: {entry['cause']} "
            f"({', '.join(k or 'defaults' for k, v in settings.items() if v == 'ok') or 'no setting ran it'})")
    return entry


def verify_the_doctor(lab: Lab, pool: cf.Executor, name: str, oom: dict[str, Any], at: dict[str, Any] | None) -> None:
    """With --memstress: what the doctor says of the OOM, alone and with the runs at a quarter and a half of the
    largest batch, and PyTorch at the OOM's batch under every setting it names that was not run yet."""
    if lab.memstress is None:
        return
    said = {"alone": lab.doctor(oom, [], [])}
    batches = sorted(int(b) for b in (at or {}).get("recordings", {}))
    if len(batches) == 3:
        said["with_runs"] = lab.doctor(oom, [at["recordings"][str(b)] for b in batches[1:]], batches[1:])
    oom["doctor"] = said
    new = sorted({v["named"] for v in said.values() if v["named"] and v["named"] not in oom["settings"]})
    jobs = {conf: pool.submit(lab.run, name, oom["batch"], oom["cap"], conf) for conf in new}
    for conf, job in jobs.items():
        r = job.result()
        oom["settings"][conf] = "ok" if r.ok else "oom"
        oom["runs"].append(r.row())
    oom["cause"] = cause(oom["settings"])
    lab.log(f"{name}: the doctor says " + "; ".join(
        f"{how}: {v['cause']}" + (f", names {v['named']} (PyTorch under it: {oom['settings'][v['named']]})"
                                  if v["named"] else "") for how, v in said.items()))


def normal_program(lab: Lab, pool: cf.Executor, name: str, caps: list[int]) -> dict[str, Any]:
    entry: dict[str, Any] = {"caps": {}}

    def one_cap(cap: int) -> None:
        largest, first_oom, runs = search_largest(lambda b: lab.run(name, b, cap), START.get(name, 8), cap)
        lab.log(f"{name}: largest batch under {cap_name(cap)}: {largest} ({len(runs)} runs)")
        recordings = {}
        jobs = {b: pool.submit(lab.run, name, b, cap, record=lab.work / f"{name}-{cap}-b{b}.pickle")
                for b in fractions(largest)}
        again = [pool.submit(lab.run, name, b, cap) for b in (largest, first_oom) if b]  # the boundary, once more
        repeat = [job.result() for job in again]
        stable = all(r.ok == (r.batch == largest) for r in repeat) and monotonic(runs + repeat)
        if not stable:
            lab.log(f"{name}: under {cap_name(cap)} the boundary is not stable: "
                    + ", ".join(f"{r.batch} {'ran' if r.ok else 'ran out'}" for r in runs + repeat))
        for b, job in jobs.items():
            r = job.result()
            if not r.ok:
                lab.log(f"{name}: the recording at batch {b} under {cap_name(cap)} ran out of memory")
            recordings[str(b)] = lab.keep(lab.work / f"{name}-{cap}-b{b}.pickle", f"{name}-{cap_name(cap)}-b{b}")
        entry["caps"][str(cap)] = {"largest": largest, "first_oom": first_oom, "stable": stable,
                                   "runs": [r.row() for r in runs], "repeat": [r.row() for r in repeat],
                                   "recordings": recordings}
        if cap == min(caps) and largest:
            entry["oom"] = run_settings(lab, pool, name, oom_batch(largest, first_oom), cap, cap_name(cap))
            verify_the_doctor(lab, pool, name, entry["oom"], entry["caps"][str(cap)])

    threads = [threading.Thread(target=lambda c=c: _guard(lab, entry, name, lambda: one_cap(c))) for c in caps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return entry


def _guard(lab: Lab, entry: dict[str, Any], name: str, work: Callable[[], None]) -> None:
    try:
        work()
    except Exception as e:  # noqa: BLE001 - one program's failure is reported, the others go on
        entry["error"] = lab.clean(str(e))[-1500:]
        lab.log(f"{name}: FAILED: {entry['error']}")


def fragmentation_program(lab: Lab, pool: cf.Executor, name: str, caps: list[int]) -> dict[str, Any]:
    search: list[dict[str, Any]] = []
    roof = 2 * max(caps)  # the peaks are measured under a cap too: the GPU is shared
    for batch in FRAG_BATCHES:
        pair = [pool.submit(lab.run, name, batch, roof, conf, steps=1) for conf in ("", "expandable_segments:True")]
        defaults, expandable = (j.result() for j in pair)
        search += [defaults.row(), expandable.row()]
        if not (defaults.ok and expandable.ok):
            continue
        for cap in frag_caps(defaults.peak_reserved, expandable.peak_reserved):
            pair = [pool.submit(lab.run, name, batch, cap, conf, steps=1) for conf in ("", "expandable_segments:True")]
            defaults_capped, expandable_capped = (j.result() for j in pair)
            search += [defaults_capped.row(), expandable_capped.row()]
            if not defaults_capped.ok and expandable_capped.ok:
                lab.log(f"{name}: batch {batch} under {cap_name(cap)}: the defaults run out, expandable segments do not")
                oom = run_settings(lab, pool, name, batch, cap, str(cap))
                verify_the_doctor(lab, pool, name, oom, None)
                return {"caps": {}, "search": search, "oom": oom}
    lab.log(f"{name}: no batch and cap found where the defaults run out and expandable segments do not")
    return {"caps": {}, "search": search, "oom": None, "error": "no fragmenting batch and cap found"}


def find_max(lab: Lab, name: str, cap: int, tool: str) -> dict[str, Any]:
    extra = ["--find-max", tool, "--cap", str(cap)] + (["--memstress", str(lab.memstress)] if tool == "memstress"
                                                        else [])
    try:
        with lab.finder_slots:
            found = lab.program(name, *extra)
    except RuntimeError as e:  # the process itself died
        found = {"program": name, "tool": tool, "cap": cap, "crashed": True, "error": lab.clean(str(e))[-1500:]}
    found.pop("program", None)
    lab.log(f"{name}: {tool} found {found.get('batch')} under {cap_name(cap)} "
            f"({found.get('trial_steps')} steps, {found.get('ooms')} OOM)" + (f": {found['error']}"
                                                                             if found.get("error") else ""))
    return found


def environment(memstress: Path | None) -> dict[str, Any]:
    def out(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120).stdout.strip()
        except OSError:
            return ""

    smi = out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).splitlines()
    probe = ("import json, torch\ntry:\n import lightning; l = lightning.__version__\nexcept ImportError:\n l = None\n"
             "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'lightning': l, "
             "'available': torch.cuda.is_available()}))")
    versions = json.loads(out([sys.executable, "-c", probe]) or "{}")
    gpu, driver = ([s.strip() for s in smi[0].split(",")] + ["", ""])[:2] if smi else ("", "")
    return {"gpu": gpu, "driver": driver, "torch": versions.get("torch"), "cuda": versions.get("cuda"),
            "python": platform.python_version(), "lightning": versions.get("lightning"),
            "memstress": out([str(memstress), "--version"]) if memstress else None,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "available": bool(versions.get("available")) and bool(smi)}


def collect(lab: Lab, names: list[str], caps: list[int]) -> list[dict[str, Any]]:
    """Every program's entry of truth.json (PROGRAM_KEYS), the programs run side by side."""
    entries = []
    with cf.ThreadPoolExecutor(64) as pool, cf.ThreadPoolExecutor(len(names) + 1) as chains:
        programs = {}
        for name in names:
            run = normal_program if dp.SPECS[name].kind == "normal" else fragmentation_program
            programs[name] = chains.submit(run, lab, pool, name, caps)
        finders = {}
        if lab.memstress is not None:
            for name in names:
                if dp.SPECS[name].kind == "normal" and dp.SPECS[name].trainable:
                    for tool in ("memstress", "lightning"):
                        finders[(name, tool)] = pool.submit(find_max, lab, name, caps[0], tool)
        for name, job in programs.items():
            spec = dp.SPECS[name]
            entry = {"program": name, "shape": spec.shape, "kind": spec.kind, "caps": {}, "search": None, "oom": None,
                     "find_max_batch": None, "lightning": None, "error": None}
            try:
                entry.update(job.result())
            except Exception as e:  # noqa: BLE001 - reported in truth.json and the summary
                entry["error"] = lab.clean(str(e))[-1500:]
                lab.log(f"{name}: FAILED: {entry['error']}")
            for tool, key in (("memstress", "find_max_batch"), ("lightning", "lightning")):
                if (name, tool) in finders:
                    found = finders[(name, tool)].result()
                    found["largest"] = entry["caps"].get(str(caps[0]), {}).get("largest")
                    entry[key] = found
            entries.append({k: entry.get(k) for k in PROGRAM_KEYS})
    return entries


def gpu_memory() -> int | None:
    """The GPU's memory in bytes (nvidia-smi), or None."""
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, check=False, timeout=60).stdout.split()
        return int(text[0]) << 20 if text else None
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lab/doctor_corpus.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--caps", default="2G,4G", help="the caps (default 2G,4G); the OOMs are recorded under the smallest")
    parser.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 1), help="runs side by side")
    parser.add_argument("--programs", help="comma-separated (default: every program of doctor_programs.py)")
    parser.add_argument("--memstress", type=Path, help="the memstress binary: also compare find_max_batch, Lightning")
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}, under the smaller cap")
    args = parser.parse_args(argv)
    try:
        caps = sorted({parse_size(c) for c in args.caps.split(",") if c.strip()})
    except ValueError as e:
        parser.error(f"--caps {args.caps!r}: {e}")
    names = [n for n in (args.programs or "").split(",") if n] or list(QUICK if args.quick else dp.PROGRAMS)
    unknown = [n for n in names if n not in dp.SPECS]
    if unknown or not caps or args.jobs < 1:
        parser.error(f"unknown programs {unknown} (choose from {', '.join(dp.PROGRAMS)})" if unknown
                     else "give at least one cap and one job")
    if args.quick:
        caps = caps[:1]
    memstress = args.memstress.resolve() if args.memstress else None
    env = environment(memstress)
    if not env.pop("available"):
        print("scripts/lab/doctor_corpus.py: needs nvidia-smi and PyTorch with CUDA", file=sys.stderr)
        return 3
    total = gpu_memory()
    jobs = args.jobs
    if total and jobs * (caps[-1] + (1 << 30)) > 0.9 * total:  # a cap and a CUDA context each, with room to spare
        jobs = max(1, int(0.9 * total) // (caps[-1] + (1 << 30)))
    out = args.outdir.resolve()
    (out / "snapshots").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="memstress-corpus-"))
    lab = Lab(out, work, jobs, memstress)
    lab.log(f"{len(names)} programs, caps {', '.join(cap_name(c) for c in caps)}, {jobs} runs at once, "
            f"{env['gpu']}, PyTorch {env['torch']}")
    entries = collect(lab, names, caps)
    truth = {"schema": SCHEMA, **env, "caps": caps, "settings": SETTINGS, "steps": STEPS, "jobs": jobs,
             "seconds": round(time.perf_counter() - lab.started, 1),
             "programs": entries}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    text = summary_text(truth)
    (out / "summary.txt").write_text(text, encoding="utf-8")
    for line in text.splitlines():
        lab.log(line)
    lab.close()
    shutil.rmtree(work, ignore_errors=True)
    failed = [p for p in truth["programs"] if p["error"] or (p["kind"] == "fragmentation"
                                                              and (p["oom"] or {}).get("cause") != "fragmentation")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
