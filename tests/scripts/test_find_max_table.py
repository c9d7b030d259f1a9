"""scripts/lab/find_max_table.py: PyTorch's largest batch read from the runs (the largest that ran below the lowest
that ran out), each finder's batch set beside it, bad input named with exit 2, and the committed tables still the
script's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from committed_tables import assert_each_is_the_scripts_output

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab" / "find_max_table.py"
FOLDERS = sorted(p.parent for p in ROOT.glob("results/*/find-max-batch-*/TABLE.md"))
CAP = 1 << 31


def run(folder: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), folder], capture_output=True, text=True, check=False,
                          timeout=120)


def write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


class Table(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-find-max-table-"))
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", str(self.tmp)], check=False))

    def test_the_largest_lies_below_the_lowest_that_ran_out_and_lightning_comes_last(self) -> None:
        for batch, oom in ((40, None), (47, None), (48, "CUDA out of memory"), (50, None)):
            write(self.tmp / "largest" / f"enc-b{batch}.json", {"program": "enc", "cap": CAP, "batch": batch, "oom": oom})
        write(self.tmp / "lightning" / "enc-lightning.json",
              {"program": "enc", "cap": CAP, "batch": 43, "trials": [[2, True, 0.1]] * 11, "trial_count": 11,
               "trial_steps": 21, "ooms": 3, "seconds": 7.06})
        write(self.tmp / "mine" / "enc-memstress.json",
              {"program": "enc", "cap": CAP, "batch": 45, "trials": [], "trial_count": 4, "trial_steps": 8, "ooms": 0,
               "seconds": 4.8})
        done = run(str(self.tmp))
        self.assertEqual(done.returncode, 0, done.stderr)
        head, _, row = done.stdout.splitlines()
        self.assertLess(head.index("mine: batch"), head.index("lightning: batch"))
        self.assertEqual(row, "| enc | 47 | 45 (-4.3%) | 4 | 8 | 0 | 4.8 | 43 (-8.5%) | 11 | 21 | 3 | 7.1 |")

    def test_bad_input_is_named_with_exit_2(self) -> None:
        done = run(str(self.tmp))
        self.assertEqual(done.returncode, 2)
        self.assertIn("no runs", done.stderr)
        write(self.tmp / "largest" / "enc-b40.json", {"program": "enc", "cap": CAP, "batch": 40, "oom": None})
        done = run(str(self.tmp))
        self.assertEqual(done.returncode, 2)
        self.assertIn("enc: no run that ran out", done.stderr)
        write(self.tmp / "largest" / "enc-b41.json", {"program": "enc", "cap": 2 * CAP, "batch": 41, "oom": "OOM"})
        done = run(str(self.tmp))
        self.assertEqual(done.returncode, 2)
        self.assertIn("several caps", done.stderr)
        (self.tmp / "largest" / "enc-b41.json").write_text("[1, 2")
        done = run(str(self.tmp))
        self.assertEqual(done.returncode, 2)
        self.assertIn("enc-b41.json: not a doctor_programs.py result", done.stderr)


class CommittedTables(unittest.TestCase):
    def test_each_committed_table_is_the_scripts_output(self) -> None:
        self.assertTrue(FOLDERS, "no results/*/find-max-batch-*/TABLE.md committed")
        assert_each_is_the_scripts_output(self, ROOT, FOLDERS, run)


if __name__ == "__main__":
    unittest.main()
