"""The recorder as programs import it, python/memstress_torch.py (memstress.recorder), without torch or a GPU: its
metadata (the limit in force and where it came from) and find_max_batch against a stand-in for torch whose "GPU" runs out of memory above a batch size, with a
stand-in memstress binary that prints canned predict-batch JSON and logs how it was called.

    cd tests/scripts && python3 -m unittest -v test_memstress_torch
"""

from __future__ import annotations

import gzip
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
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
import memstress_torch as mt  # noqa: E402

GiB = 1 << 30


class FakeOOM(RuntimeError):
    """torch.cuda.OutOfMemoryError's stand-in."""


class FakeTensor:
    def __init__(self, value: float, device: str = "cuda") -> None:
        self.value = value
        self.device = device

    def detach(self) -> FakeTensor:
        return self

    def to(self, device: str, copy: bool = False) -> FakeTensor:
        return FakeTensor(self.value, device)


class FakeModel:
    """A module with one weight that every step changes; zero_grad is counted."""

    def __init__(self) -> None:
        self.weight = FakeTensor(1.0)
        self.zero_grads = 0

    def state_dict(self) -> dict[str, Any]:
        return {"weight": self.weight, "nested": [{"momentum": FakeTensor(0.5)}], "step": 0}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.weight = FakeTensor(state["weight"].value, "cuda")

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.zero_grads += 1


class FakeModule(FakeModel):
    """torch.nn.Module's stand-in: a model the search finds in the step; modules() lists it and what it holds."""

    def __init__(self, *children: FakeModule) -> None:
        super().__init__()
        self.children = children

    def modules(self) -> list[FakeModule]:
        return [self, *(m for c in self.children for m in c.modules())]


class FakeOptimizer(FakeModel):
    """torch.optim.Optimizer's stand-in: state that every step changes, as the model's weight."""


class FakeTorch(types.ModuleType):
    """Just enough of torch: a device of `total` bytes, `free` of them free, PyTorch holding `reserved`; a step
    at batch n runs out of memory when n > `fits`. Records whether the history is on during each step."""

    Tensor = FakeTensor

    def __init__(self, *, total: int = 80 * GiB, free: int = 70 * GiB, reserved: int = 8 * GiB,
                 fraction: float = 1.0, name: str = "Fake GPU", uuid: str = "GPU-5f1c", fits: int = 1000,
                 edge: int | None = None) -> None:
        super().__init__("torch")
        self.edge = fits if edge is None else edge  # above it a step meets two refusals it survives (cuDNN's)
        self.num_ooms = 0
        self.__version__ = "2.11.0+fake"
        self.total, self.free, self.reserved, self.fraction = total, free, reserved, fraction
        self.fits = fits
        self.history_on = False
        self.history_calls: list[dict[str, Any]] = []
        self.steps: list[tuple[int, bool]] = []  # (batch, history on)
        self.weights: list[float] = []  # the model's weight as each step began
        self.empty_caches = 0
        self.version = types.SimpleNamespace(cuda="13.0")
        self.nn = types.SimpleNamespace(Module=FakeModule)
        self.optim = types.SimpleNamespace(Optimizer=FakeOptimizer)
        self.cuda = types.SimpleNamespace(
            OutOfMemoryError=FakeOOM, is_available=lambda: True,
            memory=types.SimpleNamespace(_record_memory_history=self._history, _snapshot=self._snapshot),
            current_device=lambda: 0, mem_get_info=lambda d=0: (self.free, self.total),
            memory_reserved=lambda d=0: self.reserved, get_device_name=lambda d=0: name,
            get_device_properties=lambda d=0: types.SimpleNamespace(
                uuid=uuid, multi_processor_count=132, max_threads_per_multi_processor=2048),
            get_per_process_memory_fraction=lambda d=0: self.fraction,
            synchronize=lambda d=None: None, empty_cache=self._empty_cache,
            memory_stats=lambda d=0: {"num_ooms": self.num_ooms})
        self._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=lambda observer: None)

    def _history(self, enabled: Any = "all", **kwargs: Any) -> None:
        self.history_calls.append({"enabled": enabled, **kwargs})
        self.history_on = enabled is not None

    def _snapshot(self) -> dict[str, Any]:
        return {"segments": [], "device_traces": [[{"action": "alloc", "size": 512}]]}

    def _empty_cache(self) -> None:
        self.empty_caches += 1

    def step(self, model: FakeModel) -> Any:
        def run(batch: int) -> None:
            self.steps.append((batch, self.history_on))
            self.weights.append(model.weight.value)
            model.weight.value += 1  # an optimizer step
            held = [FakeTensor(batch)]  # what the exception's frames hold
            if batch > self.edge:
                self.num_ooms += 2
            if batch > self.fits:
                self.num_ooms += 1
                raise FakeOOM(f"CUDA out of memory. Tried to allocate {batch} MiB.\nmore text")
            del held
        return run


FAKE_BINARY = """#!{python}
import json, os, pickle, sys
log, answers = os.environ["FAKE_LOG"], json.load(open(os.environ["FAKE_ANSWERS"]))
calls = open(log).read().count("\\n") if os.path.exists(log) else 0
metas = [pickle.load(open(p, "rb"))["memstress"] for p in sys.argv[2:4]]
with open(log, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "metas": metas}}) + "\\n")
answer = answers[min(calls, len(answers) - 1)]
if "_exit" in answer:
    sys.stderr.write(answer["_stderr"])
    sys.exit(answer["_exit"])
print(json.dumps(answer))
"""


class FindMaxBatch(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memstress-torch-test-"))
        self.binary = self.tmp / "memstress"
        self.binary.write_text(FAKE_BINARY.format(python=sys.executable))
        self.binary.chmod(0o755)
        self.log = self.tmp / "calls.jsonl"
        self.env = mock.patch.dict(os.environ, {"FAKE_LOG": str(self.log), "FAKE_ANSWERS": str(self.tmp / "a.json")})
        self.env.start()

    def tearDown(self) -> None:
        self.env.stop()
        for p in sorted(self.tmp.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        self.tmp.rmdir()

    def answers(self, *answers: dict[str, Any]) -> None:
        (self.tmp / "a.json").write_text(json.dumps(answers))

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def find(self, torch: FakeTorch, model: FakeModel, **kwargs: Any) -> tuple[mt.FoundBatch, list[str]]:
        lines: list[str] = []
        kwargs.setdefault("memstress", str(self.binary))
        with mock.patch.dict(sys.modules, {"torch": torch}), mock.patch.object(tempfile, "tempdir", str(self.tmp)):
            found = mt.find_max_batch(torch.step(model), restore=(model,), log=lines.append, **kwargs)
        return found, lines

    def assert_left_as_found(self, torch: FakeTorch, model: FakeModel) -> None:
        self.assertEqual(model.weight.value, 1.0)  # the state put back
        self.assertFalse(torch.history_on)
        self.assertEqual(list(self.tmp.glob("memstress-find-*")), [])

    def test_the_common_path_is_two_recordings_and_one_confirmation(self) -> None:
        torch, model = FakeTorch(fits=700), FakeModel()
        self.answers({"safe_batch": 640, "range": {"low": 600, "high": 700}, "sure": True,
                      "largest_fit": {"batch": 9999}})
        found, lines = self.find(torch, model, capacity=20 * GiB, start=200)
        self.assertEqual(found.batch, 640)
        self.assertEqual([(t.batch, t.kind, t.ok) for t in found.trials],
                         [(200, "record", True), (400, "record", True), (640, "confirm", True)])
        # Two steps a trial, the history on only while recording; each trial from the state as it was found.
        self.assertEqual(torch.steps, [(200, True), (200, True), (400, True), (400, True), (640, False), (640, False)])
        self.assertEqual(torch.weights, [1.0, 2.0] * 3)
        self.assertEqual(found.steps, 6)
        self.assertEqual(found.ooms, 0)
        self.assertEqual(found.prediction["safe_batch"], 640)
        (call,) = self.calls()
        argv = call["argv"]
        self.assertEqual(argv[0], "predict-batch")
        self.assertEqual(argv[argv.index("--batch") + 1], "200,400")
        self.assertEqual(argv[argv.index("--capacity") + 1], str(20 * GiB))
        self.assertEqual(argv[argv.index("--format") + 1], "json")
        self.assertEqual([m["batch"] for m in call["metas"]], [200, 400])
        self.assertEqual(call["metas"][0]["limit"], {"bytes": 20 * GiB, "source": "capacity argument"})
        self.assert_left_as_found(torch, model)
        self.assertTrue(any("confirm batch 640: ran" in line for line in lines))

    def test_one_step_a_trial_when_asked_and_a_trial_that_runs_out_counts_the_steps_it_took(self) -> None:
        torch, model = FakeTorch(fits=620), FakeModel()
        self.answers({"safe_batch": 640, "sure": True, "range": {"low": 600, "high": 700}})
        found, _ = self.find(torch, model, steps_per_trial=1, start=200)
        self.assertEqual([b for b, _ in torch.steps], [200, 400, 640, 600])
        self.assertEqual(torch.weights, [1.0] * 4)  # every trial from the state as found, the OOM's one too
        self.assertEqual((found.steps, found.batch), (4, 600))
        torch, model = FakeTorch(fits=620), FakeModel()
        found, _ = self.find(torch, model, start=200)
        self.assertEqual([b for b, _ in torch.steps], [200, 200, 400, 400, 640, 600, 600])  # 640 ran out at its first
        self.assertEqual(found.steps, 7)
        self.assert_left_as_found(torch, model)

    def test_the_estimate_is_confirmed_and_the_safe_batch_is_the_fallback(self) -> None:
        answer = {"safe_batch": 39, "estimate": 41, "sure": True, "range": {"low": 39, "high": 41}}
        # PyTorch runs 43, above 40 only on a library's fallbacks: the estimate runs, on them
        torch, model = FakeTorch(fits=43, edge=40), FakeModel()
        self.answers(answer)
        found, lines = self.find(torch, model, start=10)
        self.assertEqual([(t.batch, t.kind, t.ok, t.refused) for t in found.trials],
                         [(10, "record", True, 0), (20, "record", True, 0), (41, "confirm", True, 4)])
        self.assertEqual((found.batch, found.ooms), (41, 0))
        self.assertIn("memstress_torch: confirm batch 41: ran", lines[-1])
        self.assertIn(", 4 request(s) refused on the way)", lines[-1])
        torch, model = FakeTorch(fits=40), FakeModel()  # the estimate runs out: the safe end, not 90% of 41
        self.answers(answer)
        found, _ = self.find(torch, model, start=10)
        self.assertEqual([(t.batch, t.kind, t.ok, t.refused) for t in found.trials][2:],
                         [(41, "confirm", False, 3), (39, "confirm", True, 0)])  # two survived, then its OOM
        self.assertEqual((found.batch, found.ooms), (39, 1))
        self.assert_left_as_found(torch, model)

    def test_an_estimate_past_refused_workspaces_is_not_confirmed(self) -> None:
        # The estimate's replay went on past refused convolution workspaces: the safe end is confirmed, and only it.
        torch, model = FakeTorch(fits=43, edge=40), FakeModel()
        self.answers({"safe_batch": 42, "estimate": 44, "sure": True, "range": {"low": 42, "high": 44},
                      "largest_fit": {"batch": 44, "refusals_survived": 5}})
        found, _ = self.find(torch, model, start=10)
        self.assertEqual([(t.batch, t.kind, t.ok) for t in found.trials],
                         [(10, "record", True), (20, "record", True), (42, "confirm", True)])
        self.assertEqual((found.batch, found.ooms), (42, 0))

    def test_an_estimate_below_the_safe_batch_is_not_confirmed(self) -> None:
        torch, model = FakeTorch(fits=700), FakeModel()
        self.answers({"safe_batch": 640, "estimate": 600, "sure": True, "range": {"low": 640, "high": 640}})
        found, _ = self.find(torch, model, start=200)
        self.assertEqual(found.trials[-1][:3], (640, "confirm", True))

    def test_a_torch_without_memory_stats_counts_no_refusals(self) -> None:
        torch, model = FakeTorch(fits=700), FakeModel()
        del torch.cuda.memory_stats
        self.answers({"safe_batch": 640, "sure": True})
        found, _ = self.find(torch, model, start=200)
        self.assertEqual([(t.batch, t.refused) for t in found.trials], [(200, 0), (400, 0), (640, 0)])

    def test_with_no_sure_batch_the_estimate_is_confirmed(self) -> None:
        torch, model = FakeTorch(fits=65), FakeModel()
        self.answers({"safe_batch": None, "sure": False, "record_at": [17, 34], "estimate": 68,
                      "range": {"low": None, "high": 68}})
        found, _ = self.find(torch, model, start=10)
        self.assertEqual([(t.batch, t.kind, t.ok) for t in found.trials],
                         [(10, "record", True), (20, "record", True), (51, "record", True), (68, "confirm", False),
                          (61, "confirm", True)])  # the estimate ran out: 90% of it
        self.assertEqual(found.batch, 61)
        self.assert_left_as_found(torch, model)

    def test_largest_fit_is_read_when_there_is_no_safe_batch(self) -> None:
        torch, model = FakeTorch(fits=1000), FakeModel()
        self.answers({"largest_fit": {"batch": 300, "peak_reserved": 1}, "first_fail": {"batch": 301}})
        found, _ = self.find(torch, model, start=80)
        self.assertEqual(found.batch, 300)
        self.assertEqual([t.batch for t in found.trials], [80, 160, 300])

    def test_a_sure_answer_far_above_the_recordings_is_recorded_again_nearer(self) -> None:
        torch, model = FakeTorch(fits=900), FakeModel()
        self.answers({"safe_batch": 330, "sure": True, "range": {"low": 330, "high": 340}},
                     {"safe_batch": 850, "sure": True, "range": {"low": 800, "high": 900}})
        found, _ = self.find(torch, model)
        self.assertEqual([(t.batch, t.kind) for t in found.trials],
                         [(2, "record"), (4, "record"), (248, "record"), (850, "confirm")])
        _, second = self.calls()
        self.assertEqual(second["argv"][second["argv"].index("--batch") + 1], "4,248")
        self.assertEqual(found.batch, 850)
        self.assert_left_as_found(torch, model)

    def test_not_sure_records_once_more_and_never_takes_more_than_four_trials(self) -> None:
        torch, model = FakeTorch(fits=900), FakeModel()
        self.answers({"safe_batch": 1000, "sure": False, "record_at": [250, 500]},
                     {"safe_batch": 850, "sure": True, "range": {"low": 800, "high": 900}})
        found, _ = self.find(torch, model, capacity=GiB)
        self.assertEqual(found.batch, 850)
        self.assertEqual([(t.batch, t.kind) for t in found.trials],
                         [(2, "record"), (4, "record"), (750, "record"), (850, "confirm")])
        _, second = self.calls()
        self.assertEqual(second["argv"][second["argv"].index("--batch") + 1], "4,750")
        self.assertEqual(found.prediction["safe_batch"], 850)
        self.assert_left_as_found(torch, model)

    def test_no_third_recording_at_or_below_the_larger_of_the_first_two(self) -> None:
        torch, model = FakeTorch(fits=900), FakeModel()
        self.answers({"safe_batch": 5, "sure": False, "record_at": [1, 2], "range": {"low": 5, "high": 6}})
        found, _ = self.find(torch, model, capacity=GiB)
        self.assertEqual([(t.batch, t.kind) for t in found.trials], [(2, "record"), (4, "record"), (5, "confirm")])
        self.assertEqual(len(self.calls()), 1)

    def test_a_third_recording_that_runs_out_has_the_first_pair_answer_below_it(self) -> None:
        torch, model = FakeTorch(fits=600), FakeModel()
        self.answers({"safe_batch": 1000, "sure": False, "record_at": [250, 500]},
                     {"safe_batch": 560, "sure": True, "range": {"low": 540, "high": 570}})
        found, _ = self.find(torch, model, capacity=GiB)
        self.assertEqual([(t.batch, t.kind, t.ok) for t in found.trials],
                         [(2, "record", True), (4, "record", True), (750, "record", False), (560, "confirm", True)])
        _, second = self.calls()
        argv = second["argv"]
        self.assertEqual(argv[argv.index("--batch") + 1], "2,4")
        self.assertEqual(argv[argv.index("--max-batch") + 1], "749")
        self.assertEqual((found.batch, found.ooms), (560, 1))
        self.assert_left_as_found(torch, model)

    def test_an_oom_at_the_confirmation_backs_off_without_raising(self) -> None:
        torch, model = FakeTorch(fits=620), FakeModel()
        self.answers({"safe_batch": 640, "sure": True, "range": {"low": 600, "high": 700}})
        err = io.StringIO()
        with redirect_stderr(err):
            found, lines = self.find(torch, model, start=200)
        self.assertEqual(found.batch, 600)  # the range's low end, and it ran
        self.assertEqual(found.ooms, 1)
        self.assertEqual([(t.batch, t.kind, t.ok) for t in found.trials],
                         [(200, "record", True), (400, "record", True), (640, "confirm", False), (600, "confirm", True)])
        self.assertTrue(any("out of memory (CUDA out of memory. Tried to allocate 640 MiB.)" in x for x in lines))
        self.assertGreater(model.zero_grads, 0)
        self.assert_left_as_found(torch, model)
        self.assertEqual(err.getvalue(), "")  # everything went to `log`

    def test_without_a_range_it_backs_off_by_a_tenth_then_a_fifth_until_one_runs(self) -> None:
        torch, model = FakeTorch(fits=500), FakeModel()
        self.answers({"safe_batch": 600})
        found, _ = self.find(torch, model, start=200)
        self.assertEqual([t.batch for t in found.trials], [200, 400, 600, 540, 432])
        self.assertEqual(found.batch, 432)
        self.assertEqual(found.ooms, 2)
        self.assert_left_as_found(torch, model)

    def test_never_more_than_six_confirmations(self) -> None:
        torch, model = FakeTorch(fits=8), FakeModel()
        self.answers({"safe_batch": 1000})
        found, _ = self.find(torch, model, start=4, max_batch=30)
        self.assertEqual([t.batch for t in found.trials], [4, 8, 30, 27, 21, 16, 12, 9])
        self.assertEqual((found.batch, found.ooms), (8, 6))  # the largest recording: it ran
        self.assert_left_as_found(torch, model)

    def test_a_first_recording_that_runs_out_halves_the_pair(self) -> None:
        torch, model = FakeTorch(fits=5), FakeModel()
        self.answers({"safe_batch": 5})
        found, _ = self.find(torch, model, start=8)
        self.assertEqual([(t.batch, t.ok) for t in found.trials], [(8, False), (4, True), (8, False)])
        self.assertEqual(found.batch, 4)  # 8 did not run: nothing to predict from, the largest that ran
        self.assertIsNone(found.prediction)
        self.assert_left_as_found(torch, model)

    def test_the_default_capacity_is_the_fractions_share_else_free_plus_reserved(self) -> None:
        self.answers({"safe_batch": 3})
        for torch, expected in ((FakeTorch(fraction=0.25), 20 * GiB), (FakeTorch(), 78 * GiB)):
            self.log.unlink(missing_ok=True)
            self.find(torch, FakeModel())
            argv = self.calls()[0]["argv"]
            self.assertEqual(argv[argv.index("--capacity") + 1], str(expected))

    def test_the_setting_and_max_batch_are_passed_on(self) -> None:
        torch = FakeTorch()
        self.answers({"safe_batch": 5000})
        found, _ = self.find(torch, FakeModel(), alloc_conf="expandable_segments:True", max_batch=900)
        argv = self.calls()[0]["argv"]
        self.assertEqual(argv[argv.index("--alloc-conf") + 1], "expandable_segments:True")
        self.assertEqual(argv[argv.index("--max-batch") + 1], "900")
        self.assertEqual(found.batch, 900)  # never above max_batch

    def test_a_failing_binary_is_a_clear_error_and_the_state_is_put_back(self) -> None:
        torch, model = FakeTorch(), FakeModel()
        self.answers({"_exit": 2, "_stderr": "batch2.pickle: not a PyTorch snapshot\n"})
        with self.assertRaises(mt.PredictError) as caught:
            self.find(torch, model)
        self.assertIn("memstress predict-batch exited 2: ", str(caught.exception))
        self.assertIn("not a PyTorch snapshot", str(caught.exception))
        self.assert_left_as_found(torch, model)

    def test_no_binary_at_all_is_a_clear_error(self) -> None:
        torch, model = FakeTorch(), FakeModel()
        with mock.patch.dict(os.environ, {"PATH": str(self.tmp / "nowhere")}), \
                self.assertRaises(mt.PredictError) as caught:
            os.environ.pop("MEMSTRESS", None)
            self.find(torch, model, memstress=None)
        self.assertIn("no memstress binary", str(caught.exception))

    def test_the_binary_is_found_through_MEMSTRESS(self) -> None:  # noqa: N802
        self.answers({"safe_batch": 10})
        with mock.patch.dict(os.environ, {"MEMSTRESS": str(self.binary)}):
            found, _ = self.find(FakeTorch(), FakeModel(), memstress=None)
        self.assertEqual(found.batch, 10)


    def test_left_out_restore_is_found_in_the_step_and_every_trial_starts_from_it(self) -> None:
        torch, inner = FakeTorch(fits=700), FakeModule()
        model, optimizer = FakeModule(inner), FakeOptimizer()
        run = torch.step(model)

        def train_step(n: int) -> None:  # names the model through `run`, the optimizer itself
            run(n)
            optimizer.weight.value += 1

        self.answers({"safe_batch": 640, "range": {"low": 600, "high": 700}, "sure": True})
        lines: list[str] = []
        with mock.patch.dict(sys.modules, {"torch": torch}), mock.patch.object(tempfile, "tempdir", str(self.tmp)):
            found = mt.find_max_batch(train_step, memstress=str(self.binary), start=200, log=lines.append)
        self.assertEqual(found.batch, 640)
        self.assertEqual(sorted(found.restored), ["FakeModule", "FakeOptimizer"])  # not the module inside
        self.assertTrue(found.fresh)
        self.assertEqual(torch.weights, [1.0, 2.0] * 3)  # each trial from the state as it was found
        self.assertEqual((model.weight.value, optimizer.weight.value), (1.0, 1.0))  # and left so
        self.assertIn("each trial starts from the state of", lines[0])

    def test_with_nothing_to_restore_the_batch_is_said_to_be_unconfirmed_for_a_fresh_process(self) -> None:
        torch = FakeTorch(fits=700)
        weights = {"w": 1.0}

        def step(n: int) -> None:  # state the search cannot see: a plain dict
            torch.steps.append((n, torch.history_on))
            weights["w"] += 1
            if n > torch.fits:
                raise FakeOOM("out of memory")

        self.answers({"safe_batch": 640, "range": {"low": 600, "high": 700}, "sure": True})
        lines: list[str] = []
        with mock.patch.dict(sys.modules, {"torch": torch}), mock.patch.object(tempfile, "tempdir", str(self.tmp)):
            found = mt.find_max_batch(step, memstress=str(self.binary), start=200, log=lines.append)
        self.assertEqual(found.batch, 640)
        self.assertFalse(found.fresh)
        self.assertEqual(found.restored, [])
        self.assertIn("no model or optimizer found in the step and no restore= given", lines[0])
        self.assertIn("batch 640 ran in this process after the trials before it, not from a fresh start: not "
                      "confirmed for a fresh process", lines[-1])
        # restore=() says there is no state to keep: fresh, and nothing said.
        self.answers({"safe_batch": 640, "range": {"low": 600, "high": 700}, "sure": True})
        lines.clear()
        with mock.patch.dict(sys.modules, {"torch": torch}), mock.patch.object(tempfile, "tempdir", str(self.tmp)):
            found = mt.find_max_batch(step, memstress=str(self.binary), start=200, restore=(), log=lines.append)
        self.assertTrue(found.fresh)
        self.assertFalse(any("fresh" in line for line in lines))

    def test_without_torch_or_a_gpu_it_says_so_in_one_line(self) -> None:
        python = str(HERE.parents[1] / "python")
        for code, said in (
                ("import sys; sys.modules['torch'] = None\nimport memstress_torch\n"
                 "memstress_torch.find_max_batch(print)", "needs PyTorch"),
                ("import sys; sys.modules['torch'] = None\nimport memstress_torch\nmemstress_torch.record('r.pickle')",
                 "needs PyTorch"),
                ("import sys, types; t = types.ModuleType('torch'); t.__version__ = '2.11.0+cpu'\n"
                 "t.version = types.SimpleNamespace(cuda=None); t.cuda = types.SimpleNamespace(is_available=lambda: "
                 "False)\nsys.modules['torch'] = t\nimport memstress_torch\nmemstress_torch.record('r.pickle')",
                 "needs a CUDA GPU, and torch 2.11.0+cpu (built without CUDA) sees none")):
            with self.subTest(said):
                done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                                      cwd=self.tmp, env={**os.environ, "PYTHONPATH": python})
                self.assertEqual(done.returncode, 3, done.stderr)
                self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
                self.assertTrue(done.stderr.startswith(f"memstress_torch: error: {said}"), done.stderr)


class Metadata(unittest.TestCase):
    """The limit in force, where it came from, and what else tells it."""

    def dump(self, torch: FakeTorch, *, after: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp, redirect_stderr(io.StringIO()):
            path = Path(tmp) / "run.pickle"
            rec = mt.Recorder(str(path), batch=16, torch=torch, **kwargs)
            for key, value in (after or {}).items():
                setattr(torch, key, value)
            rec.dump()
            rec.stop()
            return pickle.loads(path.read_bytes())["memstress"]

    def test_a_name_ending_in_gz_is_written_gzip_compressed(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, redirect_stderr(io.StringIO()):
            plain, packed = Path(tmp) / "run.pickle", Path(tmp) / "run.pickle.gz"
            for path in (plain, packed):
                rec = mt.Recorder(str(path), batch=16, torch=FakeTorch())
                rec.dump()
                rec.stop()
            self.assertEqual(packed.read_bytes()[:2], b"\x1f\x8b")
            self.assertNotEqual(plain.read_bytes()[:2], b"\x1f\x8b")
            self.assertEqual(pickle.loads(gzip.decompress(packed.read_bytes()))["memstress"]["batch"], 16)
            self.assertEqual(pickle.loads(plain.read_bytes())["memstress"]["batch"], 16)

    def test_the_device_is_the_limit_without_a_fraction_or_a_capacity(self) -> None:
        meta = self.dump(FakeTorch())
        self.assertEqual(meta["limit"], {"bytes": 78 * GiB, "source": "device"})
        self.assertEqual(meta["allocator_capacity"], 78 * GiB)
        self.assertEqual(meta["device_free"], 70 * GiB)
        self.assertIsNone(meta["memory_fraction"])
        self.assertFalse(meta["mig"])
        self.assertEqual(meta["batch"], 16)
        self.assertFalse(meta["convolutions_marked"])  # this torch has no user metadata: nothing was marked

    def test_a_fraction_is_the_limit(self) -> None:
        meta = self.dump(FakeTorch(fraction=0.5))
        self.assertEqual(meta["limit"], {"bytes": 40 * GiB, "source": "memory_fraction"})
        self.assertEqual(meta["allocator_capacity"], 40 * GiB)
        self.assertEqual(meta["memory_fraction"], 0.5)

    def test_a_fraction_set_after_recording_started_counts(self) -> None:
        meta = self.dump(FakeTorch(), after={"fraction": 0.25})
        self.assertEqual(meta["limit"], {"bytes": 20 * GiB, "source": "memory_fraction"})

    def test_the_fraction_read_at_the_start_counts_when_it_cannot_be_read_at_the_end(self) -> None:
        torch = FakeTorch(fraction=0.5)
        with tempfile.TemporaryDirectory() as tmp, redirect_stderr(io.StringIO()):
            rec = mt.Recorder(str(Path(tmp) / "run.pickle"), torch=torch)
            del torch.cuda.get_per_process_memory_fraction
            meta = rec.metadata()
            rec.stop()
        self.assertEqual(meta["limit"], {"bytes": 40 * GiB, "source": "memory_fraction"})

    def test_a_fraction_larger_than_what_is_left_is_not_the_limit(self) -> None:
        meta = self.dump(FakeTorch(fraction=0.99))  # 79.2 GiB of 80, but only 78 can be had
        self.assertEqual(meta["limit"], {"bytes": 78 * GiB, "source": "device"})

    def test_the_capacity_argument_wins(self) -> None:
        meta = self.dump(FakeTorch(fraction=0.5), capacity=3 * GiB)
        self.assertEqual(meta["limit"], {"bytes": 3 * GiB, "source": "capacity argument"})
        self.assertEqual(meta["allocator_capacity"], 3 * GiB)

    def test_mig_from_the_name_or_the_uuid(self) -> None:
        self.assertTrue(self.dump(FakeTorch(name="NVIDIA H100 80GB HBM3 MIG 1g.10gb"))["mig"])
        self.assertTrue(self.dump(FakeTorch(uuid="MIG-8a3e1d2c"))["mig"])
        torch = FakeTorch()
        del torch.cuda.get_device_properties  # an older PyTorch: guarded
        self.assertFalse(self.dump(torch)["mig"])

    def test_the_gpus_shape_for_predict_batch(self) -> None:
        meta = self.dump(FakeTorch())
        self.assertEqual((meta["multiprocessors"], meta["threads_per_multiprocessor"]), (132, 2048))
        torch = FakeTorch()
        del torch.cuda.get_device_properties  # an older PyTorch: left out, the snapshot still written
        meta = self.dump(torch)
        self.assertNotIn("multiprocessors", meta)
        self.assertNotIn("threads_per_multiprocessor", meta)

    def test_cuda_visible_devices(self) -> None:
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "2,3"}):
            self.assertEqual(self.dump(FakeTorch())["cuda_visible_devices"], "2,3")
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            self.assertIsNone(self.dump(FakeTorch())["cuda_visible_devices"])




class FakeNode:
    """An autograd node: its pre-hooks and hooks, run by backward()."""

    def __init__(self) -> None:
        self.prehooks: list[Any] = []
        self.hooks: list[Any] = []

    def register_prehook(self, hook: Any) -> None:
        self.prehooks.append(hook)

    def register_hook(self, hook: Any) -> None:
        self.hooks.append(hook)

    def backward(self, allocate: Any) -> None:
        for hook in self.prehooks:
            hook(("grad",))
        allocate()
        for hook in self.hooks:
            hook(("grad_input",), ("grad",))


class MarkingTorch:
    """Just enough of torch for ConvolutionMarks: global module hooks, a convolution class, one device's user
    metadata."""

    class ConvNd:
        pass

    class Linear:
        pass

    def __init__(self, with_metadata: bool = True, own: str = "") -> None:
        self.metadata = own
        self.seen: list[tuple[str, str]] = []  # (what was allocated, the metadata then)
        self.pre: list[Any] = []
        self.post: list[Any] = []
        self.always_call: list[bool] = []
        torch = self

        class Handle:
            def __init__(self, hooks: list[Any], hook: Any) -> None:
                self.hooks, self.hook = hooks, hook

            def remove(self) -> None:
                self.hooks.remove(self.hook)

        def add_pre(hook: Any) -> Handle:
            torch.pre.append(hook)
            return Handle(torch.pre, hook)

        def add_post(hook: Any, *, always_call: bool = False) -> Handle:
            torch.always_call.append(always_call)
            torch.post.append(hook)
            return Handle(torch.post, hook)

        module = types.SimpleNamespace(register_module_forward_pre_hook=add_pre, register_module_forward_hook=add_post)
        self.nn = types.SimpleNamespace(modules=types.SimpleNamespace(
            module=module, conv=types.SimpleNamespace(_ConvNd=MarkingTorch.ConvNd)))
        memory = types.SimpleNamespace()
        if with_metadata:
            memory._set_memory_metadata = lambda value: setattr(torch, "metadata", value)
            memory._get_memory_metadata = lambda: torch.metadata
        self.cuda = types.SimpleNamespace(memory=memory, current_device=lambda: 0)
        self._C = types.SimpleNamespace()

    def allocate(self, what: str) -> None:
        self.seen.append((what, self.metadata))

    def forward(self, module: Any, name: str) -> FakeNode:
        """A module's forward: its hooks around one allocation; its output's node."""
        for hook in list(self.pre):
            hook(module, ())
        self.allocate(f"{name} forward")
        output = types.SimpleNamespace(grad_fn=FakeNode())
        for hook in list(self.post):
            hook(module, (), output)
        return output.grad_fn


class ConvolutionMarks(unittest.TestCase):
    def test_what_a_convolution_allocates_forward_and_backward_is_marked(self) -> None:
        from memstress import recorder_marks  # noqa: PLC0415
        mark = recorder_marks.MARK
        torch = MarkingTorch(own="mine")
        with recorder_marks.ConvolutionMarks(torch) as marks:
            self.assertTrue(marks.active)
            self.assertEqual(torch.always_call, [True])  # cleared even when the forward raises
            conv_node = torch.forward(MarkingTorch.ConvNd(), "conv")
            linear_node = torch.forward(MarkingTorch.Linear(), "linear")
            linear_node.backward(lambda: torch.allocate("linear backward"))
            conv_node.backward(lambda: torch.allocate("conv backward"))
            torch.allocate("optimizer")
        self.assertEqual(torch.seen, [("conv forward", mark), ("linear forward", "mine"),
                                      ("linear backward", "mine"), ("conv backward", mark), ("optimizer", "mine")])
        self.assertFalse(marks.active)
        self.assertEqual((torch.pre, torch.post, torch.metadata), ([], [], "mine"))  # the program's own, back
        node = FakeNode()
        node.register_prehook(marks._mark)  # a node made while recording, run after: it marks nothing
        node.backward(lambda: torch.allocate("after"))
        self.assertEqual(torch.seen[-1], ("after", "mine"))

    def test_a_recomputation_before_the_node_is_not_marked(self) -> None:
        # Activation checkpointing: the node's pre-hook has run, then the checkpointed modules run again.
        from memstress import recorder_marks  # noqa: PLC0415
        torch = MarkingTorch()
        with recorder_marks.ConvolutionMarks(torch) as marks:
            marks._mark()
            torch.forward(MarkingTorch.Linear(), "recomputed")
        self.assertEqual(torch.seen, [("recomputed forward", "")])

    def test_a_hook_that_fails_stops_the_marking_and_never_raises(self) -> None:
        from memstress import recorder_marks  # noqa: PLC0415
        torch = MarkingTorch()

        def refuse(_: str) -> None:
            raise RuntimeError("no metadata today")

        torch.cuda.memory._set_memory_metadata = refuse
        with recorder_marks.ConvolutionMarks(torch) as marks:
            torch.forward(MarkingTorch.ConvNd(), "conv")
            self.assertFalse(marks.active)
        self.assertEqual(torch.pre, [])

    def test_a_torch_without_user_metadata_or_on_rocm_marks_nothing(self) -> None:
        from memstress import recorder_marks  # noqa: PLC0415
        torch = MarkingTorch(with_metadata=False)
        marks = recorder_marks.ConvolutionMarks(torch)
        self.assertFalse(marks.start())
        self.assertFalse(marks.active)
        self.assertEqual(torch.pre, [])
        marks.stop()  # harmless
        rocm = MarkingTorch()
        rocm.version = types.SimpleNamespace(hip="6.2")
        self.assertFalse(recorder_marks.ConvolutionMarks(rocm).start())


def _torch_or_none() -> Any:
    try:
        import torch  # noqa: PLC0415 - only this class needs it
    except ImportError:
        return None
    return torch


@unittest.skipIf(_torch_or_none() is None, "no torch here: the marks' hooks on a real PyTorch are not checked")
class ConvolutionMarksOnTorch(unittest.TestCase):
    """The hooks on a real PyTorch (its CPU is enough): the operators that run while the mark is set, seen by a
    dispatch mode, are a convolution's, forward and backward, whatever follows it."""

    def marked_ops(self, model: Any, *, checkpoint: bool = False) -> tuple[set[str], set[str], str]:
        import torch  # noqa: PLC0415
        from memstress import recorder_marks  # noqa: PLC0415
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
        state = {"metadata": ""}
        seen: list[tuple[str, str]] = []

        class Marks(recorder_marks.ConvolutionMarks):  # the allocator's metadata, as a dict: no GPU needed
            def __init__(self) -> None:
                super().__init__(torch)
                self._set = lambda value: state.__setitem__("metadata", value)
                self._get = lambda: state["metadata"]

            def _on(self, _device: Any, function: Any, *args: Any) -> Any:
                return function(*args)

        class Seen(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, _types: Any, args: Any = (), kwargs: Any = None) -> Any:
                seen.append((func.overloadpacket.__name__, state["metadata"]))
                return func(*args, **(kwargs or {}))

        torch.manual_seed(0)
        x = torch.randn(2, 3, 16, 16, requires_grad=True)
        with Marks(), Seen():
            if checkpoint:
                from torch.utils.checkpoint import checkpoint as checkpointed  # noqa: PLC0415
                y = checkpointed(model, x, use_reentrant=False)
            else:
                y = model(x)
            y.sum().backward()
        return ({op for op, mark in seen if mark}, {op for op, mark in seen if "conv" in op and not mark},
                state["metadata"])

    def test_a_convolution_forward_and_backward_and_nothing_else(self) -> None:
        import torch  # noqa: PLC0415
        nn = torch.nn
        for name, model, checkpoint in (
                ("an in-place ReLU after it", nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(inplace=True),
                                                            nn.Conv2d(4, 4, 3)), False),
                ("batch norm after it", nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)), False),
                ("checkpointed", nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()), True)):
            with self.subTest(name):
                marked, unmarked, left = self.marked_ops(model, checkpoint=checkpoint)
                self.assertEqual(marked - {"detach"}, {"convolution", "convolution_backward"})
                self.assertEqual(unmarked, set())
                self.assertEqual(left, "")


if __name__ == "__main__":
    unittest.main()
