"""The wheel's ``memstress`` command: the binary installed beside this package, run with this python named.

pip writes ``memstress`` into the environment's bin/ as a script of the python that installed the wheel, calling
main() below (pyproject.toml, [project.scripts]). main() puts that python in MEMSTRESS_LAUNCHER_PYTHON, which the
binary runs its Python programs with (the snapshot converter, the report: Note [Where memstress finds its files]
in harness/core/data_dir.hpp), and replaces this process with the binary, ``memstress/_bin/memstress`` (Note [The
wheel] in cmake/Wheel.cmake). So the command works by its absolute path, with no environment activated and no
PYTHONPATH. Only the standard library is imported: it runs before every command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

EXIT_ENV = 3


def binary() -> Path:
    """The memstress binary installed with this package (the wheel's; absent in a checkout's python/)."""
    return Path(__file__).resolve().parent / "_bin" / "memstress"


def find(memstress: str | None = None) -> str | None:
    """The memstress binary for the package's callers (find_max_batch, memstress.doctor): `memstress`, else
    $MEMSTRESS, else the one installed with this package, else ``memstress`` on PATH; None where there is none."""
    import shutil  # noqa: PLC0415 - not on the command's path

    if memstress or os.environ.get("MEMSTRESS"):
        return memstress or os.environ["MEMSTRESS"]
    return str(binary()) if binary().is_file() else shutil.which("memstress")


def environment() -> dict[str, str]:
    """The environment to run the binary in: this python named as the one to run its Python with."""
    return {**os.environ, "MEMSTRESS_LAUNCHER_PYTHON": sys.executable}


def main() -> None:
    path = binary()
    os.environ["MEMSTRESS_LAUNCHER_PYTHON"] = sys.executable
    try:
        os.execv(path, ["memstress", *sys.argv[1:]])
    except OSError as e:
        print(f"memstress: error: cannot run {path} ({e.strerror}): this memstress package was not installed from "
              "its wheel; install it with pip (pip install memstress, or pip install . in a checkout)",
              file=sys.stderr)
        sys.exit(EXIT_ENV)
