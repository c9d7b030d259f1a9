"""No string of harness/ names a command-line flag: the libraries take a `what`, the commands name their flags.

    python3 tests/scripts/test_no_flags_in_harness.py

A library that wrote "--capacity" into its message or its output knew which command called it and how that
command spells its options: the next command to call it (with another flag, or none) inherited a wrong name.
So every function that can fail on a value takes the name of what it reads (`what`), and apps/ passes its
flag. This test reads each string literal of the C++ files of harness/ (comments aside) and fails naming
each file, line and literal that holds a flag (`--name`, or `-x` alone). A line that runs another program
(its own command line, not memstress's) says so with the comment `// another program's command line`.
Files listed by `git ls-files` (skipped outside a checkout); well under a second.
"""

from __future__ import annotations

import re
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z](?![\w-]))")
ANOTHER_PROGRAM = "// another program's command line"

def code_literals(line: str) -> list[str]:
    """The string literals of a line, up to a // comment that is not inside one."""
    found = []
    pos = 0
    while pos < len(line):
        quote = line.find('"', pos)
        comment = line.find("//", pos)
        if comment != -1 and (quote == -1 or comment < quote):
            break
        if quote == -1:
            break
        if quote > 0 and line[quote - 1] == "'":  # the character '"'
            pos = quote + 1
            continue
        match = LITERAL.match(line, quote)
        if not match:
            break
        found.append(match.group(0))
        pos = match.end()
    return found


def flags_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, flag, literal) for each flag named in a string literal of C++ `text`."""
    out = []
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if in_block:
            if "*/" not in line:
                continue
            line = line[line.index("*/") + 2 :]
            in_block = False
        if "/*" in line and "*/" not in line.split("/*", 1)[1]:
            in_block = True
            line = line.split("/*", 1)[0]
        if ANOTHER_PROGRAM in line:
            continue
        for literal in code_literals(line):
            for flag in FLAG.findall(literal[1:-1]):
                out.append((number, flag, literal))
    return out


class NoFlagsInHarness(unittest.TestCase):
    def test_the_finder_finds_flags_and_nothing_else(self) -> None:
        self.assertEqual([f for _, f, _ in flags_in('throw InputError("--capacity {}: too large");')], ["--capacity"])
        self.assertEqual([f for _, f, _ in flags_in('f("-b/--minbytes");')], ["-b", "--minbytes"])
        self.assertEqual([f for _, f, _ in flags_in('f("-q");')], ["-q"])
        for clean in (
            'f("non-zero, x-y, -1, a - b");',
            '// "--capacity" in a comment',
            "f(what); // --out",
            'args = {"--facts"};  // another program\'s command line',
            "if (c == '\"') {",
        ):
            self.assertEqual(flags_in(clean), [], clean)

    def test_no_string_of_harness_names_a_flag(self) -> None:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "harness"], capture_output=True, text=True, check=False
        )
        if listed.returncode != 0 or not listed.stdout:
            raise unittest.SkipTest("not a git checkout: " + listed.stderr.strip())
        found = []
        for name in listed.stdout.split():
            path = ROOT / name
            if path.suffix not in (".cpp", ".hpp", ".h", ".cu", ".cuh") or not path.exists():
                continue
            for number, flag, literal in flags_in(path.read_text(errors="replace")):
                found.append(f"{name}:{number}: {flag} in {literal}")
        self.assertEqual(
            found, [], "flags named inside harness/ (take a `what`; the command names its flag):\n" + "\n".join(found)
        )


if __name__ == "__main__":
    unittest.main()
