"""The HTML report: ``python3 -m memstress.report RESULTS... -o report.html`` (``__main__.py``, which owns the page
and its errors), its inputs read by ``inputs``, its sections beside it (``accept``, ``allocators``, ``benchmarks``,
``compare``, ``doctor``, ``fleet``, ``links``, ``machines``, ``memory``, ``replays``, ``runs``, ``sweep``) and what
they share (``common``)."""
