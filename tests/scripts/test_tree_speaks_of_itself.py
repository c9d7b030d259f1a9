#!/usr/bin/env python3
"""The repository speaks of itself alone: no tracked file names the machines it was made on, the tracker entries
that asked for a change, or how the machines it was made on were reached.

Every file `git ls-files` lists is read (inside .gz files too; other binary files are left out), and each of these
is a hit, named file:line:

- an absolute path under /work/, /root/, /home/ or /tmp/: a folder of the machine a file was written on, which
  means nothing elsewhere (logs and records are passed through scripts/dev/scrub_paths.py, which makes them
  relative, $OUT/..., $TMPDIR/... or ~/...);
- a tracker number of this project ("issue N", "Issues N/M", "(#N)", "the issue's target"): say what is checked
  or why instead. Another project's issues ("NVIDIA/nccl issue 2363", "DCGM issue 284") are fine;
- words about how the machines were reached rather than what they are ("the machines this project is lent",
  "device machine", "the device tool", "this session", "this workplace", the names of lent machine kinds);
- a reference to a document outside the repository (the design notes kept beside a checkout, ../shared/).

ALLOWED holds the few lines that must keep such a path, each with its reason; an allowance that no longer matches
anything fails too, so the list stays short. Exempt: this file and scripts/dev/scrub_paths.py, which name the
patterns.

    python3 tests/scripts/test_tree_speaks_of_itself.py [-v]
"""

from __future__ import annotations

import re
import subprocess
import unittest
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXEMPT = {"tests/scripts/test_tree_speaks_of_itself.py", "scripts/dev/scrub_paths.py"}


@dataclass(frozen=True)
class Rule:
    what: str
    keys: re.Pattern[str]  # plain words, lower case: the lines worth matching against the pattern
    pattern: re.Pattern[str]
    keep: Callable[[str, re.Match[str]], bool] = lambda line, m: True


# What may stand right before "issue N" when it is another project's: a repository (owner/name) or a project name.
OTHER_PROJECT = re.compile(
    r"(?:[\w.-]+/[\w.-]+|nccl|dcgm|pytorch|torch|rmm|cuda|cccl|cmake|gcc|llvm|clang|yaml-cpp|hypothesis|libfuzzer"
    r"|open ?mpi|ninja|googletest|gtest|nvbench|python|cpython|numpy|github)(?:'s)?[\s:,(]*$",
    re.IGNORECASE,
)


def not_another_projects(line: str, m: re.Match[str]) -> bool:
    """False for "issue N" right after another project's name or repository."""
    if not m.group(0).lower().startswith("issue"):
        return True
    return not OTHER_PROJECT.search(line[max(0, m.start() - 40):m.start()])


MACHINE_PATH = Rule(
    "absolute path(s) under /work/, /root/, /home/ or /tmp/",
    re.compile(r"/(?:work|root|home|tmp)/"),
    re.compile(r"(?<![\w.~$-])/(?:work|root|home|tmp)/"),
)
TRACKER = Rule(
    "tracker number(s) of this project",
    re.compile(r"issue|\(#"),
    re.compile(
        r"\bissues?\s*#?\d+"  # issue N, Issues N/M, issue #N
        r"|\((?:#\d+)(?:\s*[,/]\s*#?\d+)*\)"  # (#19), (#16, #18)
        r"|\b(?:the|this|that) issue's\b",  # the target
        re.IGNORECASE,
    ),
    not_another_projects,
)
HOW_THE_MACHINES_WERE_REACHED = Rule(
    "word(s) of how the machines were reached",
    re.compile(r"device|workplace|len[dt]|lease|session|nvidia-h"),
    re.compile(
        r"\bdevice[- ]machines?\b"
        r"|`?\bdevice`? tools?\b"
        r"|\bworkplace\b"
        r"|\blent\b|\blends?\b(?!\s+itself)|\blending\b|\blease\b"
        r"|\b(?:this|a later|another|an earlier|a previous|one)\s+session\b|\ba session later\b"
        r"|\bthe session's (?:device|start|time|budget)\b"
        r"|\bnvidia-h[12]00(?:-x\d)?\b",  # the kinds of machine lent, by name
        re.IGNORECASE,
    ),
)
OUTSIDE = Rule(
    "reference(s) to a document outside the repository",
    re.compile(r"architecture\.md|\.\./shared/"),
    re.compile(r"(?<![\w/])ARCHITECTURE\.md\b|\.\./shared/"),  # the design notes kept beside the checkout
)


@dataclass(frozen=True)
class Allowance:
    path: str
    line: re.Pattern[str]
    reason: str


ALLOWED = [
    Allowance("tests/db/postgresql.cmake", re.compile(r"/tmp/memstress-pg-"),
              "the test PostgreSQL server listens on a Unix socket in this directory, and a socket's path must stay "
              "under 108 bytes, which one in a build tree may not: a short path, the same on every machine"),
    Allowance("tests/slurm/CMakeLists.txt", re.compile(r"/tmp/memstress-slurm-"),
              "the test Slurm's munged listens on a Unix socket in this directory: the same reason"),
]


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    text: str


def tracked_files() -> list[str] | None:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    return [p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def contents(path: str) -> tuple[str, str] | None:
    """(where, text) of a tracked file as text; a .gz file's content (as far as a stream cut short goes); None for
    a binary file, a link or a file the working tree lacks."""
    full = ROOT / path
    if full.is_symlink() or not full.is_file():
        return None
    raw = full.read_bytes()
    where = path
    if path.endswith(".gz"):
        try:
            raw = zlib.decompressobj(wbits=31).decompress(raw)
        except zlib.error:
            return None
        where = f"{path} (inside)"
    elif b"\0" in raw[:8192]:
        return None
    # Inside a .gz a pickle is binary: read as Latin-1, its strings (file names, argv) are still found.
    return where, raw.decode("utf-8" if b"\0" not in raw[:8192] else "latin-1", "replace")


def excerpt(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    col = start - line_start
    if len(line) > 160:
        lo = max(0, col - 60)
        line = ("..." if lo else "") + line[lo:lo + 150] + "..."
    return "".join(c if c.isprintable() else "?" for c in line.strip())


def scan(rule: Rule) -> dict[str, list[Hit]]:
    """Every match of the rule in the tracked files, by file, with what ALLOWED lets stand left out. Only the lines
    where one of the rule's keys appears are matched against its pattern (the keys are plain words, quick to find)."""
    files = tracked_files()
    if files is None:
        raise unittest.SkipTest("not a git checkout")
    hits: dict[str, list[Hit]] = defaultdict(list)
    for path in files:
        if path in EXEMPT:
            continue
        got = contents(path)
        if got is None:
            continue
        where, text = got
        lower = text.lower()
        keys = rule.keys if len(lower) == len(text) else re.compile(rule.keys.pattern, re.IGNORECASE)
        seen: set[int] = set()
        line_no, counted_to = 1, 0
        for k in keys.finditer(lower if keys is rule.keys else text):
            start = text.rfind("\n", 0, k.start()) + 1
            if start in seen:
                continue
            seen.add(start)
            end = text.find("\n", k.start())
            line = text[start:end if end >= 0 else len(text)]
            line_no += text.count("\n", counted_to, start)
            counted_to = start
            for m in rule.pattern.finditer(line):
                if not rule.keep(line, m):
                    continue
                if any(a.path == path and a.line.search(line) for a in ALLOWED):
                    continue
                hits[where].append(Hit(where, line_no, excerpt(line, m.start(), m.end())))
    return hits


def report(what: str, hits: dict[str, list[Hit]]) -> str:
    lines = {where: sorted({(h.line, h.text) for h in found}) for where, found in hits.items()}
    out = [f"{sum(map(len, lines.values()))} line(s) with {what}, in {len(hits)} file(s):"]
    for where in sorted(lines):
        out.append(where)
        out.extend(f"  {line}: {text}" for line, text in lines[where])
    return "\n".join(out)


class TreeSpeaksOfItself(unittest.TestCase):
    maxDiff = None

    def check(self, rule: Rule) -> None:
        hits = scan(rule)
        if hits:
            self.fail(report(rule.what, hits))

    def test_no_absolute_path_of_a_machine(self) -> None:
        self.check(MACHINE_PATH)

    def test_no_tracker_number(self) -> None:
        self.check(TRACKER)

    def test_no_words_of_how_the_machines_were_reached(self) -> None:
        self.check(HOW_THE_MACHINES_WERE_REACHED)

    def test_no_reference_to_a_document_outside_the_repository(self) -> None:
        self.check(OUTSIDE)

    def test_every_allowance_is_still_needed(self) -> None:
        files = tracked_files()
        if files is None:
            self.skipTest("not a git checkout")
        for allowance in ALLOWED:
            with self.subTest(path=allowance.path):
                self.assertIn(allowance.path, files, f"ALLOWED names a file git does not track: {allowance.path}")
                got = contents(allowance.path)
                self.assertIsNotNone(got, allowance.path)
                self.assertTrue(allowance.line.search(got[1]),
                                f"{allowance.path}: the allowance ({allowance.reason}) matches nothing: remove it")
                self.assertTrue(allowance.reason)

    def test_the_patterns_find_what_they_are_for(self) -> None:
        """Each rule on lines like those it was written for, and on lines it must let be."""

        def finds(rule: Rule, line: str) -> bool:
            return bool(rule.keys.search(line.lower())) and any(rule.keep(line, m) for m in rule.pattern.finditer(line))

        cases = {
            MACHINE_PATH: (
                ["Test project /work/main/build/gpu", "-o /root/out/health/health-h100.json",
                 "mktemp -d /tmp/memstress-first-run.XXXXXX", '"filename": "/home/user/project/train.py"'],
                ["/usr/tmp/x", "build/tmp/x", "$TMPDIR/memstress-replay-XXXXXX", "~/.local/bin", "$OUT/r/x.json"]),
            TRACKER: (
                ["Malformed results files (issue 20): ...", "# Issue 19, GPU CI", "issues 16/18", "(#21)",
                 "the issue's target is 10 s", "issue #7"],
                ["NVIDIA/nccl issue 2363", "DCGM issue 284", "pytorch/pytorch#12345", "PyTorch issue 97",
                 "Test #295: gpu.PatternTest", "color: #333", "the issue is the copy engine"]),
            HOW_THE_MACHINES_WERE_REACHED: (
                ["the machines this project is lent", "a device machine's working tree", "through the `device` tool",
                 "in this workplace", "Then, this session (", "the session's device time ran out",
                 "(device tool, `nvidia-h100-x1`)", "A later session, the same kind of machine"],
                ["PostgreSQL's read-only sessions", "the session's transactions are read-only", "MpiSession",
                 "a shown session kept", "the device's free memory", "release_threshold_mb", "lends itself to"]),
            OUTSIDE: (
                ["Design: [`ARCHITECTURE.md`](../shared/ARCHITECTURE.md)",
                 'exit codes (ARCHITECTURE.md, "Exit codes")'],
                ["[docs/development.md](docs/development.md#layout)", "docs/architecture.md",
                 "~/.local/share/memstress/"]),
        }
        for rule, (found, let_be) in cases.items():
            for line in found:
                self.assertTrue(finds(rule, line), f"{rule.what}: not found in {line!r}")
            for line in let_be:
                self.assertFalse(finds(rule, line), f"{rule.what}: found in {line!r}")


if __name__ == "__main__":
    unittest.main()
