"""scripts/lab/doctor_corpus.py without a GPU: its search for the largest batch, the batches it records, the cause it
derives from the settings' runs, the caps it tries for a fragmentation program, its tables, and the whole corpus
(truth.json's entries, the snapshots kept) driven by a stand-in for scripts/lab/doctor_programs.py whose programs need
a fixed amount of memory per sample.

    cd tests/scripts && python3 -m unittest -v test_doctor_corpus
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "lab"))
import doctor_corpus as dc  # noqa: E402
import doctor_islands as di  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30


def peak(batch: int, fixed: int = 300 * MiB, per_sample: int = 37 * MiB) -> int:
    """A program's peak reserved, in 2 MiB segments."""
    return -(-(fixed + batch * per_sample) // (2 * MiB)) * 2 * MiB


def runner(cap: int, **kwargs: Any) -> tuple[Any, list[int]]:
    asked: list[int] = []

    def run(batch: int) -> dc.Run:
        asked.append(batch)
        p = peak(batch, **kwargs)
        ok = p <= cap
        return dc.Run(batch, cap, "", ok, p if ok else 0, None if ok else "CUDA out of memory.", p - 3 * MiB if ok else 0)

    return run, asked


def true_largest(cap: int, **kwargs: Any) -> int:
    b = 0
    while peak(b + 1, **kwargs) <= cap:
        b += 1
    return b


class SearchLargest(unittest.TestCase):
    def test_finds_the_exact_largest_batch_in_few_runs(self) -> None:
        for cap in (2 * GiB, 4 * GiB, 3 * GiB + 123 * MiB, 700 * MiB):
            for start in (1, 8, 64):
                with self.subTest(cap=cap, start=start):
                    run, asked = runner(cap)
                    largest, first_oom, runs = dc.search_largest(run, start, cap)
                    self.assertEqual(largest, true_largest(cap))
                    self.assertEqual(first_oom, largest + 1)
                    self.assertEqual([r.batch for r in runs], asked)
                    self.assertLessEqual(len(runs), 12, asked)

    def test_a_large_batch_is_found_without_doubling_all_the_way(self) -> None:
        run, asked = runner(2 * GiB, fixed=130 * MiB, per_sample=MiB // 4)
        largest, _, _ = dc.search_largest(run, 1024, 2 * GiB)
        self.assertEqual(largest, true_largest(2 * GiB, fixed=130 * MiB, per_sample=MiB // 4))
        self.assertLessEqual(len(asked), 14, asked)

    def test_reserved_peaks_that_stop_at_the_cap_do_not_slow_it_down(self) -> None:
        cap = 2 * GiB
        largest = true_largest(cap, fixed=200 * MiB, per_sample=11 * MiB)

        def run(batch: int) -> dc.Run:  # as a CNN under a cap: the cache let go, the reserved peak stuck at the cap
            need = peak(batch, fixed=200 * MiB, per_sample=11 * MiB)
            ok = batch <= largest
            return dc.Run(batch, cap, "", ok, min(int(need * 1.6), cap) if ok else 0, None, need if ok else 0)

        found, first_oom, runs = dc.search_largest(run, 16, cap)
        self.assertEqual((found, first_oom), (largest, largest + 1))
        self.assertLessEqual(len(runs), 10, [r.batch for r in runs])

    def test_a_start_that_runs_out_is_halved(self) -> None:
        run, asked = runner(GiB)
        largest, first_oom, _ = dc.search_largest(run, 512, GiB)
        self.assertEqual(largest, true_largest(GiB))
        self.assertEqual(asked[:2], [512, 256])
        self.assertEqual(first_oom, largest + 1)

    def test_nothing_fits(self) -> None:
        run, asked = runner(100 * MiB)
        self.assertEqual(dc.search_largest(run, 4, 100 * MiB)[:2], (0, 1))
        self.assertEqual(asked, [4, 2, 1])

    def test_a_peak_that_does_not_grow_with_the_batch_still_bisects(self) -> None:
        def run(batch: int) -> dc.Run:  # fits up to 300, its peaks say nothing
            return dc.Run(batch, GiB, "", batch <= 300, 5 * MiB if batch <= 300 else 0)

        largest, first_oom, runs = dc.search_largest(run, 8, GiB)
        self.assertEqual((largest, first_oom), (300, 301))
        self.assertLessEqual(len(runs), 16)

    def test_max_batch_ends_the_doubling(self) -> None:
        run, _ = runner(80 * GiB)
        self.assertEqual(dc.search_largest(run, 8, 80 * GiB, max_batch=100)[:2], (100, None))


class Pure(unittest.TestCase):
    def test_fractions_are_distinct_at_least_one_and_below(self) -> None:
        self.assertEqual(dc.fractions(800), [100, 200, 400])
        self.assertEqual(dc.fractions(57), [7, 14, 28])
        self.assertEqual(dc.fractions(5), [1, 2, 3])
        self.assertEqual(dc.fractions(3), [1, 2])
        self.assertEqual(dc.fractions(1), [])
        for n in range(1, 300):
            f = dc.fractions(n)
            self.assertEqual(f, sorted(set(f)))
            self.assertTrue(all(1 <= b < n for b in f))

    def test_monotonic(self) -> None:
        def r(batch: int, ok: bool) -> dc.Run:
            return dc.Run(batch, GiB, "", ok, 0)

        self.assertTrue(dc.monotonic([r(8, True), r(16, False), r(12, True), r(13, False)]))
        self.assertFalse(dc.monotonic([r(8, True), r(16, False), r(12, True), r(20, True)]))
        self.assertTrue(dc.monotonic([r(8, True)]))

    def test_the_oom_batch(self) -> None:
        self.assertEqual(dc.oom_batch(100, 101), 120)
        self.assertEqual(dc.oom_batch(3, 4), 4)
        self.assertEqual(dc.oom_batch(10, 40), 40)

    def test_cause(self) -> None:
        every = {s: "oom" for s in dc.SETTINGS}
        self.assertEqual(dc.cause(every), "exhaustion")
        self.assertEqual(dc.cause({**every, "max_split_size_mb:128": "ok"}), "fragmentation")
        self.assertEqual(dc.cause({**every, "": "ok"}), "flaky")
        self.assertEqual(dc.cause({s: "ok" for s in dc.SETTINGS}), "flaky")

    def test_sizes(self) -> None:
        self.assertEqual(dc.parse_size("2G"), 2 * GiB)
        self.assertEqual(dc.parse_size("512MiB"), 512 * MiB)
        self.assertEqual(dc.parse_size("1.5g"), 3 * GiB // 2)
        self.assertEqual(dc.parse_size("1234"), 1234)
        for bad in ("", "G", "-1G", "0"):
            with self.assertRaises(ValueError):
                dc.parse_size(bad)
        self.assertEqual([dc.cap_name(c) for c in (2 * GiB, 1536 * MiB, 1234)], ["2G", "1536M", "1234"])

    def test_frag_caps_lie_between_the_peaks(self) -> None:
        caps = dc.frag_caps(2400 * MiB, 1600 * MiB)
        self.assertEqual(caps[0], 2000 * MiB)
        self.assertTrue(all(1600 * MiB < c < 2400 * MiB and c % MiB == 0 for c in caps))
        self.assertEqual(dc.frag_caps(1600 * MiB, 1600 * MiB), [])

    def test_relative_frames(self) -> None:
        snap = {"segments": [{"frames": [{"filename": "/repo/scripts/x.py", "line": 3, "name": "f"},
                                         {"filename": "/usr/lib/python3.12/contextlib.py", "line": 1, "name": "g"}]}],
                "device_traces": [[{"frames": [{"filename": "/repo/python/memstress_torch.py"}]}]]}
        dc.relative_frames(snap, "/repo/")
        self.assertEqual(snap["segments"][0]["frames"][0]["filename"], "scripts/x.py")
        self.assertEqual(snap["segments"][0]["frames"][1]["filename"], "/usr/lib/python3.12/contextlib.py")
        self.assertEqual(snap["device_traces"][0][0]["frames"][0]["filename"], "python/memstress_torch.py")


class FakeLab(dc.Lab):
    """doctor_programs.py's stand-in: a normal program needs peak(batch); a fragmentation program needs 2000 MiB at
    batch 64 under the defaults (and the settings that do not help), 1400 MiB with expandable segments or a
    max_split_size_mb; a recording writes a snapshot whose frames name the repository's files."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.echo = False
        self.calls: list[tuple[str, tuple[str, ...], str]] = []

    def doctor(self, oom: dict[str, Any], runs: list[str], batches: list[int]) -> dict[str, Any]:
        """The doctor's stand-in: fragmentation programs get a setting the corpus's grid lacks; the others are
        undecided alone and exhaustion with the runs."""
        self.calls.append(("doctor", (oom["snapshot"], *runs, *map(str, batches)), ""))
        if "frag" in oom["snapshot"]:
            return {"cause": "fragmentation", "named": "expandable_segments:True,max_split_size_mb:128"}
        return {"cause": "exhaustion" if runs else "at_the_limit", "named": None}

    def program(self, name: str, *extra: str, conf: str = "") -> dict[str, Any]:
        with self.lock:
            self.calls.append((name, extra, conf))
        flags = dict(zip(extra[::2], extra[1::2]))
        cap = int(flags.get("--cap", 80 * GiB))
        if "--find-max" in flags:
            if flags["--find-max"] == "lightning" and name == "gpt_amp":
                raise RuntimeError(f"{name}: exit -11: Segmentation fault in {self.work}/x")
            return {"program": name, "tool": flags["--find-max"], "cap": cap, "crashed": False, "error": None,
                    "batch": 40, "trials": [[2, "record", True, 0.1]], "trial_steps": 3, "ooms": 0, "seconds": 1.5}
        batch = int(flags["--batch"])
        if dc.dp.SPECS[name].kind == "fragmentation":
            helped = conf.startswith(("expandable", "max_split"))
            need = (1400 if helped else 2000) * MiB * batch // 64
        else:
            need = peak(batch)
        ok = need <= cap
        if "--record" in flags:
            snapshot = {"segments": [], "device_traces": [[{"action": "alloc", "frames": [
                {"filename": str(ROOT / "scripts" / "lab" / "doctor_programs.py"), "line": 1, "name": "step"}]}]],
                "memstress": {"argv": [str(ROOT / "scripts" / "lab" / "doctor_programs.py"), "--record", flags["--record"]]}}
            with open(flags["--record"], "wb") as f:
                pickle.dump(snapshot, f)
        return {"program": name, "batch": batch, "peak_reserved": need if ok else cap - MiB,
                "peak_allocated": need - 5 * MiB if ok else cap - 30 * MiB,
                "oom": None if ok else "CUDA out of memory. Tried to allocate 20.00 MiB.\nmore", "alloc_conf": conf}


class Corpus(unittest.TestCase):
    def test_the_whole_corpus_from_a_stand_in(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out, work = Path(tmp) / "out", Path(tmp) / "work"
            (out / "snapshots").mkdir(parents=True)
            work.mkdir()
            lab = FakeLab(out, work, 4, Path(tmp) / "memstress")
            names = ["gpt_amp", "kv_generate", "frag_split"]
            caps = [2 * GiB, 4 * GiB]
            entries = dc.collect(lab, names, caps)
            truth = {"schema": dc.SCHEMA, "gpu": "Fake GPU", "driver": "1", "torch": "2.11", "cuda": "13.0",
                     "python": "3.12", "lightning": "2.6", "memstress": None, "date": "2026-01-01T00:00:00Z",
                     "caps": caps, "settings": dc.SETTINGS, "steps": dc.STEPS, "jobs": 4, "seconds": 1.0,
                     "programs": entries}
            text = dc.summary_text(truth)
            lab.close()
            by_name = {e["program"]: e for e in entries}
            self.assertEqual([e["program"] for e in entries], names)
            self.assertEqual(set(entries[0]), set(dc.PROGRAM_KEYS))

            gpt = by_name["gpt_amp"]
            self.assertIsNone(gpt["error"])
            for cap in caps:
                at = gpt["caps"][str(cap)]
                self.assertEqual(at["largest"], true_largest(cap))
                self.assertEqual(at["first_oom"], at["largest"] + 1)
                self.assertTrue(at["stable"])
                self.assertEqual([(r["batch"], r["ok"]) for r in at["repeat"]],
                                 [(at["largest"], True), (at["largest"] + 1, False)])
                self.assertEqual(sorted(int(b) for b in at["recordings"]), dc.fractions(at["largest"]))
                self.assertTrue(all(r["batch"] and "peak_reserved" in r and r["cap"] == cap for r in at["runs"]))
                for rel in at["recordings"].values():
                    self.assertTrue((out / rel).is_file())
            oom = gpt["oom"]
            self.assertEqual(oom["cap"], 2 * GiB)
            self.assertEqual(oom["batch"], dc.oom_batch(true_largest(2 * GiB), true_largest(2 * GiB) + 1))
            self.assertEqual(oom["cause"], "exhaustion")
            self.assertEqual(set(oom["settings"]), set(dc.SETTINGS))
            self.assertEqual(oom["doctor"], {"alone": {"cause": "at_the_limit", "named": None},
                                             "with_runs": {"cause": "exhaustion", "named": None}})
            (asked,) = [c[1] for c in lab.calls if c[0] == "doctor" and len(c[1]) > 1 and "gpt_amp" in c[1][0]]
            quarter, half = dc.fractions(true_largest(2 * GiB))[1:]
            self.assertEqual(asked[1:], (gpt["caps"][str(2 * GiB)]["recordings"][str(quarter)],
                                         gpt["caps"][str(2 * GiB)]["recordings"][str(half)], str(quarter), str(half)))
            self.assertEqual(oom["message"], "CUDA out of memory. Tried to allocate 20.00 MiB.")
            with gzip.open(out / oom["snapshot"]) as f:
                snap = pickle.load(f)
            self.assertEqual(snap["device_traces"][0][0]["frames"][0]["filename"], "scripts/lab/doctor_programs.py")
            self.assertEqual(snap["memstress"]["argv"][0], "./scripts/lab/doctor_programs.py")
            self.assertEqual(gpt["find_max_batch"]["batch"], 40)
            self.assertEqual(gpt["find_max_batch"]["largest"], true_largest(2 * GiB))
            self.assertTrue(gpt["lightning"]["crashed"])  # the process died: said so, the corpus went on
            self.assertIn("<work>/x", gpt["lightning"]["error"])
            recorded = [c for c in lab.calls if c[0] == "gpt_amp" and "--record" in c[1]]
            stacks = {c[1][c[1].index("--stacks") + 1] for c in recorded if c[2] == "" and "--record" in c[1]}
            self.assertEqual(stacks, {"none", "python"})  # the recordings without, the OOM with Python stacks

            self.assertIsNone(by_name["kv_generate"]["lightning"])  # not trainable: no finder run at all
            self.assertIsNone(by_name["kv_generate"]["find_max_batch"])

            frag = by_name["frag_split"]
            self.assertEqual(frag["caps"], {})
            self.assertEqual(frag["oom"]["cause"], "fragmentation")
            self.assertEqual(frag["oom"]["batch"], 64)
            self.assertTrue(1400 * MiB < frag["oom"]["cap"] < 2000 * MiB)
            self.assertEqual(frag["oom"]["settings"][""], "oom")
            self.assertEqual(frag["oom"]["settings"]["expandable_segments:True"], "ok")
            # The setting the doctor named, not in the grid, was run by PyTorch too, and the summary says so.
            named = "expandable_segments:True,max_split_size_mb:128"
            self.assertEqual(frag["oom"]["settings"][named], "ok")
            self.assertEqual(frag["oom"]["doctor"]["alone"], {"cause": "fragmentation", "named": named})
            self.assertNotIn("with_runs", frag["oom"]["doctor"])
            self.assertIn(f"fragmentation: {named} (ok)", text)
            self.assertGreaterEqual(len(frag["search"]), 4)

            dumped = json.dumps(truth) + text + (out / "corpus.log").read_text()
            for path in (tmp, str(ROOT)):
                self.assertNotIn(path, dumped)
            self.assertIn("gpt_amp", text)
            self.assertIn("LARGEST @2G", text)
            self.assertIn("exhaustion", text)
            self.assertIn("fragmentation", text)
            self.assertIn("no problems", text)  # a finder's crash is its own finding, not the corpus's

    def test_the_summary_names_a_fragmentation_program_that_did_not_fragment(self) -> None:
        truth = {"torch": "2.11", "cuda": "13.0", "gpu": "G", "driver": "1", "date": "d", "seconds": 3.0,
                 "caps": [GiB], "settings": dc.SETTINGS,
                 "programs": [{"program": "frag_split", "kind": "fragmentation", "caps": {}, "error": None,
                               "oom": {"batch": 64, "cap": GiB, "settings": {s: "oom" for s in dc.SETTINGS},
                                       "cause": "exhaustion"}}]}
        text = dc.summary_text(truth)
        self.assertIn("frag_split: a fragmentation program's OOM came out 'exhaustion'", text)


class Islands(unittest.TestCase):
    """scripts/lab/doctor_islands.py: PyTorch's largest batch below every batch seen to run out."""

    @staticmethod
    def runs(*outcomes: tuple[int, bool]) -> list[dict[str, Any]]:
        return [{"batch": b, "ok": ok} for b, ok in outcomes]

    def test_a_batch_that_runs_out_below_the_bisections_answer_lowers_it(self) -> None:
        # kv_generate under 4 GiB: bisection ran 966-968 and named 968; a run at 909 ran out.
        runs = self.runs((512, True), (986, False), (966, True), (969, False), (968, True), (909, False),
                         (908, True))
        self.assertEqual(di.largest_below_failures(runs), 908)

    def test_without_a_failure_below_it_is_the_largest_that_ran(self) -> None:
        self.assertEqual(di.largest_below_failures(self.runs((40, True), (42, True), (43, False))), 42)
        self.assertEqual(di.largest_below_failures(self.runs((40, True), (41, True))), 41)

    def test_none_when_nothing_ran_below_the_first_failure(self) -> None:
        self.assertIsNone(di.largest_below_failures(self.runs((8, False), (16, True))))

    def test_a_plan_made_and_run_at_once_is_refused(self) -> None:
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit) as done:
            (Path(d) / "truth.json").write_text("{}")
            di.main([d, "--plan", str(Path(d) / "plan.json"), "--plan-out", str(Path(d) / "out.json")])
        self.assertEqual(done.exception.code, 2)

    def test_a_corpus_without_truth_is_refused(self) -> None:
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit) as done:
            di.main([d, "--plan", str(Path(d) / "plan.json")])
        self.assertEqual(done.exception.code, 2)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    unittest.main()
