"""scripts/lib.sh, the set-up behind scripts/run and scripts/test: the preset follows the machine (gpu where
nvidia-smi lists a GPU, cpu otherwise, MEMSTRESS_PRESET above both, each said on stderr), and warnings are
errors only when MEMSTRESS_WERROR=1 asks (CI), said to cmake explicitly either way; on a GPU machine the
cpu-labelled tests run side by side and the others one at a time; clang and libFuzzer are
wanted only for the fuzz step; the fleet store's packages are optional outside CI (an offline GPU node without
them still builds) and required in it. nvidia-smi, cmake, clang++, dpkg-query and apt-get are stand-ins on
PATH, so this runs anywhere."""

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

    def test_the_fleet_store_is_required_in_ci_and_built_where_it_can_be_elsewhere(self) -> None:
        self.tool("cmake", 'echo "cmake $*" >&2')
        for env, expected in (({}, "AUTO"), ({"MEMSTRESS_REQUIRE_PYDEPS": "1"}, "ON"),
                              ({"MEMSTRESS_SANITIZE": "1"}, "ON")):
            done = self.shell("ms_configure_build cpu", **env)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn(f"-DMEMSTRESS_WITH_DB={expected}", done.stderr, env)

    def test_a_gpu_machine_runs_one_ctest_side_by_side_the_gpu_lock_keeping_gpu_tests_one_at_a_time(self) -> None:
        log = Path(self.tmp.name) / "ctest.log"
        # A stand-in ctest: logs its arguments and fails with FAIL_CTEST.
        self.tool("ctest", f'echo "$*" >>{log}; exit "${{FAIL_CTEST:-0}}"')
        done = self.shell("ms_ctest gpu", CTEST_PARALLEL_LEVEL="16")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(log.read_text().splitlines(), ["--preset gpu --parallel 16"])
        self.assertIn("the GPU tests one at a time, the cpu-labelled tests beside them", done.stderr)
        log.unlink()
        done = self.shell("ms_ctest gpu", CTEST_PARALLEL_LEVEL="16", FAIL_CTEST="8")
        self.assertEqual(done.returncode, 8, done.stderr)  # ctest's failure is the caller's
        log.unlink()
        # With ctest arguments, one pass as asked; without a GPU, one pass side by side.
        self.shell("ms_ctest gpu -L gpu --output-junit gpu-tests.xml")
        self.shell("ms_ctest cpu -R alloc", CTEST_PARALLEL_LEVEL="2")
        self.assertEqual(log.read_text().splitlines(), ["--preset gpu -L gpu --output-junit gpu-tests.xml",
                                                        "--preset cpu --parallel 2 -R alloc"])

    def test_the_libfuzzer_runtime_follows_the_clang_installed(self) -> None:
        self.tool("clang++", 'echo "Ubuntu clang version 18.1.3 (1ubuntu1)"')
        self.assertEqual(self.shell("ms_fuzz_packages").stdout.split(), ["clang", "libclang-rt-18-dev"])
        (self.bin / "clang++").write_text("#!/bin/sh\nexit 127\n")  # none: Debian 12's
        self.assertEqual(self.shell("ms_fuzz_packages").stdout.split(), ["clang", "libclang-rt-14-dev"])


class Packages(unittest.TestCase):
    """ms_ensure_packages with a stand-in dpkg-query (every package installed but those in FAKE_MISSING) and
    apt-get (it logs each call; `update` exits FAKE_UPDATE_RC), as root or not (ms_is_root stood in)."""
    OPTIONAL = "libsqlite3-dev libssl-dev libpq-dev"

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.bin = Path(self.tmp.name) / "bin"
        self.bin.mkdir()
        self.apt_log = Path(self.tmp.name) / "apt.log"
        self.tool("dpkg-query", 'case " $FAKE_MISSING " in *" $3 "*) exit 1 ;; esac; printf "install ok installed"')
        self.tool("apt-get", f'echo "$*" >>{self.apt_log}; [ "$1" != update ] || exit "${{FAKE_UPDATE_RC:-0}}"')
        self.tool("python3", "exit 0")  # can make a venv: no python3-venv wanted

    def tool(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def ensure(self, missing: str, root: bool = True, update_rc: int = 0,
               **env: str) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRESS_")}
        base.update(PATH=f"{self.bin}:/usr/bin:/bin", MEMSTRESS_PYTHON=str(self.bin / "python3"),
                    FAKE_MISSING=missing, FAKE_UPDATE_RC=str(update_rc), **env)
        root_says = "true" if root else "false"
        return subprocess.run(["bash", "-c", f"source {LIB}; ms_is_root() {{ {root_says}; }}; ms_ensure_packages"],
                              env=base, capture_output=True, text=True, check=False)

    def apt_calls(self) -> list[str]:
        return self.apt_log.read_text().splitlines() if self.apt_log.exists() else []

    def test_nothing_missing_touches_nothing(self) -> None:
        done = self.ensure("")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stderr, r"system packages: all \d+ present")
        self.assertEqual(self.apt_calls(), [])

    def test_an_offline_gpu_node_without_the_fleet_stores_packages_goes_on_without_memstress_db(self) -> None:
        done = self.ensure(self.OPTIONAL, update_rc=100)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr.count("warning: memstress db will not be built"), 1, done.stderr)
        self.assertIn(f"{self.OPTIONAL} missing and apt-get update failed (offline?)", done.stderr)
        self.assertEqual(self.apt_calls(), ["update"])

    def test_not_root_without_the_fleet_stores_packages_goes_on_and_says_how_to_get_it(self) -> None:
        done = self.ensure(self.OPTIONAL, root=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr.count("warning: memstress db will not be built"), 1, done.stderr)
        self.assertIn(f"not root to install them (sudo apt-get install {self.OPTIONAL}", done.stderr)
        self.assertEqual(self.apt_calls(), [])

    def test_the_fleet_stores_packages_are_installed_where_apt_can_run(self) -> None:
        done = self.ensure(self.OPTIONAL)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("warning", done.stderr)
        self.assertEqual(self.apt_calls(), ["update", f"install -y --no-install-recommends {self.OPTIONAL}"])

    def test_they_go_with_the_needed_packages(self) -> None:
        done = self.ensure(f"libfmt-dev {self.OPTIONAL}")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(self.apt_calls(), ["update", f"install -y --no-install-recommends libfmt-dev {self.OPTIONAL}"])
        # not root: the needed one missing still ends setup (exit 3), the command naming all three
        done = self.ensure(f"libfmt-dev {self.OPTIONAL}", root=False)
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn(f"apt-get install -y --no-install-recommends libfmt-dev {self.OPTIONAL}", done.stderr)
        # a needed package where apt-get update fails: exit 3, as before
        self.assertEqual(self.ensure("libfmt-dev", update_rc=100).returncode, 3)

    def test_ci_requires_the_fleet_stores_packages(self) -> None:
        for ci in ({"MEMSTRESS_REQUIRE_PYDEPS": "1"}, {"MEMSTRESS_SANITIZE": "1", "MEMSTRESS_PRESET": "gpu"}):
            with self.subTest(ci=ci):
                done = self.ensure(self.OPTIONAL, update_rc=100, **ci)
                self.assertEqual(done.returncode, 3, done.stderr)
                self.assertIn("error: apt-get update failed", done.stderr)
                done = self.ensure(self.OPTIONAL, root=False, **ci)
                self.assertEqual(done.returncode, 3, done.stderr)
                self.assertIn(f"--no-install-recommends {self.OPTIONAL}", done.stderr)


if __name__ == "__main__":
    unittest.main()
