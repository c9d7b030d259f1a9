"""JSON input with its nesting bounded, for the scripts that read results from other machines.

The same bound as the C++ readers (Note [Bounded JSON input] in harness/core/json_input.hpp): a text whose
arrays and objects nest more than MAX_DEPTH levels is refused before it is parsed. Python's json module
recurses once a level and raises RecursionError deep down (and jsonschema, walking what it parsed, would
recurse again), so the depth is counted first, in one scan that skips strings.

    import ms_json
    ms_json.check_depth(text)        # raises TooDeep (a ValueError) with the line and column
    doc = ms_json.loads(text)        # check_depth, then json.loads(text, **kwargs)
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 128

# A whole string (escapes included; one left open runs to the end of its line: a JSON string never holds a
# raw newline, so each line of a stream is scanned as if alone), or a bracket.
_TOKEN = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?|[\[\]{}]')


class TooDeep(ValueError):
    """The text nests arrays and objects deeper than the limit."""


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                column = start - (text.rfind("\n", 0, start) + 1) + 1
                raise TooDeep(f"nested more than {limit} levels deep (line {line}, column {column}): refused")
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)


def loads(text: str, **kwargs: Any) -> Any:
    """json.loads(text, **kwargs) on a text whose depth is checked first (TooDeep, a ValueError)."""
    check_depth(text)
    return json.loads(text, **kwargs)
