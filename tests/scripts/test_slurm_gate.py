"""scripts/slurm/memstress-gate against stand-ins for memstress, nvidia-smi, mpirun, scontrol and squeue.

    python3 -m unittest test_slurm_gate

Every path of the gate that a real Slurm and a real GPU would take, without either: the stand-ins (small Python
programs on PATH) answer as the real ones do for a healthy or a faulty node and record how they were called. The
same gate on a real Slurm, with the real memstress on the simulated device: tests/slurm/check_slurm.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "scripts" / "slurm" / "memstress-gate"

# memstress: --python-path; accept as FAKE_ACCEPT says (its call recorded).
FAKE_MEMSTRESS = r'''
import json, os, signal, subprocess, sys, time
if sys.argv[1:] == ["--python-path"]:
    print(os.environ["FAKE_PYTHON_PATH"])
    sys.exit(0)
args = sys.argv[1:]
with open(os.environ["FAKE_RECORD"], "a") as rec:
    rec.write(json.dumps({"tool": "memstress", "argv": args, "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
                          "order": os.environ.get("CUDA_DEVICE_ORDER"),
                          "slurm": sorted(k for k in os.environ if k.startswith("SLURM_"))}) + "\n")
mode = os.environ.get("FAKE_ACCEPT", "pass")
junit = args[args.index("--junit") + 1]
if mode == "pass":
    print("PASS  fill bandwidth 1 GiB: measured 3195 GB/s\nverdict: PASS (8 of 8 checks passed)")
elif mode == "fail":
    open(junit, "w").write('<testsuites><testsuite><testcase name="pinned H2D 256 MiB"><failure message='
                           '"measured bad: 7.2 GB/s (1 row), needs &gt;= 41.27 GB/s"/></testcase>'
                           '<testcase name="fill bandwidth 1 GiB"/></testsuite></testsuites>')
    print("FAIL  pinned H2D 256 MiB: measured bad: 7.2 GB/s\nverdict: FAIL (7 of 8 checks passed)")
    sys.exit(1)
elif mode == "notjudged":
    print("SKIP  fill: cases skipped\nverdict: NOT JUDGED (0 of 1 checks judged, 1 skipped)")
    sys.exit(3)
elif mode == "nogpu":
    print("memstress: error: --profile h100-quick: its thresholds are for NVIDIA H100 80GB HBM3, and no CUDA "
          "device was found here", file=sys.stderr)
    sys.exit(3)
elif mode == "bad":
    print("memstress: error: --profile p.yaml: its thresholds are for NVIDIA H200, and this device is X",
          file=sys.stderr)
    sys.exit(2)
elif mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
elif mode == "hang":  # a rank in a process group of its own, as mpirun starts them; neither heeds SIGTERM
    marker = os.environ["FAKE_MARKER"]
    code = "import os, signal, time; os.setpgid(0, 0); signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"
    subprocess.Popen([sys.executable, "-c", code, marker])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(1000)
'''
FAKE_SMI = r'''
import os, sys, time
mode = os.environ.get("FAKE_SMI", "h100x2")
if mode == "hang":
    time.sleep(1000)
if mode == "dead":
    print("Unable to determine the device handle for GPU0000:1B:00.0: Unknown Error")
    sys.exit(255)
models = {"h100x2": ["NVIDIA H100 80GB HBM3"] * 2, "a100": ["NVIDIA A100-SXM4-80GB"],
          "mixed": ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]}[mode]
for i, model in enumerate(models):
    print(f"{i}, {model}")
'''
FAKE_MPIRUN = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_RECORD"], "a") as rec:
    rec.write(json.dumps({"tool": "mpirun", "argv": args}) + "\n")
while args and args[0].startswith("-"):
    flag = args.pop(0)
    if flag in ("-np", "--bind-to"):
        args.pop(0)
os.execv(args[0], args)
'''
FAKE_SCONTROL = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_RECORD"], "a") as rec:
    rec.write(json.dumps({"tool": "scontrol", "argv": args}) + "\n")
if args[:2] == ["show", "node"]:
    if args[2] != "gpu7":
        print(f"Node {args[2]} not found")
        sys.exit(1)
    print("NodeName=gpu7 State=IDLE")
'''
FAKE_SQUEUE = r'''
import os, sys
if os.environ.get("FAKE_JOBS") == "error":
    print("squeue: error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
    sys.exit(1)
print("\n".join(os.environ.get("FAKE_JOBS", "").split()))
'''


class GateTest(unittest.TestCase):
    """The stand-ins on PATH, a record of their calls, and the gate run with them."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-gate-test-"))
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", str(self.tmp)], check=False))
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        for name, body in (("memstress", FAKE_MEMSTRESS), ("nvidia-smi", FAKE_SMI), ("mpirun", FAKE_MPIRUN),
                           ("scontrol", FAKE_SCONTROL), ("squeue", FAKE_SQUEUE)):
            path = bin_dir / name
            path.write_text(f"#!{sys.executable}\n{body}")
            path.chmod(0o755)
        self.record = self.tmp / "record.jsonl"
        self.marker = f"memstress-gate-test-marker-{os.getpid()}-{id(self)}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "PMI", "OMPI_COMM_WORLD"))}
        self.env.update(PATH=f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", FAKE_RECORD=str(self.record),
                        FAKE_PYTHON_PATH=str(ROOT / "python"), FAKE_MARKER=self.marker)
        self.memstress = str(bin_dir / "memstress")

    def gate(self, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict | None, float]:
        start = time.monotonic()
        done = subprocess.run([sys.executable, str(GATE), *args, "--memstress", self.memstress], capture_output=True,
                              text=True, env={**self.env, **env}, timeout=120, check=False)
        seconds = time.monotonic() - start
        verdict = json.loads(done.stdout) if done.stdout.strip() else None
        return done, verdict, seconds

    def calls(self, tool: str) -> list[dict]:
        if not self.record.exists():
            return []
        return [c for c in map(json.loads, self.record.read_text().splitlines()) if c["tool"] == tool]

    def drains(self) -> list[list[str]]:
        return [c["argv"] for c in self.calls("scontrol") if c["argv"][0] == "update"]

    def prolog(self, *args: str, **env: str):
        return self.gate("prolog", *args, **{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": "gpu7",
                                             "SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1", **env})


class BadInput(GateTest):
    """One line, exit 2, nothing touched."""

    def test_bad_input_is_one_line_and_exit_2(self) -> None:
        for args, says in ((["check", "--budget", "0"], "--budget 0: expected at least 10 seconds"),
                           (["check", "--budget", "-5"], "--budget -5: expected at least 10 seconds"),
                           (["check", "--budget", "nan"], "--budget nan: expected at least 10 seconds"),
                           (["check", "--budget", "soon"], "--budget soon: expected seconds"),
                           (["health", "--budget", "60"], "a HealthCheckProgram must end within 60 s"),
                           (["check", "--profile", "h999"], "--profile h999: no such file, and no shipped profile"),
                           (["check", "--gpus", "0,x"], "--gpus 0,x: expected GPU indices"),
                           (["check", "--gpus", "3-1"], "--gpus 3-1: expected GPU indices"),
                           (["check", "--frob"], "unrecognized arguments: --frob"),
                           ([], "no MODE (prolog, health or check)"),
                           (["health", "--node", "gpu99"], "--node gpu99: Slurm does not know this node")):
            with self.subTest(args=args):
                done, verdict, _ = self.gate(*args)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIsNone(verdict)
                self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
                self.assertIn(says, done.stderr)
        self.assertEqual(self.drains(), [])
        self.assertEqual(self.calls("memstress"), [])
        missing = subprocess.run([sys.executable, str(GATE), "check", "--memstress", str(self.tmp / "none")],
                                 capture_output=True, text=True, env=self.env, check=False)
        self.assertEqual((missing.returncode, missing.stdout), (2, ""))
        self.assertIn("no such program", missing.stderr)

    def test_a_profile_for_another_gpu_is_bad_input_and_drains_nothing(self) -> None:
        log = self.tmp / "gate.jsonl"
        done, verdict, _ = self.prolog("--log", str(log), FAKE_ACCEPT="bad")
        self.assertEqual(done.returncode, 2)
        self.assertIsNone(verdict)
        self.assertIn("its thresholds are for NVIDIA H200", done.stderr)
        self.assertEqual(self.drains(), [])
        # a Prolog's output ends in slurmd's log at best: --log says why it exited 2
        logged = json.loads(log.read_text())
        self.assertEqual((logged["verdict"], logged["exit"], logged["drained"]), ("BAD INPUT", 2, False))
        self.assertIn("its thresholds are for NVIDIA H200", logged["reason"])


class Choice(GateTest):
    """Which profile, which GPUs, how many ranks, which mode."""

    def test_the_quick_profile_of_the_model_on_every_gpu_a_rank_each(self) -> None:
        done, verdict, _ = self.gate("check")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual((verdict["verdict"], verdict["profile"], verdict["gpus"], verdict["ranks"]),
                         ("PASS", "h100-quick", ["0", "1"], 2))
        mpirun = self.calls("mpirun")[0]["argv"]
        self.assertEqual(mpirun[:5], ["-np", "2", "--allow-run-as-root", "--bind-to", "none"])
        accept = self.calls("memstress")[0]
        self.assertEqual(accept["argv"][:3], ["accept", "--profile", str(ROOT / "profiles" / "h100-quick.yaml")])
        self.assertEqual((accept["cvd"], accept["order"]), ("0,1", "PCI_BUS_ID"))

    def test_prolog_checks_the_jobs_gpus_alone_outside_the_jobs_allocation(self) -> None:
        done, verdict, _ = self.prolog(SLURM_JOB_GPUS="1", SLURM_JOB_NODELIST="gpu7", SLURM_TASKS_PER_NODE="8")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual((verdict["mode"], verdict["node"], verdict["job"], verdict["gpus"], verdict["ranks"]),
                         ("prolog", "gpu7", "7", ["1"], 1))
        self.assertEqual(self.calls("mpirun"), [])  # one GPU: one process, no mpirun
        accept = self.calls("memstress")[0]
        self.assertEqual(accept["cvd"], "1")
        self.assertEqual(accept["slurm"], [], "the job's variables are not passed to the check")
        self.assertEqual(self.drains(), [])

    def test_the_jobs_gpus_as_slurm_writes_them(self) -> None:
        _, verdict, _ = self.prolog(SLURM_JOB_GPUS="0-1")
        self.assertEqual((verdict["verdict"], verdict["gpus"], verdict["ranks"]), ("PASS", ["0", "1"], 2))
        done, verdict, _ = self.prolog(SLURM_JOB_GPUS="gpu:0")
        self.assertEqual((done.returncode, verdict), (2, None))
        self.assertIn("SLURM_JOB_GPUS gpu:0: expected GPU indices", done.stderr)
        self.assertEqual(self.drains(), [])

    def test_mode_from_slurms_variables(self) -> None:
        _, verdict, _ = self.gate(SLURM_SCRIPT_CONTEXT="prolog_slurmd", SLURMD_NODENAME="gpu7", SLURM_JOB_ID="7",
                                  SLURM_JOB_GPUS="0")
        self.assertEqual(verdict["mode"], "prolog")
        _, verdict, _ = self.gate(SLURMD_NODENAME="gpu7")
        self.assertEqual((verdict["mode"], verdict["budget_s"]), ("health", 50.0))

    def test_a_model_without_a_quick_profile_is_not_judged(self) -> None:
        done, verdict, _ = self.gate("check", FAKE_SMI="a100")
        self.assertEqual(done.returncode, 0)
        self.assertEqual(verdict["verdict"], "NOT JUDGED")
        self.assertIn("no shipped quick profile for NVIDIA A100-SXM4-80GB", verdict["reason"])
        self.assertIn("h100-quick for NVIDIA H100 80GB HBM3", verdict["reason"])
        self.assertEqual(self.calls("memstress"), [])
        done, _, _ = self.gate("check", FAKE_SMI="mixed")
        self.assertEqual(done.returncode, 2)
        self.assertIn("GPUs of 2 models here", done.stderr)


class Verdicts(GateTest):
    """FAIL drains, with the failing check as the reason; NOT JUDGED and check mode do not."""

    def test_a_failed_check_drains_the_node_naming_it(self) -> None:
        done, verdict, _ = self.prolog(FAKE_ACCEPT="fail")
        self.assertEqual(done.returncode, 1)
        self.assertEqual((verdict["verdict"], verdict["drained"], verdict["failed"]),
                         ("FAIL", True, ["pinned H2D 256 MiB"]))
        self.assertEqual(verdict["accept_verdict"], "verdict: FAIL (7 of 8 checks passed)")
        [drain] = self.drains()
        self.assertEqual(drain[:3], ["update", "nodename=gpu7", "state=drain"])
        self.assertEqual(drain[3], "reason=memstress-gate h100-quick: FAIL pinned H2D 256 MiB: measured bad: 7.2 GB/s "
                                   "(1 row), needs >= 41.27 GB/s")
        self.assertIn("FAIL on node gpu7, job 7", done.stderr)

    def test_check_mode_drains_nothing(self) -> None:
        done, verdict, _ = self.gate("check", FAKE_ACCEPT="fail")
        self.assertEqual((done.returncode, verdict["verdict"], verdict["drained"]), (1, "FAIL", False))
        self.assertEqual(self.calls("scontrol"), [])

    def test_not_judged_is_said_without_draining(self) -> None:
        done, verdict, _ = self.prolog(FAKE_ACCEPT="notjudged")
        self.assertEqual(done.returncode, 0)
        self.assertEqual((verdict["verdict"], verdict["accept_exit"], verdict["drained"]), ("NOT JUDGED", 3, False))
        self.assertIn("verdict: NOT JUDGED", verdict["reason"])
        self.assertEqual(self.drains(), [])

    def test_a_dead_gpu_fails_and_drains(self) -> None:
        for env, says in (({"FAKE_ACCEPT": "nogpu"}, "ended with exit 3 and no verdict: memstress: error: --profile "
                                                     "h100-quick: its thresholds are for NVIDIA H100 80GB HBM3, and "
                                                     "no CUDA device was found here"),
                          ({"FAKE_ACCEPT": "crash"}, "ended with signal 11 and no verdict"),
                          ({"FAKE_SMI": "dead"}, "nvidia-smi failed: Unable to determine the device handle for GPU"),
                          ({"SLURM_JOB_GPUS": "3"}, "GPU 3 of this node is not seen by the driver (nvidia-smi lists "
                                                    "0,1)")):
            with self.subTest(env=env):
                self.record.unlink(missing_ok=True)
                done, verdict, _ = self.prolog(**env)
                self.assertEqual((done.returncode, verdict["verdict"], verdict["drained"]), (1, "FAIL", True))
                self.assertIn(says, verdict["reason"])
                self.assertEqual(len(self.drains()), 1)


class Budget(GateTest):
    """Never past the budget: what hangs is stopped, every process of it, and the node drained."""

    def test_a_hung_check_is_stopped_within_the_budget_and_fails(self) -> None:
        budget = 10
        done, verdict, seconds = self.prolog("--budget", str(budget), FAKE_ACCEPT="hang")
        self.assertLess(seconds, budget + 3)  # the gate bounds its own time from its start (below); python starts it
        self.assertLessEqual(verdict["seconds"], budget)
        self.assertEqual((done.returncode, verdict["verdict"], verdict["drained"]), (1, "FAIL", True))
        self.assertRegex(verdict["reason"], r"^h100-quick: the check did not end within \d+ s \(a GPU that hangs\?\): "
                                            r"stopped$")
        left = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and self.marker in cmdline(p)]
        self.assertEqual(left, [], "a process of the hung check outlived the gate (its own process group, SIGTERM "
                                   "ignored)")

    def test_a_hung_nvidia_smi_is_stopped_and_fails(self) -> None:
        done, verdict, seconds = self.prolog("--budget", "10", FAKE_SMI="hang")
        self.assertLess(seconds, 10)
        self.assertEqual((done.returncode, verdict["verdict"]), (1, "FAIL"))
        self.assertIn("nvidia-smi did not answer", verdict["reason"])


class Skips(GateTest):
    """Skips say why and drain nothing; the verdict line goes to --log too."""

    def test_skips_say_why_and_drain_nothing(self) -> None:
        for mode_env, says in (({"FAKE_JOBS": "7 9"}, "the node is shared with job 9"),
                               ({"SLURM_JOB_GPUS": ""}, "the job has no GPU on this node"),
                               ({"FAKE_JOBS": "error"}, "Slurm could not say which jobs run on this node")):
            with self.subTest(env=mode_env):
                done, verdict, _ = self.prolog(**mode_env)
                self.assertEqual((done.returncode, verdict["verdict"], verdict["drained"]), (0, "SKIPPED", False))
                self.assertIn(says, verdict["reason"])
        done, verdict, _ = self.gate("health", "--node", "gpu7", FAKE_JOBS="12")
        self.assertEqual((done.returncode, verdict["verdict"]), (0, "SKIPPED"))
        self.assertIn("shared with job 12", verdict["reason"])
        self.assertEqual(self.drains(), [])
        self.assertEqual(self.calls("memstress"), [])

    def test_the_verdict_line_is_logged_too(self) -> None:
        log = self.tmp / "gate.jsonl"
        for _ in range(2):
            _, verdict, _ = self.gate("check", "--log", str(log))
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[-1]["verdict"], verdict["verdict"])


def cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


if __name__ == "__main__":
    unittest.main()
