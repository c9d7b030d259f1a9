"""Where the values inside a parsed document (dicts and lists) lie: what the mutation sweeps
(test_audit_inputs.py, tests/cli/mutate_results.py) and the property tests (test_converter_properties.py) pick
from."""

from __future__ import annotations

from typing import Any


def paths_of(value: Any) -> list[tuple]:
    """Every path (keys and indices) to a value inside the dicts and lists of `value`, the root left out.
    Iterative: a document 100,000 levels deep does not exhaust the stack."""
    out, todo = [], [(value, ())]
    while todo:
        node, path = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append(path + (key,))
            todo.append((child, path + (key,)))
    return out
