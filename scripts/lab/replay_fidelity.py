#!/usr/bin/env python3
"""scripts/lab/replay_fidelity.py RUNS OUTDIR --memstress BIN [--corpus DIR]: how far memstress's replay and
predict-batch's model are from PyTorch, each on PyTorch's own trace near the cap.

RUNS holds runs of scripts/lab/doctor_programs.py made on a GPU with --record and --out, one pair a run
(NAME.json and NAME.pickle, NAME as PROGRAM-<cap>G-b<batch>); run each with --steps 2 as the corpus does:

    python3 scripts/lab/doctor_programs.py gpt_amp --batch 32 --steps 2 --cap 2147483648 \\
      --record RUNS/gpt_amp-2G-b32.pickle --out RUNS/gpt_amp-2G-b32.json

Writes OUTDIR/snapshots/NAME.pickle.gz (PyTorch's snapshot less its stack frames and the recorder's command line,
which a replay does not read and which name the paths of the machine it ran on), OUTDIR/runs.json (each run's
result as doctor_programs.py wrote it) and prints OUTDIR's table (made again from OUTDIR alone when RUNS is "-"):

- the replay: each trace replayed by `memstress replay` on a simulated device of the cap, its peaks and OOMs beside
  PyTorch's own (a run PyTorch ran out in ends at its OOM, which the replay does not see);
- with --corpus (a folder of scripts/lab/doctor_corpus.py), the model: for each run PyTorch completed, the trace
  `memstress predict-batch` makes at that batch from each pair of the corpus's recordings under the cap
  (Note [A request as a function of the batch]), replayed the same way: whether it fits, its peak allocated
  beside PyTorch's, and the requests whose modelled size is furthest from PyTorch's (in order of the allocations,
  where both traces make as many).

Exit 0 when the table was made, 2 for bad input (a missing folder, a run without its snapshot), 1 when memstress
failed.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doctor_corpus import recorded, recording_pairs  # noqa: E402 - the corpus's own reading of its recordings

NAME = re.compile(r"^(?P<program>[a-z_0-9]+)-(?P<cap>\d+)G-b(?P<batch>\d+)$")
MIB = 1 << 20


class BadInput(Exception):
    pass


def strip(value: Any) -> None:
    """Every stack frame list emptied and the recorder's argv dropped, in place."""
    if isinstance(value, dict):
        if isinstance(value.get("frames"), list):
            value["frames"] = []
        if isinstance(value.get("memstress"), dict):
            value["memstress"].pop("argv", None)
        for v in value.values():
            if isinstance(v, (dict, list)):
                strip(v)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                strip(v)


RUN_KEYS = ("program", "batch", "cap", "oom", "peak_reserved", "peak_allocated")


def checked_run(run: Any, where: str, keys: tuple[str, ...] = RUN_KEYS) -> dict[str, Any]:
    missing = [k for k in keys if not isinstance(run, dict) or k not in run]
    if missing:
        raise BadInput(f"{where}: not a doctor_programs.py result (no {', '.join(missing)})")
    return run


def read_run(meta: Path) -> dict[str, Any]:
    try:
        run = json.loads(meta.read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"{meta}: not a doctor_programs.py result ({e})") from None
    return checked_run(run, str(meta))


def import_runs(runs: Path, outdir: Path) -> None:
    """Every run read and its snapshot loaded before anything is written; the output's snapshots/ made anew."""
    if not runs.is_dir():
        raise BadInput(f"{runs}: not a folder of doctor_programs.py runs")
    results, snapshots = [], {}
    for meta in sorted(runs.glob("*.json")):
        if not NAME.match(meta.stem):
            continue
        snapshot = meta.with_suffix(".pickle")
        if not snapshot.is_file():
            raise BadInput(f"{meta}: no snapshot {snapshot.name} beside it (run with --record)")
        results.append({"name": meta.stem, **read_run(meta)})
        try:
            with snapshot.open("rb") as f:
                snapshots[meta.stem] = pickle.load(f)  # noqa: S301 - a snapshot this lab's own recorder wrote
        except (OSError, pickle.UnpicklingError, EOFError, ValueError) as e:
            raise BadInput(f"{snapshot}: not a PyTorch snapshot ({e})") from None
    if not results:
        raise BadInput(f"{runs}: no run named PROGRAM-<cap>G-b<batch>.json")
    shutil.rmtree(outdir / "snapshots", ignore_errors=True)
    (outdir / "snapshots").mkdir(parents=True)
    for name, data in snapshots.items():
        strip(data)
        with gzip.GzipFile(outdir / "snapshots" / f"{name}.pickle.gz", "wb", mtime=0) as f:
            pickle.dump(data, f)
    (outdir / "runs.json").write_text(json.dumps({"schema": "memstress.replay-fidelity/1", "runs": results},
                                                 indent=1) + "\n")


def memstress(binary: Path, *args: str) -> dict[str, Any]:
    try:
        done = subprocess.run([str(binary), *args, "--format", "json"], capture_output=True, text=True,
                              check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"memstress {' '.join(args)}: {e}") from None
    if done.returncode != 0:
        raise RuntimeError(f"memstress {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def replayed(binary: Path, trace: Path, cap_gib: int) -> dict[str, Any]:
    r = memstress(binary, "replay", str(trace), "-d", f"sim:{cap_gib}G")["replay"]
    return {"ooms": r["num_ooms"], "reserved": r["peaks"]["reserved_bytes"],
            "allocated": r["peaks"]["allocated_bytes"]}


def alloc_sizes(binary: Path, trace: Path) -> list[int]:
    """The sizes of a trace's allocations, in order, as memstress reads it (a snapshot is converted first)."""
    with tempfile.TemporaryDirectory(prefix="memstress-fidelity-") as tmp:
        out = Path(tmp) / "trace.csv"
        if trace.suffix == ".csv":
            out = trace
        else:
            python = Path(__file__).resolve().parents[2] / "python"
            subprocess.run([sys.executable, "-m", "memstress.convert", "-q", "-o", str(out), str(trace)], check=True,
                           env={**os.environ, "PYTHONPATH": str(python)}, timeout=600)
        with out.open() as f:
            rows = csv.DictReader(io.StringIO("".join(x for x in f if not x.startswith("#"))))
            return [int(row["bytes"]) for row in rows if row["action"] == "alloc"]


def mib(n: int) -> str:
    return f"{n / MIB:.1f}"


def replay_rows(binary: Path, outdir: Path, runs: list[dict[str, Any]]) -> list[str]:
    lines = ["| program | cap | batch | PyTorch | PyTorch peak reserved / allocated (MiB) | replay | "
             "replay peak reserved / allocated (MiB) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        cap_gib = int(run["cap"]) >> 30
        got = replayed(binary, outdir / "snapshots" / f"{run['name']}.pickle.gz", cap_gib)
        said = "ran out (the trace ends there)" if run["oom"] else "ran"
        lines.append(f"| {run['program']} | {cap_gib} GiB | {run['batch']} | {said} | {mib(run['peak_reserved'])} / "
                     f"{mib(run['peak_allocated'])} | {'fits' if got['ooms'] == 0 else 'runs out'} | "
                     f"{mib(got['reserved'])} / {mib(got['allocated'])} |")
    return lines


def farthest(real: list[int], model: list[int], count: int = 2) -> str:
    if len(real) != len(model):
        return f"{len(model)} allocations against PyTorch's {len(real)}"
    diffs = sorted(((m - r, i, r, m) for i, (r, m) in enumerate(zip(real, model)) if m != r),
                   key=lambda d: (-abs(d[0]), d[1]))
    if not diffs:
        return "every size PyTorch's"
    return "; ".join(f"#{i} {mib(r)} as {mib(m)}" for _, i, r, m in diffs[:count])


def model_rows(binary: Path, outdir: Path, corpus: Path, runs: list[dict[str, Any]]) -> list[str]:
    truth = json.loads((corpus / "truth.json").read_text())
    programs = {p["program"]: p for p in truth["programs"]}
    lines = ["| program | cap | batch | pair | model's trace | its peak allocated (MiB), PyTorch's | "
             "furthest sizes (MiB): PyTorch's as the model's |", "| --- | --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory(prefix="memstress-fidelity-") as tmp:
        for run in runs:
            at = programs.get(run["program"], {}).get("caps", {}).get(str(run["cap"]))
            if run["oom"] or not at or len(recorded(at)) != 3:
                continue
            cap_gib = int(run["cap"]) >> 30
            real = alloc_sizes(binary, outdir / "snapshots" / f"{run['name']}.pickle.gz")
            for kind, small, large in recording_pairs(at):
                trace = Path(tmp) / f"{run['name']}-{small}-{large}.csv"
                memstress(binary, "predict-batch", str(corpus / at["recordings"][str(small)]),
                          str(corpus / at["recordings"][str(large)]), "--batch", f"{small},{large}",
                          "--capacity", f"{cap_gib}G", "--write-trace", f"{run['batch']}:{trace}")
                got = replayed(binary, trace, cap_gib)
                lines.append(f"| {run['program']} | {cap_gib} GiB | {run['batch']} | {kind} ({small}, {large}) | "
                             f"{'fits' if got['ooms'] == 0 else 'runs out'} | {mib(got['allocated'])}, "
                             f"{mib(run['peak_allocated'])} | {farthest(real, alloc_sizes(binary, trace))} |")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="replay_fidelity.py")
    parser.add_argument("runs", help='the folder of doctor_programs.py runs, or "-" to use OUTDIR as it is')
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--memstress", type=Path, required=True, help="the memstress binary")
    parser.add_argument("--corpus", type=Path, help="a doctor_corpus.py folder: also the model's traces")
    args = parser.parse_args(argv)
    try:
        if args.runs != "-":
            import_runs(Path(args.runs), args.outdir)
        if not (args.outdir / "runs.json").is_file():
            raise BadInput(f"{args.outdir}: no runs.json (give RUNS to make it)")
        if args.corpus and not (args.corpus / "truth.json").is_file():
            raise BadInput(f"--corpus {args.corpus}: no truth.json")
        if not args.memstress.is_file():
            raise BadInput(f"--memstress {args.memstress}: no such file")
        saved = args.outdir / "runs.json"
        try:
            runs = json.loads(saved.read_text())["runs"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise BadInput(f"{saved}: not this script's runs.json ({e})") from None
        if not isinstance(runs, list):
            raise BadInput(f"{saved}: not this script's runs.json (its runs are not a list)")
        runs = [checked_run(r, f"{saved}: run {i}", ("name", *RUN_KEYS)) for i, r in enumerate(runs)]
        lines = ["# PyTorch's traces near the cap, replayed", "", *replay_rows(args.memstress, args.outdir, runs)]
        if args.corpus:
            lines += ["", "# predict-batch's model at the same batches", "",
                      *model_rows(args.memstress, args.outdir, args.corpus, runs)]
    except BadInput as e:
        print(f"replay_fidelity.py: {e}", file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"replay_fidelity.py: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
