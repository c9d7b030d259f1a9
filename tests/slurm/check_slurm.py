#!/usr/bin/env python3
"""Label slurm: memstress on a real Slurm, started on this host for the test and stopped after it.

    check_slurm.py --memstress MEMSTRESS --mpiexec MPIEXEC --cluster DIR --workdir DIR

tests/slurm/slurm_cluster.sh starts munged, slurmctld -D and slurmd -D (Debian's slurm-wlm; a node of this host with
two GPUs as Slurm's gres sees them: device files, no real GPU) and its Prolog is DIR/prolog, a two-line wrapper that
each step below rewrites, as an operator's would call scripts/slurm/memstress-gate. In order:

1. srun: `srun -n 2 --mpi=pmix memstress run alloc-smoke ... -d sim:8G` gives one merged 2-rank result equal to the
   mpirun job's (rows, ranks, hosts); `srun --gpus-per-task=1` gives each task its own CUDA_VISIBLE_DEVICES and
   SLURM_LOCALID (what scripts/lab/slurm-binding reproduces under mpirun on a GPU); a rank that hangs aborts the
   step, rank 0 naming it and the case in an aborted document.
2. The gate as Prolog, a profile that fails: the job does not run, the node is drained with the failing check as
   its reason (sinfo), the verdict a JSON line; resumed, with a profile that passes on the job's two GPUs (two ranks
   under mpirun), the next job runs and the node stays up.
3. A planted hang (MEMSTRESS_PLANT_FAULT=hang, the simulated device): the gate ends within its budget, stops the
   hung check (no process of it left), drains the node.
4. A node shared with another job: the gate skips, saying which job, and the job runs; HealthCheckProgram mode
   skips too while a job runs, and on an idle node drains it on FAIL.
5. Bad input (a budget of 0, a missing profile, a node Slurm does not know): one line, exit 2, the node as it was.
6. The sbatch recipes: scripts/slurm/accept.sbatch writes a verdict per node and a summary; bench.sbatch a result.
Everything is stopped after (also when a step fails or the test is interrupted). Exit codes: 0 pass, 1 fail,
77 skipped (Slurm or munge not installed, not root, no mpirun).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "tests" / "slurm" / "slurm_cluster.sh"
GATE = ROOT / "scripts" / "slurm" / "memstress-gate"
SIM_RANKS = ROOT / "tests" / "data" / "accept" / "sim-ranks.yaml"
JOB = ["alloc-smoke", "-p", "count=2", "-p", "bytes=1M,2M,4M", "-n", "2", "-w", "0", "-d", "sim:8G"]
FAILING_PROFILE = """\
# A profile no simulated device passes: the gate must drain the node.
name: sim-fails
gpu: simulated (8G)
runs:
  - workload: alloc-smoke
    params: {bytes: 1M, count: "16"}
checks:
  - {name: "alloc-smoke: a bound nothing meets", workload: alloc-smoke, metric: verdict, min: 1}
"""


class Failed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class Cluster:
    def __init__(self, args) -> None:
        self.args = args
        self.dir = args.cluster
        self.env = dict(os.environ, SLURM_CONF=str(self.dir / "slurm.conf"), OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
        self.node = ""
        self.mpi = "pmix"
        self.began = time.monotonic()

    def run(self, argv: list[str], timeout: float = 60, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
        print("$", " ".join(map(str, argv)), flush=True)
        start = time.monotonic()
        done = subprocess.run(list(map(str, argv)), capture_output=True, text=True, timeout=timeout,
                              env=env or self.env, cwd=cwd or self.args.workdir)
        seconds = time.monotonic() - start
        print(f"--- exit {done.returncode} after {seconds:.1f} s (at {time.monotonic() - self.began:.1f} s)\n"
              f"{done.stdout}{done.stderr}", flush=True)
        return done, seconds

    def start(self) -> int:
        done = subprocess.run([str(CLUSTER), "start", str(self.dir), str(self.dir / "prolog")], capture_output=True,
                              text=True, timeout=120)
        print(done.stdout + done.stderr, flush=True)
        if done.returncode != 0:
            return done.returncode
        self.node = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        mpis = self.run(["srun", "--mpi=list"])[0]
        self.mpi = "pmix" if "pmix" in mpis.stdout + mpis.stderr else "pmi2"
        return 0

    def show_logs(self) -> None:
        """The daemons' last words, for a failure's report (stop removes them)."""
        for name in ("slurmctld.log", "slurmd.log"):
            path = self.dir / name
            if path.exists():
                print(f"--- the end of {name}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-25:]))

    def stop(self) -> None:
        subprocess.run([str(CLUSTER), "stop", str(self.dir)], capture_output=True, text=True, timeout=60)

    def prolog(self, gate_args: str, env: str = "") -> None:
        """The Prolog slurmd runs: the gate, called as an operator's wrapper would call it."""
        path = self.dir / "prolog"
        path.write_text(f"#!/bin/sh\n{env} exec {sys.executable} {GATE} {gate_args} --memstress {self.args.memstress} "
                        f"--log {self.log}\n" if gate_args else "#!/bin/sh\nexit 0\n")
        path.chmod(0o755)

    @property
    def log(self) -> Path:
        return self.args.workdir / "gate.jsonl"

    def verdicts(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def state(self) -> tuple[str, str]:
        done = self.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T|%E"])[0]
        state, _, reason = done.stdout.strip().partition("|")
        return state.rstrip("*~#$@^-!%+"), reason  # sinfo's marks: not responding, powered down, ...

    def batch(self, argv: list, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[str, int]:
        """Submits a batch job and waits for its end (polling: `sbatch --wait` takes 10 s more); its id and exit
        code."""
        job = self.run(["sbatch", "--parsable", *argv], env=env)[0].stdout.strip().split(";")[0]
        end = time.monotonic() + timeout
        while self.run(["squeue", "-h", "-j", job, "-o", "%T"])[0].stdout.strip():
            check(time.monotonic() < end, f"batch job {job} did not end within {timeout} s")
            time.sleep(0.2)
        shown = self.run(["scontrol", "show", "job", job])[0].stdout
        code = re.search(r"ExitCode=(\d+):(\d+)", shown)
        return job, int(code.group(1)) if code else -1

    def slurm_state(self) -> str:
        """The node's state as slurmctld holds it (IDLE, MIXED, IDLE+DRAIN, ...): sinfo's summary can lag behind it
        by many seconds after a job with GPUs ends."""
        shown = self.run(["scontrol", "show", "node", self.node])[0].stdout
        match = re.search(r"\bState=(\S+)", shown)
        return match.group(1) if match else ""

    def wait_for(self, done, what: str, seconds: float = 20) -> None:
        end = time.monotonic() + seconds
        while not done(self.slurm_state()):
            check(time.monotonic() < end, f"{what} within {seconds} s: {self.slurm_state()}")
            time.sleep(0.2)

    def resume(self) -> None:
        """Resumes the node and waits until slurmctld would start a job there: a node that did not answer a ping
        while its Prolog ran stays NOT_RESPONDING until the next ping (every SlurmdTimeout / 3, 10 s)."""
        self.run(["scontrol", "update", f"nodename={self.node}", "state=resume"])
        self.wait_for(lambda state: "DRAIN" not in state and "NOT_RESPONDING" not in state, "the node resumed", 60)


def same_job(srun_doc: dict, mpirun_doc: dict) -> None:
    def rows(doc: dict) -> list[tuple]:
        return sorted((r["workload"], r["case"], r["rank"], r["verdict"], r["device"]["label"], r["device"]["node"])
                      for r in doc["rows"])

    def ranks(doc: dict) -> list[tuple]:
        return [(r["rank"], r["local_rank"], r["node"], r["host"]["name"], r["device"]["label"])
                for r in doc["environment"]["ranks"]]

    for doc in (srun_doc, mpirun_doc):
        check(doc["status"] == "complete" and doc["config"]["ranks"] == 2, f"complete, 2 ranks: {doc['status']}")
    check(len(srun_doc["rows"]) == 6, f"6 rows (3 cases x 2 ranks), not {len(srun_doc['rows'])}")
    check(rows(srun_doc) == rows(mpirun_doc), f"the rows differ:\n{rows(srun_doc)}\n{rows(mpirun_doc)}")
    check(ranks(srun_doc) == ranks(mpirun_doc), f"ranks and hosts differ:\n{ranks(srun_doc)}\n{ranks(mpirun_doc)}")
    check([r[0] for r in ranks(srun_doc)] == [0, 1] and [r[1] for r in ranks(srun_doc)] == [0, 1],
          "ranks 0 and 1, local ranks 0 and 1")


def launch(c: Cluster) -> None:
    work = c.args.workdir
    c.prolog("")
    srun, _ = c.run(["srun", "-n", "2", f"--mpi={c.mpi}", c.args.memstress, "run", *JOB, "--out", work / "srun.json"])
    check(srun.returncode == 0, f"srun: exit {srun.returncode}")
    check(srun.stdout.count("6 rows (2 ranks): 6 passed") == 1, "rank 0 alone prints, one count line of both ranks")
    mpirun, _ = c.run([c.args.mpiexec, "-np", "2", c.args.memstress, "run", *JOB, "--out", work / "mpirun.json"])
    check(mpirun.returncode == 0, f"mpirun: exit {mpirun.returncode}")
    same_job(json.loads((work / "srun.json").read_text()), json.loads((work / "mpirun.json").read_text()))

    bound, _ = c.run(["srun", "-n", "2", "--gpus-per-task=1", "sh", "-c",
                      'echo "task $SLURM_PROCID localid=$SLURM_LOCALID cvd=$CUDA_VISIBLE_DEVICES"'])
    lines = sorted(bound.stdout.split("\n"))
    check(bound.returncode == 0 and "task 0 localid=0 cvd=0" in lines and "task 1 localid=1 cvd=1" in lines,
          f"--gpus-per-task=1: one GPU a task, by its local id: {lines}")

    hung, seconds = c.run(["srun", "-n", "2", f"--mpi={c.mpi}", c.args.memstress, "run", *JOB, "--out",
                           work / "hang.json", "--inject-fault", "1:1:hang", "--timeout", "3", "-q"])
    where = "case [2/3] alloc-smoke bytes=2M count=2: rank 1 did not report within 3 s"
    check(hung.returncode != 0 and where in hung.stderr, f"a hung rank aborts the step, named: exit {hung.returncode}")
    doc = json.loads((work / "hang.json").read_text())
    check(doc["status"] == "aborted" and where in doc["abort_reason"], f"aborted document: {doc.get('abort_reason')}")
    check(seconds < 30, f"the step ended {seconds:.0f} s after it started")


def gate_drains_and_resumes(c: Cluster) -> None:
    work = c.args.workdir
    failing = work / "sim-fails.yaml"
    failing.write_text(FAILING_PROFILE)
    c.prolog(f"prolog --budget 30 --device sim:8G --profile {failing}")
    ran = work / "ran"
    job, _ = c.run(["srun", "-n", "1", "--gpus=1", "touch", ran])
    check(job.returncode != 0 and not ran.exists(), "the job did not run on a node whose gate FAILed")
    state, reason = c.state()
    check(state in ("drained", "draining") and reason.startswith("memstress-gate sim-fails: FAIL alloc-smoke: a bound nothing meets"),
          f"sinfo: {state!r}, reason {reason!r}")
    verdict = c.verdicts()[-1]
    check(verdict["verdict"] == "FAIL" and verdict["drained"] and verdict["exit"] == 1 and verdict["mode"] == "prolog"
          and verdict["failed"] == ["alloc-smoke: a bound nothing meets"] and verdict["gpus"] == ["0"],
          f"the verdict's JSON line: {verdict}")
    next_job, _ = c.run(["srun", "-n", "1", "--immediate=2", "true"])
    check(next_job.returncode != 0, "no job starts on the drained node")

    c.resume()
    c.prolog(f"prolog --budget 30 --device sim:8G --profile {SIM_RANKS}")
    job, _ = c.run(["srun", "-n", "2", "--gpus-per-task=1", "touch", ran])
    check(job.returncode == 0 and ran.exists(), "resumed, the next job runs")
    verdict = c.verdicts()[-1]
    check(verdict["verdict"] == "PASS" and verdict["ranks"] == 2 and verdict["gpus"] == ["0", "1"]
          and "3 of 3 checks passed" in verdict["accept_verdict"] and not verdict["drained"],
          f"the job's two GPUs checked, two ranks under mpirun: {verdict}")
    check("DRAIN" not in c.slurm_state(), f"the node stays up: {c.slurm_state()}")


def gate_survives_a_hang(c: Cluster) -> None:
    work = c.args.workdir
    keep = work / "hung-check"
    budget = 12
    c.prolog(f"prolog --budget {budget} --device sim:8G --profile {SIM_RANKS} --keep {keep}",
             env="MEMSTRESS_PLANT_FAULT=hang")
    ran = work / "ran-after-hang"
    job, seconds = c.run(["srun", "-n", "1", "--gpus=1", "touch", ran])
    check(job.returncode != 0 and not ran.exists(), "the job did not run")
    verdict = c.verdicts()[-1]
    check(verdict["verdict"] == "FAIL" and verdict["drained"] and "did not end within" in verdict["reason"],
          f"a hung check FAILs and drains: {verdict}")
    check(verdict["seconds"] <= budget, f"the gate took {verdict['seconds']} s of its {budget} s budget")
    check(seconds < budget + 10, f"the job's srun ended {seconds:.0f} s after it started")
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and str(keep) in read_cmdline(p)]
    check(not left, f"processes of the hung check left: {[p.name for p in left]}")
    state, reason = c.state()
    check(state in ("drained", "draining") and "did not end within" in reason, f"sinfo: {state!r}, reason {reason!r}")
    c.resume()


def read_cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def shared_node_and_health(c: Cluster) -> None:
    work = c.args.workdir
    c.prolog(f"prolog --budget 30 --device sim:8G --profile {SIM_RANKS}")
    held, _ = c.run(["sbatch", "-n", "1", "--gpus=1", "--parsable", "--wrap", "sleep 120"])
    other = held.stdout.strip().split(";")[0]
    try:
        for _ in range(300):  # until its own prolog has judged the node (it had it alone)
            if any(v["job"] == other for v in c.verdicts()):
                break
            time.sleep(0.2)
        check([v["verdict"] for v in c.verdicts() if v["job"] == other] == ["PASS"],
              f"the first job's gate passed: {c.verdicts()[-1]}")
        ran = work / "ran-shared"
        job, _ = c.run(["srun", "-n", "1", "--gpus=1", "touch", ran])
        check(job.returncode == 0 and ran.exists(), "the job runs on a node shared with another")
        verdict = c.verdicts()[-1]
        check(verdict["verdict"] == "SKIPPED" and f"shared with job {other}" in verdict["reason"]
              and not verdict["drained"], f"the gate skips, naming the other job: {verdict}")
        health, _ = c.run([sys.executable, GATE, "health", "--node", c.node, "--device", "sim:8G", "--profile",
                           work / "sim-fails.yaml", "--memstress", c.args.memstress])
        check(health.returncode == 0 and json.loads(health.stdout)["verdict"] == "SKIPPED"
              and "DRAIN" not in c.slurm_state(), "the health check leaves a node with a job alone")
    finally:
        c.run(["scancel", other])
    c.wait_for(lambda state: state == "IDLE", "the node idle once the other job was cancelled", 60)
    health, seconds = c.run([sys.executable, GATE, "health", "--node", c.node, "--device", "sim:8G", "--profile",
                             work / "sim-fails.yaml", "--memstress", c.args.memstress])
    verdict = json.loads(health.stdout)
    check(health.returncode == 1 and verdict["verdict"] == "FAIL" and verdict["drained"] and verdict["job"] is None,
          f"the health check drains an idle node that FAILs: {verdict}")
    check(c.state()[0] in ("drained", "draining"), f"sinfo: {c.state()}")
    c.resume()


def bad_input(c: Cluster) -> None:
    work = c.args.workdir
    for args, says in ((["health", "--budget", "0"], "--budget 0: expected at least 10 seconds"),
                       (["health", "--profile", work / "no-such.yaml"], "no such file"),
                       (["health", "--node", "no-such-node", "--profile", SIM_RANKS],
                        "--node no-such-node: Slurm does not know this node")):
        before = ("DRAIN" in c.slurm_state(), c.state()[1])
        done, _ = c.run([sys.executable, GATE, *args, "--device", "sim:8G", "--memstress", c.args.memstress])
        check(done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1 and says in done.stderr,
              f"bad input: one line, exit 2: {args}")
        after = ("DRAIN" in c.slurm_state(), c.state()[1])
        check(after == before, f"the node left as it was: {after} after {before}")


def recipes(c: Cluster) -> None:
    work = c.args.workdir
    c.prolog("")
    env = dict(c.env, MEMSTRESS=str(c.args.memstress), MEMSTRESS_MPI=c.mpi)
    job, code = c.batch(["-N", "1", "--ntasks-per-node=2", "--gpus-per-task=1", "--output", work / "accept-%j.out",
                         ROOT / "scripts" / "slurm" / "accept.sbatch", SIM_RANKS, "--device", "sim:8G"], env=env)
    print((work / f"accept-{job}.out").read_text())
    check(code == 0, f"accept.sbatch: exit {code}")
    out = work / f"memstress-accept-{job}"
    summary = (out / "summary.txt").read_text()
    check(f"{c.node}  0  verdict: PASS (3 of 3 checks passed; profile sim-ranks, simulated (8G), 2 ranks)" in summary,
          f"a verdict line for the node in the summary:\n{summary}")
    check((out / f"{c.node}.json").exists() and (out / f"{c.node}.xml").exists(), "the node's results and JUnit")
    job, code = c.batch(["-N", "1", "--ntasks-per-node=2", "--gpus-per-task=1", "--output", work / "bench-%j.out",
                         ROOT / "scripts" / "slurm" / "bench.sbatch", *JOB], env=env)
    check(code == 0, f"bench.sbatch: exit {code}")
    doc = json.loads((work / f"memstress-bench-{job}.json").read_text())
    check(doc["status"] == "complete" and doc["config"]["ranks"] == 2 and len(doc["rows"]) == 6,
          "the benchmark job's one results file, every rank's rows")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memstress", type=Path, required=True)
    parser.add_argument("--mpiexec", default="")
    parser.add_argument("--cluster", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    if not args.mpiexec or not Path(args.mpiexec).exists():
        print("SKIPPED: no mpiexec/mpirun (the srun job is compared with the mpirun job)")
        return 77
    args.workdir.mkdir(parents=True, exist_ok=True)
    for old in args.workdir.iterdir():
        if old.is_file():
            old.unlink()
    c = Cluster(args)

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    began = time.monotonic()
    try:
        code = c.start()
        if code != 0:
            return code
        for step in (launch, gate_drains_and_resumes, gate_survives_a_hang, shared_node_and_health, bad_input,
                     recipes):
            start = time.monotonic()
            step(c)
            print(f"=== {step.__name__}: ok ({time.monotonic() - start:.1f} s)", flush=True)
    except Failed as e:
        print(f"FAIL: {e}")
        c.show_logs()
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: {' '.join(map(str, e.cmd))} did not end within {e.timeout} s")
        c.show_logs()
        return 1
    finally:
        c.stop()
    print(f"ok ({time.monotonic() - began:.1f} s with Slurm's start and stop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
