"""The wheel a PyTorch user installs with pip, built, installed into a clean virtual environment and used as they
would (CTest `wheel.install`).

    test_wheel.py BUILD_DIR MEMSTRESS

builds the wheel from this checkout (`pip wheel . --no-build-isolation --no-index`: scikit-build-core from the
python running this, no network) in BUILD_DIR/wheel, installs it with pip into a new virtual environment, and
runs what it installed from an empty directory, by absolute path, with no environment activated and no
PYTHONPATH: the doctor on committed corpus snapshots, whose JSON must be byte for byte that of MEMSTRESS (the
binary of this build, with CUDA), the Python package (import memstress_torch, python -m memstress_torch,
memstress.doctor()), the refusals of bad input, and what the wheel holds: at most 20 MB, a platform tag that is
the building interpreter's own, a binary and libraries that need none of CUDA, NCCL, MPI, cuBLAS or NVML, and a
build that read none of their headers. Skipped (exit 77) where the python running it has no scikit-build-core,
except under MEMSTRESS_REQUIRE_PYDEPS=1 (CI), where that fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import unittest
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
_GIVEN = [Path(sys.argv.pop(1)).resolve() for _ in range(2) if len(sys.argv) > 1 and not sys.argv[1].startswith("-")]
BUILD, MEMSTRESS = (_GIVEN + [None, None])[:2]
CORPUS = SOURCE / "results" / "h100" / "doctor-corpus-580.159.04" / "snapshots"
# An OOM under a 2 GiB cap (exhaustion, the limit inferred), and a run that fitted, judged at two capacities.
DOCTOR_CASES = {
    "oom": [str(CORPUS / "vit_train-oom-2G-b66.pickle.gz")],
    "fits": [str(CORPUS / "cnn_train-2G-b20.pickle.gz"), "--capacity", "2G,4G"],
}
MAX_WHEEL_BYTES = 20 << 20
GPU_LIBRARIES = re.compile(r"^lib(cuda|cudart|nccl|mpi|cublas|cublasLt|nvidia-ml)[._-]")
GPU_HEADERS = re.compile(r"/(cuda[^/]*|nccl|mpi|nvml|cublas[^/]*)\.h$")
EXIT_SKIP = 77


def run(cmd: list[str | Path], timeout: float | None = 300, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False, timeout=timeout, **kw)


def bare_environment() -> dict[str, str]:
    """What a user's shell without the venv activated has: no VIRTUAL_ENV, no PYTHONPATH, the system's PATH."""
    return {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C.UTF-8"}


def needed(path: Path) -> list[str]:
    """The libraries `path` names in its dynamic section (readelf -d)."""
    done = run(["readelf", "-d", path])
    if done.returncode != 0:
        raise AssertionError(f"readelf -d {path}: {done.stderr}")
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", done.stdout)


class Wheel(unittest.TestCase):
    """One wheel, one install, for every test of the class."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="memstress-wheel-"))
        cls.build_dir = BUILD / "wheel"
        started = time.monotonic()
        defines = []
        if os.environ.get("MEMSTRESS_WERROR") == "1":
            defines.append("-Ccmake.define.MEMSTRESS_WERROR=ON")
        launcher = shutil.which("ccache") if os.environ.get("MEMSTRESS_CCACHE", "auto") != "0" else None
        if launcher:
            defines.append(f"-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER={launcher}")
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1)}
        done = run([sys.executable, "-m", "pip", "wheel", SOURCE, "--no-build-isolation", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "-w", cls.tmp / "dist", f"-Cbuild-dir={cls.build_dir}", *defines],
                   timeout=None, cwd=cls.tmp, env=env)  # CTest's TIMEOUT bounds the build
        if done.returncode != 0:
            raise AssertionError(f"pip wheel failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}")
        built = time.monotonic()
        cls.wheel = next((cls.tmp / "dist").glob("memstress-*.whl"))
        cls.venv = cls.tmp / "venv"
        for cmd in ([sys.executable, "-m", "venv", cls.venv],
                    [cls.venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-deps",
                     "--disable-pip-version-check", "-q", cls.wheel]):
            done = run(cmd, cwd=cls.tmp, env=bare_environment())
            if done.returncode != 0:
                raise AssertionError(f"{cmd}: {done.stdout}\n{done.stderr}")
        cls.site = Path(run([cls.venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                            env=bare_environment()).stdout.strip())
        print(f"wheel: built in {built - started:.0f} s, installed in {time.monotonic() - built:.0f} s: {cls.wheel.name}"
              f" ({cls.wheel.stat().st_size / 2**20:.1f} MiB)", file=sys.stderr)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def memstress(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The installed command by its absolute path, from an empty directory, nothing activated."""
        cwd = Path(tempfile.mkdtemp(dir=self.tmp, prefix="elsewhere-"))
        return run([self.venv / "bin" / "memstress", *args], cwd=cwd, env=bare_environment())

    def python(self, *args: str) -> subprocess.CompletedProcess[str]:
        cwd = Path(tempfile.mkdtemp(dir=self.tmp, prefix="elsewhere-"))
        return run([self.venv / "bin" / "python", *args], cwd=cwd, env=bare_environment())

    def assert_one_line(self, done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
        self.assertEqual(done.returncode, code, done.stderr)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        for word in words:
            self.assertIn(word, done.stderr)

    def test_the_wheel_is_small_and_its_tag_is_the_building_interpreters_platform(self) -> None:
        self.assertLessEqual(self.wheel.stat().st_size, MAX_WHEEL_BYTES)
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        self.assertTrue(self.wheel.name.endswith(f"-py3-none-{platform}.whl"), self.wheel.name)

    def test_nothing_it_holds_needs_cuda_nccl_mpi_or_cublas(self) -> None:
        binary = self.site / "memstress" / "_bin" / "memstress"
        libraries = sorted((self.site / "memstress" / "_libs").glob("*.so*"))
        self.assertTrue(libraries)
        for path in [binary, *libraries]:
            names = needed(path)
            self.assertTrue(names, path)
            self.assertEqual([n for n in names if GPU_LIBRARIES.match(n)], [], path)
        # every library it names beside glibc's travels with it
        glibc = re.compile(r"^(libc|libm|libdl|libpthread|librt|ld-linux[^.]*)\.so")
        self.assertEqual({n for n in needed(binary) if not glibc.match(n)} - {p.name for p in libraries}, set())

    def test_the_build_read_no_cuda_nccl_mpi_or_nvml_header(self) -> None:
        done = run(["ninja", "-C", self.build_dir, "-t", "deps"])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("doctor/oom.cpp", done.stdout)
        self.assertEqual([line.strip() for line in done.stdout.splitlines() if GPU_HEADERS.search(line.strip())], [])

    def test_the_doctor_prints_the_json_of_the_built_binary_byte_for_byte(self) -> None:
        for name, args in DOCTOR_CASES.items():
            with self.subTest(name):
                mine = self.memstress("doctor", *args, "--format", "json")
                self.assertEqual(mine.returncode, 0, mine.stderr)
                theirs = run([MEMSTRESS, "doctor", *args, "--format", "json"])
                self.assertEqual(theirs.returncode, 0, theirs.stderr)
                self.assertEqual(mine.stdout, theirs.stdout)
                self.assertIn('"schema": "memstress.doctor/1"', mine.stdout)

    def test_python_imports_the_recorder_and_the_api_with_no_pythonpath(self) -> None:
        snapshot = DOCTOR_CASES["oom"][0]
        code = ("import json, memstress, memstress_torch\n"
                f"print(json.dumps(memstress.doctor({snapshot!r}), indent=2, sort_keys=True))\n")
        done = self.python("-c", code)
        self.assertEqual(done.returncode, 0, done.stderr)
        theirs = run([MEMSTRESS, "doctor", snapshot, "--format", "json"])
        self.assertEqual(json.loads(done.stdout), json.loads(theirs.stdout))
        usage = self.python("-m", "memstress_torch", "--help")
        self.assertEqual(usage.returncode, 0, usage.stderr)
        self.assertIn("usage: python -m memstress_torch", usage.stdout)
        refused = self.python("-c", "import memstress\ntry:\n    memstress.doctor('/etc/hostname')\n"
                                    "except memstress.MemstressError as e:\n    print(e.exit_code, e)\n")
        self.assertTrue(refused.stdout.startswith("2 "), refused.stdout + refused.stderr)

    def test_the_recorder_without_torch_says_so_in_one_line(self) -> None:
        script = self.tmp / "train.py"
        script.write_text("print('trained')\n")
        self.assert_one_line(self.python("-m", "memstress_torch", str(script)), 3, "needs PyTorch", "pip install torch")
        self.assert_one_line(self.python("-c", "import memstress_torch\nmemstress_torch.find_max_batch(print)"), 3,
                             "needs PyTorch")

    def test_its_python_directory_is_site_packages(self) -> None:
        done = self.memstress("--python-path")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(Path(done.stdout.strip()).resolve(), self.site.resolve())

    def test_bad_input_is_one_line_and_exit_2(self) -> None:
        garbage = self.tmp / "garbage.pickle"
        garbage.write_bytes(b"\x80\x04not a pickle at all")
        self.assert_one_line(self.memstress("doctor", str(garbage)), 2, "memstress: error: ", str(garbage),
                             "not a PyTorch memory snapshot")
        self.assert_one_line(self.memstress("doctor", "/etc/hostname"), 2, "memstress: error: ", "/etc/hostname")
        self.assert_one_line(self.memstress("doctor", DOCTOR_CASES["oom"][0], "--capacity", "1G"), 2,
                             "--capacity", "below the 1.99 GiB PyTorch had reserved")

    def test_what_needs_a_gpu_says_this_build_has_none(self) -> None:
        for command in (["run", "oom", "-d", "sim"], ["accept", "--profile", "h100"], ["list"]):
            with self.subTest(command[0]):
                self.assert_one_line(self.memstress(*command), 3, "built without CUDA")
        replay = self.memstress("replay", str(SOURCE / "results" / "traces" / "torch-2.11-h100" / "cnn_train.trace.csv.gz"),
                                "--device", "sim:80G")
        self.assertEqual(replay.returncode, 0, replay.stderr)

    def test_every_program_names_itself(self) -> None:
        done = self.memstress("report", "-h")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("usage: memstress report"), done.stdout)


if __name__ == "__main__":
    if BUILD is None or MEMSTRESS is None:
        print("usage: test_wheel.py BUILD_DIR MEMSTRESS [unittest args]", file=sys.stderr)
        sys.exit(2)
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        if os.environ.get("MEMSTRESS_REQUIRE_PYDEPS") == "1":  # CI: a missing build backend must not pass as a skip
            print(f"test_wheel.py: {sys.executable} has no scikit-build-core (requirements.txt), which "
                  "MEMSTRESS_REQUIRE_PYDEPS=1 requires", file=sys.stderr)
            sys.exit(1)
        print(f"test_wheel.py: skipped: {sys.executable} has no scikit-build-core (requirements.txt)", file=sys.stderr)
        sys.exit(EXIT_SKIP)
    unittest.main()
