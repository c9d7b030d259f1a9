#!/usr/bin/env python3
"""scripts/lab/doctor_islands.py CORPUS (--plan-out FILE --memstress BIN | --plan FILE [--jobs N]):
PyTorch itself at the batches below its own "largest" where memstress's replay says a batch runs out.

A corpus's largest batch (scripts/lab/doctor_corpus.py) comes from bisection, which holds only where running out
is monotonic in the batch. Near a cap it is not (Note [Fitting is not monotonic] in harness/doctor/batch_model.hpp):
a batch can run out where a larger one runs. This script checks the replay's claims against PyTorch:

  --plan-out FILE --memstress BIN   for every program, cap and pair of recordings (1/8+1/4, 1/4+1/2),
                                    `memstress predict-batch`: the batches it tried below PyTorch's largest that
                                    ran out in the replay (the lowest PLAN_FAILS of them) and the batch it named.
                                    No GPU needed.
  --plan FILE                       PyTorch at each of those batches, in a process of its own under the cap
                                    (doctor_programs.py, two steps as the corpus runs), up to --jobs at once.

Writes CORPUS/islands.json (schema memstress.doctor-islands/1): per program and cap, the batches the replay said
run out and those it named, PyTorch's run at each (ok or OOM, its peaks), and "largest": the largest batch
PyTorch ran below the lowest batch it ran out at, among these runs and the corpus's own. Exit 0 when every run
finished, 1 otherwise, 3 without PyTorch's CUDA.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lab"))
import doctor_corpus as dc  # noqa: E402 - its Lab runs the programs
from memstress import _json  # noqa: E402 - on the path doctor_corpus puts python/ on

SCHEMA = "memstress.doctor-islands/1"
PLAN_FAILS = 4  # the lowest batches the replay says run out, per prediction


def plan(corpus: Path, memstress: Path) -> dict[str, Any]:
    truth = _json.read_stored(corpus / "truth.json")  # or truth.json.xz, as committed
    out: dict[str, Any] = {}
    for program in truth["programs"]:
        for cap, at in sorted(program.get("caps", {}).items()):
            largest = at.get("largest")
            if not largest:
                continue
            fails: set[int] = set()
            named: set[int] = set()
            for _, small, large in dc.recording_pairs(at):
                done = subprocess.run([str(memstress), "predict-batch", str(corpus / at["recordings"][str(small)]),
                                       str(corpus / at["recordings"][str(large)]), "--batch", f"{small},{large}",
                                       "--capacity", cap, "--format", "json"],
                                      capture_output=True, text=True, check=False, timeout=900)
                if done.returncode != 0:
                    raise RuntimeError(f"predict-batch on {program['program']} under {cap}: {done.stderr.strip()}")
                doc = json.loads(done.stdout)
                below = sorted(t["batch"] for t in doc["tries"] if not t["fits"] and t["batch"] < largest)
                fails.update(below[:PLAN_FAILS])
                named.update(b for b in (doc["estimate"], doc["safe_batch"]) if b)
            if fails:
                out.setdefault(program["program"], {})[cap] = {"replay_fails": sorted(fails),
                                                               "named": sorted(named)}
    return out


def largest_below_failures(runs: list[dict[str, Any]]) -> int | None:
    """The largest batch that ran below the lowest that ran out."""
    lowest_oom = min((r["batch"] for r in runs if not r["ok"]), default=None)
    ran = [r["batch"] for r in runs if r["ok"] and (lowest_oom is None or r["batch"] < lowest_oom)]
    return max(ran, default=None)


def run_plan(corpus: Path, planned: dict[str, Any], jobs: int, failed: list[tuple[str, str, int]]) -> dict[str, Any]:
    """PyTorch at the plan's batches; the runs that could not be made are added to `failed`."""
    truth = _json.read_stored(corpus / "truth.json")  # or truth.json.xz, as committed
    by_name = {p["program"]: p for p in truth["programs"]}
    work = Path(tempfile.mkdtemp(prefix="memstress-islands-"))
    lab = dc.Lab(corpus, work, jobs, None, log_name="islands.log")
    result: dict[str, Any] = {}
    try:
        with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {}
            for name, caps in planned.items():
                for cap, want in caps.items():
                    for batch in sorted(set(want["replay_fails"]) | set(want["named"])):
                        futures[(name, cap, batch)] = pool.submit(lab.run, name, batch, int(cap))
            for (name, cap, batch), job in sorted(futures.items()):
                try:
                    run = job.result()
                except RuntimeError as e:  # the program could not be run there: said, and the exit is 1
                    lab.log(f"{name} under {dc.cap_name(int(cap))}: batch {batch} not run: {e}")
                    failed.append((name, cap, batch))
                    continue
                lab.log(f"{name} under {dc.cap_name(int(cap))}: batch {batch} {'ran' if run.ok else 'ran out'}")
                entry = result.setdefault(name, {}).setdefault(cap, {**planned[name][cap], "runs": []})
                entry["runs"].append(run.row())
        for name, caps in result.items():
            for cap, entry in caps.items():
                at = by_name[name]["caps"][cap]
                entry["bisection_largest"] = at["largest"]
                entry["largest"] = largest_below_failures(at["runs"] + at.get("repeat", []) + entry["runs"])
    finally:
        lab.close()
        shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lab/doctor_islands.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--memstress", type=Path, help="with --plan-out: the memstress binary")
    parser.add_argument("--plan-out", type=Path, help="write the plan here (no GPU needed)")
    parser.add_argument("--plan", type=Path, help="run PyTorch at the plan's batches")
    parser.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args(argv)
    corpus = args.corpus.resolve()
    if not (corpus / "truth.json").is_file() and not (corpus / "truth.json.xz").is_file():
        parser.error(f"{args.corpus}: no truth.json (a corpus of scripts/lab/doctor_corpus.py)")
    if args.plan_out and args.plan:
        parser.error("give --plan-out or --plan, not both")
    if args.plan_out:
        if not args.memstress:
            parser.error("--plan-out needs --memstress")
        args.plan_out.write_text(json.dumps(plan(corpus, args.memstress), indent=1) + "\n", encoding="utf-8")
        return 0
    if not args.plan:
        parser.error("give --plan-out or --plan")
    try:
        planned = json.loads(args.plan.read_text())
    except (OSError, ValueError) as e:
        parser.error(f"--plan {args.plan}: {e}")
    if not dc.environment(None).get("available"):
        print("scripts/lab/doctor_islands.py: needs nvidia-smi and PyTorch with CUDA", file=sys.stderr)
        return 3
    failed: list[tuple[str, str, int]] = []
    islands = {"schema": SCHEMA, "programs": run_plan(corpus, planned, args.jobs, failed)}
    (corpus / "islands.json").write_text(json.dumps(islands, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
