"""Every command the README and the pages under docs/ show, held to account.

    test_readme.py BUILD_DIR

Each command line of their code blocks (and the commands they quote inline, in INLINE) is either
  * run here, on the CPU, as written, from a scratch directory that reaches the checkout's files through
    links (so outputs land there), with `memstress` meaning BUILD_DIR's binary; where a page shows the
    output too (`$ memstress ...` followed by what it printed), the output must be what the page shows;
  * run on a GPU by scripts/lab/gpu-first-run (one GPU) or scripts/lab/gpu-readme-multi (two GPUs), which must hold
    the command verbatim; their records are under results/;
  * or a synopsis, an illustration, or a command that cannot be run on the machines its records come from, with
    the reason.
A command in none of these fails the test, so no page can show a command nobody ran. The pages are the README
and every docs/*.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import snapshot_fixtures  # noqa: E402

BUILD = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
README = ROOT / "README.md"
PAGES = [README] + sorted((ROOT / "docs").glob("*.md"))
FIRST_RUN = ROOT / "scripts" / "lab" / "gpu-first-run"
MULTI = ROOT / "scripts" / "lab" / "gpu-readme-multi"
COMMAND = re.compile(r"^(\$ )?((memstress|scripts/|build/|mpirun|srun|sbatch|NCCL_NVLS_ENABLE|MEMSTRESS_|cmake|ctest|cpack)\b"
                     r"|PYTHONPATH=)")

# docs/doctor.md's exhaustion, from the committed corpus (its output shown in part: test_shown_excerpts_are_printed)
_CORPUS = "results/h100/doctor-corpus-580.159.04/snapshots/vit_train"
DOCTOR_CORPUS = (f"memstress doctor {_CORPUS}-oom-2G-b66.pickle.gz --batch 13,27 --batch-runs "
                 f"{_CORPUS}-2G-b13.pickle.gz,{_CORPUS}-2G-b27.pickle.gz")
# Run here: the command, and its expected exit code.
CPU = {
    "scripts/run": 0,
    "memstress --version": 0,
    "scripts/run sizes -p dist=pow2 --out sizes.json": 0,
    "memstress accept --profile h100 --from accept.json": 0,
    "mpirun -np 2 build/cpu/apps/memstress run alloc-smoke -d sim:80G --out run.json": 0,
    "memstress report results/h100/*.json results/h100/*.json.xz results/h100/accept-*.xml results/h200/bench-alloc-*.json.xz -o report.html": 0,
    "memstress replay run.snapshot.pickle --device sim:40G --allocator expandable": 0,
    "memstress replay run.snapshot.pickle --device sim:80G --sweep --out replay.json --timeline timeline.csv": 0,
    "PYTHONPATH=$(memstress --python-path) python3 -m memstress.convert run.snapshot.pickle -o run.trace.csv.gz": 0,
    "memstress replay run.trace.csv.gz --device sim:40G": 0,
    # shown with their output
    "memstress compare results/h100/compare/base-h100-580.159.04.json.xz "
    "results/h100/compare/slowed-h100-580.159.04.json.xz": 1,
    "memstress compare tests/data/compare/base.json tests/data/compare/slower.json": 1,
    "memstress replay results/traces/torch-2.11-h100/multistream_loader.trace.csv.gz --device sim:40G "
    "--allocator expandable": 0,
    "memstress doctor run.snapshot.pickle": 0,
    DOCTOR_CORPUS: 0,
    "memstress doctor run.snapshot.pickle --capacity 24G,40G,80G": 0,
    "memstress doctor run.snapshot.pickle --format html -o doctor.html": 0,
    "memstress predict-batch run8.snapshot.pickle run16.snapshot.pickle --batch 8,16 --capacity 40G": 0,
    "memstress run oom leak -d sim -q": 0,
    "memstress burn -d sim --duration 10s --interval 1": 3,
    "memstress run alloc-smoke fragmentation --device sim --allocator "
    "plugin:build/cpu/examples/allocator-plugin/libmemstress_caching_plugin.so": 0,
    # the fleet store: each ingest before its outliers (they read what it wrote)
    "memstress db ingest tests/data/fleet/node0*.json --db fleet.sqlite": 0,
    "memstress db outliers --db fleet.sqlite": 1,
    "memstress db train --db fleet.sqlite --profile h100 --write h100-fleet.yaml": 0,
    "memstress accept --profile h100-fleet.yaml --from tests/data/fleet/node04.json": 1,
    "memstress db ingest results --db results.sqlite": 2,  # the folder's files that are not results skipped
    "memstress db outliers --db results.sqlite --metric GB/s": 1,
    "memstress db ingest tests/data/fleet/node0*.json tests/data/fleet/driver-570/node0*.json --db drivers.sqlite": 0,
    "memstress db history --db drivers.sqlite --gpu GPU-00000000-0000-0000-0000-000000000004 --metric GB/s": 0,
    "memstress db compare --db drivers.sqlite --driver 570.195.03 --driver 580.159.04 --metric GB/s": 1,
    "memstress db export --db drivers.sqlite --format openmetrics --out memstress.prom": 0,
    "memstress db outliers --db drivers.sqlite --format json --groups > outliers.json": 1,
    "memstress db history --db drivers.sqlite --gpu GPU-00000000-0000-0000-0000-000000000004 --format json "
    "> history.json": 0,
    "memstress report outliers.json history.json -o fleet.html": 0,
}
NEEDS_MATPLOTLIB = ("memstress report",)
# Commands quoted in the pages' prose rather than in a code block, run here too.
INLINE = ["scripts/run sizes -p dist=pow2 --out sizes.json",
          "memstress compare tests/data/compare/base.json tests/data/compare/slower.json"]

# Run on a real GPU by a script that holds them verbatim (its record is under results/).
GPU_FIRST_RUN = [
    "scripts/test",
    "cmake --preset gpu && cmake --build --preset gpu",
    "cmake --install build/gpu --prefix ~/.local",
    "cmake --build build/gpu --target uninstall",
    "cpack --config build/gpu/CPackConfig.cmake",
    "ctest --preset gpu -L gpu --output-junit gpu-tests.xml",
    "scripts/ctest-junit-reasons build/gpu/gpu-tests.xml",
    "build/gpu/apps/memstress run --require-gpu --junit memstress.xml --out run.json",
    "memstress accept --profile h100 --junit accept.xml --out accept.json",
    "memstress accept --profile my.yaml --train --write trained.yaml",
]
GPU_MULTI = [
    "mpirun -np 2 memstress accept --profile h200",
    "mpirun -np 2 build/gpu/apps/memstress run --out run.json",
    "NCCL_NVLS_ENABLE=0 mpirun -np 2 --allow-run-as-root -x NCCL_NVLS_ENABLE build/gpu/apps/memstress run collectives "
    "-b 1M -e 4G -f 4 -p pressure=none -o collectives.json",
    "build/gpu/apps/memstress run p2p -p bytes=256M,1G -o p2p.json",
]
# Not run as written, and why.
NOT_RUN = {
    "memstress burn --profile h100-burn --out burn.json --verdict burn-verdict.json":
        "15 minutes of a GPU; scripts/lab/gpu-burn runs the same command with a shorter --duration (its records "
        "are under results/)",
    "memstress burn --profile h100-burn --out burn.json --verdict burn-verdict.json   # 15 minutes; --duration 2h":
        "the README's form of the same command",
    "mpirun -np 8 memstress burn --profile h200-burn --duration 2h": "a node of 8 GPUs for two hours",
    "NCCL_NVLS_ENABLE=0 mpirun -np 2 --allow-run-as-root -x NCCL_NVLS_ENABLE build/gpu/apps/memstress run "
    "collectives --full": "the full sweep takes over 10 minutes on 2 H200s; its quick form above is run",
    "mpirun -np 16 -H node1:8,node2:8 build/gpu/apps/memstress run --out run.json":
        "two nodes of 8 GPUs: the GPU records come from one node",
    "memstress run --out base.json": "illustration of a driver comparison; the real one shown below it is "
                                     "scripts/lab/gpu-compare-check's",
    "memstress run --out new.json": "the same illustration",
    "memstress compare base.json new.json": "the same illustration",
    "scripts/fuzz": "CI runs it as scripts/test's fuzz step (MEMSTRESS_SANITIZE=1); it builds a preset of its own "
                    "with clang, minutes of work that a test here would repeat",
    "MEMSTRESS_FUZZ_SECONDS=300 scripts/fuzz results profile": "the same step, longer: 10 minutes",
    "MEMSTRESS_FUZZ_RUNS=1000000 MEMSTRESS_FUZZ_SECONDS=3600 scripts/fuzz --record results/fuzz/run.md":
    "the recorded long run: about an hour (results/fuzz/)",
    "ctest --preset fuzz": "part of scripts/fuzz (needs the fuzz preset's build)",
    "memstress run --out run.json --format openmetrics > /var/lib/node_exporter/textfile/memstress.prom.tmp && mv "
    "/var/lib/node_exporter/textfile/memstress.prom.tmp /var/lib/node_exporter/textfile/memstress.prom":
    "a node's scheduled job writing into node_exporter's directory; tests/cli/openmetrics_check.py runs "
    "`memstress run --format openmetrics` and reads it with Prometheus's parsers",
    "memstress db ingest results --db postgresql://memstress@db.example.org/fleet":
    "an illustration of the URL; CTest runs every db command on a PostgreSQL server it starts (tests/db)",
    "memstress db export --db postgresql://memstress@db.example.org/fleet --format openmetrics --host \"$(hostname)\" "
    "--out /var/lib/node_exporter/textfile/memstress.prom": "a node's scheduled export into node_exporter's directory "
    "from a shared store; CTest's fleet tests export one host's series (scripts/dev/fleet-bench times --host)",
    "memstress db prune --db fleet.sqlite --before 2026-09-01": "retention of a store with months of runs; "
    "cli.store_safety's PruneRefusals prunes by date, by runs kept and everything (with --all) on a store of two weeks",
    "memstress db prune --db fleet.sqlite --keep-runs 60": "as above: cli.store_safety prunes --keep-runs",
    "memstress db prune --db fleet.sqlite --before 2026-11-01 --samples-only": "as above, keeping the statistics; "
    "the store's summary tests (unit.db.*DbSummary*) check what a prune of samples keeps",
    "memstress db ingest /data/memstress/2026-11 --db fleet.sqlite": "an illustration of a site's folder of a month's "
    "results; `memstress db ingest results` above runs a folder, and cli.store_* ingest folders and stdin lists",
    "scripts/dev/fleet-bench": "the benchmark at scale: 10,000 files, minutes of work; its record is results/fleet/",
    "PYTHONPATH=$(memstress --python-path) python3 train.py": "the user's own PyTorch program; the recorder's "
    "import through --python-path is tested by install.Installed",
    "scripts/lab/gpu-allocators": "every allocator on a real GPU (replays and benchmarks, minutes); run on an H100, "
                              "its record is results/h100/allocators-580.159.04/",
    "NCCL_NVLS_ENABLE=0 mpirun -np 4 --allow-run-as-root -x NCCL_NVLS_ENABLE build/gpu/apps/memstress run "
    "collectives -b 8 -e 64M -f 2 -p pressure=none -p buffers=ncclmem -p rotate=64M -p l2=flushed "
    "-p timing=graph_each -n 20 -o small-graph.json":
    "four GPUs; scripts/lab/gpu-nccl-tests runs it with every collective named, timing=graph too, -p iters=20 -w 1 "
    "and its own --timeout and --out (results/h200x4/nccl-tests-580.159.04/)",
    "NCCL_NVLS_ENABLE=0 mpirun -np 4 --allow-run-as-root -x NCCL_NVLS_ENABLE build/gpu/apps/memstress run "
    "collectives -b 8 -e 64M -f 2 -p pressure=none -p buffers=ncclmem -p rotate=64M -p l2=flushed -p timing=host "
    "-n 20 -o small-host.json":
    "four GPUs; scripts/lab/gpu-nccl-tests runs it in a run of its own, with every collective named, -p iters=20 "
    "-w 1 and its own --timeout and --out (not yet run on GPUs in a run of its own)",
    "NCCL_NVLS_ENABLE=0 mpirun -np 4 --allow-run-as-root -x NCCL_NVLS_ENABLE build/gpu/apps/memstress run "
    "nccl_memory -p channels=0,2,8,32 -p cycles=100 -o nccl-memory.json":
    "four GPUs; scripts/lab/gpu-nccl-tests runs it in two parts, the channels with cycles=0 and cycles=100 alone "
    "(results/h100x4/nccl-tests-580.159.04/memstress-nccl-memory-*.json)",
    "mpirun -np 2 env MEMSTRESS_NODE=a memstress run sizes --in-turn sizes : -np 2 env MEMSTRESS_NODE=b memstress run "
    "sizes --in-turn sizes": "four ranks as two nodes: the test mpi.two_nodes runs it with a shorter job, a "
    "straggler planted and its checks (tests/mpi/check_job.py)",
    "scripts/lab/gpu-nccl-tests NCCL_TESTS_SRC": "needs 2 or more GPUs and a checkout of nccl-tests; run on 4 H100s, "
    "its record is results/h100x4/nccl-tests-580.159.04/",
    # docs/slurm.md: a Slurm cluster of GPU nodes. CTest's slurm.cluster (tests/slurm/check_slurm.py) starts a Slurm of
    # one node on the test machine and runs each of these forms there, on the simulated device.
    "srun -N 2 --ntasks-per-node=8 --gpus-per-task=1 --mpi=pmix memstress run --out run.json":
        "two nodes of 8 GPUs; slurm.cluster runs srun jobs of 2 ranks, --gpus-per-task=1 among them, on its one node",
    "sbatch --nodes=4 scripts/slurm/bench.sbatch": "four GPU nodes; slurm.cluster runs the recipe on its one node "
    "(-N 1 --ntasks-per-node=2, the job's memstress arguments naming the simulated device)",
    "sbatch --nodes=4 scripts/slurm/accept.sbatch h100-quick": "four H100 nodes; slurm.cluster runs the recipe on its "
    "one node with a profile of the simulated device, and reads the node's verdict in summary.txt",
    "srun -n 2 --mpi=pmix memstress run alloc-smoke -d sim:8G": "needs a Slurm: slurm.cluster runs it (with its "
    "cases, repetitions and --out named) on the one it starts, and compares it with the mpirun job",
    "cmake --preset nocuda && cmake --build --preset nocuda": "minutes of building; CTest's wheel.install builds the "
    "same configuration through pip wheel (tests/wheel/test_wheel.py) and checks what it made",
}
SYNOPSIS = re.compile(r"\[|\.\.\.|\||BASE NEW|TRACE |RESULTS")
# `memstress db` is built only where SQLite and libcrypto were found (cmake/FleetStore.cmake); elsewhere its
# commands are skipped, saying why.
NO_DB = ("this build has no fleet store (MEMSTRESS_HAVE_DB is not ON in its CMakeCache.txt: libsqlite3-dev or "
         "libssl-dev missing, or MEMSTRESS_WITH_DB=OFF); memstress db exits 3 there")
# Commands that read what `memstress db` wrote: skipped with it.
READS_DB_OUTPUT = ("memstress report outliers.json history.json -o fleet.html",
                   "memstress accept --profile h100-fleet.yaml --from tests/data/fleet/node04.json")


def build_has_db() -> bool:
    """Whether BUILD has `memstress db`: its cache says so (read when asked, as scripts/run may reconfigure)."""
    cache = BUILD / "CMakeCache.txt" if BUILD else None
    return bool(cache and cache.exists()
                and re.search(r"^MEMSTRESS_HAVE_DB:INTERNAL=ON$", cache.read_text(), re.MULTILINE))


def page_lines() -> list[str]:
    """The lines of every page held to account, one page after the other."""
    return [line for page in PAGES for line in page.read_text().splitlines()]


def readme_commands() -> list[str]:
    """Every command line of the pages' code blocks (continuation lines joined, comments dropped), with
    the `$ ` of a shown session kept."""
    commands, block, pending, output = [], False, "", False
    for line in page_lines():
        if line.startswith("```"):
            block, output = not block, False
            continue
        if not block:
            continue
        if output and not line.startswith("$ "):
            continue  # what a `$ command` printed, up to the next `$ ` or the end of its block
        text = pending + line.strip() if pending else line.strip()
        if text.endswith("\\"):
            pending = text[:-1].rstrip() + " "
            continue
        pending = ""
        output = output or text.startswith("$ ")
        if COMMAND.match(text) and not re.match(r"^(scripts/\w+|memstress): ", text):  # not a log line
            commands.append(re.sub(r"\s+#.*$", "", text).strip())
    return commands + INLINE


def shown_output(command: str) -> str:
    """What a page shows a `$ command` printing: the lines after it, up to the end of its block."""
    lines, start, joined = page_lines(), None, ""
    for i, line in enumerate(lines):  # the command may be shown over several lines, each but the last ending in \\
        joined = joined + line.strip() if joined else line.strip()
        if joined.endswith("\\"):
            joined = joined[:-1].rstrip() + " "
            continue
        if joined == f"$ {command}":
            start = i + 1
            break
        joined = ""
    if start is None:
        raise ValueError(f"no page shows `$ {command}`")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start:end]).rstrip() + "\n"


def unshown_output_block(first_line: str) -> str:
    """A block a page introduces in prose (no `$ ` line): from its first line to its end."""
    lines = page_lines()
    start = lines.index(first_line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start:end]).rstrip() + "\n"


FIRST_RUN_RECORD = ROOT / "results" / "h100" / "first-run-580.159.04"
DEFAULT_RUN_LOG = ROOT / "results" / "h100" / "gpu-ci-580.159.04" / "readme-ci-344877b" / "run-default.txt"


class FirstScreen(unittest.TestCase):
    def test_the_first_screens_excerpt_is_from_the_committed_record(self) -> None:
        """Each line the README shows of the default job's output is a line of the committed log of that run
        on a fresh H100 (spaces between columns aside, an empty last column left out), and the record of
        scripts/run's first run it links says every step exited as expected."""
        record = json.loads((FIRST_RUN_RECORD / "record.json").read_text())
        self.assertTrue(record["all_ok"], "the committed first run has a failed step")
        logged = {" ".join(line.split()) for line in DEFAULT_RUN_LOG.read_text().splitlines()}
        first = next(line for line in DEFAULT_RUN_LOG.read_text().splitlines() if line.startswith("memstress: [62/62]"))
        excerpt = unshown_output_block(first)
        lines = [line for line in excerpt.splitlines() if line.strip() and line != "..."]
        self.assertGreater(len(lines), 5)
        for line in lines:  # an empty last column (NOTE) may be left out
            shown = " ".join(line.split())
            self.assertTrue(any(row == shown or row.startswith(shown + " ") for row in logged),
                            f"the README shows a line the record does not have: {line}")


class EveryCommand(unittest.TestCase):
    def test_every_readme_command_is_accounted_for(self) -> None:
        known = set(CPU) | set(GPU_FIRST_RUN) | set(GPU_MULTI) | set(NOT_RUN)
        for command in readme_commands():
            bare = command.removeprefix("$ ")
            if SYNOPSIS.search(bare) and bare not in known:
                continue
            self.assertIn(bare, known, f"a command of the README or docs/ that nothing runs: {bare}")

    def test_the_gpu_scripts_hold_their_commands_verbatim(self) -> None:
        first_run, multi = FIRST_RUN.read_text(), MULTI.read_text()
        for command in GPU_FIRST_RUN:
            # the script names the profile after the GPU it finds (h100 on the H100 the record is from)
            self.assertIn(command.replace("--profile h100", '--profile "$gpu"'), first_run)
        for command in GPU_MULTI:
            self.assertIn(command, multi)
        self.assertIn("scripts/test", first_run)


def slug(heading: str) -> str:
    """The anchor a Markdown heading gets: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


class Links(unittest.TestCase):
    def test_every_link_between_the_pages_resolves(self) -> None:
        """A relative link of the README or a docs/ page names a file of the checkout, and its #anchor a heading of
        that page (links that leave the checkout are not checked)."""
        for page in [README] + sorted((ROOT / "docs").glob("*.md")):
            for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", page.read_text()):
                if target.startswith(("http://", "https://", "mailto:")):
                    continue
                path = (page.parent / target).resolve() if target else page
                if ROOT not in path.parents and path != ROOT:
                    continue
                with self.subTest(page=page.name, link=f"{target}#{anchor}" if anchor else target):
                    self.assertTrue(path.exists(), f"{page.relative_to(ROOT)} links to {target}, which is not there")
                    if anchor and path.suffix == ".md":
                        headings = {slug(line.lstrip("#")) for line in path.read_text().splitlines()
                                    if line.startswith("#")}
                        self.assertIn(anchor, headings, f"{page.relative_to(ROOT)}: no heading #{anchor} in {target}")


class Length(unittest.TestCase):
    def test_the_readme_is_read_in_five_minutes(self) -> None:
        """The README stays a first page (at most 250 lines); the rest belongs in docs/."""
        self.assertLessEqual(len(README.read_text().splitlines()), 250)


class Layout(unittest.TestCase):
    def test_the_layout_names_every_top_level_folder(self) -> None:
        """docs/development.md's Layout has a row for each folder the repository tracks at its top."""
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=False)
        if listed.returncode != 0 or not listed.stdout:
            self.skipTest("not a git checkout: " + listed.stderr.strip())
        folders = {line.split("/", 1)[0] for line in listed.stdout.splitlines() if "/" in line}
        layout = (ROOT / "docs" / "development.md").read_text()
        rows = set(re.findall(r"^\| `([^`/]+)/` \|", layout, re.MULTILINE))
        self.assertEqual(folders - rows, set(), "folders the Layout of docs/development.md does not name")


@unittest.skipIf(BUILD is None, "usage: test_readme.py BUILD_DIR")
class RunOnTheCpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="memstress-readme-"))
        for name in ("scripts", "results", "tests", "profiles", "build"):
            (cls.tmp / name).symlink_to(ROOT / name)
        cls.bin = cls.tmp / "bin"
        cls.bin.mkdir()
        (cls.bin / "memstress").symlink_to(BUILD / "apps" / "memstress")
        shutil.copy(ROOT / "results" / "h100" / "faults-580.159.04" / "accept-healthy-1.json", cls.tmp / "accept.json")
        snapshot, _ = snapshot_fixtures.scenario()
        snapshot_fixtures.write_pickle(cls.tmp / "run.snapshot.pickle", snapshot)
        for batch in (8, 16):
            snapshot_fixtures.write_pickle(cls.tmp / f"run{batch}.snapshot.pickle",
                                           snapshot_fixtures.training_snapshot(3, batch=batch))
        cls.env = dict(os.environ, PATH=f"{cls.bin}:{os.environ.get('PATH', '')}", OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", COLUMNS="200")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_command(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=self.tmp, env=self.env, capture_output=True, text=True,
                              check=False, timeout=900)

    def test_each_command_runs_as_written(self) -> None:
        documented = {c.removeprefix("$ ") for c in readme_commands()}
        for command, expected in CPU.items():
            with self.subTest(command=command):
                self.assertIn(command, documented, "no longer in the README or docs/: drop it from CPU")
                if command.startswith("mpirun") and not shutil.which("mpirun"):
                    continue  # the mpi tests are skipped without mpirun too
                if "build/cpu/" in command and not (ROOT / "build" / "cpu" / "apps" / "memstress").exists():
                    # the README's recipe for a machine without a GPU; CI runs it, a GPU checkout has build/gpu
                    print(f"  not run: no build/cpu here: {command}", file=sys.stderr)
                    continue
                if (command.startswith("memstress db ") or command in READS_DB_OUTPUT) and not build_has_db():
                    self.skipTest(NO_DB)
                if command.startswith(NEEDS_MATPLOTLIB) and self.run_command(
                        "memstress report /nonexistent.json -o r.html").returncode == 3:
                    continue  # no python with matplotlib here (test_report says so)
                started = time.monotonic()
                done = self.run_command(command)
                print(f"{time.monotonic() - started:6.1f} s  {command}", file=sys.stderr)
                self.assertEqual(done.returncode, expected, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")

    def test_shown_excerpts_are_printed(self) -> None:
        """A `$ command` whose shown output skips lines (`...`): each line it does show is a line it prints, or
        the start of one where the page cuts it with `; ...`."""
        printed = self.run_command(DOCTOR_CORPUS).stdout.splitlines()
        shown = [line for line in shown_output(DOCTOR_CORPUS).splitlines() if line != "..."]
        self.assertGreater(len(shown), 2)
        for line in shown:
            cut = line.removesuffix(" ...") if line.endswith("; ...") else None
            self.assertTrue(line in printed or (cut is not None and any(p.startswith(cut) for p in printed)),
                            f"docs/doctor.md shows a line `{DOCTOR_CORPUS}` does not print: {line}")

    def test_shown_outputs_are_what_the_commands_print(self) -> None:
        for command in ("memstress compare results/h100/compare/base-h100-580.159.04.json.xz "
                        "results/h100/compare/slowed-h100-580.159.04.json.xz",
                        "memstress replay results/traces/torch-2.11-h100/multistream_loader.trace.csv.gz "
                        "--device sim:40G --allocator expandable",
                        "memstress run oom leak -d sim -q"):
            with self.subTest(command=command):
                self.assertEqual(self.run_command(command).stdout, shown_output(command))
        for store, ingest in (("fleet", "memstress db ingest tests/data/fleet/node0*.json --db fleet.sqlite"),
                              ("results", "memstress db ingest results --db results.sqlite")):
            with self.subTest(store=store):
                if not build_has_db():
                    self.skipTest(NO_DB)
                self.run_command(f"rm -f {store}.sqlite && {ingest}")  # a store of its own, whatever ran before
                outliers = next(c.removeprefix("$ ") for c in readme_commands()
                                if c.startswith(f"$ memstress db outliers --db {store}.sqlite"))
                self.assertEqual(self.run_command(outliers).stdout, shown_output(outliers))
        with self.subTest(store="drivers"):
            if not build_has_db():
                self.skipTest(NO_DB)
            self.run_command("rm -f drivers.sqlite && memstress db ingest tests/data/fleet/node0*.json "
                             "tests/data/fleet/driver-570/node0*.json --db drivers.sqlite")
            for command in ("memstress db history --db drivers.sqlite --gpu GPU-00000000-0000-0000-0000-000000000004 "
                            "--metric GB/s",
                            "memstress db compare --db drivers.sqlite --driver 570.195.03 --driver 580.159.04 "
                            "--metric GB/s"):
                self.assertEqual(self.run_command(command).stdout, shown_output(command))
        slower = self.run_command("memstress compare tests/data/compare/base.json tests/data/compare/slower.json")
        self.assertEqual(slower.stdout, unshown_output_block("BASE tests/data/compare/base.json (memstress.run/1 "
                                                             "document, 3 rows)"))


if __name__ == "__main__":
    unittest.main()
