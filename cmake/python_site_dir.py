"""cmake/python_site_dir.py PREFIX: the directory under PREFIX from which this python imports modules, if any.

Called at install time (cmake/Install.cmake) so that the recorder, python/memstress_torch.py (and the
memstress/recorder.py it imports), is importable without PYTHONPATH where the prefix holds one: ~/.local (the user site), a virtual environment, /usr/local
(Debian's dist-packages). Prints nothing where the prefix holds none (then PYTHONPATH=$(memstress
--python-path) imports it). Exit 0 either way.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig


def candidates() -> list[str]:
    paths = [p for p in sys.path if p]
    paths.append(site.getusersitepackages())
    for scheme in sysconfig.get_scheme_names():
        try:
            paths.append(sysconfig.get_path("purelib", scheme))
        except KeyError:
            pass
    return paths


def main() -> int:
    prefix = os.path.realpath(sys.argv[1]) if len(sys.argv) > 1 else ""
    if not prefix:
        return 0
    for path in candidates():
        real = os.path.realpath(path)
        if real.startswith(prefix + os.sep) and os.path.basename(real) in ("site-packages", "dist-packages"):
            print(real)
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
