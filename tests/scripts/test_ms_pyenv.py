"""python/memstress/_pyenv.py: a program of the package runs under the checkout's .venv when that has what it
needs, falls back to the python that started it when the .venv lacks a package (an offline machine), and exits 3
naming the package when no python has it. The program is a probe module run with python -m from a copy of the
package in a temporary checkout; the pythons here are small wrappers around this one, told apart by an
environment variable they set; the package is a module that only some of them can import."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "memstress"
PROBE = """import os
from . import _pyenv
_pyenv.ensure("probe", __file__, ["msfake_package"])
import msfake_package
print(os.environ.get("MS_WHO", "started"))
"""


class ChoosesItsPython(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.python_dir = self.tmp / "python"
        (self.python_dir / "memstress").mkdir(parents=True)
        for name in ("__init__.py", "_pyenv.py"):
            shutil.copy(PACKAGE / name, self.python_dir / "memstress")
        (self.python_dir / "memstress" / "probe.py").write_text(PROBE)
        self.modules = self.tmp / "modules"
        self.modules.mkdir()
        (self.modules / "msfake_package.py").write_text("")

    def venv(self, with_package: bool) -> None:
        """A .venv whose python3 can import the package or not (and memstress: what the probe moved it to)."""
        bin_dir = self.tmp / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        path = f"PYTHONPATH={self.python_dir}" + (f":{self.modules}" if with_package else "")
        wrapper = bin_dir / "python3"
        wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/env MS_WHO=venv {path} {sys.executable} \"$@\"\n")
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)

    def start(self, package_here: bool) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSTRESS_PYENV_CHOSEN", "MS_WHO")}
        env["PATH"] = "/nonexistent"  # no other python3 to fall back to
        env["PYTHONPATH"] = str(self.python_dir) + (f":{self.modules}" if package_here else "")
        return subprocess.run([sys.executable, "-m", "memstress.probe"], env=env, capture_output=True, text=True,
                              check=False, cwd=self.tmp)

    def test_the_venv_wins_when_it_has_the_package(self) -> None:
        self.venv(with_package=True)
        for here in (False, True):
            result = self.start(package_here=here)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.strip(), "venv")

    def test_a_venv_without_the_package_gives_way_to_the_python_that_has_it(self) -> None:
        self.venv(with_package=False)
        result = self.start(package_here=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "started")

    def test_no_python_with_the_package_is_exit_3_naming_it(self) -> None:
        (self.tmp / "requirements.txt").write_text("msfake_package\n")  # a checkout
        self.venv(with_package=False)
        result = self.start(package_here=False)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("msfake_package", result.stderr)
        self.assertIn("scripts/setup", result.stderr)
        self.assertIn("apt-get install python3-msfake_package", result.stderr)
        self.assertEqual(result.stdout, "")

    def test_an_installed_copy_names_the_package_to_install_not_the_checkout(self) -> None:
        self.venv(with_package=False)
        result = self.start(package_here=False)  # no requirements.txt beside python/: an install
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertNotIn("scripts/setup", result.stderr)
        self.assertIn("'sudo apt-get install python3-msfake_package' (Debian, Ubuntu)", result.stderr)
        self.assertIn("python3 -m pip install msfake_package", result.stderr)


if __name__ == "__main__":
    unittest.main()
