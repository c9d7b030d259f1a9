"""scripts/lab/replay_fidelity.py: PyTorch's own traces near a cap (results/*/replay-fidelity-*/, recorded on a GPU)
replayed by memstress on a simulated device of the cap give PyTorch's peaks, and the committed table's replay section
is still the script's output made from its folder; bad input is named with exit 2.

    test_replay_fidelity.py MEMSTRESS_BINARY [-v]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab" / "replay_fidelity.py"
BINARY = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
FOLDERS = sorted(p.parent for p in ROOT.glob("results/*/replay-fidelity-*/runs.json"))
MIB = 1 << 20


def made(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--memstress", str(BINARY)], capture_output=True,
                          text=True, check=False, timeout=600)


@unittest.skipIf(BINARY is None, "usage: test_replay_fidelity.py MEMSTRESS_BINARY")
class ReplayFidelity(unittest.TestCase):
    def test_the_replay_section_is_the_scripts_output_and_gives_pytorchs_peaks(self) -> None:
        self.assertTrue(FOLDERS, "no results/*/replay-fidelity-*/ committed")
        for folder in FOLDERS:
            with self.subTest(folder=folder.relative_to(ROOT)):
                done = made("-", str(folder))
                self.assertEqual(done.returncode, 0, done.stderr)
                committed = (folder / "TABLE.md").read_text()
                self.assertEqual(done.stdout, committed.split("\n\n# predict-batch")[0] + "\n")
                runs = {r["name"]: r for r in json.loads((folder / "runs.json").read_text())["runs"]}
                rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| ")][2:]
                self.assertEqual(len(rows), len(runs))
                for row in rows:
                    if row[3] != "ran":
                        continue  # a run PyTorch ran out in: its trace ends at the OOM
                    pytorch = row[4].split(" / ")
                    replay = row[6].rstrip(" |").split(" / ")
                    self.assertEqual(row[5], "fits", row)
                    self.assertEqual(replay[0], pytorch[0], row)  # peak reserved, to the MiB
                    self.assertLessEqual(abs(float(replay[1]) - float(pytorch[1])), 1.0, row)

    def test_bad_input_is_named_with_exit_2(self) -> None:
        with tempfile.TemporaryDirectory(prefix="memstress-fidelity-test-") as tmp:
            empty = Path(tmp) / "empty"
            empty.mkdir()
            done = made("-", str(empty))
            self.assertEqual(done.returncode, 2)
            self.assertIn("no runs.json", done.stderr)
            runs = Path(tmp) / "runs"
            runs.mkdir()
            (runs / "gpt_amp-2G-b32.json").write_text("{}")
            done = made(str(runs), str(Path(tmp) / "out"))
            self.assertEqual(done.returncode, 2)
            self.assertIn("no snapshot gpt_amp-2G-b32.pickle", done.stderr)
            (runs / "gpt_amp-2G-b32.pickle").write_bytes(b"not a pickle")
            done = made(str(runs), str(Path(tmp) / "out"))
            self.assertEqual(done.returncode, 2)
            self.assertIn("gpt_amp-2G-b32.json: not a doctor_programs.py result (no program", done.stderr)
            (runs / "gpt_amp-2G-b32.json").write_text(json.dumps(
                {"program": "gpt_amp", "batch": 32, "cap": 1 << 31, "oom": None, "peak_reserved": 1,
                 "peak_allocated": 1}))
            done = made(str(runs), str(Path(tmp) / "out"))
            self.assertEqual(done.returncode, 2)
            self.assertIn("gpt_amp-2G-b32.pickle: not a PyTorch snapshot", done.stderr)
            self.assertFalse((Path(tmp) / "out" / "runs.json").exists())  # nothing written for bad input
            if FOLDERS:
                copy = Path(tmp) / "copy"
                shutil.copytree(FOLDERS[0], copy)
                done = made("-", str(copy), "--corpus", str(empty))
                self.assertEqual(done.returncode, 2)
                self.assertIn("no truth.json", done.stderr)


if __name__ == "__main__":
    unittest.main()
