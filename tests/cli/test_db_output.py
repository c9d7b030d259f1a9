"""What `memstress db` prints for people: ingest's summary, tables in the run table's units, GPUs named by the
start of their UUID, and notes that never land in the middle of a line of stdout.

    test_db_output.py MEMSTRESS [unittest args]

Each class is one CTest test (tests/cli/fleet.cmake), label cpu.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "tests" / "data" / "fleet"
NODES = sorted(FLEET.glob("node0*.json"))
MEMSTRESS = ""


def run(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMSTRESS, *map(str, args)], capture_output=True, text=True, check=False, timeout=300,
                          cwd=cwd)


class Temp(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = Path(self.tmp.name)

    def fleet_store(self) -> Path:
        db = self.dir / "fleet.sqlite"
        done = run("db", "ingest", *NODES, "--db", db)
        self.assertEqual(done.returncode, 0, done.stderr)
        return db


def some_results() -> list[Path]:
    """Records of several machines with their streams, and files that are not results (the schemas among them):
    not all of results/, which under the sanitizers took longer than a test may."""
    folders = ("h100", "h200", "h200x4", "schema", "fleet", "cpu")
    return sorted(p for folder in folders for p in (ROOT / "results" / folder).glob("*")
                  if p.name.endswith((".json", ".jsonl", ".json.xz", ".jsonl.xz")) and p.is_file())


class IngestSummary(Temp):
    """Without -v, ingest prints its totals and names the first three files it skipped; -v names every file."""

    def files(self) -> list[Path]:
        return NODES + some_results()

    def test_the_totals_and_the_first_skipped(self) -> None:
        files = self.files()
        done = run("db", "ingest", *files, "--db", self.dir / "a.sqlite")
        self.assertEqual(done.returncode, 2, done.stderr)  # some files are not results: skipped
        self.assertEqual(len(done.stdout.splitlines()), 1, done.stdout)
        self.assertRegex(done.stdout, rf"^{len(files)} file\(s\): \d+ added, .* \d+ skipped; ")
        notes = done.stderr.splitlines()
        self.assertEqual(len(notes), 4, done.stderr)
        self.assertTrue(all(n.startswith("memstress db ingest: skipped '") for n in notes[:3]), notes)
        self.assertRegex(notes[3], r"^memstress db ingest: \d+ more file\(s\) skipped \(-v names every file")

    def test_verbose_names_every_file(self) -> None:
        files = self.files()
        done = run("db", "ingest", "-v", *files, "--db", self.dir / "b.sqlite")
        self.assertEqual(done.returncode, 2, done.stderr)
        skipped = int(re.search(r"(\d+) skipped;", done.stdout).group(1))
        self.assertEqual(len(done.stderr.splitlines()), skipped)
        self.assertEqual(len(done.stdout.splitlines()), len(files) - skipped + 1)


class NotesOnTheirOwnLines(Temp):
    """stdout and stderr sent to one file (`>log 2>&1`): a note starts its own line, never cuts one of stdout."""

    def together(self, *args: object) -> list[str]:
        command = " ".join(f"'{a}'" for a in (MEMSTRESS, *args))
        done = subprocess.run(["sh", "-c", f"{command} >out.txt 2>&1"], cwd=self.dir, check=False, timeout=300)
        self.assertIn(done.returncode, (0, 1, 2))
        return (self.dir / "out.txt").read_text().splitlines()

    def check(self, lines: list[str], prefix: str) -> None:
        self.assertGreater(len(lines), 3)
        for line in lines:
            self.assertNotIn(prefix, line[1:], f"a note in the middle of a line: {line}")

    def test_ingest(self) -> None:
        files = NODES + some_results()
        self.check(self.together("db", "ingest", "-v", *files, "--db", self.dir / "c.sqlite"), "memstress db ingest:")

    def test_run(self) -> None:
        lines = self.together("run", "alloc-smoke", "sizes", "-d", "sim", "-n", "1")
        self.check(lines, "memstress:")
        # The notes that follow the table come after it in the file too (stdout written before each note).
        summary = next(i for i, line in enumerate(lines) if re.match(r"^\d+ cases: ", line))
        last_note = max(i for i, line in enumerate(lines) if line.startswith("memstress: results not kept"))
        self.assertGreater(last_note, summary, "\n".join(lines[-8:]))


class TablesInUnits(Temp):
    """The tables show medians as the run table does (54.93 GB/s), not as raw numbers; JSON keeps the numbers."""

    def test_outliers_history_and_compare(self) -> None:
        db = self.fleet_store()
        done = run("db", "ingest", *sorted((FLEET / "driver-570").glob("node0*.json")), "--db", db)
        self.assertEqual(done.returncode, 0, done.stderr)
        tables = [run("db", "outliers", "--db", db).stdout,
                  run("db", "history", "--db", db, "--gpu", "GPU-00000000-0000-0000-0000-000000000004",
                      "--metric", "GB/s").stdout,
                  run("db", "compare", "--db", db, "--driver", "570.195.03", "--driver", "580.159.04",
                      "--metric", "GB/s").stdout]
        for table in tables:
            with self.subTest(table=table.splitlines()[0] if table else ""):
                self.assertRegex(table, r"\d GB/s")
        # outliers: MEDIAN and GROUP, side by side, each with its unit; no UNIT column
        self.assertRegex(tables[0], r"(?m)^\d+\.\d +\d+\.\d%.* \d+(\.\d+)? GB/s +\d+(\.\d+)? GB/s +6 +1 ")
        self.assertNotIn(" UNIT ", tables[0].splitlines()[0])
        # history: each point's median with its unit
        self.assertRegex(tables[1], r"(?m)^2026-\S+ +\S+ +\d+(\.\d+)? GB/s ")


class GpuByPrefix(Temp):
    """--gpu takes the start of a UUID (with or without GPU-) when it names one GPU of the store, and refuses one
    that several share, naming them."""

    def test_a_prefix_that_names_one_gpu(self) -> None:
        db = self.fleet_store()
        # One more GPU whose UUID no other shares the start of.
        other = self.dir / "node07.json"
        other.write_text(NODES[0].read_text().replace("GPU-00000000-0000-0000-0000-000000000001",
                                                      "GPU-abcdef01-2345-6789-abcd-ef0123456789")
                         .replace("node01", "node07"))
        done = run("db", "ingest", other, "--db", db)
        self.assertEqual(done.returncode, 0, done.stderr)
        for whole, shorts in (("GPU-abcdef01-2345-6789-abcd-ef0123456789", ("GPU-abcd", "abcdef01", "abcdef01-2345")),
                              ("GPU-00000000-0000-0000-0000-000000000004",
                               ("00000000-0000-0000-0000-000000000004",))):
            full = run("db", "history", "--db", db, "--gpu", whole)
            self.assertEqual(full.returncode, 0, full.stderr)
            self.assertIn(whole, full.stdout)
            for short in shorts:
                with self.subTest(gpu=short):
                    done = run("db", "history", "--db", db, "--gpu", short)
                    self.assertEqual(done.returncode, 0, done.stderr)
                    self.assertEqual(done.stdout, full.stdout)

    def test_a_prefix_that_several_share_is_refused_naming_them(self) -> None:
        db = self.fleet_store()
        done = run("db", "history", "--db", db, "--gpu", "GPU-00000000")
        self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("--gpu 'GPU-00000000': 6 GPUs of", done.stderr)
        self.assertIn("GPU-00000000-0000-0000-0000-000000000001, ", done.stderr)
        self.assertIn("give more of the UUID", done.stderr)

    def test_a_prefix_of_no_gpu_is_no_measurement(self) -> None:
        db = self.fleet_store()
        done = run("db", "history", "--db", db, "--gpu", "GPU-ffff")
        self.assertEqual(done.returncode, 2, done.stdout)
        self.assertIn("no measurement of GPU 'GPU-ffff'", done.stderr)


if __name__ == "__main__":
    MEMSTRESS = sys.argv.pop(1)
    unittest.main()
