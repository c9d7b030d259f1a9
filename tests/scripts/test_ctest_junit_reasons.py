"""scripts/ctest-junit-reasons: CTest's JUnit XML gets each skipped test's reason from its output."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ctest-junit-reasons"

# What `ctest --output-junit` writes (CMake 3.25 and 4.x alike) for a GoogleTest skip, an expect.sh skip
# (exit 77), a memstress run whose case skipped, and a passed test.
CTEST_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="4" failures="0" disabled="0" skipped="3" hostname="" time="0" timestamp="x">
  <testcase name="gpu.A.B" classname="gpu.A.B" time="0.01" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>[ RUN      ] A.B
/src/tests/gpu/gpu_test.hpp:24: Skipped
needs a CUDA device
[  SKIPPED ] A.B (0 ms)
</system-out>
  </testcase>
  <testcase name="cli.x" classname="cli.x" time="0.01" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
    <system-out>skipped: this machine has an NVIDIA GPU
</system-out>
  </testcase>
  <testcase name="app.run" classname="app.run" time="0.01" status="notrun">
    <skipped message="SKIP_RETURN_CODE=3"/>
    <system-out>WORKLOAD  CASE      ALLOCATOR  DEVICE   VERDICT  NOTE
p2p       bytes=1M  caching    cuda:0   skip     needs 2 GPUs (1 visible)
</system-out>
  </testcase>
  <testcase name="multi-gpu.nccl_all_reduce" classname="multi-gpu.nccl_all_reduce" time="0.2" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>/src/tests/mpi/test_nccl.cpp:40: Skipped
needs 2 GPUs: one per rank
[NON-XML-CHAR-0x1B][0;32m[  SKIPPED ] [NON-XML-CHAR-0x1B][mMultiGpu.NcclAllReduceSumsEveryRank (19 ms)
</system-out>
  </testcase>
  <testcase name="multi-gpu.nccl_hang" classname="multi-gpu.nccl_hang" time="0.2" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
    <system-out>SKIPPED: needs two GPUs
</system-out>
  </testcase>
  <testcase name="ok" classname="ok" time="0.01" status="run"><system-out>fine</system-out></testcase>
</testsuite>
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


class Reasons(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.file = self.dir / "tests.xml"

    def test_each_skip_gets_its_reason_and_keeps_ctests_word(self) -> None:
        self.file.write_text(CTEST_JUNIT)
        done = run(str(self.file))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("5 skip reason(s)", done.stdout)
        text = self.file.read_text()
        self.assertIn('message="needs a CUDA device [SKIP_REGULAR_EXPRESSION_MATCHED]"', text)
        self.assertIn('message="this machine has an NVIDIA GPU [SKIP_RETURN_CODE=77]"', text)
        self.assertIn('message="needs 2 GPUs (1 visible) [SKIP_RETURN_CODE=3]"', text)
        # As an H100 wrote them (results/h100/gpu-ci-580.159.04/readme-ci-3ef1cd0/gpu-tests.xml.xz): gtest's colour
        # codes, whose escape CTest writes as [NON-XML-CHAR-0x1B], end the message; "SKIPPED:" in capitals.
        self.assertIn('message="needs 2 GPUs: one per rank [SKIP_REGULAR_EXPRESSION_MATCHED]"', text)
        self.assertIn('message="needs two GPUs [SKIP_RETURN_CODE=77]"', text)
        self.assertIn("<system-out>fine</system-out>", text)
        # Run twice: a message already carrying a reason is left alone.
        self.assertIn("0 skip reason(s)", run(str(self.file)).stdout)

    def test_out_leaves_the_input_as_it_was(self) -> None:
        self.file.write_text(CTEST_JUNIT)
        out = self.dir / "out.xml"
        self.assertEqual(run(str(self.file), "-o", str(out)).returncode, 0)
        self.assertEqual(self.file.read_text(), CTEST_JUNIT)
        self.assertIn("needs a CUDA device", out.read_text())

    def test_permissions_kept_and_an_unwritable_out_exits_2(self) -> None:
        self.file.write_text(CTEST_JUNIT)
        self.file.chmod(0o644)
        self.assertEqual(run(str(self.file)).returncode, 0)
        self.assertEqual(self.file.stat().st_mode & 0o777, 0o644)
        for out in (self.dir / "missing" / "x.xml", self.dir):
            with self.subTest(str(out)):
                done = run(str(self.file), "-o", str(out))
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("cannot be written", done.stderr)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["tests.xml"])  # no temporary file left

    def test_bad_input_exits_2_naming_the_file(self) -> None:
        cases = {
            "missing.xml": None,
            "not-xml.xml": "<testsuite",
            "other.xml": "<html/>",
            "entities.xml": '<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite>&a;</testsuite>',
        }
        for name, text in cases.items():
            with self.subTest(name):
                if text is not None:
                    (self.dir / name).write_text(text)
                done = run(str(self.dir / name))
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn(name, done.stderr)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)


if __name__ == "__main__":
    unittest.main()
