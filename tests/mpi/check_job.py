#!/usr/bin/env python3
"""Label mpi: `memstress run` as a job of two ranks under mpirun, on the simulated device.

    check_job.py SCENARIO --mpiexec MPIEXEC --memstress MEMSTRESS --workdir DIR

Scenarios: merged (one results file with both ranks' rows, both environments and a correct cross-rank
summary), throw (rank 1's case throws: an error row, the job goes on), exit (rank 1 exits mid-run:
rank 0 notices by the timeout, names rank 1 and the case in an aborted document, earlier rows kept),
exit_default (the same under Open MPI's default policy, which kills the job at once: the stream keeps
the earlier rows), hang (rank 1 hangs: as exit), nccl_hang (on two real GPUs: rank 1 hangs while rank 0
waits in an NCCL all_reduce; rank 0's NCCL wait gives up at --timeout and aborts the communicator, its
error row is kept, and the job aborts naming rank 1 and the case), in_turn (`--in-turn sizes`: the ranks run
each sizes case one after the other, never at once), in_turn_hang (as hang, with the cases in turn: rank 1
hangs in its turn; rank 0's row of that case is kept), rank0_exit (rank 0 exits mid-run under a launcher that
lets the job run on: rank 1 gives up after one --timeout and a short grace, not two timeouts), two_nodes (four
ranks as two nodes of two on one host, through MEMSTRESS_NODE: local ranks and nodes in the environment,
`--in-turn` turns by local rank, one rank of each node at a time, a straggler named with its node, and a node
name too long for MPI refused by every rank at once, exit 2), accept_exit (`memstress accept` under mpirun: rank 1
exits during the profile's second case; rank 0 notices by the timeout and judges what finished: FAIL lines naming
rank 1 and why the run ended, exit 1, never "internal error" nor NOT JUDGED, the finished rows kept).
Exit codes: 0 pass, 1 fail, 77 skipped
(no mpiexec; for nccl_hang, fewer than two GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ["1M", "2M", "4M"]  # three cases of alloc-smoke
FAULT_CASE = 1  # 0-based: the second case


class Failed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


SIM_JOB = ["alloc-smoke", "-p", "count=2", "-d", "sim:8G"]
GPU_JOB = ["collectives", "-p", "collective=all_reduce", "-p", "pressure=none"]  # one GPU per rank, by local rank


def run_job(args, out: Path, extra: list[str], env_extra: dict[str, str] | None = None, timeout: float = 60,
            job: list[str] | None = None):
    env = dict(os.environ)
    # Open MPI: allowed as root (CI containers), and 2 ranks on a machine with fewer cores.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               NCCL_NVLS_ENABLE="0")
    env.update(env_extra or {})
    command = [args.mpiexec, "-np", "2", args.memstress, "run", *(job or SIM_JOB), "-p", "bytes=" + ",".join(CASES),
               "-n", "2", "-w", "0", "--out", str(out), *extra]
    print("$", " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    seconds = time.monotonic() - start
    print(f"--- exit code {done.returncode} after {seconds:.1f} s\n--- stdout:\n{done.stdout}\n--- stderr:\n{done.stderr}")
    return done, seconds


def load(path: Path):
    check(path.exists(), f"{path} was not written")
    return json.loads(path.read_text())


def stream_rows(out: Path) -> list[dict]:
    lines = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines() if line.strip()]
    check(lines and lines[0]["type"] == "header", "the stream starts with its header")
    return [line for line in lines if line["type"] == "row"]


def validate(*paths: Path, expect: int = 0) -> None:
    done = subprocess.run([sys.executable, "-m", "memstress.validate", *map(str, paths)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT / "python"),
                                                                                      os.environ.get("PYTHONPATH"))))})
    print(done.stdout, done.stderr)
    check(done.returncode in (expect, 77), f"memstress.validate: exit {done.returncode}, expected {expect}")


def rows_by_case(rows: list[dict]) -> dict[str, set[int]]:
    cases: dict[str, set[int]] = {}
    for row in rows:
        cases.setdefault(row["params"]["bytes"], set()).add(row["rank"])
    return cases


def merged(args, work: Path) -> None:
    out = work / "merged.json"
    done, _ = run_job(args, out, [])
    check(done.returncode == 0, f"exit code {done.returncode}, expected 0")
    doc = load(out)
    check(doc["status"] == "complete", f"status {doc['status']}")
    rows = doc["rows"]
    check(len(rows) == 2 * len(CASES), f"{len(rows)} rows, expected {2 * len(CASES)} (3 cases x 2 ranks)")
    check(rows_by_case(rows) == {c: {0, 1} for c in CASES}, f"rows by case and rank: {rows_by_case(rows)}")
    check(all(r["verdict"] == "pass" for r in rows), "every row passes")
    check(len(stream_rows(out)) == len(rows), "the stream holds every row")
    ranks = doc["environment"]["ranks"]
    check([r["rank"] for r in ranks] == [0, 1], f"environment of ranks {[r['rank'] for r in ranks]}")
    for r in ranks:
        check(r["host"]["name"] != "" and r["device"]["label"] == "sim:8G", f"rank {r['rank']}: host and device")
    check(doc["config"]["ranks"] == 2, "config.ranks is 2")
    summary = doc.get("rank_summary")
    check(summary is not None, "a rank_summary")
    metrics = {name for r in rows for name in r["metrics"]}
    check(len(summary["cases"]) == len(CASES) * len(metrics),
          f"{len(summary['cases'])} summary entries, expected {len(CASES)} cases x {len(metrics)} metrics")
    for entry in summary["cases"]:
        values = sorted(r["metrics"][entry["metric"]]["median"] for r in rows
                        if r["case"] == entry["case"] and entry["metric"] in r["metrics"])
        check(entry["ranks"] == 2, f"{entry['case']} {entry['metric']}: ranks {entry['ranks']}")
        check(entry["min"] == values[0] and entry["max"] == values[-1], f"{entry}: min/max against {values}")
        check(abs(entry["median"] - (values[0] + values[1]) / 2) < 1e-9 * max(1, abs(values[1])), f"{entry}: median")
    validate(out, out.with_suffix(".jsonl"))
    # The validator recomputes the summary: a tampered one is invalid.
    summary["cases"][0]["median"] = summary["cases"][0]["max"] * 2 + 1
    tampered = work / "tampered.json"
    tampered.write_text(json.dumps(doc))
    validate(tampered, expect=1)
    # Rank 0 alone prints: one rows table, one cross-rank table, one count line.
    check(done.stdout.count("WORKLOAD") == 2, "stdout has the rows table and the cross-rank table, once each")
    check("Across ranks" in done.stdout and "0:sim:8G" in done.stdout and "1:sim:8G" in done.stdout, "tables")
    check(done.stdout.count("6 rows (2 ranks): 6 passed") == 1, "one count line, of both ranks' rows")


def thrown(args, work: Path) -> None:
    out = work / "throw.json"
    done, _ = run_job(args, out, ["--inject-fault", f"1:{FAULT_CASE}:throw"])
    check(done.returncode == 1, f"exit code {done.returncode}, expected 1 (an error row)")
    doc = load(out)
    check(doc["status"] == "complete", f"status {doc['status']}: a thrown case is not a fault")
    rows = doc["rows"]
    check(len(rows) == 2 * len(CASES), f"{len(rows)} rows: the job went on after the error")
    errors = [r for r in rows if r["verdict"] == "error"]
    check(len(errors) == 1 and errors[0]["rank"] == 1 and errors[0]["params"]["bytes"] == CASES[FAULT_CASE],
          f"one error row, rank 1's in case {CASES[FAULT_CASE]}: {errors}")
    check("--inject-fault" in errors[0]["reason"], "the reason says why")
    validate(out, out.with_suffix(".jsonl"))


def aborted_document(out: Path, where: str) -> dict:
    """The document of a job that lost rank 1 at case `where`: aborted, saying so, with the case before kept."""
    doc = load(out)
    check(doc["status"] == "aborted", f"status {doc['status']}")
    check("rank 1" in doc["abort_reason"] and where in doc["abort_reason"], f"abort_reason: {doc['abort_reason']!r}")
    check({r["rank"] for r in doc["rows"] if r["params"]["bytes"] == CASES[0]} == {0, 1},
          "the document keeps both ranks' rows of the case before the fault")
    return doc


def aborted(args, work: Path, kind: str, env_extra: dict[str, str], final_document: bool,
            extra: list[str] | None = None) -> None:
    out = work / f"{kind}{'-in-turn' if extra else ''}.json"
    timeout_s = 4
    done, seconds = run_job(args, out, ["--inject-fault", f"1:{FAULT_CASE}:{kind}", "--timeout", str(timeout_s),
                                        *(extra or [])], env_extra)
    check(done.returncode != 0, "the job fails")
    check(seconds < 45, f"the job ended after {seconds:.0f} s, within the timeout and some margin")
    earlier = [r for r in stream_rows(out) if r["params"]["bytes"] == CASES[0]]
    check({r["rank"] for r in earlier} == {0, 1}, "the stream keeps both ranks' rows of the case before the fault")
    if not final_document:
        check("rank 1" in done.stderr, "the launcher names rank 1")
        return
    where = f"[{FAULT_CASE + 1}/{len(CASES)}] alloc-smoke bytes={CASES[FAULT_CASE]}"
    check("rank 1" in done.stderr and where in done.stderr, f"stderr names rank 1 and the case {where!r}")
    doc = aborted_document(out, where)
    check(all(r["params"]["bytes"] == CASES[0] for r in doc["rows"] if r["rank"] == 1), "no later rows of rank 1")
    check([r["verdict"] for r in doc["rows"] if r["rank"] == 0 and r["params"]["bytes"] == CASES[FAULT_CASE]] ==
          ["pass"], "rank 0's own row of the case where rank 1 was lost is kept")
    validate(out, out.with_suffix(".jsonl"))


def rank0_exit(args, work: Path, env_extra: dict[str, str]) -> None:
    """Rank 0, which rank 1 waits for at every step, dies: rank 1 waits one timeout (and the grace), not two."""
    out = work / "rank0-exit.json"
    timeout_s = 10
    done, seconds = run_job(args, out, ["--inject-fault", f"0:{FAULT_CASE}:exit", "--timeout", str(timeout_s)],
                            env_extra, timeout=120)
    check(done.returncode != 0, "the job fails")
    check("rank 1" in done.stderr and "rank 0" in done.stderr, "rank 1 says it gave up waiting for rank 0")
    grace = 2  # kRankZeroGrace (harness/dist/mpi_world.hpp)
    check(f"within {timeout_s + grace} s" in done.stderr, f"rank 1 waited --timeout + {grace} s")
    # Twice the timeout (the old patience) plus the launcher's start is well above this; one timeout, the grace
    # and the start are below it.
    check(seconds < 2 * timeout_s - 2, f"the job ended after {seconds:.1f} s: rank 1 waited about two timeouts")
    earlier = [r for r in stream_rows(out) if r["params"]["bytes"] == CASES[0]]
    check({r["rank"] for r in earlier} == {0, 1}, "the stream keeps both ranks' rows of the case before the fault")


def iso_seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def in_turn(args, work: Path) -> None:
    out = work / "in_turn.json"
    job = ["sizes", "alloc-smoke", "-p", "sizes.ops=20000", "-p", "count=2", "-d", "sim:8G", "--in-turn", "sizes"]
    done, _ = run_job(args, out, [], job=job)
    check(done.returncode == 0, f"exit code {done.returncode}, expected 0")
    doc = load(out)
    check(doc["config"]["in_turn"] == ["sizes"], f"config.in_turn: {doc['config'].get('in_turn')}")
    rows = doc["rows"]
    check(len(rows) == 2 * 2 * len(CASES), f"{len(rows)} rows, expected 12 (2 workloads x 3 cases x 2 ranks)")
    check(all(r["verdict"] == "pass" for r in rows), "every row passes")
    for case in sorted({r["case"] for r in rows if r["workload"] == "sizes"}):
        first, second = sorted((r for r in rows if r["workload"] == "sizes" and r["case"] == case),
                               key=lambda r: r["rank"])
        check(first["seconds"] > 0.01, f"{case}: {first['seconds']:.4f} s, too short to tell turns from overlap")
        first_end = iso_seconds(first["started_at"]) + first["seconds"]
        # started_at has millisecond resolution; rank 1 starts once rank 0's turn has ended.
        check(iso_seconds(second["started_at"]) >= first_end - 0.002,
              f"{case}: rank 1 started at {second['started_at']}, before rank 0 ended ({first['started_at']} "
              f"+ {first['seconds']:.3f} s)")
    validate(out, out.with_suffix(".jsonl"))


def two_nodes(args, work: Path) -> None:
    """Four ranks as nodes a and b of two ranks each (Note [Nodes] in harness/dist/mpi_world.hpp)."""
    out = work / "two_nodes.json"
    job = ["run", "sizes", "oom", "-p", "sizes.ops=40000", "-p", "dist=uniform", "-p", "search=largest_single",
           "-p", "state=fresh", "--in-turn", "sizes", "-n", "2", "-w", "0", "--out", str(out)]
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    # Rank 3, node b's second, has half the memory of the others: a straggler in the largest allocation.
    command = [args.mpiexec, "-np", "2", "env", "MEMSTRESS_NODE=a", args.memstress, *job, "-d", "sim:8G", ":",
               "-np", "1", "env", "MEMSTRESS_NODE=b", args.memstress, *job, "-d", "sim:8G", ":",
               "-np", "1", "env", "MEMSTRESS_NODE=b", args.memstress, *job, "-d", "sim:4G"]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=90)
    print(f"--- exit code {done.returncode}\n--- stdout:\n{done.stdout}\n--- stderr:\n{done.stderr}")
    check(done.returncode == 0, f"exit code {done.returncode}, expected 0")
    doc = load(out)
    placed = [(r["rank"], r["local_rank"], r["node"]) for r in doc["environment"]["ranks"]]
    check(placed == [(0, 0, "a"), (1, 1, "a"), (2, 0, "b"), (3, 1, "b")], f"ranks, local ranks, nodes: {placed}")
    rows = doc["rows"]
    check(all(r["verdict"] == "pass" for r in rows), "every row passes")
    check([r["device"].get("node") for r in rows if r["workload"] == "oom"] == ["a", "a", "b", "b"], "rows' nodes")
    sizes = sorted((r for r in rows if r["workload"] == "sizes"), key=lambda r: r["rank"])
    check(len(sizes) == 4 and all(r["seconds"] > 0.005 for r in sizes), "four sizes rows, long enough to order")
    start = [iso_seconds(r["started_at"]) for r in sizes]
    end = [s + r["seconds"] for s, r in zip(start, sizes)]
    # Turn 0 is local rank 0 of both nodes (ranks 0 and 2), turn 1 local rank 1 (ranks 1 and 3), after turn 0 ended
    # everywhere; so rank 2 ran before rank 1, not after it as in turns by rank.
    for later in (1, 3):
        for earlier in (0, 2):
            check(start[later] >= end[earlier] - 0.002, f"rank {later} started before rank {earlier} ended")
    check(start[2] < start[1], "rank 2 (node b's local rank 0) ran in the first turn, beside rank 0")
    entry = next(e for e in doc["rank_summary"]["cases"] if e["metric"] == "largest_allocatable")
    check([(s["rank"], s.get("node")) for s in entry["stragglers"]] == [(3, "b")], f"stragglers: {entry['stragglers']}")
    check("rank 3 on b (50% worse)" in done.stdout, "the table names the straggler with its node")
    validate(out, out.with_suffix(".jsonl"))
    # A node name MPI cannot carry, on two ranks of four: every rank refuses it at once, none waits for the others.
    long_name = "n" * 300
    command = [args.mpiexec, "-np", "2", "env", f"MEMSTRESS_NODE={long_name}", args.memstress, *job, "-d", "sim:8G",
               ":", "-np", "2", "env", "MEMSTRESS_NODE=b", args.memstress, *job, "-d", "sim:8G"]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=90)
    print(f"--- exit code {done.returncode} after {time.monotonic() - start:.1f} s\n--- stderr:\n{done.stderr}")
    check(done.returncode == 2, f"exit code {done.returncode}, expected 2 (bad input)")
    check("MEMSTRESS_NODE: 300 characters; a node name has at most" in done.stderr, "the long name is named")


def accept_exit(args, work: Path, env_extra: dict[str, str]) -> None:
    out = work / "accept-exit.json"
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               **env_extra)
    # sim-ranks.yaml runs two cases: alloc-smoke, then leak (case index 1), where rank 1 exits.
    command = [args.mpiexec, "-np", "2", args.memstress, "accept", "--profile",
               str(ROOT / "tests" / "data" / "accept" / "sim-ranks.yaml"), "-d", "sim:8G", "-q", "--timeout", "4",
               "--inject-fault", "1:1:exit", "--out", str(out)]
    print("$", " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    seconds = time.monotonic() - start
    print(f"--- exit code {done.returncode} after {seconds:.1f} s\n--- stdout:\n{done.stdout}\n--- stderr:\n{done.stderr}")
    check(done.returncode == 1, f"exit code {done.returncode}, expected 1 (a check failed)")
    check(seconds < 45, f"the job ended after {seconds:.0f} s, within the timeout and some margin")
    check("internal error" not in done.stderr + done.stdout, "no internal error")
    lines = done.stdout.splitlines()
    check("PASS  alloc-smoke passes: measured 0 rows not passed (total of 2 rows)" in done.stdout,
          "the case both ranks finished is judged on both")
    leak = [line for line in lines if line.startswith("FAIL  leak passes on every rank: missing: ")]
    check(len(leak) == 1 and "rank 1, sim:8G has no row of leak" in leak[0], f"the leak check names rank 1: {leak}")
    ended = [line for line in lines if line.startswith("FAIL  run: complete: this run was aborted: ")]
    check(len(ended) == 1 and "rank 1" in ended[0] and "[2/2] leak" in ended[0],
          f"the run's own check says it was aborted, naming rank 1 and the case: {ended}")
    check(lines[-1:] == ["verdict: FAIL (1 of 3 checks passed, 1 run check failed; profile sim-ranks, simulated "
                         "(8G), 2 ranks)"], f"the verdict: {lines[-1:]}")
    doc = load(out)
    check(doc["status"] == "aborted" and "rank 1" in doc["abort_reason"], f"the document: {doc['status']}")
    kept = sorted((r["workload"], r["rank"]) for r in doc["rows"])
    check(kept == [("alloc-smoke", 0), ("alloc-smoke", 1), ("leak", 0)], f"the finished rows are kept: {kept}")


def gpu_count(args) -> int:
    done = subprocess.run([args.memstress, "devices", "--format", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        return 0
    return len(json.loads(done.stdout).get("gpus") or [])


def nccl_hung(args, work: Path) -> None:
    out = work / "nccl_hang.json"
    timeout_s = 10
    done, seconds = run_job(args, out, ["--inject-fault", f"1:{FAULT_CASE}:hang", "--timeout", str(timeout_s)],
                            timeout=120, job=GPU_JOB)
    check(done.returncode != 0, "the job fails")
    # Rank 0: the NCCL wait gives up at the timeout, then the gather of the case's rows waits one more.
    check(seconds < 2 * timeout_s + 40, f"the job ended after {seconds:.0f} s: the timeouts and some margin")
    doc = aborted_document(out, f"[{FAULT_CASE + 1}/{len(CASES)}] collectives")
    check(all(r["verdict"] == "pass" for r in doc["rows"] if r["params"]["bytes"] == CASES[0]),
          "the case before the fault passed on both ranks, its data verified on the device")
    mine = [r for r in doc["rows"] if r["rank"] == 0 and r["params"]["bytes"] == CASES[FAULT_CASE]]
    check(len(mine) == 1 and mine[0]["verdict"] == "error", f"rank 0's row of the faulty case is an error: {mine}")
    reason = mine[0]["reason"]
    check("rank 0" in reason and f"not finished after {timeout_s} s" in reason and "NCCL communicator was aborted"
          in reason, f"its reason says the NCCL wait timed out and the communicator was aborted: {reason!r}")
    validate(out, out.with_suffix(".jsonl"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["merged", "throw", "exit", "exit_default", "hang", "nccl_hang", "in_turn",
                                             "in_turn_hang", "rank0_exit", "two_nodes", "accept_exit"])
    parser.add_argument("--mpiexec", default="")
    parser.add_argument("--memstress", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    if not args.mpiexec or not Path(args.mpiexec).exists():
        print("skipped: no mpiexec/mpirun")
        return 77
    if args.scenario == "nccl_hang" and gpu_count(args) < 2:
        print("SKIPPED: needs two GPUs")
        return 77
    args.workdir.mkdir(parents=True, exist_ok=True)
    # Let a rank that exits leave the others running (Open MPI kills the job at once by default).
    survive = {"OMPI_MCA_orte_abort_on_non_zero_status": "0"}
    try:
        if args.scenario == "merged":
            merged(args, args.workdir)
        elif args.scenario == "throw":
            thrown(args, args.workdir)
        elif args.scenario == "exit":
            aborted(args, args.workdir, "exit", survive, final_document=True)
        elif args.scenario == "exit_default":
            aborted(args, args.workdir, "exit", {}, final_document=False)
        elif args.scenario == "nccl_hang":
            nccl_hung(args, args.workdir)
        elif args.scenario == "in_turn":
            in_turn(args, args.workdir)
        elif args.scenario == "two_nodes":
            two_nodes(args, args.workdir)
        elif args.scenario == "accept_exit":
            accept_exit(args, args.workdir, survive)
        elif args.scenario == "rank0_exit":
            rank0_exit(args, args.workdir, survive)
        elif args.scenario == "in_turn_hang":
            aborted(args, args.workdir, "hang", {}, final_document=True, extra=["--in-turn", "alloc-smoke"])
        else:
            aborted(args, args.workdir, "hang", {}, final_document=True)
    except Failed as e:
        print(f"FAIL: {e}")
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: the job did not end within {e.timeout} s")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
