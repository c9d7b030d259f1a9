#!/usr/bin/env python3
"""results/ holds the records the documentation cites, and no more than a clone should carry.

- The tracked files under results/ weigh at most BUDGET_BYTES (25 MB): every clone carries them. A record that
  grows large is committed compressed (`run.json.xz`, read as it is by memstress, `validate` and the report).
- Every tracked file under results/ belongs to a record that a page cites: the README, a docs/ page or a shipped
  profile (profiles/*.yaml), directly or through the README of a record they cite. A record is a folder
  results/MACHINE/NAME/, or the files of one run beside each other, results/MACHINE/STEM.* (`default-h100-580.159.04`
  .json, .jsonl and .txt); a page cites it by naming a file in it, the folder or a glob that matches one of its
  files. results/README.md, the index, belongs to none. So a test that reads a committed record reads one the
  documentation cites, and a record nobody cites is left to the history (`git log -- results/...`).
- Every results/ path a page names (a glob: some file), and every relative link of a cited record's README, is
  there: a record compressed or moved is named by its new name.

    python3 tests/scripts/test_results_cited.py [-v]
"""

from __future__ import annotations

import os
import re
import subprocess
import unittest
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET_BYTES = 25_000_000
INDEX = "results/README.md"
# A path under results/ as the pages write it (a glob's *, ? and {a,b} included), not one under harness/results/.
NAMED = re.compile(r"(?<![\w/.-])(?:\.\./)*results/[\w./*?{},-]*[\w*}/-]")
LINK = re.compile(r"\]\(([^)\s#]+)")
# Names of files a page's command writes, not of records: (page, name) -> why.
WRITTEN = {
    ("docs/development.md", "results/fuzz/run.md"): "scripts/fuzz --record's output, named in its example",
}
# How a run's files end: what is left is the run's stem, the record they share.
SUFFIX = re.compile(r"(\.(json|jsonl|txt|xml|csv|log|out|err|md|prom|args|yaml|pickle))?(\.(gz|xz))?$")


def tracked() -> list[str]:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "results"], capture_output=True, check=False)
    if done.returncode != 0:
        raise unittest.SkipTest("not a git checkout: " + done.stderr.decode(errors="replace").strip())
    return [p for p in done.stdout.decode().split("\0") if p]


def record_of(path: str) -> str:
    """The record a tracked file belongs to: results/MACHINE/NAME/ for a folder's, results/MACHINE/STEM else."""
    parts = path.split("/")
    if len(parts) <= 2:
        return path
    if len(parts) == 3:
        return "/".join(parts[:2]) + "/" + SUFFIX.sub("", parts[2])
    return "/".join(parts[:3]) + "/"


def alternatives(pattern: str) -> list[str]:
    """A glob's {a,b} expanded, as the shell does."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [p for alt in m.group(1).split(",") for p in alternatives(pattern[:m.start()] + alt + pattern[m.end():])]


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob: * and ? within one folder's name."""
    return re.compile("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in pattern))


def matches(named: str, files: list[str]) -> set[str]:
    """The tracked files a name under results/ stands for: the file, the folder's files, or the glob's."""
    out: set[str] = set()
    for name in alternatives(named):
        folder = name.rstrip("/") + "/"
        rx = glob_regex(name.rstrip("/"))
        for f in files:
            if f == name or f.startswith(folder):
                out.add(f)
            elif "*" in name or "?" in name:
                parts = f.split("/")
                if any(rx.fullmatch("/".join(parts[:k])) for k in range(2, len(parts) + 1)):
                    out.add(f)
    return out


def from_root(base: str, written: str) -> str:
    """A results/ path as a page writes it, from the checkout's root: a page's `../results/...` is from its own
    folder, `results/...` from the root."""
    path = os.path.normpath(os.path.join(base, written) if written.startswith("../") else written)
    return path + ("/" if written.endswith("/") else "")


def names_in(page: str, text: str) -> list[tuple[str, str]]:
    """(as written, as a path from the checkout's root) for each results/ path and relative link of a page."""
    base = str(Path(page).parent)
    out = []
    for m in NAMED.finditer(text):
        for written in re.split(r",(?![^{]*\})", m.group(0)):  # `--batch-runs A,B`: two, but a glob's {a,b} one
            written = written.rstrip(".;:")
            if written.startswith(("results/", "../")):
                out.append((written, from_root(base, written)))
    for m in LINK.finditer(text):
        target = m.group(1)
        if "://" in target or target.startswith("mailto:"):
            continue
        path = (ROOT / base / target).resolve()
        try:
            rel = str(path.relative_to(ROOT.resolve()))
        except ValueError:
            continue  # leaves the checkout: not this test's
        out.append((target, rel + ("/" if target.endswith("/") else "")))
    return out


def general(path: str) -> bool:
    """A name for results/ as a whole (`results/`, `results/*.json`: what `db ingest` takes), not a record."""
    return path.rstrip("/") == "results" or path.count("/") == 1 and "*" in path


def pages() -> list[str]:
    return ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")) + sorted(
        f"profiles/{p.name}" for p in (ROOT / "profiles").glob("*.yaml"))


def cited(files: list[str]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """record -> the page that cites it (the first found); and (page, name) for each name that is not there."""
    by_record: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_record[record_of(f)].append(f)
    why: dict[str, str] = {}
    missing: list[tuple[str, str]] = []
    todo = [(page, (ROOT / page).read_text()) for page in pages()]
    while todo:
        page, text = todo.pop()
        for written, path in names_in(page, text):
            if not path.startswith("results/") or general(path):
                continue
            found = matches(path, files)
            if not found and not (ROOT / path).exists() and (page, written) not in WRITTEN:
                missing.append((page, written))  # a glob that matches nothing too
            for record in sorted({record_of(f) for f in found} - set(why) - {INDEX}):
                why[record] = page
                todo += [(f, (ROOT / f).read_text()) for f in by_record[record] if f.endswith("README.md")]
    return why, missing


class Results(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.files = tracked()

    def test_tracked_results_fit_the_budget(self) -> None:
        sizes = {f: (ROOT / f).stat().st_size for f in self.files if (ROOT / f).is_file()}
        total = sum(sizes.values())
        largest = ", ".join(f"{f} ({n:,})" for f, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
        self.assertLessEqual(total, BUDGET_BYTES, f"tracked results/ is {total:,} bytes, more than {BUDGET_BYTES:,}: "
                             f"compress what is large (xz -9), or leave a record nobody cites to the history; "
                             f"the largest: {largest}")

    def test_every_record_is_cited(self) -> None:
        why, _ = cited(self.files)
        uncited = sorted({record_of(f) for f in self.files} - set(why) - {INDEX})
        self.assertEqual(uncited, [], "records under results/ that neither the README, docs/ nor profiles/ cite "
                                      "(nor a cited record's README): cite them where a page relies on them, or "
                                      "git rm them (the history keeps them)")

    def test_every_name_is_there(self) -> None:
        _, missing = cited(self.files)
        self.assertEqual(missing, [], "results/ paths named by the pages, or linked by a cited record's README, that "
                                      "are not there (compressed: name the .xz)")

    def test_each_written_name_is_still_written(self) -> None:
        for page, name in WRITTEN:
            self.assertIn(name, (ROOT / page).read_text(), f"WRITTEN: {page} no longer names {name}: drop it")

    def test_the_rules(self) -> None:
        files = ["results/h100/default-h100-1.json", "results/h100/default-h100-1.txt", "results/h100/a/b/c.json.xz",
                 "results/h100/oom-h100-1.json.xz", "results/README.md"]
        self.assertEqual(record_of(files[0]), record_of(files[1]))
        self.assertEqual(record_of(files[2]), "results/h100/a/")
        self.assertEqual(record_of(files[3]), "results/h100/oom-h100-1")
        self.assertEqual(matches("results/h100/*.json", files), {files[0]})
        self.assertEqual(matches("results/h100/{oom,default}-*.{txt,json.xz}", files), {files[1], files[3]})
        self.assertEqual(matches("results/h100/a/", files), {files[2]})
        self.assertEqual(matches("results/*/a/", files), {files[2]})
        self.assertEqual(names_in("docs/x.md", "see [it](../results/h100/a/) and `results/h100/oom-*`."),
                         [("../results/h100/a/", "results/h100/a/"), ("results/h100/oom-*", "results/h100/oom-*"),
                          ("../results/h100/a/", "results/h100/a/")])
        self.assertEqual(names_in("docs/x.md", "harness/results/read.hpp"), [])
        self.assertTrue(general("results/") and general("results/*.json") and not general("results/h100/*.json"))


if __name__ == "__main__":
    unittest.main()
