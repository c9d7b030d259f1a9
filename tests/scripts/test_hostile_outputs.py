"""What memstress prints and writes when its inputs are hostile or its output cannot be written.

    test_hostile_outputs.py MEMSTRESS_BINARY

* the doctor's and predict-batch's text never passes a frame's control characters (ESC, an OSC title, BEL)
  to the terminal, and a NUL never cuts the output short;
* a snapshot whose sizes no device can have (2^63 bytes, 2^63 - 1) is refused in one line naming it, exit 2,
  never "needed 0 bytes" with every setting fitting;
* a command whose standard output cannot be written (/dev/full) says so in one line and exits 3, never 0;
* compare of a NEW file whose medians are all null compares nothing (exit 1), never "no regression"; runs
  given other options differ in their environment, named;
* accept --profile on a FIFO (by name, in the working directory, too), /dev/zero or a sparse file of 6 GB is
  refused in one line, exit 2, at once; accept --junit F without a GPU writes F with one failing test (exit 3);
* the project's own .xz results are read by compare, accept --from and db ingest; an xz that inflates past the
  256 MiB a results file may be is refused at once, exit 2.
"""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import snapshot_fixtures as fx  # noqa: E402

BINARY = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
HOSTILE = "model\x1b[2J\x1b]0;pwned\x07\x00tail.py"


def hostile_snapshot(batch: int) -> dict:
    snapshot = fx.training_snapshot(3, batch=batch)
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or []:
                if frame["filename"].endswith("model.py"):
                    frame["filename"] = f"project/{HOSTILE}"
    return snapshot


@unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
class HostileOutputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="memstress-hostile-"))
        fx.write_pickle(cls.tmp / "b4.pickle", hostile_snapshot(4))
        fx.write_pickle(cls.tmp / "b8.pickle", hostile_snapshot(8))
        sizes = {"2p63": [1 << 63], "2p63m1": [(1 << 63) - 1], "2p64m1": [(1 << 64) - 1], "nine2p62": [1 << 62] * 9}
        for name, allocations in sizes.items():
            fake = fx.FakeCachingAllocator()
            fake.recording = True
            for size in allocations:
                fake.malloc(0, size)
            fx.write_pickle(cls.tmp / f"{name}.pickle", fake.snapshot())

    def run_ms(self, *args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([str(BINARY), *args], cwd=self.tmp, stdout=stdout, stderr=subprocess.PIPE,
                              check=False, timeout=300)

    def assert_terminal_safe(self, out: bytes) -> None:
        controls = sorted({b for b in out if (b < 0x20 and b not in (0x0A,)) or b == 0x7F})
        self.assertEqual(controls, [], f"control bytes reach the terminal: {controls}")
        self.assertIn(b"\\x1b[2J", out, "the escape is shown, escaped")

    def test_the_doctor_escapes_every_line_and_a_nul_does_not_cut_it(self) -> None:
        r = self.run_ms("doctor", "b4.pickle")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_terminal_safe(r.stdout)
        self.assertIn(b"holds the most", r.stdout)
        self.assertIn(b"\\x00tail.py", r.stdout, "the text goes on past the NUL")

    def test_predict_batch_escapes_too(self) -> None:
        r = self.run_ms("predict-batch", "b4.pickle", "b8.pickle", "--batch", "4,8", "--capacity", "40G")
        self.assertEqual(r.returncode, 0, r.stderr)
        controls = sorted({b for b in r.stdout if (b < 0x20 and b != 0x0A) or b == 0x7F})
        self.assertEqual(controls, [])

    def test_sizes_no_device_has_are_refused(self) -> None:
        for name in ("2p63", "2p63m1", "2p64m1", "nine2p62"):
            for command in (["doctor", f"{name}.pickle"], ["replay", f"{name}.pickle", "--device", "sim:80G"]):
                with self.subTest(name=name, command=command[0]):
                    r = self.run_ms(*command)
                    self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                    self.assertIn(f"{name}.pickle".encode(), r.stderr)
                    # the trace's reader (what no device has) or the converter (what 64 bits cannot hold)
                    self.assertRegex(r.stderr, rb"more memory than any device has|beyond 64 bits")
                    self.assertNotIn(b"needed 0 bytes", r.stdout)

    def test_a_trace_asking_for_more_than_a_sum_can_hold_is_refused(self) -> None:
        lines = ["# memstress-trace v1", "seq,time_ns,action,id,bytes,stream,device"]
        lines += [f"{i},{i},alloc,{i},{1 << 48},0,cuda:0" for i in range((1 << 14) + 1)]
        (self.tmp / "asks.trace.csv").write_text("\n".join(lines) + "\n")
        r = self.run_ms("replay", "asks.trace.csv", "--device", "sim:80G")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"ask for", r.stderr)
        self.assertIn(b"more than a sum of memory may hold", r.stderr)

    def test_output_that_cannot_be_written_is_an_error(self) -> None:
        commands = [
            ["list"],
            ["run", "oom", "-d", "sim", "-q", "--format", "openmetrics"],
            ["compare", str(ROOT / "tests/data/compare/base.json"), str(ROOT / "tests/data/compare/slower.json")],
            ["doctor", "b4.pickle"],
            ["doctor", "b4.pickle", "--format", "json"],
            ["accept", "--profile", str(ROOT / "tests/data/accept/sim-ranks.yaml"), "-d", "sim:8G", "-q"],
        ]
        for command in commands:
            with self.subTest(command=command[:2]), open("/dev/full", "wb") as full:
                r = self.run_ms(*command, stdout=full.fileno())
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertNotIn(b"internal error", r.stderr)
                self.assertIn(b"cannot write the output to standard output", r.stderr)


class CompareFailsClosed(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-compare-"))
        self.base = ROOT / "tests/data/compare/base.json"

    def variant(self, name: str, change) -> Path:
        doc = json.loads(self.base.read_text())
        change(doc)
        path = self.tmp / name
        path.write_text(json.dumps(doc))
        return path

    def compare(self, new: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BINARY), "compare", str(self.base), str(new)], capture_output=True, text=True,
                              check=False, timeout=120)

    @unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
    def test_null_medians_compare_nothing(self) -> None:
        def nulls(doc: dict) -> None:
            for row in doc["rows"]:
                for m in row["metrics"].values():
                    m["samples"] = [None] * len(m["samples"])
                    for k in ("cv", "max", "mean", "median", "min", "p10", "p90", "p99", "stddev"):
                        m[k] = None

        r = self.compare(self.variant("nulls.json", nulls))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("result: REGRESSION (6 metrics WORSE)", r.stdout)
        self.assertIn("no value in NEW: not measured there", r.stdout)
        self.assertNotIn("no regression", r.stdout)

        def one_left(doc: dict) -> None:  # every metric null in NEW but one
            nulls(doc)
            doc["rows"][0]["metrics"]["fill"] = json.loads(self.base.read_text())["rows"][0]["metrics"]["fill"]

        r = self.compare(self.variant("one-left.json", one_left))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("result: REGRESSION (5 metrics WORSE)", r.stdout)

    @unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
    def test_other_options_are_a_difference_and_rows_regressed_agree_with_the_result(self) -> None:
        r = self.compare(self.variant("opts.json", lambda d: d["argv"].extend(["--host-memory", "pageable"])))
        self.assertNotIn("environment: identical", r.stdout)
        self.assertRegex(r.stdout, r"options \(only here\) +- +--host-memory pageable")
        slower = subprocess.run([str(BINARY), "compare", str(self.base), str(ROOT / "tests/data/compare/slower.json")],
                                capture_output=True, text=True, check=False, timeout=120)
        self.assertIn("rows: 3 matched, 1 regressed (0 from pass to fail or error)", slower.stdout)
        self.assertIn("result: REGRESSION (1 metric WORSE)", slower.stdout)


@unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
class AcceptInputs(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-accept-"))

    def accept(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BINARY), "accept", *args], cwd=self.tmp, capture_output=True, text=True,
                              check=False, timeout=30)

    def test_a_profile_that_is_no_regular_file_is_refused_at_once(self) -> None:
        os.mkfifo(self.tmp / "fifo")
        sparse = self.tmp / "sparse.yaml"
        with open(sparse, "wb") as f:
            f.truncate(6 << 30)
        results = str(ROOT / "tests/data/compare/base.json")
        for profile, what in (("fifo", "a FIFO"), (str(self.tmp / "fifo"), "a FIFO"),
                              ("/dev/zero", "a character device"), (str(sparse), "larger than")):
            with self.subTest(profile=profile):
                r = self.accept("--profile", profile, "--from", results)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"--profile {profile}: ", r.stderr)
                self.assertIn(what, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_junit_is_written_when_no_gpu_is_there(self) -> None:
        if Path("/dev/nvidiactl").exists():
            self.skipTest("a GPU is here: the profile runs")
        junit = self.tmp / "accept.xml"
        r = self.accept("--profile", "h100", "--junit", str(junit), "-q")
        self.assertEqual(r.returncode, 3, r.stderr)
        xml = junit.read_text()
        self.assertIn('failures="1"', xml)
        self.assertIn("no CUDA device was found", xml)


@unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
class CompressedResults(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-xz-"))

    def run_ms(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BINARY), *args], cwd=self.tmp, capture_output=True, text=True, check=False,
                              timeout=120)

    def test_committed_xz_results_are_read(self) -> None:
        doc = ROOT / "results/h200x4/nccl-tests-580.159.04/memstress-nccl-memory-cycles.json.xz"  # small: asan too
        r = self.run_ms("compare", str(doc), str(doc))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rows: 4 matched", r.stdout)
        r = self.run_ms("accept", "--profile", "h200", "--from", str(doc))
        self.assertIn("profile h200, NVIDIA H200, 4 ranks", r.stdout, r.stderr)
        plain = ROOT / "tests/data/compare/base.json"
        (self.tmp / "base.json.xz").write_bytes(lzma.compress(plain.read_bytes()))
        r = self.run_ms("compare", str(plain), "base.json.xz")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if "db" in self.run_ms("--help").stdout:
            r = self.run_ms("db", "ingest", "base.json.xz", "--db", "x.sqlite")
            self.assertIn(r.returncode, (0, 3), r.stdout + r.stderr)
            self.assertNotIn("not JSON", r.stdout + r.stderr)

    def test_an_xz_bomb_is_refused(self) -> None:
        z = lzma.LZMACompressor()
        parts = [z.compress(b" " * (1 << 20)) for _ in range(300)]
        (self.tmp / "bomb.json.xz").write_bytes(b"".join(parts) + z.flush())
        self.assertLess((self.tmp / "bomb.json.xz").stat().st_size, 1 << 20)
        r = self.run_ms("compare", "bomb.json.xz", "bomb.json.xz")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("decompresses to more than the 256.00 MiB a results file may be", r.stderr)


@unittest.skipIf(BINARY is None, "usage: test_hostile_outputs.py MEMSTRESS_BINARY")
class ConverterOutputThroughALink(unittest.TestCase):
    def test_the_converter_replaces_the_file_a_link_names_and_keeps_the_link(self) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="memstress-convert-link-"))
        fx.write_pickle(tmp / "run.pickle", fx.training_snapshot(2))
        (tmp / "real.csv").write_text("old\n")
        (tmp / "out.csv").symlink_to("real.csv")
        (tmp / "nothing.csv").symlink_to("missing.csv")
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        run = [sys.executable, "-m", "memstress.convert", "run.pickle", "-o"]
        r = subprocess.run([*run, "out.csv"], cwd=tmp, env=env, capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue((tmp / "out.csv").is_symlink())
        self.assertIn("memstress-trace v1", (tmp / "real.csv").read_text())
        r = subprocess.run([*run, "nothing.csv"], cwd=tmp, env=env, capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("a symbolic link to nothing", r.stderr)
        self.assertFalse((tmp / "missing.csv").exists())


if __name__ == "__main__":
    unittest.main()
