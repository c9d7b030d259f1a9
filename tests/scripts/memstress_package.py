"""The package memstress (python/memstress) for the tests: importable once this module is imported, and its
programs run as users and the memstress binary run them, ``python3 -m memstress.MODULE`` with python/ first on
PYTHONPATH (harness/core/data_dir.hpp: python_module)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """env (this process's when None) with python/ first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p)
    return env


def command(module: str, *args: object, python: str = "python3") -> list[str]:
    """``python -m module args``; by default the python3 on PATH, as users type it (the program then moves to
    the python that has what it needs: python/memstress/_pyenv.py)."""
    return [python, "-m", module, *map(str, args)]
