"""scripts/lib.sh, the set-up behind scripts/run and scripts/test: the preset follows the machine (gpu where
nvidia-smi lists a GPU, cpu otherwise, MEMSTRESS_PRESET above both, each said on stderr), and warnings are
errors only when MEMSTRESS_WERROR=1 asks (CI), said to cmake explicitly either way; clang and libFuzzer are
wanted only for the fuzz step. nvidia-smi, cmake and clang++ are stand-ins on PATH, so this runs anywhere."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import unittest
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "scripts" / "lib.sh"


class SetupChoices(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.bin = Path(self.tmp.name) / "bin"
        self.bin.mkdir()

    def tool(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def shell(self, script: str, **env: str) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRESS_")}
        base["PATH"] = f"{self.bin}:/usr/bin:/bin"
        base.update(env)
        return subprocess.run(["bash", "-c", f"source {LIB}; {script}"], env=base, capture_output=True, text=True,
                              check=False)

    def test_a_gpu_machine_builds_the_gpu_preset(self) -> None:
        self.tool("nvidia-smi", 'echo "NVIDIA H200"; echo "NVIDIA H200"')
        done = self.shell("ms_pick_preset; echo $MEMSTRESS_PRESET")
        self.assertEqual(done.stdout.strip(), "gpu", done.stderr)
        self.assertIn("preset gpu: 2 NVIDIA GPU(s) here (2 x NVIDIA H200)", done.stderr)

    def test_no_gpu_or_a_driver_that_does_not_answer_builds_the_cpu_preset(self) -> None:
        for body in ("exit 9", "true"):  # no driver (nvidia-smi fails), or no GPU listed
            self.tool("nvidia-smi", body)
            done = self.shell("ms_pick_preset; echo $MEMSTRESS_PRESET")
            self.assertEqual(done.stdout.strip(), "cpu", done.stderr)
            self.assertIn("preset cpu: no NVIDIA GPU here", done.stderr)

    def test_the_users_choice_wins(self) -> None:
        self.tool("nvidia-smi", 'echo "NVIDIA H100 80GB HBM3"')
        done = self.shell("ms_pick_preset; echo $MEMSTRESS_PRESET", MEMSTRESS_PRESET="asan")
        self.assertEqual(done.stdout.strip(), "asan")
        self.assertIn("preset asan (MEMSTRESS_PRESET)", done.stderr)

    def test_warnings_are_errors_only_when_asked(self) -> None:
        self.tool("cmake", 'echo "cmake $*" >&2')
        for env, expected in (({}, "-DMEMSTRESS_WERROR=OFF"), ({"MEMSTRESS_WERROR": "1"}, "-DMEMSTRESS_WERROR=ON")):
            done = self.shell("ms_configure_build cpu", **env)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn(f"cmake --preset cpu {expected}", done.stderr)

    def test_clang_is_wanted_only_for_the_fuzz_step(self) -> None:
        for env, wanted in (({}, "no"), ({"MEMSTRESS_SANITIZE": "1"}, "yes"), ({"MS_WANT_FUZZ": "1"}, "yes"),
                            ({"MEMSTRESS_SANITIZE": "1", "MEMSTRESS_PRESET": "gpu"}, "no")):
            done = self.shell("if ms_fuzz_wanted; then echo yes; else echo no; fi", **env)
            self.assertEqual(done.stdout.strip(), wanted, env)

    def test_the_libfuzzer_runtime_follows_the_clang_installed(self) -> None:
        self.tool("clang++", 'echo "Ubuntu clang version 18.1.3 (1ubuntu1)"')
        self.assertEqual(self.shell("ms_fuzz_packages").stdout.split(), ["clang", "libclang-rt-18-dev"])
        (self.bin / "clang++").write_text("#!/bin/sh\nexit 127\n")  # none: Debian 12's
        self.assertEqual(self.shell("ms_fuzz_packages").stdout.split(), ["clang", "libclang-rt-14-dev"])


if __name__ == "__main__":
    unittest.main()
