"""Tests of the snapshot converter, python/memstress/convert.py (stdlib unittest; CTest runs each class as one test).

The converter runs as users run it, as a separate process: exit codes, stderr, files. Its input comes
from snapshot_fixtures (synthetic snapshots with PyTorch's exact structure) and its output is checked
line by line and by trace_check, which applies memstress's own trace reader's rules.
"""

from __future__ import annotations

import copy
import gzip
import os
import pickle
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import memstress_package  # noqa: E402
import snapshot_fixtures as fx  # noqa: E402
from trace_check import Trace, parse_trace  # noqa: E402

S1, S2 = fx.SIDE_STREAM, fx.DEV1_STREAM

# The scenario of snapshot_fixtures.scenario(), converted: every line checked by hand against the
# story told there (time_us advances 3 us per recorded entry; time_ns counts from the first entry).
SCENARIO_LINES = [
    # Synthesized at time 0: segments first ...
    "0,0,segment_alloc,0,4194304,0,cuda:0",          # B's segment, freed in the trace
    "1,0,segment_alloc,1,2097152,0,cuda:0",          # in the snapshot, never allocated in the trace
    f"2,0,segment_alloc,2,2097152,{S2},cuda:1",
    # ... then blocks: freed in the trace (A, C, B), live at the end (K), pending at the end (D).
    "3,0,alloc,0,1000,0,cuda:0",
    f"4,0,alloc,1,5000,{S2},cuda:1",
    "5,0,alloc,2,3145728,0,cuda:0",
    "6,0,alloc,3,512,0,cuda:0",
    "7,0,alloc,4,5000,0,cuda:0",
    "8,0,free,4,5000,0,cuda:0",
    # Recorded.
    "9,0,alloc,5,4096,0,cuda:0",                     # E
    f"10,3000,segment_alloc,3,2097152,{S1},cuda:0",  # F needs a segment of its stream's own
    f"11,6000,alloc,6,1000001,{S1},cuda:0",          # F: the requested size, not the rounded one
    f"12,9000,alloc,7,12345,{S2},cuda:1",            # H, on the other device
    "13,12000,free,0,1000,0,cuda:0",                 # A, allocated before the trace
    "14,15000,free_completed,0,1000,0,cuda:0",
    "15,18000,free,5,4096,0,cuda:0",                 # E
    "16,21000,free_completed,5,4096,0,cuda:0",
    "17,24000,alloc,8,700,0,cuda:0",                 # G, at A's address: a new id
    f"18,27000,free,6,1000001,{S1},cuda:0",          # F freed while the side stream uses it ...
    f"19,30000,free,1,5000,{S2},cuda:1",             # C
    f"20,33000,free_completed,1,5000,{S2},cuda:1",
    f"21,86000,free_completed,6,1000001,{S1},cuda:0",  # ... and reusable 59 us later
    "22,89000,oom,,85899345920,0,cuda:0",
    "23,92000,free,2,3145728,0,cuda:0",              # B
    "24,95000,free_completed,2,3145728,0,cuda:0",
    "25,98000,segment_free,0,4194304,0,cuda:0",      # empty_cache
    f"26,101000,segment_free,3,2097152,{S1},cuda:0",
]


def run_converter(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(memstress_package.command("memstress.convert", *args, python=sys.executable),
                          capture_output=True, text=True, timeout=120, check=False, env=memstress_package.environment())


def data_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()[2:] if line and not line.startswith("#")]


class TempDirTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="memstress-snapshot-test-")
        self.dir = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def convert(self, snapshot: object, name: str = "snap.pickle", *extra: str) -> tuple[str, Trace, str]:
        """Pickles `snapshot`, converts it (expecting success); returns (trace text, parsed, stderr)."""
        source = self.dir / name
        fx.write_pickle(source, snapshot)
        target = self.dir / "out.trace.csv"
        done = run_converter(source, "-o", target, *extra)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        text = target.read_text()
        return text, parse_trace(text, target.name), done.stderr


class SnapshotConversion(TempDirTest):
    """The scenario: two devices, three streams, a late start, a pending free, an oom, segments."""

    def test_lines(self) -> None:
        snapshot, _ = fx.scenario()
        text, _, _ = self.convert(snapshot)
        self.assertEqual(data_lines(text), SCENARIO_LINES)

    def test_reads_as_a_v1_trace(self) -> None:
        _, trace, _ = self.convert(fx.scenario()[0])
        self.assertEqual([e.action for e in trace.events].count("alloc"), 9)
        self.assertEqual(trace.skipped, {"free_completed": 5, "segment_alloc": 4, "segment_free": 2})
        # Live at the end: K and G on cuda:0, H on cuda:1 (D was freed; its completion is pending).
        self.assertEqual(trace.live, {3: 512, 7: 12345, 8: 700})

    def test_header_comments(self) -> None:
        text, trace, _ = self.convert(fx.scenario()[0])
        self.assertTrue(text.startswith("# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n"))
        self.assertIn("the first 9 lines (time 0) are synthesized", "\n".join(trace.comments))
        self.assertIn("oom: cudaMemGetInfo reported 128974848 bytes free", trace.comments)

    def test_summary(self) -> None:
        _, _, stderr = self.convert(fx.scenario()[0])
        for expected in ("27 lines", "alloc 9", "free 6", "free_completed 5", "segment_alloc 4", "oom 1",
                         "devices: cuda:0, cuda:1", f"streams: 0, {S1}, {S2}",
                         "synthesized at time 0: 8",
                         "3 allocations made before the trace began, freed in it",
                         "1 blocks live in the snapshot, allocated before the trace began",
                         "1 blocks freed before the trace began, still pending in the snapshot",
                         "input left out: snapshot 2"):
            self.assertIn(expected, stderr)

    def test_trace_entirely_recorded(self) -> None:
        """Recording from the very start: nothing is synthesized, and the sizes are the requested ones."""
        fake = fx.FakeCachingAllocator()
        fake.recording = True
        a = fake.malloc(0, 100)
        b = fake.malloc(0, 2_000_000)
        fake.free(0, a)
        _, trace, stderr = self.convert(fake.snapshot())
        self.assertIn("synthesized at time 0: none", stderr)
        self.assertEqual([(e.action, e.id, e.nbytes) for e in trace.events],
                         [("alloc", 0, 100), ("alloc", 1, 2_000_000), ("free", 0, 100)])
        self.assertEqual(trace.live, {1: 2_000_000})
        del b

    def test_rounded_sizes_of_live_blocks_come_from_the_snapshot(self) -> None:
        """Traces that carry rounded sizes: blocks live at the end get their requested_size back."""
        snapshot, _ = fx.scenario(rounded_trace_sizes=True)
        text, trace, stderr = self.convert(snapshot)
        self.assertEqual(trace.live[8], 700)  # G: 1024 in the trace, 700 requested
        self.assertEqual(trace.live[7], 12345)  # H: 12800 in the trace
        self.assertIn("17,24000,alloc,8,700,0,cuda:0", data_lines(text))
        self.assertIn("live block sizes taken from the snapshot's requested_size", stderr)
        # Freed blocks keep what the trace said (nothing better is known).
        self.assertIn("11,6000,alloc,6,1000448,", "\n".join(data_lines(text)))


class EdgeCases(TempDirTest):
    """What real snapshots can hold beyond the scenario."""

    def test_time_going_back_is_clamped_and_counted(self) -> None:
        snapshot, _ = fx.scenario()
        entries = snapshot["device_traces"][0]
        entries[5]["time_us"] = entries[4]["time_us"] - 2  # earlier than the entry before it
        text, trace, stderr = self.convert(snapshot)
        self.assertIn("times clamped to keep them non-decreasing: 1 (at most 2000 ns back)", stderr)
        times = [e.time_ns for e in trace.lines]
        self.assertEqual(times, sorted(times))

    def test_entries_without_time(self) -> None:
        snapshot, _ = fx.scenario()
        for entries in snapshot["device_traces"]:
            for entry in entries:
                del entry["time_us"]
        _, trace, stderr = self.convert(snapshot)
        self.assertIn("entries without time_us", stderr)
        self.assertEqual({e.time_ns for e in trace.lines}, {0})

    def test_ring_buffer_that_wrapped(self) -> None:
        """max_entries kept only the newest entries: the frees of lost allocs get synthesized ones."""
        fake = fx.FakeCachingAllocator()
        fake.recording = True
        blocks = [fake.malloc(0, 1000 + i) for i in range(4)]
        for block in blocks:
            fake.free(0, block)
        snapshot = fake.snapshot()
        snapshot["device_traces"][0] = snapshot["device_traces"][0][5:]  # segment_alloc + 4 allocs lost
        _, trace, stderr = self.convert(snapshot)
        self.assertIn("4 allocations made before the trace began, freed in it", stderr)
        self.assertEqual(trace.live, {})
        self.assertEqual([e.nbytes for e in trace.events if e.action == "alloc"], [1000, 1001, 1002, 1003])

    def test_free_completed_without_free_requested(self) -> None:
        """skip_actions=['free_requested']: the free is taken at its completion."""
        fake = fx.FakeCachingAllocator()
        fake.recording = True
        fake.free(0, fake.malloc(0, 4000))
        snapshot = fake.snapshot()
        snapshot["device_traces"][0] = [e for e in snapshot["device_traces"][0]
                                        if e["action"] != "free_requested"]
        text, trace, stderr = self.convert(snapshot)
        self.assertEqual([(e.action, e.id) for e in trace.lines[1:]],
                         [("alloc", 0), ("free", 0), ("free_completed", 0)])
        self.assertIn("free_completed without free_requested", stderr)

    def test_unknown_actions_and_keys_are_left_out(self) -> None:
        snapshot, _ = fx.scenario()
        snapshot["device_traces"][0].insert(3, {"action": "annotate", "addr": 1, "size": 0, "stream": 0,
                                                "time_us": snapshot["device_traces"][0][3]["time_us"],
                                                "user_metadata": "phase=fwd"})
        for entry in snapshot["device_traces"][0]:
            entry.update(compile_context="N/A", user_metadata="", frames=[])  # as PyTorch 2.11 writes
        snapshot["external_annotations"] = []
        text, _, stderr = self.convert(snapshot)
        self.assertEqual(data_lines(text), SCENARIO_LINES)
        self.assertIn("annotate 1", stderr)

    def test_expandable_segments(self) -> None:
        """segment_map/unmap lines keep their size and have no id; expandable segments are not synthesized."""
        snapshot = {
            "segments": [{"device": 0, "address": 1 << 40, "total_size": 20 << 20, "stream": 0,
                          "is_expandable": True, "segment_type": "large", "allocated_size": 0,
                          "active_size": 0, "requested_size": 0, "segment_pool_id": (0, 0), "frames": [],
                          "blocks": [{"address": 1 << 40, "size": 20 << 20, "requested_size": 0,
                                      "state": "inactive", "frames": []}]}],
            "device_traces": [[
                {"action": "segment_map", "addr": 1 << 40, "size": 20 << 20, "stream": 0, "time_us": 10},
                {"action": "alloc", "addr": 1 << 40, "size": 5 << 20, "stream": 0, "time_us": 11},
                {"action": "free_requested", "addr": 1 << 40, "size": 5 << 20, "stream": 0, "time_us": 12},
                {"action": "free_completed", "addr": 1 << 40, "size": 5 << 20, "stream": 0, "time_us": 13},
                {"action": "segment_unmap", "addr": 1 << 40, "size": 20 << 20, "stream": 0, "time_us": 14},
            ]],
        }
        text, _, stderr = self.convert(snapshot)
        self.assertEqual(data_lines(text), [
            "0,0,segment_map,,20971520,0,cuda:0",
            "1,1000,alloc,0,5242880,0,cuda:0",
            "2,2000,free,0,5242880,0,cuda:0",
            "3,3000,free_completed,0,5242880,0,cuda:0",
            "4,4000,segment_unmap,,20971520,0,cuda:0",
        ])
        self.assertIn("expandable segments: their mappings are not synthesized", stderr)

    def test_blocks_without_address(self) -> None:
        """Older snapshots list blocks without 'address': they follow each other from the segment's."""
        snapshot, _ = fx.scenario()
        for segment in snapshot["segments"]:
            for block in segment["blocks"]:
                del block["address"]
        text, _, _ = self.convert(snapshot)
        self.assertEqual(data_lines(text), SCENARIO_LINES)

    def test_no_trace_recorded(self) -> None:
        """Recording was off: only what the segments show, allocated at time 0, and a warning-free run."""
        fake = fx.FakeCachingAllocator()
        fake.malloc(0, 3000)
        _, trace, stderr = self.convert(fake.snapshot())
        self.assertEqual([(e.action, e.nbytes) for e in trace.events], [("alloc", 3000)])
        self.assertIn("1 blocks live in the snapshot", stderr)


class BadInput(TempDirTest):
    """Exit code 2 and one message naming the file; never a traceback, never code run from a pickle."""

    def assert_refused(self, source: Path, *expected: str, extra: tuple[str, ...] = ()) -> None:
        target = self.dir / "out.trace.csv"
        done = run_converter(source, "-o", target, *extra)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn(str(source), done.stderr)
        for text in expected:
            self.assertIn(text, done.stderr)
        self.assertFalse(target.exists(), "no trace is left behind")
        self.assertEqual([p.name for p in self.dir.iterdir() if p.name.startswith(".out")], [])

    def test_not_a_pickle(self) -> None:
        source = self.dir / "notes.txt"
        source.write_text("hello, this is not a snapshot\n")
        self.assert_refused(source, "not a PyTorch memory snapshot (a pickle) nor an RMM log",
                            "cannot unpickle")

    def test_empty_file(self) -> None:
        source = self.dir / "empty.pickle"
        source.write_bytes(b"")
        self.assert_refused(source, "not a PyTorch memory snapshot")

    def test_truncated_pickle(self) -> None:
        source = self.dir / "cut.pickle"
        source.write_bytes(pickle.dumps(fx.scenario()[0])[:200])
        self.assert_refused(source, "not a PyTorch memory snapshot")

    def test_pickle_that_is_not_a_snapshot(self) -> None:
        source = self.dir / "other.pickle"
        fx.write_pickle(source, {"weights": [1, 2, 3]})
        self.assert_refused(source, "no 'segments' nor 'device_traces'")
        fx.write_pickle(source, [1, 2, 3])
        self.assert_refused(source, "a list of segments with no trace")
        fx.write_pickle(source, 42)
        self.assert_refused(source, "holds a int")

    def test_entry_missing_a_key(self) -> None:
        snapshot, _ = fx.scenario()
        del snapshot["device_traces"][1][0]["addr"]
        source = self.dir / "broken.pickle"
        fx.write_pickle(source, snapshot)
        self.assert_refused(source, "device_traces[1][0] (alloc): no 'addr'")

    def test_malicious_pickle_is_refused_without_running_it(self) -> None:
        marker = self.dir / "pwned"
        source = self.dir / "evil.pickle"
        source.write_bytes(fx.malicious_pickle(f"touch {marker}"))
        self.assert_refused(source, "refused", "posix.system")
        self.assertFalse(marker.exists(), "the pickle's code ran")
        # The same pickle, loaded naively, does run: the test would notice if it did above.
        pickle.loads(source.read_bytes())
        self.assertTrue(marker.exists())

    def test_missing_file(self) -> None:
        self.assert_refused(self.dir / "nowhere.pickle", "cannot read")

    def test_unwritable_output(self) -> None:
        source = self.dir / "snap.pickle"
        fx.write_pickle(source, fx.scenario()[0])
        target = self.dir / "no" / "such" / "dir" / "t.csv"
        done = run_converter(source, "-o", target)
        self.assertEqual(done.returncode, 2)
        self.assertIn(str(target), done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_device_option_is_for_rmm_logs(self) -> None:
        source = self.dir / "snap.pickle"
        fx.write_pickle(source, fx.scenario()[0])
        self.assert_refused(source, "--device applies to RMM logs", extra=("--device", "cuda:3"))

    def test_usage(self) -> None:
        done = run_converter()
        self.assertEqual(done.returncode, 2)
        self.assertIn("usage", done.stderr)


class RmmLog(TempDirTest):
    """RMM's logging_resource_adaptor CSV, told apart from pickles by its header."""

    EXPECTED = [
        "0,0,alloc,0,4096,0,cuda:0",                         # freed, never allocated in the log
        "1,0,alloc,1,1048576,0,cuda:0",                       # 23:59:59.999990
        f"2,5000,alloc,2,256,{0x7F8A38001020},cuda:0",
        "3,20000,free,1,1048576,0,cuda:0",                    # 00:00:00.000010, the next day
        "4,21000,free,0,4096,0,cuda:0",
        f"5,30000,oom,,85899345920,{0x7F8A38001020},cuda:0",  # allocate failure
        f"6,30000,free,2,256,{0x7F8A38001020},cuda:0",        # logged 5 us early: clamped
    ]

    def convert_log(self, name: str, *extra: str) -> tuple[list[str], str]:
        source = self.dir / name
        source.write_text(fx.RMM_LOG)
        target = self.dir / "rmm.trace.csv"
        done = run_converter(source, "-o", target, *extra)
        self.assertEqual(done.returncode, 0, done.stderr)
        text = target.read_text()
        parse_trace(text)
        return data_lines(text), done.stderr

    def test_lines(self) -> None:
        lines, stderr = self.convert_log("rmm_log.csv")
        self.assertEqual(lines, self.EXPECTED)
        self.assertIn("RMM log", stderr)
        self.assertIn("times clamped to keep them non-decreasing: 1", stderr)
        self.assertIn("1 allocations made before the trace began, freed in it", stderr)

    def test_device_from_the_file_name(self) -> None:
        lines, _ = self.convert_log("rmm_log.csv.dev1")
        self.assertTrue(all(line.endswith(",cuda:1") for line in lines))

    def test_device_option(self) -> None:
        lines, _ = self.convert_log("rmm_log.csv", "--device", "cuda:7")
        self.assertTrue(all(line.endswith(",cuda:7") for line in lines))

    def test_bad_row(self) -> None:
        source = self.dir / "bad.csv"
        source.write_text(fx.RMM_LOG + "1,00:00:01.0,allocate,0xZZ,16,0\n")
        done = run_converter(source, "-o", self.dir / "x.csv")
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"{source}:8: cannot read", done.stderr)
        self.assertNotIn("Traceback", done.stderr)


class Gzip(TempDirTest):
    """Output named .gz is gzip; gzip input is read too."""

    def test_gzip_output_and_input(self) -> None:
        snapshot, _ = fx.scenario()
        source = self.dir / "snap.pickle"
        fx.write_pickle(source, snapshot)
        plain, packed = self.dir / "t.csv", self.dir / "t.csv.gz"
        self.assertEqual(run_converter(source, "-o", plain).returncode, 0)
        self.assertEqual(run_converter(source, "-o", packed).returncode, 0)
        self.assertEqual(packed.read_bytes()[:2], b"\x1f\x8b")
        self.assertEqual(gzip.decompress(packed.read_bytes()).decode(), plain.read_text())
        self.assertEqual(oct(packed.stat().st_mode & 0o777), oct(0o666 & ~_umask()))

        zipped_source = self.dir / "snap.pickle.gz"
        zipped_source.write_bytes(gzip.compress(source.read_bytes()))
        again = self.dir / "again.csv"
        self.assertEqual(run_converter(zipped_source, "-o", again).returncode, 0)
        self.assertEqual(data_lines(again.read_text()), data_lines(plain.read_text()))

    def test_gzip_output_is_reproducible(self) -> None:
        source = self.dir / "snap.pickle"
        fx.write_pickle(source, copy.deepcopy(fx.scenario()[0]))
        first, second = self.dir / "a.csv.gz", self.dir / "b.csv.gz"
        run_converter(source, "-o", first)
        run_converter(source, "-o", second)
        self.assertEqual(first.read_bytes(), second.read_bytes())


class Unbounded(TempDirTest):
    """Inputs without end: a FIFO is refused without blocking, a gzip bomb is refused once it inflates past
    the limit (here lowered, so the test inflates megabytes, not a gigabyte), and frames shared by many
    entries (one memoised list in the pickle) are read once, not once an entry."""

    def test_a_fifo_is_refused_without_blocking(self) -> None:
        fifo = self.dir / "snap.pickle"
        os.mkfifo(fifo)
        done = run_converter(fifo, "-o", self.dir / "t.csv")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"{fifo}: cannot read: a FIFO; a snapshot is read from a regular file only", done.stderr)

    def test_a_gzip_bomb_is_refused_at_the_limit(self) -> None:
        from memstress import convert as converter

        bomb = self.dir / "bomb.pickle.gz"
        bomb.write_bytes(gzip.compress(b"\0" * (8 << 20), compresslevel=9))  # 8 KB inflating to 8 MiB
        saved = converter.MAX_SNAPSHOT_BYTES
        converter.MAX_SNAPSHOT_BYTES = 1 << 20
        try:
            with self.assertRaisesRegex(converter.InputError, r"decompresses to more than 1\.00 MiB, the most"):
                converter.read_input(bomb)
            small = self.dir / "small.pickle.gz"
            small.write_bytes(gzip.compress(b"x" * 1000))
            self.assertEqual(bytes(converter.read_input(small)), b"x" * 1000)
        finally:
            converter.MAX_SNAPSHOT_BYTES = saved

    def test_shared_frames_are_read_once(self) -> None:
        from memstress import snapshot_sites

        frames = fx.frames_at("model.py", 42, "forward") * 500  # 1,000+ frames, one list
        table = snapshot_sites.SiteTable()
        calls = []
        inner = table._site_of
        table._site_of = lambda value: calls.append(1) or inner(value)  # type: ignore[method-assign]
        sites = [table.site_of(frames) for _ in range(2000)]
        self.assertEqual(len(calls), 1)
        self.assertEqual(set(sites), {0})
        self.assertEqual(table.with_frames, 2000)
        # An equal list that is another object is classified again, to the same site.
        self.assertEqual(table.site_of(list(frames)), 0)
        self.assertEqual(len(calls), 2)
        self.assertEqual(table.site_of([]), -1)
        self.assertEqual(table.without_frames, 1)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":
    unittest.main()


class Facts(TempDirTest):
    """--facts: allocation sites, segment addresses, allocator settings, OOMs and the recorder's notes."""

    def facts(self, snapshot: object) -> dict:
        import json

        fx.write_pickle(self.dir / "snap.pickle", snapshot)
        done = run_converter(self.dir / "snap.pickle", "-o", self.dir / "t.csv", "--facts", self.dir / "f.json")
        self.assertEqual(done.returncode, 0, done.stderr)
        doc = json.loads((self.dir / "f.json").read_text())
        self.assertEqual(doc["schema"], "memstress.snapshot-facts/1")
        return doc

    def test_sites_are_the_first_frame_outside_torch_and_the_standard_library(self) -> None:
        doc = self.facts(fx.training_snapshot(2))
        self.assertTrue(doc["frames_recorded"])
        wheres = [s["where"] for s in doc["sites"]]
        self.assertEqual(wheres, ["project/model.py:10 in __init__", "project/model.py:42 in forward",
                                  "project/train.py:57 in <module>"])
        self.assertTrue(all(s["user_code"] for s in doc["sites"]))
        self.assertIn("torch/nn/modules/module.py:1751 in _call_impl", doc["sites"][0]["stack"][0])
        self.assertEqual(doc["alloc_sites"], [0] + ([1] * 6 + [2]) * 2)

    def test_without_frames_there_are_no_sites(self) -> None:
        doc = self.facts(fx.training_snapshot(2, frames=False))
        self.assertFalse(doc["frames_recorded"])
        self.assertEqual(doc["sites"], [])
        self.assertEqual(set(doc["alloc_sites"]), {-1})

    def test_only_internal_frames_make_an_internal_site(self) -> None:
        snapshot = fx.training_snapshot(1)
        for entry in snapshot["device_traces"][0]:
            if entry["action"] == "alloc":
                entry["frames"] = [{"filename": "/usr/lib/python3.12/contextlib.py", "line": 81, "name": "inner"},
                                   {"filename": "??", "line": 0, "name": "c10::foo()"}, "junk", {"line": "x"}]
        doc = self.facts(snapshot)
        self.assertEqual([s["where"] for s in doc["sites"]], ["python3.12/contextlib.py:81 in inner"])
        self.assertFalse(doc["sites"][0]["user_code"])

    def test_segment_addresses_settings_ooms_and_the_recorders_flat_notes(self) -> None:
        snapshot = fx.training_snapshot(2, oom_request=1 << 40)
        snapshot["allocator_settings"] = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
        snapshot["memstress"]["nested"] = {"deep": [1, 2]}
        doc = self.facts(snapshot)
        self.assertEqual(len(doc["segment_addresses"]), 8)  # 64 MiB, six for the activations, a small one
        self.assertTrue(all(a > 0 for a in doc["segment_addresses"]))
        self.assertEqual(doc["alloc_conf"], "expandable_segments:True")
        self.assertEqual(doc["ooms"], [{"device": "cuda:0", "bytes": 1 << 40, "device_free": 16 << 20, "site": -1}])
        self.assertEqual(doc["recorder"]["allocator_capacity"], 84_396_015_616)
        self.assertNotIn("nested", doc["recorder"])

    def test_user_metadata_is_each_allocations_mark(self) -> None:
        snapshot = fx.training_snapshot(1)
        allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]
        allocs[1]["user_metadata"] = "memstress.convolution"
        allocs[2]["user_metadata"] = ""
        allocs[3]["user_metadata"] = "the program's own"  # not the recorder's: left out
        allocs[4]["user_metadata"] = 7  # not a string: no mark
        allocs[5]["user_metadata"] = "memstress." + "x" * 1000  # too long to be the recorder's
        allocs[6]["user_metadata"] = "memstress.convolution"
        doc = self.facts(snapshot)
        self.assertEqual(doc["marks"], ["memstress.convolution"])
        self.assertEqual(len(doc["alloc_marks"]), len(doc["alloc_sites"]))
        live_before = len(doc["alloc_marks"]) - len(allocs)  # blocks live before the trace: no mark
        self.assertEqual(doc["alloc_marks"][live_before:live_before + 7], [-1, 0, -1, -1, -1, -1, 0])

    def test_without_the_recorders_marks_there_are_no_marks(self) -> None:
        snapshot = fx.training_snapshot(1)
        next(e for e in snapshot["device_traces"][0] if e["action"] == "alloc")["user_metadata"] = "step 7"
        doc = self.facts(snapshot)
        self.assertNotIn("marks", doc)
        self.assertNotIn("alloc_marks", doc)

    def test_settings_without_the_string_are_rebuilt(self) -> None:
        snapshot = fx.training_snapshot(1)
        snapshot["allocator_settings"] = {"max_split_size": 128 << 20, "garbage_collection_threshold": 0.8,
                                          "expandable_segments": False}
        self.assertEqual(self.facts(snapshot)["alloc_conf"],
                         "max_split_size_mb:128,garbage_collection_threshold:0.8")
