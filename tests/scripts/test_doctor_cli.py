"""memstress doctor and predict-batch as users type them, on synthetic PyTorch snapshots
(snapshot_fixtures.training_snapshot: a training loop with stack frames, with or without a planted leak,
with or without an OOM) and on inputs that are no snapshot; and the recorder, python/memstress_torch.py,
against a stand-in for torch (the real one is exercised on a GPU by scripts/gpu-doctor).

    test_doctor_cli.py MEMSTRESS_BINARY [-v]
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import types
import unittest
from contextlib import redirect_stderr
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "python"))
import snapshot_fixtures as fx  # noqa: E402

BINARY = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None


@unittest.skipIf(BINARY is None, "usage: test_doctor_cli.py MEMSTRESS_BINARY")
class Doctor(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="memstress-doctor-"))
        fx.write_pickle(cls.tmp / "leak.pickle", fx.training_snapshot(10, leak=True))
        fx.write_pickle(cls.tmp / "fixed.pickle", fx.training_snapshot(10))
        fx.write_pickle(cls.tmp / "noframes.pickle", fx.training_snapshot(10, frames=False))
        fx.write_pickle(cls.tmp / "oom.pickle", fx.training_snapshot(3, oom_request=200 << 30))
        fx.write_pickle(cls.tmp / "b4.pickle", fx.training_snapshot(3, batch=4))
        fx.write_pickle(cls.tmp / "b8.pickle", fx.training_snapshot(3, batch=8))

    def run_ms(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BINARY), *args], cwd=self.tmp, capture_output=True, text=True, check=False,
                              timeout=300)

    def test_a_planted_leak_is_found_and_its_line_named(self) -> None:
        done = self.run_ms("doctor", "leak.pickle")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("-> Memory grows: about 4 bytes more is kept after every step", done.stdout)
        growth = done.stdout.split("== Growth ==")[1]
        self.assertIn("project/train.py:57 in <module>", growth)
        self.assertEqual(done.stderr, "")  # the converter's summary is the replay's, not the doctor's

    def test_the_fixed_loop_does_not_grow(self) -> None:
        done = self.run_ms("doctor", "fixed.pickle")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("-> No growth", done.stdout)

    def test_every_section_in_order_and_the_sites_at_the_peak(self) -> None:
        out = self.run_ms("doctor", "fixed.pickle").stdout
        sections = ["== What it needed ==", "== Who holds the memory at the peak", "== The OOM ==", "== Settings",
                    "== Growth =="]
        self.assertEqual(sorted(sections, key=out.index), sections)
        peak = out.split("== Who holds")[1].split("==")[1]
        self.assertRegex(peak, r"project/model\.py:10 in __init__ +64\.00 MiB")
        self.assertIn("capacity judged: 78.60 GiB (what PyTorch could use of the NVIDIA H100 80GB HBM3", out)
        self.assertIn("ran with: (PyTorch's defaults) (the snapshot)", out)

    def test_without_frames_it_says_how_to_record_them(self) -> None:
        done = self.run_ms("doctor", "noframes.pickle")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn('no stack frames recorded: record them with', done.stdout)
        self.assertIn('stacks="python"', done.stdout)

    def test_an_oom_beyond_the_capacity_is_exhaustion(self) -> None:
        done = self.run_ms("doctor", "oom.pickle")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("request                              200.00 GiB", done.stdout)
        self.assertIn("-> Exhaustion", done.stdout)

    def test_json_and_capacities_as_given(self) -> None:
        done = self.run_ms("doctor", "fixed.pickle", "--format", "json", "--capacity", "80M,1G")
        self.assertEqual(done.returncode, 0, done.stderr)
        doc = json.loads(done.stdout)
        self.assertEqual(doc["schema"], "memstress.doctor/1")
        self.assertEqual(doc["capacities"], [80 << 20, 1 << 30])
        defaults = next(r for r in doc["settings"]["rows"] if r["pytorch_alloc_conf"] == "")
        self.assertEqual([c["fits"] for c in defaults["capacities"]], [False, True])
        self.assertIsNotNone(defaults["capacities"][0]["oom"])

    def test_bad_input_is_named_with_exit_2(self) -> None:
        (self.tmp / "notes.txt").write_text("this is no snapshot\n")
        for args, named in ((["doctor", "notes.txt"], "notes.txt"), (["doctor", "missing.pickle"], "missing.pickle"),
                            (["doctor", "fixed.pickle", "--capacity", "lots"], "--capacity"),
                            (["doctor", "fixed.pickle", "--capacity", "0"], "--capacity"),
                            (["doctor", "fixed.pickle", "--alloc-conf", "max_split_size_mb:x"], "--alloc-conf"),
                            (["doctor", "fixed.pickle", "--format", "html"], "-o"),
                            (["doctor", "fixed.pickle", "--trace-device", "cuda:7"], "cuda:7"),
                            (["predict-batch", "b4.pickle", "b8.pickle", "--batch", "4"], "--batch"),
                            (["predict-batch", "b4.pickle", "b8.pickle", "--batch", "4,4"], "--batch"),
                            (["predict-batch", "b4.pickle", "notes.txt", "--batch", "4,8"], "notes.txt")):
            with self.subTest(args=args):
                done = self.run_ms(*args)
                self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
                self.assertIn(named, done.stderr)
                self.assertNotIn("internal error", done.stderr)

    def test_html_draws_the_document(self) -> None:
        done = self.run_ms("doctor", "leak.pickle", "--format", "html", "-o", "doctor.html")
        if done.returncode == 3 and os.environ.get("MEMSTRESS_REQUIRE_PYDEPS") != "1":
            self.skipTest("skipped: needs matplotlib: " + done.stderr.strip())
        self.assertEqual(done.returncode, 0, done.stderr)
        page = (self.tmp / "doctor.html").read_text()
        for heading in ("What it needed", "Who holds the memory at the peak", "Settings", "Growth"):
            self.assertIn(heading, page)
        self.assertIn("<img", page)

    def test_predict_batch_from_two_batch_sizes(self) -> None:
        done = self.run_ms("predict-batch", "b4.pickle", "b8.pickle", "--batch", "4,8", "--capacity", "1G")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("matched 22 of 22 and 22 requests (by allocation site and stream)", done.stdout)
        self.assertIn("18.00 MiB more asked for per sample over the run", done.stdout)  # 6 activations x 3 steps
        self.assertIn("the peak grows by 6.00 MiB per sample", done.stdout)  # one step's activations
        self.assertRegex(done.stdout, r"-> The largest batch that fits: \d+ \(peak reserved")
        self.assertRegex(done.stdout, r"-> At \d+ it runs out at event \d+: a request of .* at project/")
        doc = json.loads(self.run_ms("predict-batch", "b4.pickle", "b8.pickle", "--batch", "4,8", "--capacity", "1G",
                                     "--format", "json").stdout)
        self.assertEqual(doc["first_fail"]["batch"], doc["largest_fit"]["batch"] + 1)


REAL = ROOT / "results" / "h100" / "doctor-580.159.04" / "snapshots"


@unittest.skipIf(BINARY is None, "usage: test_doctor_cli.py MEMSTRESS_BINARY")
class CommittedSnapshots(unittest.TestCase):
    """Snapshots PyTorch 2.11 wrote on an H100 (scripts/gpu-doctor, through python/memstress_torch.py)."""

    def doctor(self, name: str) -> str:
        done = subprocess.run([str(BINARY), "doctor", str(REAL / f"{name}.snapshot.pickle.gz")], capture_output=True,
                              text=True, check=False, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_the_leak_is_found_and_its_line_named(self) -> None:
        out = self.doctor("leak_train")
        self.assertIn("-> Memory grows", out)
        self.assertRegex(out.split("== Growth ==")[1], r"scripts/doctor_programs\.py:145 in _mlp_loop +4 bytes")

    def test_its_fix_does_not_grow(self) -> None:
        self.assertIn("-> No growth", self.doctor("fixed_train"))

    def test_the_oom_is_fragmentation_at_the_recorded_capacity(self) -> None:
        out = self.doctor("oom_infer_varying")
        oom = out.split("== The OOM ==")[1].split("== Settings")[0]
        self.assertRegex(oom, r"request +384\.00 MiB at event 1414 \(scripts/doctor_programs\.py:110 in forward\)")
        self.assertRegex(oom, r"capacity PyTorch could use +806\.40 MiB")
        self.assertIn("-> Fragmentation", oom)
        self.assertIn("capacity judged: 806.40 MiB (what PyTorch could use of the NVIDIA H100 80GB HBM3", out)

    def test_without_frames_the_peak_has_no_sites_and_says_so(self) -> None:
        out = self.doctor("transformer_amp_noframes")
        self.assertIn("no stack frames recorded: record them with", out)
        self.assertRegex(out, r"peak reserved \(reserved_bytes\.all\.peak\), replayed +\S+ MiB")


class FakeTorch:
    """Just enough of torch for the recorder: what it calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.observer = None
        self.cuda = types.SimpleNamespace(
            memory=types.SimpleNamespace(_record_memory_history=self._history, _snapshot=self._snapshot),
            current_device=lambda: 0, mem_get_info=lambda d: (70 << 30, 80 << 30),
            memory_reserved=lambda d: 8 << 30, get_device_name=lambda d: "Fake GPU",
            get_per_process_memory_fraction=lambda d: 1.0)
        self._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=self._attach)
        self.__version__ = "2.11.0+fake"

    def _history(self, **kwargs: object) -> None:
        self.calls.append(("history", kwargs))

    def _attach(self, observer: object) -> None:
        self.observer = observer

    @staticmethod
    def _snapshot() -> dict:
        return {"segments": [], "device_traces": [[{"action": "alloc"}]]}


class Recorder(unittest.TestCase):
    def test_records_with_stacks_dumps_on_oom_with_the_gpus_capacity_and_prints_the_command(self) -> None:
        import memstress_torch

        torch = FakeTorch()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run.snapshot.pickle"
            err = io.StringIO()
            with redirect_stderr(err):
                rec = memstress_torch.Recorder(str(path), batch=32, torch=torch)
                self.assertEqual(torch.calls, [("history", {"enabled": "all", "context": "alloc", "stacks": "python",
                                                            "max_entries": 1_000_000})])
                torch.observer(0, 1 << 30, 0, 0)  # PyTorch calls it when an allocation fails
            snapshot = pickle.loads(path.read_bytes())
            meta = snapshot["memstress"]
            self.assertEqual(meta["device_total"], 80 << 30)
            self.assertEqual(meta["used_outside_allocator"], 2 << 30)  # 80 - 70 free - 8 reserved
            self.assertEqual(meta["allocator_capacity"], 78 << 30)
            self.assertEqual(meta["batch"], 32)
            self.assertEqual(rec.written, 1)
            self.assertIn(f"memstress doctor {path}", err.getvalue())
            self.assertIn("out of memory on cuda:0", err.getvalue())
            rec.dump()
            self.assertEqual(rec.written, 2)
            rec.stop()


if __name__ == "__main__":
    unittest.main()
