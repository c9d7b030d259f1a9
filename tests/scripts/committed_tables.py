"""The committed tables of a lab table script (results/*/<kind>-*/TABLE.md): each still the script's output made
from its own folder. Shared by the tests of scripts/lab/nccl_tests_table.py and scripts/lab/nvbandwidth_table.py."""

from __future__ import annotations

import subprocess
import unittest
from collections.abc import Callable
from pathlib import Path


def assert_each_is_the_scripts_output(test: unittest.TestCase, root: Path, folders: list[Path],
                                      run: Callable[[str], subprocess.CompletedProcess]) -> None:
    for folder in folders:
        with test.subTest(folder=folder.relative_to(root)):
            made = run(str(folder))
            test.assertEqual(made.returncode, 0, made.stderr)
            test.assertEqual(made.stdout, (folder / "TABLE.md").read_text())
