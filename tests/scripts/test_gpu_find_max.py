"""scripts/lab/gpu-find-max without a GPU: PyTorch's largest batch bisected from where the finders landed (each run
a fresh process, stood in for here), the targets it judges, and its refusal of bad usage.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab" / "gpu-find-max"


def load() -> Any:
    loader = importlib.machinery.SourceFileLoader("gpu_find_max", str(SCRIPT))
    spec = importlib.util.spec_from_loader("gpu_find_max", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class Largest(unittest.TestCase):
    def setUp(self) -> None:
        self.lab = load()
        self.tried: list[int] = []

    def largest(self, real: int, named: list[int]) -> int:
        def runs(out: Path, name: str, batch: int, cap: int) -> bool:
            self.tried.append(batch)
            return batch <= real

        with mock.patch.object(self.lab, "runs", runs):
            return self.lab.largest(Path("out"), "enc", 1 << 31, named)

    def test_from_the_finders_answers_each_side_checked_then_halved(self) -> None:
        self.assertEqual(self.largest(42, [40, 44]), 42)
        self.assertEqual(self.tried[:2], [40, 45])  # the lowest named runs, one above the highest does not
        self.assertLessEqual(len(self.tried), 6)

    def test_answers_below_or_above_it_widen_the_bracket(self) -> None:
        self.assertEqual(self.largest(42, [10]), 42)  # 10 and 11 run: doubled until one runs out
        self.tried.clear()
        self.assertEqual(self.largest(42, [100]), 42)  # 100 runs out: halved until one runs
        self.assertEqual(self.largest(0, [4]), 0)  # not even batch 1 runs

    def test_a_finder_above_a_fresh_process_misses_the_target(self) -> None:
        found = {"batch": 44, "trial_count": 3, "ooms": 0, "seconds": 1.0, "crashed": False, "fresh": True,
                 "restored": ["Model"]}
        with mock.patch.object(self.lab, "find", lambda out, name, mode, cap, memstress: found), \
                mock.patch.object(self.lab, "largest", lambda out, name, cap, named: 42):
            row = self.lab.one(Path("out"), "enc", 1 << 31, Path("memstress"))
        self.assertEqual(row["pytorch_largest"], 42)
        self.assertTrue(all(row[mode]["above"] for mode in self.lab.MODES))


class Usage(unittest.TestCase):
    def test_bad_usage_is_exit_2(self) -> None:
        done = subprocess.run([sys.executable, str(SCRIPT), "--programs", ",", "--cap", "1"], capture_output=True,
                              text=True, check=False, timeout=60)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--programs names at least one program", done.stderr)

    def test_without_what_it_needs_one_line_exit_3(self) -> None:
        # Here (no PyTorch, no GPU or no such binary) it stops before any run and says which it lacks.
        done = subprocess.run([sys.executable, str(SCRIPT), "--programs", "cnn_train", "--memstress",
                               str(ROOT / "build" / "no-such-dir" / "memstress")], capture_output=True, text=True,
                              check=False, timeout=60)
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertRegex(done.stderr.splitlines()[-1], r"^scripts/lab/gpu-find-max: (needs PyTorch|needs a CUDA device|--memstress )")


if __name__ == "__main__":
    unittest.main()
