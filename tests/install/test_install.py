"""memstress installed like a real tool, used from another directory, then uninstalled (CTest `install.*`).

    test_install.py BUILD_DIR

installs BUILD_DIR into a temporary prefix (`cmake --install BUILD_DIR --prefix P`), checks the layout,
runs the installed binary from a directory that is neither the checkout nor the prefix (list, a run on
the simulated device, the replay of a committed trace and of a PyTorch snapshot pickle, accept with a
shipped profile by name, the report through `memstress report`), moves the prefix to show that nothing
points back into the source tree, uninstalls (`cmake --build BUILD_DIR --target uninstall`) and packs
(CPack TGZ, and DEB where dpkg-deb is). Without a GPU, so every run is on the simulated device.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE / "tests" / "scripts"))
import snapshot_fixtures  # noqa: E402  (the synthetic PyTorch snapshots of the converter's tests)

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
TRACE = SOURCE / "results" / "traces" / "torch-2.11-h100" / "cnn_train.trace.csv.gz"
H100_ACCEPT = SOURCE / "results" / "h100" / "faults-580.159.04" / "accept-healthy-1.json"


def run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, timeout=600, **kw)


class Installed(unittest.TestCase):
    """One install for every test of the class; each test runs from its own empty directory."""

    @classmethod
    def setUpClass(cls) -> None:
        if BUILD is None:
            raise unittest.SkipTest("usage: test_install.py BUILD_DIR")
        cls.tmp = Path(tempfile.mkdtemp(prefix="memstress-install-"))
        cls.prefix = cls.tmp / "prefix"
        done = run(["cmake", "--install", str(BUILD), "--prefix", str(cls.prefix)], cwd=cls.tmp)
        if done.returncode != 0:
            raise AssertionError(f"cmake --install failed:\n{done.stdout}\n{done.stderr}")
        cls.binary = str(cls.prefix / "bin" / "memstress")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self) -> None:
        self.cwd = Path(tempfile.mkdtemp(dir=self.tmp, prefix="elsewhere-"))

    def memstress(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run([self.binary, *args], cwd=self.cwd)

    def test_layout(self) -> None:
        share = self.prefix / "share" / "memstress"
        for path in ("bin/memstress", "share/memstress/python/memstress/report/__main__.py",
                     "share/memstress/python/memstress/convert.py", "share/memstress/python/memstress/validate.py",
                     "share/memstress/python/memstress/_pyenv.py", "share/memstress/python/memstress/_json.py",
                     "share/memstress/python/memstress/_output.py", "share/memstress/python/memstress_torch.py",
                     "share/memstress/scripts/ctest-junit-reasons", "share/memstress/profiles/h100.yaml", "share/memstress/profiles/h200.yaml",
                     "share/memstress/scripts/slurm/memstress-gate", "share/memstress/scripts/slurm/accept.sbatch",
                     "share/memstress/scripts/slurm/bench.sbatch",
                     "share/memstress/results/schema/memstress-run-1.schema.json", "share/doc/memstress/README.md",
                     "share/doc/memstress/docs/install.md",
                     "include/memstress/allocator_plugin.h", "lib/memstress/plugins/libmemstress_caching_plugin.so"):
            self.assertTrue((self.prefix / path).is_file(), path)
        self.assertTrue(os.access(share / "scripts" / "ctest-junit-reasons", os.X_OK))
        # The installed programs start from elsewhere, as the binary runs them (python3 -m, share/memstress/python
        # on PYTHONPATH).
        for module in ("memstress.report", "memstress.convert", "memstress.validate"):
            done = run([sys.executable, "-m", module, "-h"], cwd=self.cwd,
                       env=dict(os.environ, PYTHONPATH=str(share / "python")))
            self.assertEqual(done.returncode, 0, f"{module}: {done.stderr}")
        # Every module of the source tree's package is installed (a report section in a new module, forgotten in
        # cmake/Install.cmake, once failed only at drawing time).
        package = SOURCE / "python" / "memstress"
        for module in sorted(p.relative_to(package) for p in package.rglob("*.py")):
            self.assertTrue((share / "python" / "memstress" / module).is_file(), f"{module} is not installed")
        if (BUILD / "bench" / "memstress_bench").exists():
            self.assertTrue((self.prefix / "bin" / "memstress_bench").is_file())

    def test_an_installed_plugin_runs_on_the_simulated_device(self) -> None:
        plugin = self.prefix / "lib/memstress/plugins/libmemstress_caching_plugin.so"
        done = self.memstress("run", "alloc-smoke", "-d", "sim:80G", "-n", "1", "--allocator", f"plugin:{plugin}")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("plugin:libmemstress_caching_plugin.so", done.stdout)

    def test_list_and_a_run_on_the_simulated_device(self) -> None:
        listed = self.memstress("list")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("alloc-smoke", listed.stdout)
        done = self.memstress("run", "alloc-smoke", "sizes", "-d", "sim:80G", "-n", "2", "-o", "run.json")
        self.assertEqual(done.returncode, 0, done.stderr)
        doc = json.loads((self.cwd / "run.json").read_text())
        self.assertEqual(doc["schema"], "memstress.run/1")
        self.assertEqual(doc["summary"]["pass"], doc["summary"]["rows"])
        validated = run(["python3", "-m", "memstress.validate", "run.json"], cwd=self.cwd,
                        env=dict(os.environ, PYTHONPATH=str(self.prefix / "share/memstress/python")))
        self.assertIn(validated.returncode, (0, 77), validated.stdout + validated.stderr)  # 77: no jsonschema here

    def test_replay_of_a_committed_trace(self) -> None:
        done = self.memstress("replay", str(TRACE), "--device", "sim:80G")
        self.assertEqual(done.returncode, 0, done.stderr)
        # PyTorch's own peak reserved for this program (cnn_train.pytorch.json): 1,480 MiB, to the byte.
        self.assertRegex(done.stdout, r"peak reserved \(reserved_bytes\.all\.peak\) +1551892480 ")

    def test_replay_of_a_pytorch_snapshot_converts_it_with_the_installed_converter(self) -> None:
        snapshot, _ = snapshot_fixtures.scenario()
        snapshot_fixtures.write_pickle(self.cwd / "run.snapshot.pickle", snapshot)
        done = self.memstress("replay", "run.snapshot.pickle", "--device", "sim:8G")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("replay: run.snapshot.pickle", done.stdout)
        self.assertIn("memstress: run.snapshot.pickle (PyTorch memory snapshot)", done.stderr)
        (self.cwd / "evil.pickle").write_bytes(snapshot_fixtures.malicious_pickle("touch pwned"))
        refused = self.memstress("replay", "evil.pickle", "--device", "sim:8G")
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("evil.pickle", refused.stderr)
        self.assertFalse((self.cwd / "pwned").exists())

    def test_accept_with_a_shipped_profile_by_name(self) -> None:
        done = self.memstress("accept", "--profile", "h100", "--from", str(H100_ACCEPT))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("verdict: PASS", done.stdout)
        unknown = self.memstress("accept", "--profile", "h999", "--from", str(H100_ACCEPT))
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("--profile h999", unknown.stderr)
        self.assertIn("h100, h100-burn, h100-quick, h200, h200-burn, h200-quick", unknown.stderr)
        overwrite = self.memstress("accept", "--profile", "h100", "--from", str(H100_ACCEPT), "--train")
        self.assertEqual(overwrite.returncode, 2)
        self.assertIn("--write", overwrite.stderr)

    def test_the_installed_slurm_gate_runs_the_memstress_beside_it(self) -> None:
        gate = self.prefix / "share" / "memstress" / "scripts" / "slurm" / "memstress-gate"
        profile = SOURCE / "tests" / "data" / "accept" / "sim-ranks.yaml"
        done = run([str(gate), "check", "--device", "sim:8G", "--profile", str(profile)], cwd=self.cwd,
                   env=dict(os.environ, PATH="/usr/bin:/bin"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        verdict = json.loads(done.stdout)
        self.assertEqual(verdict["verdict"], "PASS")
        self.assertEqual(Path(verdict["memstress"]).resolve(), (self.prefix / "bin" / "memstress").resolve())
        # A shipped profile by name, from this prefix: the H100's quick profile refuses the simulated device.
        refused = run([str(gate), "check", "--device", "sim:8G", "--profile", "h100-quick"], cwd=self.cwd)
        self.assertEqual(refused.returncode, 2, refused.stdout + refused.stderr)
        self.assertIn("its thresholds are for NVIDIA H100 80GB HBM3", refused.stderr)

    def test_report_through_memstress(self) -> None:
        done = self.memstress("report", str(SOURCE / "results/h100/oom-h100-580.159.04.json.xz"), "-o", "report.html")
        if done.returncode == 3 and os.environ.get("MEMSTRESS_REQUIRE_PYDEPS") != "1":
            self.skipTest("no python with matplotlib here: " + done.stderr.strip())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("<h2>OOM thresholds</h2>", (self.cwd / "report.html").read_text())
        missing = self.memstress("report", "nothing.json", "-o", "report.html")
        self.assertIn(missing.returncode, (2, 3))

    def test_another_project_registers_memstress_tests_with_memstress_add_test(self) -> None:
        """find_package(memstress) and memstress_add_test(): a run, an acceptance and a comparison as CTest
        tests; a GPU run on a machine without a GPU is reported skipped, or failed with REQUIRE_GPU."""
        project = self.cwd / "consumer"
        project.mkdir()
        accept = H100_ACCEPT.as_posix()
        (project / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.20)
project(consumer NONE)
enable_testing()
find_package(memstress 0.1 REQUIRED)
memstress_add_test(NAME sim_run RUN alloc-smoke DEVICE sim:1G LABELS quick ARGS -n 1 -p bytes=1M)
memstress_add_test(NAME gpu_run RUN alloc-smoke ARGS -n 1 -p bytes=1M)
memstress_add_test(NAME gpu_run_required RUN alloc-smoke REQUIRE_GPU ARGS -n 1 -p bytes=1M)
memstress_add_test(NAME accept_from ACCEPT h100 ARGS --from {accept})
memstress_add_test(NAME compare_same COMPARE {accept} {accept})
memstress_add_test(NAME compare_missing COMPARE {accept} missing.json)
""")
        env = {k: v for k, v in os.environ.items() if k != "MEMSTRESS_REQUIRE_GPU"}
        configure = run(["cmake", "-S", str(project), "-B", str(project / "build"),
                         f"-DCMAKE_PREFIX_PATH={self.prefix}"], cwd=self.cwd, env=env)
        self.assertEqual(configure.returncode, 0, configure.stdout + configure.stderr)
        tests = run(["ctest", "--test-dir", str(project / "build"), "-V"], cwd=self.cwd, env=env)
        status = dict(re.findall(r"Test +#\d+: (\w+) \.+ *(?:\*\*\*)?(Passed|Skipped|Failed|Not Run)", tests.stdout))
        gpu = any(Path("/dev").glob("nvidia[0-9]*"))
        self.assertEqual(status, {"sim_run": "Passed", "gpu_run": "Passed" if gpu else "Skipped",
                                  "gpu_run_required": "Passed" if gpu else "Failed", "accept_from": "Passed",
                                  "compare_same": "Passed", "compare_missing": "Failed"}, tests.stdout)
        self.assertIn('"run" "alloc-smoke" "-d" "sim:1G" "-q" "-n" "1" "-p" "bytes=1M"', tests.stdout)
        self.assertIn('"-d" "cuda" "-q" "--fail-on-skip"', tests.stdout)  # a GPU run with a skipped case is not a pass
        labels = run(["ctest", "--test-dir", str(project / "build"), "-N", "-L", "quick"], cwd=self.cwd, env=env)
        self.assertIn("Total Tests: 1", labels.stdout)

    def test_the_example_ctest_project(self) -> None:
        """examples/ctest-project, as its comment says to configure it: the simulated device's test passes,
        the GPU test passes on a GPU and is skipped without one."""
        build = self.cwd / "example"
        env = {k: v for k, v in os.environ.items() if k != "MEMSTRESS_REQUIRE_GPU"}
        configure = run(["cmake", "-S", str(SOURCE / "examples" / "ctest-project"), "-B", str(build),
                         f"-DCMAKE_PREFIX_PATH={self.prefix}"], cwd=self.cwd, env=env)
        self.assertEqual(configure.returncode, 0, configure.stdout + configure.stderr)
        tests = run(["ctest", "--test-dir", str(build), "-V"], cwd=self.cwd, env=env)
        status = dict(re.findall(r"Test +#\d+: (\w+) \.+ *(?:\*\*\*)?(Passed|Skipped|Failed|Not Run)", tests.stdout))
        gpu = any(Path("/dev").glob("nvidia[0-9]*"))
        self.assertEqual(status, {"gpu_memory": "Passed" if gpu else "Skipped", "allocator_on_sim": "Passed"},
                         tests.stdout)

    def test_the_recorder_imports_without_pythonpath_from_a_prefix_on_pythons_path(self) -> None:
        """Installed into a virtual environment's prefix, the recorder is on that python's path: no PYTHONPATH."""
        venv = self.cwd / "venv"
        made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=self.cwd)
        if made.returncode != 0:
            self.skipTest(f"no venv module here: {made.stderr.strip()}")
        python = venv / "bin" / "python"
        site = run([str(python), str(ROOT / "cmake" / "python_site_dir.py"), str(venv)], cwd=self.cwd).stdout.strip()
        self.assertTrue(site, "python_site_dir.py found no site-packages in the virtual environment")
        # The prefix holds a python (bin/python3): that python decides where (cmake/Install.cmake).
        done = run(["cmake", "-DCMAKE_INSTALL_PREFIX=" + str(venv), "-DCOMPONENT=", "-P",
                    str(BUILD / "cmake_install.cmake")], cwd=self.cwd)
        self.assertEqual(done.returncode, 0, done.stderr)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        imported = run([str(python), "-c", "import memstress_torch; print(memstress_torch.__file__)"], cwd=self.cwd,
                       env=env)
        self.assertTrue((Path(site) / "memstress_torch.py").exists(), done.stdout[-1000:])
        for module in ("recorder.py", "recorder_marks.py", "find_max.py"):
            self.assertTrue((Path(site) / "memstress" / module).exists(), done.stdout[-1000:])
        self.assertEqual(imported.returncode, 0, imported.stderr)
        self.assertIn(site, imported.stdout)

    def test_the_recorder_imports_through_python_path(self) -> None:
        """`PYTHONPATH=$(memstress --python-path)`: the installed recorder, importable without torch (it loads
        torch only when it records)."""
        done = self.memstress("--python-path")
        self.assertEqual(done.returncode, 0, done.stderr)
        where = Path(done.stdout.strip())
        self.assertEqual(where.resolve(), (self.prefix / "share" / "memstress" / "python").resolve())
        imported = run([sys.executable, "-c", "import memstress_torch; print(memstress_torch.__file__)"],
                       cwd=self.cwd, env=dict(os.environ, PYTHONPATH=str(where)))
        self.assertEqual(imported.returncode, 0, imported.stderr)
        self.assertEqual(Path(imported.stdout.strip()).resolve(), (where / "memstress_torch.py").resolve())

    def test_the_install_is_relocatable(self) -> None:
        moved = self.tmp / "moved"
        shutil.copytree(self.prefix, moved, symlinks=True)
        try:
            done = run([str(moved / "bin" / "memstress"), "accept", "--profile", "h100", "--from", str(H100_ACCEPT)],
                       cwd=self.cwd)
            self.assertEqual(done.returncode, 0, done.stderr)
            # find_package from the moved prefix finds the moved binary, not the original's path.
            project = self.cwd / "consumer-moved"
            project.mkdir()
            (project / "CMakeLists.txt").write_text("""
cmake_minimum_required(VERSION 3.20)
project(consumer NONE)
enable_testing()
find_package(memstress 0.1 REQUIRED)
get_target_property(_where memstress::memstress IMPORTED_LOCATION)
message(STATUS "memstress binary: ${_where}")
memstress_add_test(NAME sim_run RUN alloc-smoke DEVICE sim:1G ARGS -n 1 -p bytes=1M)
""")
            configure = run(["cmake", "-S", str(project), "-B", str(project / "build"), f"-DCMAKE_PREFIX_PATH={moved}"],
                            cwd=self.cwd)
            self.assertEqual(configure.returncode, 0, configure.stdout + configure.stderr)
            self.assertIn(f"memstress binary: {moved / 'bin' / 'memstress'}", configure.stdout)
            tests = run(["ctest", "--test-dir", str(project / "build")], cwd=self.cwd)
            self.assertIn("100% tests passed", tests.stdout, tests.stdout)
        finally:
            shutil.rmtree(moved)


class Uninstall(unittest.TestCase):
    def test_uninstall_removes_every_installed_file(self) -> None:
        if BUILD is None:
            self.skipTest("usage: test_install.py BUILD_DIR")
        with tempfile.TemporaryDirectory() as tmp:
            prefix = Path(tmp) / "prefix"
            self.assertEqual(run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], cwd=Path(tmp)).returncode, 0)
            self.assertTrue((prefix / "bin" / "memstress").is_file())
            done = run(["cmake", "--build", str(BUILD), "--target", "uninstall"], cwd=Path(tmp))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            left = [p for p in prefix.rglob("*") if not p.is_dir()]
            self.assertEqual(left, [])
            self.assertFalse((prefix / "share" / "memstress").exists())


class Packages(unittest.TestCase):
    def test_uninstall_after_cpack_says_what_happened(self) -> None:
        """Installed, then packed in the same build tree: cpack rewrote the install manifest with what it packed,
        and the uninstall target says so, and how to mend it, instead of removing nothing of the prefix (or
        files under cpack's /usr/local); installed again, it uninstalls."""
        if BUILD is None:
            self.skipTest("usage: test_install.py BUILD_DIR")
        with tempfile.TemporaryDirectory() as tmp:
            prefix = Path(tmp) / "prefix"
            self.assertEqual(run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], cwd=Path(tmp)).returncode, 0)
            generators = "TGZ;DEB" if shutil.which("dpkg-deb") else "TGZ"
            packed = run(["cpack", "-G", generators, "-B", str(Path(tmp) / "packages"), "--config",
                          str(BUILD / "CPackConfig.cmake")], cwd=Path(tmp))
            self.assertEqual(packed.returncode, 0, packed.stdout + packed.stderr)
            done = run(["cmake", "--build", str(BUILD), "--target", "uninstall"], cwd=Path(tmp))
            self.assertNotEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertIn("cpack ran after that install", done.stdout + done.stderr)
            self.assertTrue((prefix / "bin" / "memstress").is_file())  # nothing removed
            self.assertEqual(run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], cwd=Path(tmp)).returncode, 0)
            done = run(["cmake", "--build", str(BUILD), "--target", "uninstall"], cwd=Path(tmp))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertEqual([p for p in prefix.rglob("*") if not p.is_dir()], [])

    def test_tgz_and_deb(self) -> None:
        if BUILD is None:
            self.skipTest("usage: test_install.py BUILD_DIR")
        with tempfile.TemporaryDirectory() as tmp:
            generators = "TGZ;DEB" if shutil.which("dpkg-deb") else "TGZ"
            done = run(["cpack", "-G", generators, "-B", tmp, "--config", str(BUILD / "CPackConfig.cmake")],
                       cwd=Path(tmp))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            tgz = list(Path(tmp).glob("memstress-*.tar.gz"))
            self.assertEqual(len(tgz), 1, list(Path(tmp).iterdir()))
            with tarfile.open(tgz[0]) as archive:
                names = archive.getnames()
            for wanted in ("bin/memstress", "share/memstress/profiles/h100.yaml",
                           "share/memstress/python/memstress/report/__main__.py"):
                self.assertTrue(any(n.endswith(wanted) for n in names), wanted)
            if "DEB" in generators:
                debs = list(Path(tmp).glob("memstress_*.deb"))
                self.assertEqual(len(debs), 1, list(Path(tmp).iterdir()))
                content = run(["dpkg-deb", "-c", str(debs[0])], cwd=Path(tmp)).stdout
                self.assertIn("./usr/local/bin/memstress", content)
                self.assertIn("./usr/local/share/memstress/profiles/h100.yaml", content)
                depends = run(["dpkg-deb", "-f", str(debs[0]), "Depends"], cwd=Path(tmp)).stdout
                self.assertIn("libyaml-cpp", depends)
                self.assertIn("python3", depends)
                self.assertIn("python3-matplotlib", depends)  # memstress report's plots


if __name__ == "__main__":
    unittest.main()
