"""scripts/lab/nccl_tests_table.py: the committed tables are what the script makes from their folders' raw files
(results/*/nccl-tests-*/TABLE.md), and bad input is a clear message with exit 2.
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from committed_tables import assert_each_is_the_scripts_output

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab" / "nccl_tests_table.py"
FOLDERS = sorted(p.parent for pattern in ("results/*/nccl-tests-*/TABLE.md", "results/*/nccl-tests-*/*/TABLE.md")
                 for p in ROOT.glob(pattern))
# Folders of two runs one after the other (round-1, round-2) and the script's --repeat table of them.
REPEATS = sorted(p.parent for p in ROOT.glob("results/*/nccl-tests-*/REPEAT.md"))
# Folders of runs set side by side (--beside), the arguments after the folder in beside.args.
BESIDES = sorted(p.parent for p in ROOT.glob("results/*/nccl-tests-*/**/BESIDE.md"))

NCCL_TESTS_LINES = """#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
           8             2     float     sum      -1    12.00    0.00    0.00       0    11.00    0.00    0.00       0
           8             2     float     sum      -1    10.00    0.00    0.00       0    11.00    0.00    0.00       0
"""


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


class CommittedTables(unittest.TestCase):
    def test_there_is_one(self):
        self.assertTrue(FOLDERS, "no results/*/nccl-tests-*/TABLE.md")

    def test_each_table_is_the_scripts_output(self):
        assert_each_is_the_scripts_output(self, ROOT, FOLDERS, run)

    def test_small_messages_are_compared_and_memory_is_reported(self):
        for folder in FOLDERS:
            text = (folder / "TABLE.md").read_text()
            self.assertIn("| 8 B |", text)  # the sweep starts at 8 bytes
            self.assertIn("| 64 MiB |", text)
            if any(folder.glob("nccl-tests-memory-*.txt")):
                self.assertIn("## NCCL's memory", text)
                self.assertIn("nccl-tests -M 1 (default)", text)

    def test_each_repeat_table_is_the_scripts_output(self):
        self.assertTrue(REPEATS, "no results/*/nccl-tests-*/REPEAT.md")
        for folder in REPEATS:
            with self.subTest(folder=folder.relative_to(ROOT)):
                made = run("--repeat", str(folder / "round-1"), str(folder / "round-2"))
                self.assertEqual(made.returncode, 0, made.stderr)
                self.assertEqual(made.stdout, (folder / "REPEAT.md").read_text())


    def test_each_beside_table_is_the_scripts_output(self):
        self.assertTrue(BESIDES, "no results/*/nccl-tests-*/**/BESIDE.md")
        for folder in BESIDES:
            with self.subTest(folder=folder.relative_to(ROOT)):
                made = run("--beside", str(folder), *(folder / "beside.args").read_text().split())
                self.assertEqual(made.returncode, 0, made.stderr)
                self.assertEqual(made.stdout, (folder / "BESIDE.md").read_text())


def memstress_row(collective: str, timing: str, time: float) -> dict:
    return {"workload": "collectives", "rank": 0, "verdict": "pass",
            "params": {"collective": collective, "place": "out", "pressure": "none", "timing": timing,
                       "buffers": "ncclmem", "bytes": "8B"},
            "metrics": {"time": {"median": time, "p99": time}, "busbw": {"median": 0.0}}}


class GraphEach(unittest.TestCase):
    def write(self, folder: Path, timings: tuple[str, ...]) -> None:
        rows = []
        for c in nccl_tests_table_module().COLLECTIVES:
            for mode in ("host", "graph"):
                (folder / f"nccl-tests-{c}-{mode}.txt").write_text(NCCL_TESTS_LINES)
            rows += [memstress_row(c, t, {"host": 11.0, "graph": 10.0, "graph_each": 12.0}[t]) for t in timings]
        (folder / "memstress-collectives-ncclmem.json").write_text(json.dumps({"rows": rows}))

    def test_its_columns_appear_only_where_it_ran(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            self.write(folder, ("host", "graph"))
            made = run(str(folder))
            self.assertEqual(made.returncode, 0, made.stderr)
            self.assertNotIn("graph_each", made.stdout)
            self.write(folder, ("host", "graph", "graph_each"))
            made = run(str(folder))
            self.assertEqual(made.returncode, 0, made.stderr)
            # nccl-tests -G 1's median over its lines is 11.0 us: graph 10/11, graph_each 12/11
            self.assertIn("| 8 B | 11.00 | 11.00 | 1.000 |", made.stdout)
            self.assertIn("| 11.00 | 10.00 | 0.909 | 12.00 | 1.091 |", made.stdout)
            self.assertIn("graph_each time", made.stdout)
            self.assertIn("+9.1% … +9.1% (median +9.1%)", made.stdout)


class SplitRunsAndPackedOutputs(unittest.TestCase):
    """Host timing in a run of its own (-host.json) and outputs stored xz-compressed give the table that one
    plain folder gives; the table names memstress's settings and counts the sizes within the target."""

    def write(self, folder: Path, split: bool, packed: bool) -> None:
        graph_rows, host_rows = [], []
        for c in nccl_tests_table_module().COLLECTIVES:
            for mode in ("host", "graph"):
                text = NCCL_TESTS_LINES.encode()
                name = folder / f"nccl-tests-{c}-{mode}.txt"
                if packed:
                    name.with_name(name.name + ".xz").write_bytes(lzma.compress(text))
                else:
                    name.write_bytes(text)
            host_rows.append(memstress_row(c, "host", 11.2))
            graph_rows += [memstress_row(c, "graph", 10.0), memstress_row(c, "graph_each", 11.0)]
        for row in host_rows + graph_rows:
            row["params"].update({"rotate": "64M", "l2": "flushed"})
        if split:
            (folder / "memstress-collectives-ncclmem.json").write_text(json.dumps({"rows": graph_rows}))
            (folder / "memstress-collectives-ncclmem-host.json").write_text(json.dumps({"rows": host_rows}))
        else:
            (folder / "memstress-collectives-ncclmem.json").write_text(json.dumps({"rows": graph_rows + host_rows}))

    def test_the_same_table_either_way(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            self.write(Path(a), split=False, packed=False)
            self.write(Path(b), split=True, packed=True)
            plain, split = run(a), run(b)
            self.assertEqual(plain.returncode, 0, plain.stderr)
            self.assertEqual(split.returncode, 0, split.stderr)
            self.assertEqual(plain.stdout, split.stdout)
            self.assertIn("ran with rotate=64M l2=flushed", split.stdout)
            # host 11.2 / 11.0 (+1.8%) and graph_each 11.0 / 11.0 are within 3%, graph 10.0 / 11.0 is not
            self.assertIn("| 1, 0, 1 | 1 |", split.stdout)

    def test_the_repeat_table_reads_the_host_runs_too(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            self.write(Path(a), split=True, packed=True)
            self.write(Path(b), split=True, packed=False)
            made = run("--repeat", a, b)
            self.assertEqual(made.returncode, 0, made.stderr)
            # every cell has figures: the host rows of -host.json were read (a missing side prints "-")
            self.assertIn("| all_reduce | host | +0.0% (+0.0% … +0.0%) | +0.0% (+0.0% … +0.0%) | - | - |", made.stdout)

    def test_a_damaged_host_run_or_a_row_without_its_size_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            self.write(folder, split=True, packed=False)
            (folder / "memstress-collectives-ncclmem-host.json").write_text("{not json")
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("memstress-collectives-ncclmem-host.json", made.stderr)
            row = memstress_row("all_reduce", "host", 11.0)
            del row["params"]["bytes"]
            (folder / "memstress-collectives-ncclmem-host.json").write_text(json.dumps({"rows": [row]}))
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("memstress-collectives-ncclmem-host.json: a collectives row without", made.stderr)
            row["params"]["bytes"] = "lots"
            (folder / "memstress-collectives-ncclmem-host.json").write_text(json.dumps({"rows": [row]}))
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("memstress-collectives-ncclmem-host.json: not a size: 'lots'", made.stderr)
            (folder / "memstress-collectives-ncclmem-host.json").unlink()
            (folder / "memstress-collectives-ncclmem-host.json.xz").write_bytes(b"not xz")
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("memstress-collectives-ncclmem-host.json.xz", made.stderr)
            self.assertEqual(made.stderr.count("memstress-collectives-ncclmem-host.json"), 1, made.stderr)

    def test_a_damaged_packed_output_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            self.write(folder, split=True, packed=True)
            (folder / "nccl-tests-all_reduce-host.txt.xz").write_bytes(b"not xz")
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("nccl-tests-all_reduce-host.txt.xz", made.stderr)
            bad = NCCL_TESTS_LINES.replace("       0    11", "       3    11", 1)
            (folder / "nccl-tests-all_reduce-host.txt.xz").write_bytes(lzma.compress(bad.encode()))
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("nccl-tests-all_reduce-host.txt.xz: nccl-tests found 3 wrong elements", made.stderr)


class Beside(unittest.TestCase):
    """--beside: one nccl-tests mode beside the same memstress timing in several runs."""

    def test_each_run_is_a_column_and_the_summary_counts_its_sizes_within_the_target(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "nccl-tests-all_reduce-host.txt").write_text(NCCL_TESTS_LINES)  # median 11.0 us
            for name, time in (("alone", 11.0), ("after-graphs", 12.1)):
                rows = [memstress_row("all_reduce", "host", time), memstress_row("all_reduce", "graph", 1.0)]
                (folder / f"{name}.json").write_text(json.dumps({"rows": rows}))
            made = run("--beside", str(folder), "host", "host", "alone", "after-graphs")
            self.assertEqual(made.returncode, 0, made.stderr)
            self.assertIn("| all_reduce | 1 | +0.0% (+0.0% … +0.0%), 1 | +10.0% (+10.0% … +10.0%), 0 |", made.stdout)
            self.assertIn("| 8 B | 11.00 | 11.00 | 1.000 | 12.10 | 1.100 |", made.stdout)
            self.assertNotIn("### broadcast", made.stdout)  # no nccl-tests output for it

    def test_bad_arguments_and_missing_files_are_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            self.assertEqual(run("--beside", str(folder), "host", "host").returncode, 2)  # no run named
            self.assertEqual(run("--beside", str(folder), "device", "host", "x").returncode, 2)
            made = run("--beside", str(folder), "host", "host", "x")
            self.assertEqual(made.returncode, 2)
            self.assertIn("x.json", made.stderr)


def nccl_tests_table_module():
    sys.path.insert(0, str(SCRIPT.parent))
    import nccl_tests_table

    return nccl_tests_table


class BadInput(unittest.TestCase):
    def test_missing_folder(self):
        made = run("/nonexistent-folder-for-this-test")
        self.assertEqual(made.returncode, 2)
        self.assertIn("not a directory", made.stderr)

    def test_wrong_elements_reported_by_nccl_tests_refuse_the_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "memstress-collectives-ncclmem.json").write_text('{"rows": []}')
            (folder / "memstress-collectives.json").write_text('{"rows": []}')
            (folder / "nccl-tests-all_reduce-host.txt").write_text(
                NCCL_TESTS_LINES.replace("       0    11", "       3    11", 1)
            )
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("wrong elements", made.stderr)

    def test_results_that_are_not_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "memstress-collectives-ncclmem.json").write_text("{not json")
            made = run(str(folder))
            self.assertEqual(made.returncode, 2)
            self.assertIn("memstress-collectives-ncclmem.json", made.stderr)

    def test_median_of_the_lines(self):
        sys.path.insert(0, str(SCRIPT.parent))
        import nccl_tests_table

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.txt"
            path.write_text(NCCL_TESTS_LINES)
            self.assertEqual(nccl_tests_table.nccl_tests_lines(path)[8]["time"], [12.0, 10.0])


if __name__ == "__main__":
    unittest.main()
