"""The HTML report: ``python3 -m memstress.report RESULTS... -o report.html`` (``__main__.py``, which owns the page,
the inputs and the errors), its sections beside it (``accept``, ``allocators``, ``doctor``, ``fleet``, ``links``,
``memory``, ``sweep``) and what they share (``common``)."""
