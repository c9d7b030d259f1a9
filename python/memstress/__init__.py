"""memstress's Python: what the memstress binary runs and what PyTorch programs import.

- ``report`` (``python3 -m memstress.report``, and ``memstress report``, ``memstress doctor --format html``): results
  drawn into one HTML page; ``__main__.py`` owns the page and its errors, ``inputs`` reads them, a module per
  kind of section;
- ``convert`` (``python3 -m memstress.convert``, run by ``memstress replay`` and ``memstress doctor`` on a snapshot):
  a PyTorch memory snapshot (``torch_snapshot``) or an RMM log (``rmm_log``) into a memstress trace
  (``trace_builder``), with ``snapshot_sites`` naming each allocation's line of the user's program;
- ``validate`` (``python3 -m memstress.validate``): results documents against results/schema/;
- ``recorder`` (with ``recorder_marks``, what convolutions allocate) and ``find_max``: the PyTorch recorder and
  ``find_max_batch``, which programs import as ``memstress_torch``;
- ``_json``, ``_output``, ``_pyenv``: what the programs share: JSON read with its nesting bounded, output files
  written whole, and the python a program runs under (the checkout's .venv first);
- ``api`` (``memstress.doctor(path)``, ``memstress.predict_batch(...)``): the binary's answers as dicts, for
  notebooks; ``_launcher``: the wheel's ``memstress`` command, which runs the binary installed beside this package.

The binary finds this directory under its data directory (share/memstress/python installed, python/ of the
checkout for a build tree, site-packages in the wheel) and puts it first on PYTHONPATH. Only the standard
library is imported here.
"""

from typing import Any

__all__ = ["MemstressError", "doctor", "predict_batch"]


def __getattr__(name: str) -> Any:
    """memstress.doctor and the rest of ``api``, imported when first named: every program of the package imports
    this file first, and most need none of it."""
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'memstress' has no attribute {name!r}")
