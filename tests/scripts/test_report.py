"""scripts/report on committed real results: every section it should draw is there, images are embedded,
and bad input exits 2 naming the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "scripts" / "report"
H100 = ROOT / "results" / "h100"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """scripts/report as a user types it (it picks its own python: scripts/ms_pyenv.py)."""
    return subprocess.run([str(REPORT), *args], capture_output=True, text=True, check=False)


def matplotlib_reachable() -> bool:
    """Whether the report finds a python with matplotlib (it exits 3 naming it otherwise)."""
    return run("/nonexistent/input.json", "-o", "/nonexistent/report.html").returncode != 3


# CI (MEMSTRESS_REQUIRE_PYDEPS=1) has jsonschema, so a bad document must be named by its schema; elsewhere
# (the GPU images have no jsonschema) the report still exits 2 naming the file, from what it could not draw.
SCHEMAS_REQUIRED = os.environ.get("MEMSTRESS_REQUIRE_PYDEPS") == "1"


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class Report(unittest.TestCase):
    def test_real_results_render_every_section(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            inputs = [
                H100 / "transfers-h100-580.159.04.json",
                H100 / "oom-h100-580.159.04.json",
                H100 / "streams-h100-580.159.04.json",
                H100 / "dataloader-h100-580.159.04.json",
                ROOT / "results" / "h200" / "bench-alloc-h200-580.159.04.json",
                H100 / "devices-h100-580.159.04.json",
            ]
            result = run(*map(str, inputs), "-o", str(out))
            self.assertEqual(result.returncode, 0, result.stderr)
            page = out.read_text()
            for title in ("Machines", "Transfers: bandwidth by size", "Allocators", "OOM thresholds",
                          "Streams and dataloader", "Every row"):
                self.assertIn(f"<h2>{title}</h2>", page)
            self.assertGreaterEqual(page.count('src="data:image/png;base64,'), 5)
            self.assertIn("NVIDIA H100 80GB HBM3", page)
            self.assertIn("GPU-bc77140b-bfae-2969-9cbc-988b5f9e0d5e", page)  # the devices document's GPU

    def test_a_comparison_shows_base_new_change_and_verdict(self) -> None:
        # Issue 19: base and new printed None (the section read base_median; compare writes base.median), the
        # change printed as -85.39096363060537.
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            result = run(str(H100 / "compare" / "compare-slowed-h100-580.159.04.json"), "-o", str(out))
            self.assertEqual(result.returncode, 0, result.stderr)
            page = out.read_text()
            self.assertIn("<b>REGRESSION</b>; 8 change(s) beyond SAME.", page)
            # Three significant digits (report_common: Note [Numbers on the page]).
            self.assertIn("<td>GB/s</td><td>54.9 GB/s</td><td>8.01 GB/s</td><td>-85.4%</td><td>WORSE</td>", page)
            self.assertNotIn("None", page)

    def test_the_readme_command_reads_every_committed_h100_file(self) -> None:
        """README's "Reports with plots" command, as written (a devices document among the inputs)."""
        with tempfile.TemporaryDirectory() as tmp:
            inputs = sorted((ROOT / "results" / "h100").glob("*.json"))
            inputs += sorted((ROOT / "results" / "h200").glob("bench-alloc-*.json"))
            result = run(*map(str, inputs), "-o", str(Path(tmp) / "report.html"))
            self.assertEqual(result.returncode, 0, result.stderr)

    def test_replays_draw_their_timeline_and_runs_of_several_ranks_name_the_rank(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            inputs = [
                H100 / "replay" / "cnn_train-caching-h100-580.159.04.json",
                ROOT / "results" / "h200x4" / "transfers-in-turn-h200x4-580.159.04.json",
            ]
            result = run(*map(str, inputs), "-o", str(out))
            self.assertEqual(result.returncode, 0, result.stderr)
            page = out.read_text()
            self.assertIn("<h2>Replays: reserved vs allocated</h2>", page)
            self.assertIn("<h2>Transfers: bandwidth by size</h2>", page)
            self.assertGreaterEqual(page.count('src="data:image/png;base64,'), 2)
            self.assertIn("transfers-in-turn (h200x4) rank 3", page)  # the table of rows against the plain loop

    def test_bad_input_exits_2_naming_the_file(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            junk = Path(tmp) / "junk.json"
            junk.write_text("{not json")
            other = Path(tmp) / "other.json"
            other.write_text('{"schema": "something/else"}')
            bad_replay = Path(tmp) / "bad-replay.json"
            doc = json.loads((H100 / "replay" / "cnn_train-caching-h100-580.159.04.json").read_text())
            doc["replay"]["timeline"]["points"][3] = None  # a point that is not four numbers
            bad_replay.write_text(json.dumps(doc))
            cases = ((junk, "not JSON"), (other, "no known kind"), (Path(tmp) / "missing.json", "cannot be read"),
                     (bad_replay, "does not match memstress.replay/1"))
            for path, words in cases:
                result = run(str(path), "-o", str(Path(tmp) / "r.html"))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(str(path), result.stderr)
                if path == bad_replay and not SCHEMAS_REQUIRED and "jsonschema is installed" in result.stderr:
                    words = "cannot draw from"
                self.assertIn(words, result.stderr)
            self.assertFalse((Path(tmp) / "r.html").exists())

    def test_input_nested_too_deep_exits_2_naming_the_file(self) -> None:
        """Issue 20: Python's json recursed into 100,000 brackets (RecursionError); the depth is bounded first."""
        deep = "[" * 100_000 + "]" * 100_000
        with tempfile.TemporaryDirectory() as tmp:
            run_doc = (H100 / "transfers-h100-580.159.04.json").read_text()
            at = run_doc.index('"params": {') + len('"params": {')
            files = {
                "deep-run.json": run_doc[:at] + f'"deep": {deep}, ' + run_doc[at:],
                "deep-replay.json": '{"schema": "memstress.replay/1", "replay": ' + deep + "}",
                "deep-compare.json": '{"schema": "memstress.compare/1", "rows": ' + deep + "}",
            }
            for name, text in files.items():
                path = Path(tmp) / name
                path.write_text(text)
                result = run(str(path), "-o", str(Path(tmp) / "r.html"))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(f"{path}: nested more than 128 levels deep (line ", result.stderr)
                self.assertNotIn("Traceback", result.stderr)


if __name__ == "__main__":
    unittest.main()
