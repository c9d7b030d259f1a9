"""memstress doctor and predict-batch against PyTorch's own answers, on the proof corpus that
scripts/lab/doctor_corpus.py recorded on a GPU (results/<gpu>/doctor-corpus-<driver>/truth.json).

    test_corpus_truth.py MEMSTRESS_BINARY [-v] [--table]

For every program of the corpus:
- the doctor's verdict on its OOM (the snapshot the recorder wrote under a memory-fraction cap) is never the
  wrong one: exhaustion where PyTorch itself ran out under every allocator setting, fragmentation where one let
  it run, and a setting the doctor names is one PyTorch ran with; "at the limit" (the doctor says it cannot
  tell) is allowed, and counted. Alone, and with two batch runs (--batch-runs: the recordings at a quarter and a
  half of the largest batch under the OOM's cap).
- predict-batch's safe batch from two recordings (an eighth and a quarter, a quarter and a half of the real
  largest batch under each cap) is never above the real largest batch PyTorch found by bisection, and within
  10% (from the eighth and quarter) and 5% (from the quarter and half) below it; where the runs matched too
  poorly it names none (it does not know).
- memstress_torch.find_max_batch, as the corpus ran it on the GPU (its figures in truth.json, no replay here),
  named a batch that ran: never above the real largest, no crash, no OOM met, at most four trials; and within 5%
  below it.
The targets not yet met are listed in KNOWN_MISSES and FINDER_MISSES, each measured: a case that starts to meet its target fails
too, so that the list and docs/doctor.md are kept true. The replays run on a simulated device: no GPU needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "lab"))
from doctor_corpus import recorded, recording_pairs  # noqa: E402 - the corpus's own reading of its recordings

BINARY = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
TABLE = "--table" in sys.argv
if TABLE:
    sys.argv.remove("--table")
CORPORA = sorted(ROOT.glob("results/*/doctor-corpus-*/truth.json"))
# Below the real largest batch, at most this share (the targets), by the pair the prediction came from.
WITHIN = {"1/8+1/4": 0.10, "1/4+1/2": 0.05}
# (program, cap in GiB, pair): what predict-batch's safe batch does there today, against PyTorch's largest.
KNOWN_MISSES = {
    # The replay gives PyTorch's peaks on PyTorch's own traces at these batches (results/h200/replay-fidelity-*/);
    # the two-point model does not give its requests: cuDNN's workspaces, chosen per shape and refused without
    # harm (the ResNet, the U-Net). The backward workspace that stopped growing at 132 MiB (the encoder, the
    # GPT, the fp32 master weights) is a reduction's scratch, capped since (Note [A reduction's scratch stops
    # growing], harness/doctor/batch_model.hpp).
    ("cnn_train", 2, "1/4+1/2"): "low: the model's traces at 159, 160 and 164 run out; PyTorch's own fit (cuDNN)",
    ("unet_train", 2, "1/4+1/2"): "low: the estimate is 40 against 42 (cuDNN's workspaces)",
    ("unet_train", 4, "1/4+1/2"): "low: the estimate is 79 against 86 (cuDNN's workspaces)",
}
# find_max_batch's batch more than 5% below the real largest: each with what predict-batch said there. The corpus ran
# it with its third recording at half the first answer; at three quarters (now) it misses only the U-Net on an H200
# (results/h200/find-max-batch-580.159.04/).
FINDER_MISSES = {
    "transformer_amp": "44 against 47: predict-batch's estimate from batches 4 and 23 is 44 itself",
    "unet_train": "39 against 42: the estimate from batches 4 and 18 is 39 itself",
    "varlen_train": "45 against 48: the safe end of the range 45..48",
}
# The doctor decides at least this many of the corpus's OOMs (the rest "at the limit"): alone, of all 16; with the
# runs, all 13 that have them.
DECIDED_AT_LEAST = {False: 10, True: 13}


# The corpus's recordings predate the recorder's figures of the GPU (Note [A reduction's scratch stops growing]):
# its GPU's multiprocessors, from NVIDIA's specifications (an H100 SXM5 and an H200 have 132), by the results
# folder it lies in.
MULTIPROCESSORS = {"h100": "132", "h200": "132"}


def gpu_of(base: Path) -> list[str]:
    sms = MULTIPROCESSORS.get(base.parent.name)
    return ["--multiprocessors", sms] if sms else []


def run(*args: str) -> dict[str, Any]:
    done = subprocess.run([str(BINARY), *args, "--format", "json"], capture_output=True, text=True, check=False,
                          timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"memstress {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def corpora() -> list[tuple[Path, dict[str, Any]]]:
    return [(path.parent, json.loads(path.read_text())) for path in CORPORA]


def pytorch_largest(base: Path, program: str, cap: str, at: dict[str, Any]) -> int | None:
    """PyTorch's largest batch under the cap: below every batch PyTorch ran out at, where the corpus has PyTorch's
    runs at the batches the replay says run out (islands.json, scripts/lab/doctor_islands.py); else bisection's."""
    islands = base / "islands.json"
    if islands.is_file():
        found = json.loads(islands.read_text())["programs"].get(program, {}).get(cap)
        if found and found.get("largest"):
            return int(found["largest"])
    return at.get("largest")


@unittest.skipIf(BINARY is None, "usage: test_corpus_truth.py MEMSTRESS_BINARY")
@unittest.skipIf(not CORPORA, "no corpus committed under results/*/doctor-corpus-*/")
class CorpusTruth(unittest.TestCase):
    def verdicts(self, with_runs: bool) -> None:
        decided = 0
        rows = []
        for base, corpus in corpora():
            for program in corpus["programs"]:
                oom = program.get("oom")
                if not oom or oom.get("cause") not in ("exhaustion", "fragmentation"):
                    continue
                args = ["doctor", str(base / oom["snapshot"])]
                at = program.get("caps", {}).get(str(oom["cap"]), {})
                if with_runs:
                    batches = recorded(at)
                    if len(batches) != 3:
                        continue
                    args += ["--batch-runs", ",".join(str(base / at["recordings"][str(b)]) for b in batches[1:]),
                             "--batch", f"{batches[1]},{batches[2]}", *gpu_of(base)]
                with self.subTest(corpus=base.name, program=program["program"], with_runs=with_runs):
                    doc = run(*args)
                    verdict = doc["oom"]
                    rows.append((program["program"], oom["cause"], verdict["cause"]))
                    self.assertIn(verdict["cause"], (oom["cause"], "at_the_limit"), verdict)
                    if verdict["cause"] == "fragmentation":
                        conf = verdict["named"]["pytorch_alloc_conf"]
                        self.assertEqual(oom["settings"].get(conf), "ok",
                                         f"the doctor names {conf!r}; PyTorch under it: {oom['settings'].get(conf)}")
                    if verdict["cause"] != "fragmentation":
                        self.assertIsNone(doc["settings"]["recommended"])
                    decided += verdict["cause"] == oom["cause"]
        if TABLE:
            print(f"\ndoctor{' --batch-runs' if with_runs else ''}: program, PyTorch's cause, the doctor's")
            for row in rows:
                print("  ".join(row))
        self.assertGreaterEqual(decided, DECIDED_AT_LEAST[with_runs], rows)

    def test_the_doctor_is_never_wrong_on_pytorchs_ooms(self) -> None:
        self.verdicts(with_runs=False)

    def test_the_doctor_with_two_batch_runs_is_never_wrong(self) -> None:
        self.verdicts(with_runs=True)

    def test_predict_batch_names_a_batch_that_runs(self) -> None:
        misses: dict[tuple[str, int, str], str] = {}
        for base, corpus in corpora():
            for program in corpus["programs"]:
                for cap, at in sorted(program.get("caps", {}).items()):
                    largest = pytorch_largest(base, program["program"], cap, at)
                    for kind, small, large in recording_pairs(at) if largest else []:
                        doc = run("predict-batch", str(base / at["recordings"][str(small)]),
                                  str(base / at["recordings"][str(large)]), "--batch", f"{small},{large}",
                                  "--capacity", cap, *gpu_of(base))
                        key = (program["program"], int(cap) >> 30, kind)
                        safe = doc["safe_batch"]
                        if gpu_of(base):  # the GPU's figures given, and said in the JSON
                            self.assertEqual(doc["model"]["multiprocessors"], int(gpu_of(base)[1]), key)
                            self.assertGreaterEqual(doc["model"]["capped_scratch"], 0, key)
                        if TABLE:
                            print(f"{key}: PyTorch {largest}, safe {safe}, estimate {doc['estimate']}, "
                                  f"sure {doc['sure']}, reliable {doc['match']['reliable']}")
                        if safe is None:
                            # It does not know: only where the runs matched too poorly, and it says what to record.
                            self.assertFalse(doc["match"]["reliable"], (key, doc))
                            self.assertIsNotNone(doc["record_at"], key)
                            continue
                        if safe > largest or safe < (1 - WITHIN[kind]) * largest:
                            misses[key] = f"safe {safe}, estimate {doc['estimate']}, PyTorch's {largest}"
        self.assertEqual(set(misses), set(KNOWN_MISSES), misses)


    def test_batches_that_run_out_below_the_recorded_ones_are_found(self) -> None:
        """kv_generate recorded under 4 GiB (batches 242 and 484) and judged under 2 GiB: 484 fits by bisection, but
        PyTorch ran out at 441 (islands.json), below the larger batch recorded; the scan below the answer reaches
        there (Note [Fitting is not monotonic])."""
        for base, corpus in corpora():
            program = next((p for p in corpus["programs"] if p["program"] == "kv_generate"), None)
            small = pytorch_largest(base, "kv_generate", str(2 << 30), {}) if program else None
            at = (program or {}).get("caps", {}).get(str(4 << 30), {})
            if not small or small == program["caps"][str(2 << 30)]["largest"] or len(recorded(at)) != 3:
                continue  # no PyTorch runs below bisection's answer in this corpus
            quarter, half = recorded(at)[1:]
            doc = run("predict-batch", str(base / at["recordings"][str(quarter)]),
                      str(base / at["recordings"][str(half)]), "--batch", f"{quarter},{half}",
                      "--capacity", str(2 << 30), *gpu_of(base))
            with self.subTest(corpus=base.name):
                self.assertLess(small, half)
                self.assertLessEqual(doc["estimate"], small)
                self.assertLessEqual(doc["safe_batch"], small)
                self.assertGreaterEqual(doc["safe_batch"], 0.95 * small)

    def test_find_max_batch_ran_a_batch_never_above_the_real_largest(self) -> None:
        misses: set[str] = set()
        found_any = False
        for _, corpus in corpora():
            for program in corpus["programs"]:
                found = program.get("find_max_batch")
                if not found:
                    continue
                found_any = True
                name, largest = program["program"], found["largest"]
                with self.subTest(program=name):
                    self.assertFalse(found["crashed"], found.get("error"))
                    self.assertLessEqual(found["batch"], largest)
                    self.assertEqual(found["ooms"], 0)
                    self.assertLessEqual(found.get("trial_count", len(found["trials"])), 4)
                    if found["batch"] < 0.95 * largest:
                        misses.add(name)
        if found_any:
            self.assertEqual(misses, set(FINDER_MISSES))


if __name__ == "__main__":
    unittest.main()
