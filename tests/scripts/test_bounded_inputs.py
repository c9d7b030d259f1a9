"""Inputs that cost more than their size says, or that are not what memstress reads (docs/limits.md): each ends in
one line naming the file and exit code 2, quickly, and nothing is written but what was asked.

- The converter (python/memstress/convert.py, torch_snapshot.py) on a pickle whose device traces (or segments'
  blocks) share one list by the pickle's memo, nested so that what it reaches multiplies: 13 KB reaching
  10,000,000 trace entries, 40 KB reaching 100,000,000 (Note [Snapshots that expand]). Refused before a single
  entry is walked: in well under a second, in megabytes.
- The converter on a snapshot whose recorder's note says the GPU had 80 TiB: refused naming the note, where
  `memstress doctor` named a `--device sim:80T` the user never gave (Note [The recorder's capacity]).
- The validator (python/memstress/validate.py) and the report (python/memstress/report) on a FIFO with no writer,
  /dev/zero, a sparse file beyond 256 MiB, an xz or gzip file of a few kilobytes that inflates past 256 MiB, one
  cut short or damaged, a number beyond a double (1e999), a key twice in one object and a NaN: read by memstress's
  own rules (_json.read_input, _json.strict_loads), as `memstress compare` reads them; the same results xz- or
  gzip-compressed read as the plain ones.

No memstress binary; the report's class skips without matplotlib, the validator's without jsonschema. One CTest
test per class (tests/scripts/CMakeLists.txt).
"""

from __future__ import annotations

import functools
import gzip
import json
import lzma
import os
import pickle
import subprocess
import sys
import tempfile
import time
import tracemalloc
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPARE_DATA = HERE.parents[1] / "tests" / "data" / "compare"
sys.path.insert(0, str(HERE))

import memstress_package  # noqa: E402
import snapshot_fixtures as fx  # noqa: E402

ENV = memstress_package.environment({**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
PROMPT_S = 30  # a command that reads a FIFO or /dev/zero returns within this, or the test fails (it hung)


def run(module: str, *args: str | Path, python: str = "python3") -> tuple[subprocess.CompletedProcess[str], float]:
    """A program of the package as users type it, and how long it took; a hang is a TimeoutExpired (a failure)."""
    start = time.monotonic()
    done = subprocess.run(memstress_package.command(module, *args, python=python), capture_output=True, text=True,
                          check=False, timeout=PROMPT_S, env=ENV)
    return done, time.monotonic() - start


@functools.lru_cache(maxsize=1)
def report_reachable() -> bool:
    """Whether the report finds a python with matplotlib (it exits 3 naming it otherwise)."""
    return run("memstress.report", "/nonexistent/input.json", "-o", "/nonexistent/report.html")[0].returncode != 3


@functools.lru_cache(maxsize=1)
def has_jsonschema() -> bool:
    return run("memstress.validate", COMPARE_DATA / "base.json")[0].returncode != 77


class TempDir(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="memstress-bounded-")
        self.dir = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.dir / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def assert_refused(self, done: subprocess.CompletedProcess[str], *words: str) -> None:
        """Exit 2, one line, no traceback, holding each of `words`."""
        said = done.stdout + done.stderr
        self.assertEqual(done.returncode, 2, said)
        self.assertNotIn("Traceback", said)
        lines = [line for line in said.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, lines)
        for word in words:
            self.assertIn(word, said)


# --- snapshots ----------------------------------------------------------------------------------------------


ENTRY = {"action": "alloc", "addr": 0x7F0000000000, "size": 512, "stream": 0, "time_us": fx.EPOCH_US}


def trace_bomb(side: int) -> bytes:
    """device_traces: one list of `side` entries (one dict, referred to `side` times) put `side` times in: the
    pickle holds each once and refers to it again by its memo, so it reaches side^2 entries."""
    trace = [dict(ENTRY)] * side
    return pickle.dumps({"segments": [], "device_traces": [trace] * side}, protocol=4)


def block_bomb(side: int) -> bytes:
    """The same through the segments: one segment of `side` blocks (one list), listed `side` times."""
    block = {"address": 0x7F0000000000, "size": 512, "requested_size": 512, "state": "active_allocated",
             "frames": []}
    segment = {"device": 0, "address": 0x7F0000000000, "total_size": 2 << 20, "stream": 0, "is_expandable": False,
               "blocks": [block] * side}
    return pickle.dumps({"segments": [segment] * side, "device_traces": [[]]}, protocol=4)


class SnapshotExpansion(TempDir):
    """Note [Snapshots that expand] (python/memstress/torch_snapshot.py)."""

    def convert_in_process(self, data: bytes) -> tuple[str, float, int]:
        """The refusal's message, the seconds it took and the peak of Python's memory while converting."""
        from memstress import convert

        source = self.write("bomb.pickle", data)
        tracemalloc.start()
        start = time.perf_counter()
        try:
            with self.assertRaises(convert.InputError) as caught:
                convert.convert(source, self.dir / "t.csv", facts=self.dir / "f.json")
            took = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertFalse((self.dir / "t.csv").exists())
        self.assertFalse((self.dir / "f.json").exists())
        return str(caught.exception), took, peak

    def test_a_shared_trace_list_is_refused_at_once(self) -> None:
        for side, entries in ((3163, "10,004,569"), (10_000, "100,000,000")):
            with self.subTest(entries=entries):
                data = trace_bomb(side)
                self.assertLess(len(data), 41_000)  # 13 KB and 40 KB
                message, took, peak = self.convert_in_process(data)
                self.assertIn(f"reaches {entries} trace entries and 0 blocks", message)
                self.assertIn("more than the 4,096 a snapshot of", message)
                self.assertLess(took, 0.5)
                self.assertLess(peak, 16 << 20)

    def test_shared_blocks_are_refused_at_once(self) -> None:
        message, took, peak = self.convert_in_process(block_bomb(10_000))
        self.assertIn("reaches 0 trace entries and 100,000,000 blocks", message)
        self.assertLess(took, 0.5)
        self.assertLess(peak, 16 << 20)

    def test_the_command_says_so_in_one_line_and_writes_nothing(self) -> None:
        source = self.write("bomb.pickle", trace_bomb(10_000))
        done, took = run("memstress.convert", source, "-o", self.dir / "t.trace.csv.gz", "--facts",
                         self.dir / "f.json", python=sys.executable)
        self.assert_refused(done, f"python3 -m memstress.convert: error: {source}: reaches 100,000,000 trace entries",
                            "docs/limits.md")
        self.assertLess(took, 10)  # a python's start included; the refusal itself is milliseconds
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["bomb.pickle"])

    def test_the_budget(self) -> None:
        from memstress import convert, torch_snapshot

        self.assertEqual(torch_snapshot.item_budget(0), 4096)
        self.assertEqual(torch_snapshot.item_budget(1 << 20), (1 << 20) // 16)
        self.assertEqual(torch_snapshot.item_budget(convert.MAX_SNAPSHOT_BYTES), 1 << 25)  # 1 GiB at 32 bytes each

    def test_what_real_snapshots_share_still_converts(self) -> None:
        # PyTorch shares one list of frames among the entries of one stack, and a snapshot's entries are its
        # own dicts: 20,000 entries that refer to one list of 10,000 frames (200,000,000 frames reached) convert.
        alloc = fx.FakeCachingAllocator()
        alloc.recording = True
        frames = fx.frames_at("model.py", 42, "forward") * 5000
        for _ in range(10_000):
            alloc.free(0, alloc.malloc(0, 4096, frames=frames))
        snapshot = alloc.snapshot()
        source = self.write("shared.pickle", pickle.dumps(snapshot, protocol=4))
        done, _ = run("memstress.convert", source, "-o", self.dir / "t.csv", "--facts", self.dir / "f.json",
                      python=sys.executable)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(json.loads((self.dir / "f.json").read_text())["sites"][0]["where"].endswith(
            "model.py:42 in forward"))


class RecorderCapacity(TempDir):
    """Note [The recorder's capacity] (python/memstress/torch_snapshot.py)."""

    def snapshot_noting(self, **notes: object) -> Path:
        snapshot = fx.training_snapshot(1)
        snapshot["memstress"].update(notes)
        path = self.dir / "snap.pickle"
        fx.write_pickle(path, snapshot)
        return path

    def test_a_gpu_of_80_tib_is_refused_naming_the_note(self) -> None:
        tib80 = 80 << 40
        for key, notes in (("allocator_capacity", {"allocator_capacity": tib80}),
                           ("device_total", {"device_total": tib80}),
                           ("limit.bytes", {"limit": {"bytes": tib80, "source": "device"}})):
            with self.subTest(key):
                source = self.snapshot_noting(**notes)
                done, _ = run("memstress.convert", source, "-o", self.dir / "t.csv", "--facts", self.dir / "f.json",
                              python=sys.executable)
                self.assert_refused(done, f"{source}: the recorder's note (the snapshot's 'memstress' key) says "
                                          f"{key} is 80.00 TiB ({tib80} bytes), more than the 8.00 TiB")
                self.assertNotIn("--device", done.stderr)
                self.assertFalse((self.dir / "t.csv").exists())
                self.assertFalse((self.dir / "f.json").exists())

    def test_8_tib_is_kept(self) -> None:
        tib8 = 8 << 40
        source = self.snapshot_noting(allocator_capacity=tib8, device_total=tib8, limit={"bytes": tib8})
        done, _ = run("memstress.convert", source, "-o", self.dir / "t.csv", "--facts", self.dir / "f.json",
                      python=sys.executable)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads((self.dir / "f.json").read_text())["recorder"]["allocator_capacity"], tib8)


# --- results files: the validator and the report ----------------------------------------------------------


@functools.lru_cache(maxsize=1)
def inflating_xz() -> bytes:
    """257 MiB of zero bytes, xz-compressed a piece at a time: 40 KB. (Gzip's bound is the same code, tested in
    process on a small limit: test_the_bound_holds_in_pieces.)"""
    piece = bytes(1 << 20)
    packer = lzma.LZMACompressor(preset=0)
    return b"".join([packer.compress(piece) for _ in range(257)] + [packer.flush()])


def compressed_copies(directory: Path) -> list[Path]:
    """tests/data/compare's run document and stream, each xz- and gzip-compressed, in `directory`."""
    out = []
    for name in ("base.json", "base.jsonl"):
        plain = (COMPARE_DATA / name).read_bytes()
        for suffix, packed in ((".xz", lzma.compress(plain)), (".gz", gzip.compress(plain, mtime=0))):
            out.append(directory / (name + suffix))
            out[-1].write_bytes(packed)
    return out


class ResultsFiles(TempDir):
    def bad_files(self) -> dict[str, tuple[Path, str]]:
        """name -> (file, words its refusal holds): what memstress's own reader refuses, exit 2. The values are
        put where the schema takes a number (a metric's median), so that only the reading can refuse them."""
        doc = (COMPARE_DATA / "base.json").read_text()
        median = '"median": 0.145,'
        at = doc.index(median) + len('"median": ')
        where = f"(line {doc.count(chr(10), 0, at) + 1}, column {at - doc.rfind(chr(10), 0, at)})"

        def median_is(text: str) -> str:
            return doc.replace(median, f'"median": {text},', 1)

        fifo = self.dir / "fifo.json"
        os.mkfifo(fifo)  # no writer: opened without blocking, refused by its kind
        sparse = self.dir / "sparse.json"
        with open(sparse, "wb") as f:
            f.truncate(300 << 20)  # 300 MiB of nothing on disk
        stream = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        caching = '"allocator": "caching"'
        packed = lzma.compress((COMPARE_DATA / "base.json").read_bytes())
        return {
            "a FIFO": (fifo, "cannot be read: a FIFO, not a regular file"),
            "/dev/zero": (Path("/dev/zero"), "cannot be read: a character device, not a regular file"),
            "300 MiB": (sparse, "300.00 MiB, larger than the 256.00 MiB"),
            "xz of 257 MiB": (self.write("inflates.json.xz", inflating_xz()),
                              "decompresses to more than the 256.00 MiB a"),
            "xz cut short": (self.write("cut.json.xz", packed[: len(packed) // 2]), "xz: cut short"),
            "xz damaged": (self.write("damaged.json.xz", packed[:40] + bytes(40) + packed[80:]),
                           "xz: damaged"),
            "gzip cut short": (self.write("cut.json.gz", gzip.compress(packed)[:30]), "gzip: damaged or cut short"),
            "1e999": (self.write("overflow.json", median_is("1e999")), f"1e999 {where}: a number too large for a double"),
            "-1e999": (self.write("overflow-negative.json", median_is("-1e999")), f"-1e999 {where}"),
            "an integer of 400 digits": (self.write("long.json", median_is("1" + "0" * 400)),
                                         f"... {where}: a number too large for a double"),
            "a key twice": (self.write("twice.json", median_is("0.145, " + median[:-1])),
                            'key "median" twice in one object'),
            "rows twice": (self.write("rows-twice.json", doc.rstrip()[:-1] + ', "rows": []}\n'), 'key "rows" twice'),
            "NaN": (self.write("nan.json", median_is("NaN")), f"NaN {where}"),
            "a key twice in a stream's last line": (
                self.write("twice.jsonl", "\n".join(stream[:3] + [stream[3].replace(caching, f"{caching}, {caching}")])),
                'line 4: key "allocator" twice in one object'),
        }

    def check_all(self, refusal) -> None:
        for name, (path, words) in self.bad_files().items():
            with self.subTest(name):
                refusal(path, words)


@unittest.skipUnless(has_jsonschema(), "needs jsonschema (requirements.txt)")
class ValidateReads(ResultsFiles):
    """python3 -m memstress.validate FILE refuses what memstress refuses, promptly."""

    def test_bad_files_exit_2_naming_the_file(self) -> None:
        def refused(path: Path, words: str) -> None:
            done, took = run("memstress.validate", path)
            self.assert_refused(done, f"{path}: ", words)
            self.assertLess(took, PROMPT_S)

        self.check_all(refused)

    def test_a_stream_cut_short_in_a_nan_is_read_as_memstress_reads_it(self) -> None:
        # `memstress compare` reads a last line that does not parse (a NaN, 1e999: not JSON to it) as cut short.
        stream = (COMPARE_DATA / "base.jsonl").read_text().splitlines()
        for value in ("NaN", "1e999"):
            path = self.write("cut.jsonl", "\n".join(stream[:3] + [stream[3].replace("{", f'{{"x": {value}, ', 1)]))
            done, _ = run("memstress.validate", path)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertIn("its last line (line 4) was cut short and is left out", done.stdout)

    def test_good_files_still_read(self) -> None:
        for name in ("base.json", "base.jsonl"):
            done, _ = run("memstress.validate", COMPARE_DATA / name)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def test_compressed_files_read_as_the_plain_ones(self) -> None:
        plain, _ = run("memstress.validate", COMPARE_DATA / "base.json", COMPARE_DATA / "base.jsonl")
        packed = compressed_copies(self.dir)
        done, _ = run("memstress.validate", *packed)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        notes = [line.split(": ", 1)[1] for line in done.stdout.splitlines()]
        self.assertEqual(notes, [line.split(": ", 1)[1] for line in plain.stdout.splitlines() for _ in (0, 1)])

    def test_the_bound_holds_in_pieces(self) -> None:
        from memstress import _json

        text = (COMPARE_DATA / "base.json").read_bytes()
        for packed in (lzma.compress(text), lzma.compress(text[:100]) + bytes(4) + lzma.compress(text[100:]),
                       gzip.compress(text)):
            self.assertEqual(_json.decompressed(packed, limit=len(text)), text)
            with self.assertRaisesRegex(_json.Unreadable, "decompresses to more than"):
                _json.decompressed(packed, limit=len(text) - 1)
        self.assertEqual(_json.decompressed(text), text)  # neither: as it is


# Not "needs matplotlib": CTest would count the whole class as skipped (SKIP_REGULAR_EXPRESSION).
@unittest.skipUnless(report_reachable(), "no python with matplotlib for the report")
class ReportReads(ResultsFiles):
    """python3 -m memstress.report FILE -o OUT refuses what memstress refuses, promptly, and writes no OUT."""

    def test_bad_files_exit_2_naming_the_file(self) -> None:
        out = self.dir / "r.html"

        def refused(path: Path, words: str) -> None:
            done, took = run("memstress.report", COMPARE_DATA / "base.json", path, "-o", out)
            self.assert_refused(done, f"python3 -m memstress.report: {path}: ", words)
            self.assertLess(took, PROMPT_S)
            self.assertFalse(out.exists())

        self.check_all(refused)

    def test_compressed_files_read_as_the_plain_ones(self) -> None:
        done, _ = run("memstress.report", *compressed_copies(self.dir), "-o", self.dir / "r.html")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("base.json.xz", (self.dir / "r.html").read_text())

    def test_google_benchmark_json_may_hold_nan(self) -> None:
        # Google Benchmark writes NaN and Infinity bare; memstress reads them there, and only there.
        bench = json.loads((COMPARE_DATA / "gbench-base.json").read_text())
        bench["benchmarks"][0]["cv_extra"] = float("nan")
        path = self.write("gbench-nan.json", json.dumps(bench))
        self.assertIn("NaN", path.read_text())
        done, _ = run("memstress.report", path, "-o", self.dir / "r.html")
        self.assertEqual(done.returncode, 0, done.stderr)
        bench["schema"] = "memstress.run/1"
        done, _ = run("memstress.report", self.write("run-nan.json", json.dumps(bench)), "-o", self.dir / "s.html")
        self.assert_refused(done, "run-nan.json: NaN (line 1, column", "memstress results hold no NaN or Infinity")


if __name__ == "__main__":
    unittest.main()
