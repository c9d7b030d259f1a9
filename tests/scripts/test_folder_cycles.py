"""No two rooms of harness/ include each other, directly or round a longer loop.

    python3 tests/scripts/test_folder_cycles.py

Each folder of harness/ (core, memory, stats, alloc, run, dist, ...) is a room; a file of one that includes
`harness/<other>/...` draws an arrow from its room to the other. The arrows must make no loop: a loop means
that neither room can be understood, built or tested without the other. The test names every loop it finds
and, for each arrow in it, one file that draws it. Files listed by `git ls-files` (skipped outside a
checkout).
"""

from __future__ import annotations

import re
import subprocess
import unittest
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"harness/([^/"]+)/', re.MULTILINE)


def arrows() -> dict[tuple[str, str], str]:
    """(from room, to room) -> a file that draws the arrow."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "harness"], capture_output=True, text=True,
                            check=False)
    if listed.returncode != 0 or not listed.stdout:
        raise unittest.SkipTest("not a git checkout: " + listed.stderr.strip())
    found: dict[tuple[str, str], str] = {}
    for name in listed.stdout.split():
        path = ROOT / name
        if path.suffix not in (".cpp", ".hpp", ".h", ".cu", ".cuh") or name.count("/") < 2 or not path.exists():
            continue
        room = name.split("/")[1]
        for other in INCLUDE.findall(path.read_text(errors="replace")):
            if other != room:
                found.setdefault((room, other), name)
    return found


def loops(edges: dict[tuple[str, str], str]) -> list[list[str]]:
    """The strongly connected groups of more than one room (Tarjan's algorithm)."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


class FolderCycles(unittest.TestCase):
    def test_the_rooms_of_harness_make_no_loop(self) -> None:
        edges = arrows()
        self.assertGreater(len(edges), 10, "too few arrows: is this the harness?")
        found = loops(edges)
        lines = []
        for group in found:
            lines.append("loop: " + ", ".join(group))
            lines += [f"  {a} -> {b}: {edges[(a, b)]}" for (a, b) in sorted(edges) if a in group and b in group]
        self.assertEqual(found, [], "\n".join(lines))

    def test_a_loop_is_found_and_named(self) -> None:
        edges = {("a", "b"): "harness/a/x.hpp", ("b", "c"): "harness/b/y.hpp", ("c", "a"): "harness/c/z.hpp",
                 ("c", "d"): "harness/c/w.hpp"}
        self.assertEqual(loops(edges), [["a", "b", "c"]])


if __name__ == "__main__":
    unittest.main()
