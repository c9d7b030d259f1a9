"""The GPU tests own the GPU in a run where everything else runs side by side.

    test_gpu_locks.py BUILD_DIR

scripts/test on a GPU node runs one `ctest --parallel N` (scripts/lib.sh's ms_ctest): what keeps two tests from
sharing the GPU is CTest's RESOURCE_LOCK `gpu`, and what keeps the timing tests' figures clean is RUN_SERIAL.
This reads ctest's own description of every test (--show-only=json-v1) and checks that each test of a label
that uses the GPU holds the lock, that the README's test (which runs the default job) sees no GPU instead, and
that the timing tests run alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
from pathlib import Path

BUILD = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
USES_THE_GPU = {"gpu", "gpu-timing", "gpu-whole", "multi-gpu", "install"}


@unittest.skipIf(BUILD is None, "usage: test_gpu_locks.py BUILD_DIR")
class GpuLocks(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        shown = subprocess.run(["ctest", "--test-dir", str(BUILD), "--show-only=json-v1"], capture_output=True,
                               text=True, check=True)
        cls.tests = {t["name"]: {p["name"]: p["value"] for p in t.get("properties", [])}
                     for t in json.loads(shown.stdout)["tests"]}

    def test_every_test_that_uses_the_gpu_holds_the_lock(self) -> None:
        gpu_tests = {name: props for name, props in self.tests.items() if USES_THE_GPU & set(props.get("LABELS", []))}
        self.assertTrue(gpu_tests, "no GPU-labelled test registered")
        for name, props in gpu_tests.items():
            with self.subTest(test=name):
                self.assertIn("gpu", props.get("RESOURCE_LOCK", []), f"{name} uses the GPU without the lock gpu")

    def test_the_readme_test_sees_no_gpu(self) -> None:
        """scripts.readme runs the default job without the lock: on the simulated device, the GPUs hidden."""
        props = self.tests.get("scripts.readme")
        if props is None:
            self.skipTest("scripts.readme is not registered in this build")
        self.assertIn("CUDA_VISIBLE_DEVICES=", props.get("ENVIRONMENT", []))
        self.assertNotIn("gpu", props.get("RESOURCE_LOCK", []))

    def test_the_timing_tests_run_alone(self) -> None:
        for name, props in self.tests.items():
            if "gpu-timing" in props.get("LABELS", []):
                with self.subTest(test=name):
                    self.assertTrue(props.get("RUN_SERIAL", False), f"{name} measures time beside other tests")


if __name__ == "__main__":
    unittest.main()
