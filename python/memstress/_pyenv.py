"""Which python runs a memstress program: the project's .venv when it has what the program needs.

Note [Which python runs a script]
---------------------------------
Users type ``python3 -m memstress.report ...`` (or ``memstress report``, which runs that) with whatever python is
first on their PATH: a system python, a conda or PyTorch environment, or none activated at all. The project's
dependencies (requirements.txt) live in ``.venv`` beside ``python/``, which scripts/setup makes, and users never
activate it. So a program does not trust the python that started it; its main() calls
``ensure(prog, __file__, required, optional)`` first, which picks, in this order, the first python that can
import every required module:

1. ``.venv/bin/python3`` of the checkout (or of the install: there is none under ``share/memstress``);
2. the python that started the program;
3. ``python3`` on PATH, then ``/usr/bin/python3``.

In each pass a python that also has the optional modules wins over one with the required ones only (the
report draws with matplotlib alone, but checks documents against their schemas when jsonschema is
there). If the chosen python is not the running one, the module is run again under it (``python -m`` the same
module, with the directory that holds this package first on PYTHONPATH; once: an environment variable stops a
loop). An offline machine whose ``.venv`` lacks a package (pip could not
reach an index; the GPU images have none) thus falls back to a system python that has it (the GPU
images' python has matplotlib). With no python that has the required modules, ``ensure`` says which
modules are missing, where it looked and how to get them, and exits 3 (environment missing), unless the
caller asked to handle that itself.

Only the standard library is used here: this runs before anything is known to be importable.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXIT_ENV = 3
_PROG = "MEMSTRESS_PROG"  # the name a program runs under, set by the memstress binary that ran it
_CHOSEN = "MEMSTRESS_PYENV_CHOSEN"  # the program run again under the python chosen for it
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # python/ of the checkout, share/memstress/python installed
_MIN_VERSION = (3, 9)
_PROBE = (
    "import importlib.util, sys\n"
    "ok = sys.version_info >= (3, 9) and all(importlib.util.find_spec(m) for m in sys.argv[1:])\n"
    "sys.exit(0 if ok else 1)\n"
)


def prog(module: str) -> str:
    """The name a program prints its usage and messages under: the command that ran it (``memstress report``, set
    by the binary in MEMSTRESS_PROG), else how it was run (``python3 -m memstress.report``)."""
    return os.environ.get(_PROG) or f"python3 -m {module}"


def _has(python: str, modules: list[str]) -> bool:
    """Whether that python (not this one) can import every module, by asking it."""
    try:
        done = subprocess.run([python, "-c", _PROBE, *modules], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _here_has(modules: list[str]) -> bool:
    if sys.version_info < _MIN_VERSION:
        return False
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def candidates(root: Path) -> list[str]:
    """The pythons to try, best first, each once (by path: a venv's python is a link to its base python
    but is not the same environment)."""
    found: list[str] = []
    venv = root / ".venv" / "bin" / "python3"
    if venv.is_file() and os.access(venv, os.X_OK):
        found.append(str(venv))
    found.append(sys.executable)
    venv_bin = str(venv.parent)
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != venv_bin)
    on_path = shutil.which("python3", path=path)
    for python in (on_path, "/usr/bin/python3"):
        if python and Path(python).is_file():
            found.append(python)
    unique: list[str] = []
    for python in found:
        if python and os.path.abspath(python) not in map(os.path.abspath, unique):
            unique.append(python)
    return unique


def ensure(prog: str, main_file: str, required: list[str], optional: list[str] | None = None, *,
           exit_if_missing: bool = True) -> bool:
    """Runs the program whose main module is main_file (the caller's __file__, run with ``python -m``) under
    the best python for it (see the note above); returns True when this python has every required module.
    Without one: exits 3 with a message, or returns False when exit_if_missing is False. Where main_file is
    not the program running (its main() called from a test, say), nothing is run again: this python is
    judged."""
    optional = optional or []
    program = str(Path(main_file).resolve())
    running = str(Path(sys.argv[0]).resolve()) if sys.argv and sys.argv[0] else ""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if running != program or spec is None or os.environ.get(_CHOSEN) == program:  # imported, or already chosen
        return _here_has(required) or _missing(prog, required, [sys.executable], exit_if_missing)
    pythons = candidates(_PACKAGE_ROOT.parent)
    for wanted in (required + optional, required) if optional else (required,):
        for python in pythons:
            here = os.path.abspath(python) == os.path.abspath(sys.executable)
            if here and _here_has(wanted):
                return True
            if not here and _has(python, wanted):
                _run_again(python, spec.name, program)
    return _missing(prog, required, pythons, exit_if_missing)


def _run_again(python: str, module: str, program: str) -> None:
    """Replaces this process with ``python -m module`` and the same arguments, the package importable."""
    os.environ[_CHOSEN] = program
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(_PACKAGE_ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE_ROOT), *paths])
    if module.endswith(".__main__"):  # a package's: python -m names the package
        module = module[:-len(".__main__")]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(python, [python, "-m", module, *sys.argv[1:]])


def _missing(prog: str, required: list[str], looked: list[str], exit_if_missing: bool) -> bool:
    if not exit_if_missing:
        return False
    checkout = (_PACKAGE_ROOT.parent / "requirements.txt").is_file()
    how = ("run scripts/setup in the memstress checkout (it makes .venv from requirements.txt), or "
           if checkout else "")
    debian = " ".join(f"python3-{name}" for name in required)
    print(
        f"{prog}: needs the python package(s) {', '.join(required)}, which none of these pythons has: "
        f"{', '.join(looked)}.\n"
        f"{prog}: install them: {how}'sudo apt-get install {debian}' (Debian, Ubuntu), or "
        f"'python3 -m pip install {' '.join(required)}' in a virtual environment; on a machine with no package "
        "index, install them from wheels carried there, or use a python that has them.",
        file=sys.stderr)
    sys.exit(EXIT_ENV)
