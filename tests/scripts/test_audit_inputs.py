"""The bad-input audit of the Python programs (python/memstress): the report, the validator and the converter
given input that is bad (binary garbage, JSON nested 100,000 deep, cut short,
empty, a directory, the wrong top-level type, non-UTF-8 bytes, NaN times, fields of the wrong type) exit 2
with one line naming the file, never a traceback; an output that exists and is not a regular file (a
character device such as /dev/null, a FIFO, a directory) is refused, not replaced; the `.jsonl` of a run that
did not finish is read and said to be unfinished; what is written is valid UTF-8 whatever bytes the inputs'
names and strings hold. Plus a seeded mutation sweep of each reader, in-process (stdlib only).

Every test makes its own files in a temporary directory: the character device is made there with os.mknod
(root only: skipped otherwise), never the real /dev/null. One CTest test per class (tests/scripts/CMakeLists.txt);
the report's classes skip without matplotlib, validate's without jsonschema. None needs the memstress binary.
"""

from __future__ import annotations

import copy
import functools
import gzip
import importlib
import io
import json
import os
import pickle
import random
import re
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REPORT = "memstress.report"
VALIDATE = "memstress.validate"
CONVERTER = "memstress.convert"
H100 = ROOT / "results" / "h100"
COMPARE_DATA = ROOT / "tests" / "data" / "compare"

sys.path.insert(0, str(HERE))

import memstress_package  # noqa: E402
import records  # noqa: E402
import snapshot_fixtures as fx  # noqa: E402
from memstress import _output  # noqa: E402
from value_paths import paths_of  # noqa: E402

DEEP = "[" * 100_000 + "]" * 100_000
# A UTF-8 locale whose stdout is strict (what en_US.UTF-8 gives): a name's stray bytes must not make it raise.
STRICT_ENV = memstress_package.environment({**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"})


def run(module: str, *args: str | Path, env: dict | None = None, python: str = "python3"
        ) -> subprocess.CompletedProcess[str]:
    """A program of the package as users type it, python3 -m (it picks its own python: python/memstress/_pyenv.py).
    Output decoded strictly: a byte that is not UTF-8 fails the test."""
    done = subprocess.run(memstress_package.command(module, *args, python=python), capture_output=True, check=False,
                          timeout=300, env=env or STRICT_ENV)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8"),
                                       done.stderr.decode("utf-8"))


def python_script(module: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return run(module, *args, python=sys.executable)


@functools.lru_cache(maxsize=1)
def report_reachable() -> bool:
    """Whether the report finds a python with matplotlib (it exits 3 naming it otherwise)."""
    return run(REPORT, "/nonexistent/input.json", "-o", "/nonexistent/report.html").returncode != 3


@functools.lru_cache(maxsize=1)
def has_jsonschema() -> bool:
    return run(VALIDATE, COMPARE_DATA / "base.json").returncode != 77


def load_report_module() -> Any:
    """The report's __main__.py, imported for the in-process sweep."""
    return importlib.import_module("memstress.report.__main__")


def make_char_device(path: Path) -> bool:
    """A character device with /dev/null's numbers (1, 3), made in a temporary directory; False where this
    user may not make one (not root, or a container without CAP_MKNOD)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))
    except PermissionError:
        return False
    return True


def valid_utf8(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # raises where it is not


def deep_pickle(value_opcodes: bytes, levels: int) -> bytes:
    """Pickle opcodes of a list nested `levels` deep around `value_opcodes` (pickle.dumps itself recurses)."""
    return b"]" * levels + value_opcodes + b"a" * levels


def snapshot_with(key_path: tuple, raw: bytes) -> bytes:
    """The scenario's snapshot, pickled (protocol 2: no frames to fix up), with the value at `key_path` replaced
    by the raw pickle opcodes `raw` (a deep list, say, which pickle.dumps could not write)."""
    snapshot, _ = fx.scenario()
    marker = "@@raw-value@@"
    node = snapshot
    for key in key_path[:-1]:
        node = node[key]
    node[key_path[-1]] = marker
    data = pickle.dumps(snapshot, protocol=2)
    encoded = marker.encode()
    opcode = b"X" + len(encoded).to_bytes(4, "little") + encoded
    assert data.count(opcode) == 1
    return data.replace(opcode, raw)


class TempDir(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="memstress-audit-")
        self.dir = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.dir / name
        path.write_bytes(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
        return path

    def assert_refused(self, done: subprocess.CompletedProcess[str], *words: str) -> None:
        """Exit 2, one line, no traceback, naming what it should."""
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        self.assertLessEqual(len(lines), 1, lines)
        for word in words:
            self.assertIn(word, done.stdout + done.stderr)

    def bad_json_inputs(self) -> dict[str, tuple[Path, str]]:
        """name -> (file, words its refusal holds): what a JSON reader must refuse with exit 2."""
        run_doc = (COMPARE_DATA / "base.json").read_text()
        at = run_doc.index('"params": {') + len('"params": {')
        adir = self.dir / "a-directory.json"
        adir.mkdir()
        return {
            "garbage": (self.write("garbage.json", random.Random(21).randbytes(4096)), "not UTF-8 text (byte 0x"),
            "deep arrays": (self.write("deep.json", DEEP), "nested more than 128 levels deep"),
            "100,000 [": (self.write("brackets.json", "[" * 100_000), "nested more than 128 levels deep"),
            "deep in a row": (self.write("deep-row.json", run_doc[:at] + f'"deep": {DEEP}, ' + run_doc[at:]),
                              "nested more than 128 levels deep"),
            "deep objects": (self.write("deep-objects.json", '{"a":' * 100_000 + "1" + "}" * 100_000),
                             "nested more than 128 levels deep"),
            "empty": (self.write("empty.json", ""), "not JSON"),
            "blank": (self.write("blank.json", "\n\n  \n"), "not JSON"),
            "cut short": (self.write("cut.json", run_doc[: len(run_doc) // 2]), "not JSON"),
            "latin-1 inside": (self.write("latin1.json", run_doc.replace("H200", "H200 \xe9").encode("latin-1")),
                               "not UTF-8 text (byte 0xe9"),
            "a directory": (adir, "cannot be read"),
            "missing": (self.dir / "missing.json", "cannot be read"),
            "an array": (self.write("array.json", "[1, 2]"), "a JSON array, not an object"),
            "a string": (self.write("string.json", '"memstress.run/1"'), "a JSON string, not an object"),
            "a number": (self.write("number.json", "42"), "a JSON number, not an object"),
            "null": (self.write("null.json", "null"), "a JSON null, not an object"),
        }


# --- outputs -------------------------------------------------------------------------------------------------


class OutputTargets(TempDir):
    """python/memstress/_output.py: atomic replacement of regular files, refusal of everything else."""

    def special_targets(self) -> dict[str, Path]:
        targets = {"a FIFO": self.dir / "fifo", "a directory": self.dir / "dir"}
        os.mkfifo(targets["a FIFO"])
        targets["a directory"].mkdir()
        if make_char_device(self.dir / "null"):
            targets["a character device"] = self.dir / "null"
            (self.dir / "link-to-null").symlink_to(self.dir / "null")
            targets["a character device "] = self.dir / "link-to-null"  # a link to one: followed
        return targets

    def assert_untouched(self, targets: dict[str, Path]) -> None:
        for kind, path in targets.items():
            mode = os.stat(path).st_mode
            if "character" in kind:
                self.assertTrue(stat.S_ISCHR(mode), path)
                self.assertEqual(os.stat(path).st_rdev, os.makedev(1, 3))
            elif "FIFO" in kind:
                self.assertTrue(stat.S_ISFIFO(mode), path)
            else:
                self.assertTrue(stat.S_ISDIR(mode), path)
                self.assertEqual(list(path.iterdir()), [])
        leftovers = [p.name for p in self.dir.iterdir() if p.name.endswith(".tmp")]
        self.assertEqual(leftovers, [], "temporary files left behind")

    def test_helper_refuses_what_is_not_a_regular_file(self) -> None:
        if os.geteuid() != 0:
            self.skipTest("needs root to make a character device")  # FIFOs and directories are tested anyway
        targets = self.special_targets()
        for kind, path in targets.items():
            with self.assertRaises(_output.OutputError) as caught:
                _output.write_text(path, "-o", "text")
            self.assertIn(f"-o {path}: exists and is not a regular file ({kind.strip()})", str(caught.exception))
        self.assert_untouched(targets)

    def test_fifo_and_directory_without_root(self) -> None:
        fifo, directory = self.dir / "fifo", self.dir / "dir"
        os.mkfifo(fifo)
        directory.mkdir()
        for path, kind in ((fifo, "a FIFO"), (directory, "a directory")):
            with self.assertRaises(_output.OutputError) as caught:
                _output.write_text(path, "--out", "text")
            self.assertIn(f"--out {path}: exists and is not a regular file ({kind})", str(caught.exception))
        self.assert_untouched({"a FIFO": fifo, "a directory": directory})

    def test_regular_files_are_replaced_whole_with_the_umask_mode(self) -> None:
        target = self.dir / "out.txt"
        target.write_text("old")
        old_umask = os.umask(0o027)
        try:
            _output.write_text(target, "-o", "new \u00e9")
        finally:
            os.umask(old_umask)
        self.assertEqual(target.read_text(encoding="utf-8"), "new \u00e9")
        self.assertEqual(stat.S_IMODE(target.stat().st_mode), 0o640)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["out.txt"])

    def test_a_failed_write_leaves_the_old_file_and_no_temporary(self) -> None:
        target = self.dir / "out.txt"
        target.write_text("old")
        with self.assertRaises(RuntimeError):
            with _output.AtomicFile(target, "-o") as out:
                out.file.write(b"half")
                raise RuntimeError("the writer failed")
        self.assertEqual(target.read_text(), "old")
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["out.txt"])
        with self.assertRaises(_output.OutputError) as caught:
            _output.write_text(self.dir / "no" / "such" / "dir.txt", "-o", "x")
        self.assertIn("cannot be written", str(caught.exception))

    def test_text_that_utf8_cannot_encode_is_a_bug_the_writer_shows(self) -> None:
        with self.assertRaises(UnicodeEncodeError):
            _output.write_text(self.dir / "x.txt", "-o", "a\udcffb")  # clean_text it first
        self.assertEqual(_output.clean_text("a\udcffb\ud800"), "a\ufffdb\ufffd")
        deep: Any = ["\udcff"]
        for _ in range(100_000):
            deep = [deep]
        doc = _output.clean({"k\udcff": deep, "ok": "fine"})
        self.assertEqual(set(doc), {"k\ufffd", "ok"})

    def test_converter_refuses_outputs_that_are_not_regular_files(self) -> None:
        source = self.dir / "snap.pickle"
        fx.write_pickle(source, fx.scenario()[0])
        targets = self.special_targets()
        for kind, path in targets.items():
            for flags in (("-o", path), ("-o", self.dir / "t.csv", "--facts", path)):
                done = python_script(CONVERTER, source, *flags)
                self.assert_refused(done, f"{flags[-2]} {path}: exists and is not a regular file ({kind.strip()})")
        self.assertFalse((self.dir / "t.csv").exists(), "refused before converting")
        self.assert_untouched(targets)

    # Not "needs matplotlib": CTest would count the whole class as skipped (SKIP_REGULAR_EXPRESSION).
    @unittest.skipUnless(report_reachable(), "no python with matplotlib for the report")
    def test_report_refuses_outputs_that_are_not_regular_files(self) -> None:
        targets = self.special_targets()
        for kind, path in targets.items():
            done = run(REPORT, COMPARE_DATA / "base.json", "-o", path)
            self.assert_refused(done, f"-o {path}: exists and is not a regular file ({kind.strip()})")
        self.assert_untouched(targets)
        out = self.dir / "report.html"
        out.write_text("old")
        done = run(REPORT, COMPARE_DATA / "base.json", "-o", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("memstress report", valid_utf8(out))


# --- the report ---------------------------------------------------------------------------------------------


@unittest.skipUnless(report_reachable(), "needs matplotlib (requirements.txt)")
class ReportInput(TempDir):
    def test_bad_files_exit_2_naming_the_file(self) -> None:
        for name, (path, words) in self.bad_json_inputs().items():
            with self.subTest(name):
                done = run(REPORT, COMPARE_DATA / "base.json", path, "-o", self.dir / "r.html")
                self.assert_refused(done, f"python3 -m memstress.report: {path}: ", words)
        self.assertFalse((self.dir / "r.html").exists())

    def test_fields_of_the_wrong_type_name_the_file_they_are_in(self) -> None:
        broken = self.write("broken-compare.json",
                            json.dumps({"schema": "memstress.compare/1", "rows": [{"metrics": 5}]}))
        good = self.write("good-compare.json", json.dumps({"schema": "memstress.compare/1", "rows": []}))
        done = run(REPORT, good, broken, COMPARE_DATA / "base.json", "-o", self.dir / "r.html")
        self.assert_refused(done, f"cannot draw from {broken}: TypeError")
        self.assertNotIn(str(good), done.stderr)  # the one that fails alone is named, not every input

    def test_non_utf8_names_and_lone_surrogates_make_valid_utf8_html(self) -> None:
        doc = json.loads((COMPARE_DATA / "base.json").read_text())
        doc["rows"][0]["device"]["label"] = "cuda:0"
        text = json.dumps(doc).replace('"bytes=64M pattern=random"', '"bytes=64M \\udcff pattern"')
        path = self.write("r\udcffun.json", text)  # a name with the byte 0xff
        out = self.dir / "report\udcff.html"
        done = run(REPORT, path, "-o", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        page = valid_utf8(out)
        self.assertIn("r\ufffdun.json", page)
        self.assertIn("bytes=64M \ufffd pattern", page)

    def test_an_unfinished_run_is_drawn_from_its_jsonl_and_said_to_be_unfinished(self) -> None:
        lines = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        self.assertIn('"type": "footer"', lines[-1])
        cases = {
            "finished.jsonl": ("\n".join(lines) + "\n", None),
            "unfinished.jsonl": ("\n".join(lines[:-1]) + "\n", "the run did not finish (its stream has no footer"),
            "killed.jsonl": ("\n".join(lines[:-2]) + "\n" + lines[-2][:200],
                             "its last line was cut short (the run was killed while writing it)"),
            "named-json.json": ("\n".join(lines[:-1]) + "\n", "the run did not finish"),  # told by content
        }
        for name, (text, note) in cases.items():
            with self.subTest(name):
                out = self.dir / f"{name}.html"
                done = run(REPORT, self.write(name, text), "-o", out)
                self.assertEqual(done.returncode, 0, done.stderr)
                page = valid_utf8(out)
                self.assertIn("<h2>Every row</h2>", page)
                if note is None:
                    self.assertNotIn("did not finish", page)
                    self.assertIn("3 rows", page)
                else:
                    self.assertIn(note, page)
                    self.assertIn(f"python3 -m memstress.report: note: {self.dir / name}: ", done.stderr)
                    self.assertIn("status running (did not finish)", page)

    def test_a_broken_stream_names_the_line(self) -> None:
        lines = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        cases = {
            "middle.jsonl": ([lines[0], lines[1][:100], *lines[2:]], "line 2: not JSON"),
            "second-header.jsonl": ([lines[0], lines[0], *lines[1:]],
                                    "line 2: expected a row or footer line, found \"type\": 'header'"),
            "untyped.jsonl": ([lines[0], "[1, 2]"], 'line 2: expected a row or footer line, found no "type"'),
        }
        for name, (content, words) in cases.items():
            with self.subTest(name):
                path = self.write(name, "\n".join(content) + "\n")
                self.assert_refused(run(REPORT, path, "-o", self.dir / "r.html"), f"{path}: {words}")


class ReportSweep(TempDir):
    """The report's reader and sections, in-process (under a python with matplotlib), over committed documents
    broken one thing at a time: each must load and draw, or raise BadInput (exit 2 naming the file), nothing
    else."""

    CASES = 90
    CHILD = "MEMSTRESS_AUDIT_SWEEP_CHILD"

    def test_mutations(self) -> None:
        try:
            import matplotlib
        except ImportError:
            # As the report does (_pyenv): under a python that has matplotlib, .venv's first.
            from memstress import _pyenv

            python = next((p for p in _pyenv.candidates(ROOT) if _pyenv._has(p, ["matplotlib"])), None)
            if python is None or os.environ.get(self.CHILD):
                self.skipTest("needs matplotlib (requirements.txt)")
            done = subprocess.run([python, "-m", "unittest", "-v", f"{__name__}.ReportSweep"], cwd=HERE,
                                  env={**os.environ, self.CHILD: "1"}, capture_output=True, text=True, timeout=280,
                                  check=False)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            return
        matplotlib.use("Agg")
        self.report = load_report_module()
        sources = [COMPARE_DATA / "base.json", COMPARE_DATA / "base.jsonl", COMPARE_DATA / "gbench-base.json",
                   H100 / "allocators-580.159.04" / "cnn_train-caching.json.xz", H100 / "devices-h100-580.159.04.json"]
        sources += sorted((H100 / "compare").glob("*.json"))[:1]
        # the sections of accept.py (accept's JUnit, and a run document of accept without it), memory.py and
        # links.py
        sources += [H100 / "accept-h100-580.159.04.xml", H100 / "accept-h100-580.159.04.json.xz",
                    H100 / "fragmentation-h100-580.159.04.json.xz",
                    ROOT / "results" / "h200x2" / "p2p-h200x2-580.159.04.json.xz"]
        outcomes = sweep(self, sources, self.CASES, self.check_one)
        self.assertGreater(outcomes["drawn"], 0)
        self.assertGreater(outcomes["refused"], 0)

    def check_one(self, path: Path) -> str:
        try:
            kind, doc = self.report.load(path)
            self.report.build([(str(path), kind, doc)])
        except self.report.BadInput as e:
            self.assertIn(str(path), str(e))
            return "refused"
        return "drawn"


# --- the validator ------------------------------------------------------------------------------------------


@unittest.skipUnless(has_jsonschema(), "needs jsonschema (requirements.txt)")
class ValidateInput(TempDir):
    def test_bad_files_exit_2_naming_the_file(self) -> None:
        for name, (path, words) in self.bad_json_inputs().items():
            with self.subTest(name):
                self.assert_refused(run(VALIDATE, path), f"{path}: ", words)

    def test_bad_streams_exit_2_naming_the_file(self) -> None:
        cases = {
            "deep.jsonl": (DEEP + "\n", "nested more than 128 levels deep (line 1"),
            "garbage.jsonl": (random.Random(3).randbytes(2000), "not UTF-8 text"),
            "empty.jsonl": ("", "empty: no header line"),
        }
        for name, (content, words) in cases.items():
            with self.subTest(name):
                path = self.write(name, content)
                self.assert_refused(run(VALIDATE, path), f"{path}: {words}")

    def test_an_unfinished_stream_is_valid_and_said_to_be_unfinished(self) -> None:
        lines = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        unfinished = self.write("unfinished.jsonl", "\n".join(lines[:-1]) + "\n")
        killed = self.write("killed.jsonl", "\n".join(lines[:-2]) + "\n" + lines[-2][:300])
        as_json = self.write("stream-named.json", "\n".join(lines[:-1]) + "\n")  # a stream, told by its first line
        done = run(VALIDATE, unfinished, killed, as_json)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn(f"{unfinished}: ok (3 rows, no footer: the run did not finish)", done.stdout)
        self.assertIn(f"{killed}: ok (2 rows, no footer: the run did not finish; its last line (line 4) was cut "
                      "short and is left out)", done.stdout)
        self.assertIn(f"{as_json}: ok (3 rows, no footer", done.stdout)
        middle = self.write("middle.jsonl", "\n".join([lines[0], lines[1][:100], *lines[2:]]) + "\n")
        self.assert_refused(run(VALIDATE, middle), f"{middle}: line 2: not JSON")

    def test_bad_files_exit_2_without_jsonschema_too(self) -> None:
        # The GPU image had no jsonschema (and no package index): what needs no schema must still be judged.
        import contextlib
        import unittest.mock

        from memstress import validate

        deep = self.write("deep.json", DEEP)
        good = COMPARE_DATA / "base.json"
        lines = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        middle = self.write("middle.jsonl", "\n".join([lines[0], lines[1][:100], *lines[2:]]) + "\n")
        killed = self.write("killed.jsonl", "\n".join(lines[:-2]) + "\n" + lines[-2][:300])
        array = self.write("array.json", "[1, 2]")
        for files, code, said in (([good, killed], 77, ""),
                                  ([good, deep], 2, f"{deep}: nested more than 128 levels deep"),
                                  ([middle], 2, f"{middle}: line 2: not JSON"),
                                  ([array], 2, f"{array}: not a memstress document (a JSON array, not an object)")):
            with self.subTest(code=code):
                out, err = io.StringIO(), io.StringIO()
                with unittest.mock.patch.dict(sys.modules, {"jsonschema": None, "referencing": None}), \
                        contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    self.assertEqual(validate.main([str(f) for f in files]), code)
                self.assertIn(said, out.getvalue())
                self.assertIn("jsonschema not installed", err.getvalue())

    def test_a_non_utf8_name_is_printed_escaped(self) -> None:
        path = self.write("b\udcffase.json", (COMPARE_DATA / "base.json").read_bytes())
        done = run(VALIDATE, path)  # stdout strict UTF-8 (STRICT_ENV): no UnicodeEncodeError
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("b\\udcffase.json: ok (3 rows)", done.stdout)

    def test_error_lines_are_bounded(self) -> None:
        doc = json.loads((COMPARE_DATA / "base.json").read_text())
        doc["rows"] = {str(i): "x" * 1000 for i in range(1000)}  # jsonschema's message holds the whole value
        done = run(VALIDATE, self.write("rows-object.json", json.dumps(doc)))
        self.assertEqual(done.returncode, 1)
        self.assertTrue(all(len(line) < 400 for line in done.stdout.splitlines()), done.stdout[:2000])


class ValidateSweep(TempDir):
    """The validator's checks, in-process, over committed files broken one thing at a time: each is
    valid, invalid (errors) or Unreadable (exit 2), nothing else."""

    CASES = 150

    def setUp(self) -> None:
        super().setUp()
        from memstress import validate

        modules = validate.import_jsonschema()
        if modules is None:
            self.skipTest("needs jsonschema (requirements.txt)")
        self.validate = validate
        self.run_v, self.line_v, self.replay_v = validate.load_schemas(*modules, validate.SCHEMA_DIR)

    def test_mutations(self) -> None:
        sources = [COMPARE_DATA / "base.json", COMPARE_DATA / "base.jsonl", H100 / "accept-h100-580.159.04.jsonl.xz",
                   H100 / "allocators-580.159.04" / "cnn_train-caching.json.xz"]
        outcomes = sweep(self, sources, self.CASES, self.check_one)
        self.assertGreater(outcomes["invalid"], 0)
        self.assertGreater(outcomes["unreadable"], 0)

    def check_one(self, path: Path) -> str:
        v = self.validate
        try:
            text = v.read_text(path)
            if path.suffix in v.STREAM_SUFFIXES:
                errors, _ = v.check_stream(path, self.line_v, text)
            else:
                errors, _ = v.check_document(path, self.run_v, self.replay_v, text)
        except v.Unreadable:
            return "unreadable"
        return "invalid" if errors else "valid"


# --- the converter -------------------------------------------------------------------------------------------


class ConverterInput(TempDir):
    """The converter: exit 2 naming the file (and where in it), never a traceback."""

    def refused(self, source: Path, *words: str, extra: tuple[str, ...] = ()) -> None:
        target = self.dir / "out.trace.csv"
        done = python_script(CONVERTER, source, "-o", target, "--facts", self.dir / "facts.json", *extra)
        self.assert_refused(done, str(source), *words)
        self.assertFalse(target.exists())
        self.assertEqual([p.name for p in self.dir.iterdir() if p.name.endswith(".tmp")], [])

    def snapshot(self, name: str, change: Any) -> Path:
        snapshot, _ = fx.scenario()
        change(snapshot)
        path = self.dir / name
        fx.write_pickle(path, snapshot)
        return path

    def test_corrupt_gzip(self) -> None:
        packed = bytearray(gzip.compress(pickle.dumps(fx.scenario()[0])))
        cut = self.write("cut.pickle.gz", bytes(packed[:-30]))
        packed[40] ^= 0xFF  # a flipped bit in the deflate stream: zlib.error, which is no OSError
        flipped = self.write("flipped.pickle.gz", bytes(packed))
        header_only = self.write("header.gz", b"\x1f\x8b\x08\x00")
        for path in (cut, flipped, header_only):
            with self.subTest(path.name):
                self.refused(path, "broken gzip file")
        empty = self.write("empty.gz", gzip.compress(b""))
        self.refused(empty, "not a PyTorch memory snapshot")

    def test_times_that_are_not_finite(self) -> None:
        for value in (float("nan"), float("inf"), -float("inf"), 1e300, 10**400):
            path = self.snapshot(f"time-{value!s:.8}.pickle",
                                 lambda s, value=value: s["device_traces"][0][0].__setitem__("time_us", value))
            with self.subTest(value):
                self.refused(path, "device_traces[0][0]: 'time_us' is", "not a time")
        header = "Thread,Time,Action,Pointer,Size,Stream\n"
        for value in ("nan", "inf", "-inf", "1e300"):
            path = self.write(f"rmm-{value}.csv", f"{header}1,1.0,allocate,0x10,100,0x0\n1,{value},free,0x10,100,0x0\n")
            with self.subTest(value):
                self.refused(path, f"{path}:3: cannot read", "not finite")

    def test_fields_of_the_wrong_type(self) -> None:
        cases = {
            "host_traces int": (lambda s: s.__setitem__("host_traces", 5), "'host_traces' is int 5, not a list"),
            "host_traces dict": (lambda s: s.__setitem__("host_traces", {"a": 1}), "'host_traces' is dict"),
            "host_segments str": (lambda s: s.__setitem__("host_segments", "x"), "'host_segments' is str"),
            "device_traces dict": (lambda s: s.__setitem__("device_traces", {}), "'device_traces' is not a list"),
            "segments str": (lambda s: s.__setitem__("segments", "x"), "'segments' is not a list"),
            "entry a list": (lambda s: s["device_traces"][0].__setitem__(0, [1]),
                             "device_traces[0][0]: expected a dict"),
            "time a string": (lambda s: s["device_traces"][0][0].__setitem__("time_us", "12"), "not a number"),
            "size a float": (lambda s: s["device_traces"][0][0].__setitem__("size", 1.5),
                             "'size' is 1.5, not an integer"),
            "size 2^80": (lambda s: s["device_traces"][0][0].__setitem__("size", 1 << 80), "beyond 64 bits"),
            "stream 2^64": (lambda s: s["device_traces"][0][0].__setitem__("stream", 1 << 64), "beyond 64 bits"),
            "device_free str": (lambda s: [e.__setitem__("device_free", "1") for e in s["device_traces"][0]
                                           if e["action"] == "oom"], "'device_free' is '1', not an integer"),
            "segment device -1": (lambda s: s["segments"][0].__setitem__("device", -1), "'device' is negative"),
            "block size -1": (lambda s: s["segments"][0]["blocks"][0].__setitem__("size", -1), "'size' is negative"),
            "requested -5": (lambda s: s["segments"][0]["blocks"][0].__setitem__("requested_size", -5),
                             "'requested_size' is negative"),
            "total_size None": (lambda s: s["segments"][0].__setitem__("total_size", None), "'total_size' is None"),
            "blocks missing": (lambda s: s["segments"][0].pop("blocks"), "no 'blocks' list"),
        }
        for name, (change, words) in cases.items():
            with self.subTest(name):
                self.refused(self.snapshot(name.replace(" ", "-") + ".pickle", change), words)

    def test_values_nested_deep_or_huge_are_described_briefly(self) -> None:
        deep = deep_pickle(b"K\x01", 100_000)
        for key_path, words in ((("device_traces", 0, 0, "addr"), "'addr' is [[[[[["),
                                (("device_traces", 0, 0, "time_us"), "'time_us' is [[[[[["),
                                (("segments", 0), "segments[0]: expected a dict, found list")):
            with self.subTest(key_path):
                path = self.write("deep.pickle", snapshot_with(key_path, deep))
                self.refused(path, words)
        key = b"}" + b")" + b"\x85" * 20_000 + b"K\x01s."  # a dict whose only key is a tuple 20,000 deep
        self.refused(self.write("deep-key.pickle", b"\x80\x02" + key), "no 'segments' nor 'device_traces'")
        huge = self.snapshot("huge.pickle", lambda s: s["device_traces"][0][0].__setitem__("addr", "x" * 10**6))
        done = python_script(CONVERTER, huge, "-o", self.dir / "t.csv")
        self.assert_refused(done, "'addr' is 'xxxx")
        self.assertLess(len(done.stderr), 400)

    def test_unusable_files(self) -> None:
        adir = self.dir / "snapshots"
        adir.mkdir()
        self.refused(adir, "cannot read")
        self.refused(self.write("empty.pickle", b""), "not a PyTorch memory snapshot")
        self.refused(self.write("garbage.pickle", random.Random(7).randbytes(5000)), "not a PyTorch memory snapshot")
        latin1 = b"Thread,Time,Action,Pointer,Size,Stream\n1,1.0,allocat\xe9,0x1,1,0\n"
        self.refused(self.write("rmm-latin1.csv", latin1), "an RMM log that is not UTF-8 text")
        header = "Thread,Time,Action,Pointer,Size,Stream\n"
        self.refused(self.write("rmm-size.csv", f"{header}1,1.0,allocate,0x10,{1 << 64},0x0\n"), "beyond 64 bits")
        self.refused(self.write("rmm-cut.csv", f"{header}1,1.0,allocate,0x10"), "fields where")

    def test_non_utf8_strings_and_names_are_written_as_valid_utf8(self) -> None:
        def strange(snapshot: dict) -> None:
            entry = next(e for e in snapshot["device_traces"][0] if e["action"] == "alloc")
            entry["frames"] = [{"filename": "project/tr\udce9in.py", "line": 7, "name": "st\udcffep"}]
            snapshot["allocator_settings"] = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:\ud800128"}
            snapshot["memstress"] = {"gpu": "H\udcff100", "batch": 8, "deep": [[1]], "big": 1 << 70}
        source = self.snapshot("sn\udcffap.pickle", strange)
        target, facts = self.dir / "o\udcffut.trace", self.dir / "facts.json"
        done = python_script(CONVERTER, source, "-o", target, "--facts", facts)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("sn\\udcffap.pickle", done.stderr)  # stderr escapes what UTF-8 cannot encode
        self.assertIn("converted from PyTorch memory snapshot sn\ufffdap.pickle", valid_utf8(target))
        document = json.loads(valid_utf8(facts))
        self.assertNotIn("\\ud", json.dumps(document).lower())  # no surrogate escapes, which strict readers refuse
        self.assertIn("project/tr\ufffdin.py", [s["filename"] for s in document["sites"]])
        self.assertEqual(document["alloc_conf"], "max_split_size_mb:\ufffd128")
        self.assertEqual(document["recorder"], {"gpu": "H\ufffd100", "batch": 8})
        rmm = self.write("log.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,1.0,allocate,0x10,100,0x0\n")
        refused = python_script(CONVERTER, rmm, "-o", self.dir / "t.csv", "--device", "cuda:\udcff")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("--device 'cuda:\ufffd': not UTF-8 text", refused.stderr)


class ConverterSweep(TempDir):
    """The converter, in-process, over the scenario's snapshot and an RMM log broken one thing at a time: each
    converts or raises InputError naming the file, nothing else."""

    CASES = 200

    def setUp(self) -> None:
        super().setUp()
        from memstress import convert as converter

        self.converter = converter

    def test_snapshot_mutations(self) -> None:
        rng = random.Random(2104)
        base, _ = fx.scenario()
        outcomes: dict[str, int] = {"converted": 0, "refused": 0}
        for case in range(self.CASES):
            snapshot = copy.deepcopy(base)
            description = mutate_value(rng, snapshot)
            path = self.dir / f"case{case}.pickle"
            path.write_bytes(pickle.dumps(snapshot))
            outcomes[self.check_one(path, description)] += 1
        for case in range(self.CASES // 4):  # bytes: cut short, flipped, gzip-wrapped and cut
            data = pickle.dumps(base)
            if case % 3 == 0:
                data = data[: rng.randrange(len(data))]
            elif case % 3 == 1:
                data = bytearray(data)
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                data = bytes(data)
            else:
                data = gzip.compress(data)[: rng.randrange(10, 200)]
            path = self.dir / f"bytes{case}.pickle"
            path.write_bytes(data)
            outcomes[self.check_one(path, f"bytes case {case}")] += 1
        self.assertGreater(outcomes["converted"], 0)
        self.assertGreater(outcomes["refused"], 0)

    def check_one(self, path: Path, description: str) -> str:
        stderr = io.StringIO()
        try:
            sys_stderr, sys.stderr = sys.stderr, stderr
            self.converter.convert(path, self.dir / "out.csv", None, self.dir / "facts.json")
        except self.converter.InputError as e:
            self.assertIn(str(path), str(e), description)
            return "refused"
        except Exception as e:  # noqa: BLE001 - the finding: anything else is a traceback for a user
            self.fail(f"{description}: {type(e).__name__}: {e}")
        finally:
            sys.stderr = sys_stderr
        valid_utf8(self.dir / "out.csv")
        json.loads(valid_utf8(self.dir / "facts.json"))
        return "converted"


# --- the mutation sweep's pieces ------------------------------------------------------------------------------


SENTINEL = "@@deep@@"  # in a JSON text, replaced by an array 100,000 levels deep (json.dumps could not write it)


def other_value(rng: random.Random, old: Any, *, text: bool) -> Any:
    deep: Any = 1
    for _ in range(rng.choice((3, 127, 129))):  # pickle.dumps and json.dumps recurse: SENTINEL goes deeper
        deep = [deep]
    choices = [7, -1, 2**63, 2**70, 1.5, float("nan"), float("inf"), "text", "", "\udcff", True, None, [], {},
               ["a"], {"k": "v"}, [[["x"]]], deep, "x" * 5000] + ([SENTINEL] if text else [])
    return rng.choice([c for c in choices if type(c) is not type(old)] or choices)


def mutate_value(rng: random.Random, doc: Any, *, text: bool = False) -> str:
    """Changes one value of `doc` in place (another type, deleted): returns what it did."""
    paths = paths_of(doc)
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[key]
        return f"deleted {path}"
    parent[key] = other_value(rng, parent[key], text=text)
    return f"{path} := {type(parent[key]).__name__}"


def plain_suffix(source: Path) -> str:
    """A committed file's kind by its name, compressed (NAME.json.xz) or not: .json, .jsonl, .xml."""
    return Path(source.name.removesuffix(".xz")).suffix


def mutated_text(rng: random.Random, source: Path) -> tuple[bytes, str]:
    """One broken version of a committed JSON (or JSON Lines) file, as it reads decompressed, and what was
    broken."""
    data = records.text(source).encode()
    how = rng.random()
    if how < 0.15:
        cut = rng.randrange(len(data))
        return data[:cut], f"cut at {cut}"
    if how < 0.25:
        flipped = bytearray(data)
        at = rng.randrange(len(data))
        flipped[at] = rng.choice((0xFF, 0xC3, 0x00, ord("["), ord('"')))
        return bytes(flipped), f"byte {at} replaced"
    if plain_suffix(source) == ".xml":
        return mutated_xml(rng, data.decode())
    if plain_suffix(source) == ".jsonl":
        lines = data.decode().splitlines()
        i = rng.randrange(len(lines))
        item = json.loads(lines[i])
        what = mutate_value(rng, item, text=True) if paths_of(item) else "no change"
        lines[i] = deepen(json.dumps(item))
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), f"line {i + 1}: {what}"
    doc = json.loads(data)
    what = mutate_value(rng, doc, text=True)
    return deepen(json.dumps(doc)).encode("utf-8", "surrogatepass"), what


def mutated_xml(rng: random.Random, text: str) -> tuple[bytes, str]:
    """One broken version of a committed JUnit XML file (an accept run's), and what was broken."""
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    how = rng.random()
    if how < 0.3:
        values = list(re.finditer(r'="[^"]*"', text))
        at = rng.choice(values)
        value = rng.choice(("", "-1", "x", "99", "&lt;", "&#0;", "&lol;", "1e400", "\u00e9"))
        return (text[:at.start()] + f'="{value}"' + text[at.end():]).encode(), f"{at[0][:40]} := {value!r}"
    if how < 0.5:
        del lines[i]
        what = f"line {i + 1} deleted"
    elif how < 0.7:
        lines.insert(i, lines[i])
        what = f"line {i + 1} twice"
    elif how < 0.85:
        lines[i] = "<a>" * 100_000 + lines[i] + "</a>" * 100_000
        what = f"line {i + 1} nested 100,000 deep"
    else:
        lines.insert(1, '<!DOCTYPE t [<!ENTITY a "aaaa">]>')
        what = "a DOCTYPE"
    return ("\n".join(lines) + "\n").encode(), what


def deepen(text: str) -> str:
    return text.replace(f'"{SENTINEL}"', "[" * 100_000 + "]" * 100_000)


def sweep(test: TempDir, sources: list[Path], cases: int, check: Any) -> dict[str, int]:
    """`cases` broken files, each given to `check(path)`, which returns its outcome; an exception other than the
    refusal the check expects fails the test with the mutation that caused it."""
    rng = random.Random(21)
    outcomes: dict[str, int] = {}
    for case in range(cases):
        source = sources[case % len(sources)]
        data, what = mutated_text(rng, source)
        path = test.dir / f"case{case}{plain_suffix(source)}"
        path.write_bytes(data)
        try:
            outcome = check(path)
        except Exception as e:  # noqa: BLE001 - the finding
            test.fail(f"{source.name}, {what}: {type(e).__name__}: {str(e)[:300]}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


if __name__ == "__main__":
    unittest.main()
