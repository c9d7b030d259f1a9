"""The report (python3 -m memstress.report) on committed real results: every section it should draw is there, images are embedded,
and bad input exits 2 naming the file. Sections are also drawn from small documents cut from committed
results (a few of their rows), and a series' colour is checked across the panels of a page."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "results" / "h100"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import memstress_package  # noqa: E402
import records  # noqa: E402
from memstress import registry  # noqa: E402


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The report as a user types it (it picks its own python: python/memstress/_pyenv.py)."""
    return subprocess.run(memstress_package.command("memstress.report", *args), capture_output=True, text=True,
                          check=False, env=memstress_package.environment())


def small_run(tmp: str, source: Path, keep, edit=None) -> Path:
    """A run document (named as `source`, in `tmp`) with the rows of `source` that `keep` keeps; `edit` may
    change it further."""
    doc = records.document(source)
    doc["rows"] = [r for r in doc["rows"] if keep(r)]
    if edit:
        edit(doc)
    path = Path(tmp) / source.name.removesuffix(".xz")
    path.write_text(json.dumps(doc))
    return path


def render(tmp: str, *inputs: Path) -> str:
    """The page the report writes from `inputs` (the test fails where it does not exit 0)."""
    out = Path(tmp) / "report.html"
    result = run(*map(str, inputs), "-o", str(out))
    if result.returncode != 0:
        raise AssertionError(f"the report exited {result.returncode}: {result.stderr}")
    return out.read_text()


def section_of(page: str, title: str) -> str:
    """The HTML of the section titled `title`, up to the next section ("" where there is none), its text unescaped
    and its images' data cut short (an assertion's message stays readable)."""
    found = re.search(f"<h2>{re.escape(html.escape(title))}</h2>(.*?)(?=<h2>|</body>)", page, re.S)
    return html.unescape(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,...", found[1])) if found else ""


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
                H100 / "transfers-h100-580.159.04.json.xz",
                H100 / "oom-h100-580.159.04.json.xz",
                H100 / "streams-h100-580.159.04.json.xz",
                H100 / "dataloader-h100-580.159.04.json.xz",
                ROOT / "results" / "h200" / "bench-alloc-h200-580.159.04.json.xz",
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
        # Base and new printed None (the section read base_median; compare writes base.median), the
        # change printed as -85.39096363060537.
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            result = run(str(H100 / "compare" / "compare-slowed-h100-580.159.04.json"), "-o", str(out))
            self.assertEqual(result.returncode, 0, result.stderr)
            page = out.read_text()
            self.assertIn("<b>REGRESSION</b>; 8 change(s) beyond SAME.", page)
            # Three significant digits (common.py: Note [Numbers on the page]).
            self.assertIn("<td>GB/s</td><td>54.9 GB/s</td><td>8.01 GB/s</td><td>-85.4%</td><td>WORSE</td>", page)
            self.assertNotIn("None", page)

    def test_the_readme_command_reads_every_committed_h100_file(self) -> None:
        """README's "Reports with plots" command, as written (a devices document among the inputs)."""
        with tempfile.TemporaryDirectory() as tmp:
            h100 = ROOT / "results" / "h100"
            inputs = sorted(h100.glob("*.json")) + sorted(h100.glob("*.json.xz"))
            inputs += sorted((ROOT / "results" / "h200").glob("bench-alloc-*.json.xz"))
            result = run(*map(str, inputs), "-o", str(Path(tmp) / "report.html"))
            self.assertEqual(result.returncode, 0, result.stderr)

    def test_replays_draw_their_timeline_and_runs_of_several_ranks_name_the_rank(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            inputs = [
                H100 / "allocators-580.159.04" / "cnn_train-caching.json.xz",
                ROOT / "results" / "h200x4" / "transfers-in-turn-h200x4-580.159.04.json.xz",
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
            doc = records.document(H100 / "allocators-580.159.04" / "cnn_train-caching.json.xz")
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
        """Python's json recursed into 100,000 brackets (RecursionError); the depth is bounded first."""
        deep = "[" * 100_000 + "]" * 100_000
        with tempfile.TemporaryDirectory() as tmp:
            run_doc = records.text(H100 / "transfers-h100-580.159.04.json.xz")
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


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class MemorySections(unittest.TestCase):
    """Fragmentation, leak and sizes, each from a few rows of a committed run."""

    def test_fragmentation_draws_its_figures_per_pattern_and_allocator(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            doc = small_run(tmp, H100 / "fragmentation-h100-580.159.04.json.xz",
                            lambda r: r["params"]["pattern"] in ("kv_cache", "interleaved"))
            page = render(tmp, doc)
        found = section_of(page, "Fragmentation")
        self.assertIn("utilization (GMLake's metric, higher is better)", found)
        self.assertIn('<img alt="fragmentation by pattern and allocator" src="data:image/png;base64,...">', found)
        for other in ("Leak", "Sizes: allocation churn", "Transfers: bandwidth by size"):
            self.assertNotIn(f"<h2>{other}</h2>", page)  # no rows of theirs: left out

    def default_job_section(self, workload: str, title: str) -> str:
        """The section `title` of a page drawn from the rows of `workload` in the committed H100 default job."""
        with tempfile.TemporaryDirectory() as tmp:
            rows = small_run(tmp, H100 / "default-h100-580.159.04.json.xz", lambda r: r["workload"] == workload)
            page = render(tmp, rows)
        return section_of(page, title)

    def test_leak_draws_growth_against_the_threshold_and_says_what_each_case_found(self) -> None:
        found = self.default_job_section("leak", "Leak")
        self.assertIn("against the detector's threshold", found)
        self.assertIn('<img alt="leak: growth per epoch"', found)
        self.assertIn("<td>default (h100): caching epochs=20 per_epoch=256M retained=0.05</td><td>allocated memory "
                      "grows by 13.33 MiB per epoch (R² = 1.000): flagged as a leak, as expected", found)

    def test_sizes_draws_throughput_per_distribution(self) -> None:
        found = self.default_job_section("sizes", "Sizes: allocation churn")
        self.assertIn("per size distribution and allocator: operations per second", found)
        self.assertIn('<img alt="sizes: throughput by distribution"', found)


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class LinkSections(unittest.TestCase):
    """Collectives, p2p and size sweeps, each from a few rows of a committed run."""

    def test_collectives_draw_busbw_by_size_and_nccl_tests_columns(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            doc = small_run(tmp, ROOT / "results" / "h200x2" / "collectives-h200x2-580.159.04.json.xz",
                            lambda r: r["params"]["collective"] in ("all_reduce", "broadcast")
                            and r["params"]["bytes"] in ("1M", "256M"))
            found = section_of(render(tmp, doc), "Collectives: bus bandwidth by size")
        self.assertIn("bus bandwidth (nccl-tests' busbw) against size, a line per collective", found)
        self.assertIn('<img alt="collectives busbw by size"', found)
        self.assertIn("<th>size</th><th>type</th><th>place</th><th>time (us)</th><th>algbw (GB/s)</th>"
                      "<th>busbw (GB/s)</th><th>vs plain cudaMalloc</th><th>#wrong</th>", found)
        # all_reduce at 256 MiB on rank 0, as results/README.md quotes it (299.8 GB/s), to three digits.
        self.assertRegex(found, r"<tr class='pass'><td>all_reduce</td><td>none</td><td>256 MiB</td><td>float</td>"
                                r"<td>out</td><td>[\d.,]+</td><td>300</td><td>300</td><td>[\d.]+</td><td>0</td></tr>")

    def test_p2p_draws_the_matrix_and_the_slowest_pair(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            doc = small_run(tmp, ROOT / "results" / "h200x2" / "p2p-h200x2-580.159.04.json.xz",
                            lambda r: r["params"]["bytes"] in ("1M", "1G"))
            found = section_of(render(tmp, doc), "P2P: copies between the GPUs of a node")
        self.assertIn("<h3>p2p (h200x2)</h3>", found)
        self.assertIn('<img alt="p2p bandwidth matrix"', found)
        self.assertIn('<img alt="p2p bandwidth of the slowest pair by size"', found)

    def test_a_size_sweep_draws_the_headline_metric_against_size(self) -> None:
        def swept(doc: dict) -> None:
            doc["config"]["sizes"] = [1 << 20, 64 << 20, 1 << 30]  # as `-b 1M -e 1G -f 64` records them

        with tempfile.TemporaryDirectory() as tmp:
            source = H100 / "default-h100-580.159.04.json.xz"
            page = render(tmp, small_run(tmp, source, lambda r: r["workload"] == "alloc-smoke", swept))
            self.assertIn("its headline metric against the size", section_of(page, "Size sweeps"))
            self.assertIn('<img alt="size sweep"', section_of(page, "Size sweeps"))
            unswept = render(tmp, small_run(tmp, source, lambda r: r["workload"] == "alloc-smoke"))
            self.assertNotIn("<h2>Size sweeps</h2>", unswept)  # sizes of its own, not a -b/-e/-f sweep


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class Acceptance(unittest.TestCase):
    """What memstress accept reported, read from its JUnit XML (the report's accept.py: Note [The page shows accept's
    verdicts]); an accept run document alone shows no verdict."""

    def accept_section(self, *inputs: Path) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            return section_of(render(tmp, *inputs), "Acceptance")

    def test_each_check_shows_what_accept_reported(self) -> None:
        # The JUnit of 344877b (the committed H100 acceptance run): measured, unit, bound and GPU as properties of each check.
        found = self.accept_section(H100 / "accept-h100-580.159.04.json.xz",
                                    H100 / "accept-h100-580.159.04.xml")
        self.assertIn("<h3>" + str(H100 / "accept-h100-580.159.04.xml") + ": profile h100</h3>", found)
        self.assertIn("<p>22 checks: <b>21 passed, 0 failed, 1 skipped</b> (the suite's counts).</p>", found)
        self.assertIn("<th>check</th><th>verdict</th><th>measured</th><th>bound</th><th>GPU (or accept's message)</th>",
                      found)
        gpu = "host vm, rank 0, cuda:0 (GPU-f37bfa39-babe-de4d-f611-84f1967fa457, PCI 0000:00:06.0)"
        for line in (f"<tr class='pass'><td>pinned H2D 256 MiB</td><td>PASS</td><td>53.3 GB/s</td>"
                     f"<td>>= 41.27 GB/s (0.75 x golden 55.03 GB/s)</td><td>{gpu}</td></tr>",
                     f"<tr class='pass'><td>memory integrity: no bad word on either read</td><td>PASS</td>"
                     f"<td>0 data errors</td><td><= 0 data errors</td><td>{gpu}</td></tr>",
                     f"<tr class='pass'><td>health: no hardware slowdown when read</td><td>PASS</td><td>0</td><td><= 0</td>"
                     f"<td>{gpu}</td></tr>",
                     f"<tr class='pass'><td>clocks: not slowed for heat or a power brake during the copies</td>"
                     f"<td>PASS</td><td>0 ms</td><td><= 0 ms</td><td>{gpu}</td></tr>",
                     "<tr class='skip'><td>health: no NVLink error during the run</td><td>SKIP</td><td>-</td><td>-</td>"
                     "<td>not measured on this GPU: nvlink.errors (no NVLink is active on this GPU)</td></tr>"):
            self.assertIn(line, found)
        self.assertNotIn("Nothing is judged here", found)  # its run document came with its JUnit file

    def test_an_older_file_shows_the_fail_accept_printed_then(self) -> None:
        # Judged against the h200 profile of its day (allocator ops/s >= 0.75 x golden): FAIL. Judged again
        # against today's profile (0.5 x golden) it would read PASS; the page shows what accept said.
        found = self.accept_section(ROOT / "results" / "h200" / "accept-order" / "sizes-before-fill" /
                                    "accept-h200-580.159.04.xml")
        self.assertIn("<p>15 checks: <b>10 passed, 1 failed, 4 skipped</b> (the suite's counts). This file is older "
                      "than the properties of each check", found)
        self.assertIn("<tr class='fail'><td>allocator ops/s (uniform sizes)</td><td>FAIL</td><td>-</td><td>-</td>"
                      "<td>1.708e+06 >= 2.123e+06 (0.75 x golden 2.831e+06) over 1 row(s)</td></tr>", found)
        self.assertIn("<tr class='skip'><td>NCCL all_reduce busbw 256 MiB</td><td>SKIP</td><td>-</td><td>-</td>"
                      "<td>needs 2 ranks (the run had 1): run it under mpirun -np 2</td></tr>", found)
        self.assertIn("<tr class='pass'><td>D2D 256 MiB</td><td>PASS</td><td>-</td><td>-</td><td>-</td></tr>", found)

    def test_an_accept_run_without_its_junit_file_judges_nothing(self) -> None:
        run_doc = ROOT / "results" / "h200x4" / "accept-h200x4-580.159.04.json.xz"
        junit = run_doc.with_name("accept-h200x4-580.159.04.xml")
        stream = run_doc.with_name("accept-h200x4-580.159.04.jsonl.xz")
        found = self.accept_section(run_doc, stream)  # one run: one note
        self.assertEqual(found.count("<h3>"), 1, found)
        self.assertIn(f"<h3>{run_doc}: profile h200</h3><p>A memstress accept run: its verdicts are in the JUnit file "
                      f"that run wrote (memstress accept --junit FILE) ({junit} is beside it: "
                      "add it to the report's inputs). Nothing is judged here from its rows.</p>", found)
        for judged in ("<table>", "PASS", "FAIL", "SKIP"):
            self.assertNotIn(judged, found.split("</p>", 1)[1])
        with tempfile.TemporaryDirectory() as tmp:
            alone = small_run(tmp, run_doc, lambda r: True)
            found = section_of(render(tmp, alone), "Acceptance")
        self.assertIn("(memstress accept --junit FILE). Nothing is judged here", found)  # nothing beside it

    def test_bad_junit_input_exits_2_naming_the_file(self) -> None:
        together = ROOT / "results" / "h200x4" / "accept-order" / "together" / "accept-h200x4-580.159.04.xml"
        laughs = ('<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
                  + "".join(f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in zip("abcdefgh", "bcdefghi"))
                  + ']>\n<testsuites name="&i;"/>')
        cases = {
            "cut.xml": (together.read_text()[:300], "not XML (unclosed token: line 5, column 4)"),
            "laughs.xml": (laughs, "XML with a <!DOCTYPE declaration (line 2): refused"),
            "deep.xml": ("<testsuites>" + "<a>" * 100_000 + "</a>" * 100_000 + "</testsuites>",
                         "XML nested more than 32 elements deep (<a>): refused"),
            "huge.xml": ("<testsuites>" + "<a/>" * 3_000_000 + "</testsuites>", "more than the 8 MiB"),
            "ctest.xml": (records.text(H100 / "tests-h100-580.159.04.xml.xz"),
                          "the JUnit of another tool or of memstress run (testsuite '(empty)')"),
            "run.xml": ((H100 / "gpu-ci-580.159.04" / "memstress.xml").read_text(),
                        "(testsuite 'memstress.alloc-smoke'): the report reads memstress accept's"),
            "counts.xml": (together.read_text().replace('failures="1"', 'failures="0"'),
                           ("its counts (tests=15, failures=0, errors=0, skipped=0) are not those of its testcases "
                            "(tests=15, failures=1, errors=0, skipped=0)")),
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, (text, words) in cases.items():
                with self.subTest(name):
                    path = Path(tmp) / name
                    path.write_text(text)
                    result = run(str(H100 / "accept-h100-580.159.04.xml"), str(path), "-o", str(Path(tmp) / "r.html"))
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertTrue(result.stderr.startswith(f"python3 -m memstress.report: {path}: "), result.stderr)
                    self.assertIn(words, result.stderr)
                    self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertFalse((Path(tmp) / "r.html").exists())


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class FleetSections(unittest.TestCase):
    """The fleet page from what `memstress db` wrote of tests/data/fleet's six H100s under two drivers (node04's H2D
    planted slow): tests/data/fleet/report/, `db outliers --format json --groups` and `db history --format json`."""

    FLEET = ROOT / "tests" / "data" / "fleet" / "report"

    def test_groups_with_outliers_are_drawn_and_the_rest_tabled(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            page = render(tmp, self.FLEET / "outliers.json")
        found = section_of(page, "Fleet: GPUs against their siblings")
        self.assertIn("8 outlier(s) among 6 GPU(s) in 24 group(s) judged", found)
        self.assertEqual(found.count("<img "), 8)  # node04's H2D (two loops, two sizes) under each driver
        self.assertEqual(found.count("<tr>"), 1 + 16)  # the other groups, with their header
        self.assertIn("direction=d2h", found)

    def test_history_draws_each_series_with_its_driver_change(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            page = render(tmp, self.FLEET / "history.json")
        found = section_of(page, "Fleet: a GPU's history")
        self.assertEqual(found.count("<img "), 4)
        self.assertIn("GPU-00000000-0000-0000-0000-000000000004 (node04)", found)

    def test_outliers_without_groups_say_how_to_get_them(self) -> None:
        doc = json.loads((self.FLEET / "outliers.json").read_text())
        del doc["groups"]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bare.json"
            path.write_text(json.dumps(doc))
            page = render(tmp, path)
        self.assertIn("memstress db outliers --format json --groups", section_of(page, "Fleet: GPUs against their siblings"))


class EveryRow(unittest.TestCase):
    """The table of every row: each row's headline metric with its unit, spread only where it had samples."""

    def test_each_row_shows_its_headline_metric(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            cases = ("ops=20000 alloc_prob=0.55 dist=uniform min_bytes=512B max_bytes=64M max_live=4G streams=1",
                     "search=largest_single state=fragmented params_frac=0.25 per_sample=64M workspace=256M",
                     "direction=h2d host=pinned engine=ce streams=1 bytes=256M")
            doc = small_run(tmp, H100 / "default-h100-580.159.04.json.xz", lambda r: r["case"] in cases)
            collectives = small_run(tmp, ROOT / "results" / "h200x2" / "collectives-h200x2-580.159.04.json.xz",
                                    lambda r: r["params"]["collective"] == "all_reduce" and r["case"].endswith("=4G"))
            found = section_of(render(tmp, doc, collectives), "Every row")
        self.assertIn("<th>verdict</th><th>headline metric</th><th>other metrics (up to six)</th>", found)
        self.assertIn("<th>allocator</th><th>rank</th><th>verdict</th>", found)  # the run of two ranks
        # allocator ops/s, 5 repetitions: median and spread, in M
        self.assertRegex(found, r"<td>pass</td><td>ops: 1\.58 M ops/s \(p10-p90 1\.\d\d-1\.\d\d M ops/s\)</td>")
        self.assertRegex(found, r"<td>pass</td><td>55\.0 GB/s \(p10-p90 54\.\d-55\.\d GB/s\)</td>")  # named by its unit
        # the OOM search ran once: one sample, no spread; its counts are whole. An older file: the row names no
        # headline, so it heads with the first of oom's (`memstress list`) it has, and its figures recorded under a
        # second name read as their one name (largest, oom_count)
        self.assertIn("<td>pass</td><td>largest_allocatable: 55.1 GiB</td><td>free_at_start 78.7 GiB, num_ooms 6, "
                      "probes 16, ratio 0.700, search_time 2.09 s</td>", found)
        # nccl-tests' bus bandwidth, 344.2 GB/s at 4 GiB (results/README.md), on each rank
        self.assertRegex(found, r"<td>1</td><td>pass</td><td>busbw: 344 GB/s \(p10-p90 \d+-\d+ GB/s\)</td>")


    def test_a_row_that_names_its_headline_heads_with_it(self) -> None:
        def name_it(doc: dict) -> None:
            doc["rows"][0]["headline"] = "alloc_p99"

        with tempfile.TemporaryDirectory() as tmp:
            doc = small_run(tmp, H100 / "default-h100-580.159.04.json.xz", lambda r: r["workload"] == "sizes", name_it)
            found = section_of(render(tmp, doc), "Every row")
        self.assertIn("<td>pass</td><td>alloc_p99: ", found)


def figure_colours(module, draw) -> list[dict[str, str]]:
    """What `draw()` (a call of a section of `module`) drew: for each panel, the colour of each series in its
    legend, as #rrggbb."""
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    matplotlib.use("Agg")
    panels: list[dict[str, str]] = []

    def keep(fig, alt: str) -> str:
        for ax in fig.axes:
            colours = {}
            for handle, label in zip(*ax.get_legend_handles_labels()):
                patch = handle.patches[0] if hasattr(handle, "patches") else handle
                colours[label] = to_hex(patch.get_facecolor() if hasattr(patch, "get_facecolor") and not
                                        hasattr(patch, "get_color") else patch.get_color())
            panels.append(colours)
        plt.close(fig)
        return ""

    drawn, module.figure_html = module.figure_html, keep
    try:
        draw()
    finally:
        module.figure_html = drawn
    return panels


@unittest.skipUnless(importlib.util.find_spec("matplotlib"), "needs matplotlib (requirements.txt)")
class SeriesColours(unittest.TestCase):
    """The report's common.py, Note [Series colours]: a series is one colour on the whole page, chosen by its name."""

    def test_an_allocator_has_one_colour_in_every_panel(self) -> None:
        from memstress.report import common as report_common
        from memstress.report import memory as report_memory

        frag = records.document(H100 / "fragmentation-h100-580.159.04.json.xz")
        sizes = records.document(H100 / "default-h100-580.159.04.json.xz")
        # Sizes under expandable alone: drawn first there, where the fragmentation figure draws it second (after
        # caching), so a colour given by plotting order would differ.
        sizes["rows"] = [{**r, "allocator": "expandable"} for r in sizes["rows"] if r["workload"] == "sizes"]
        colours = report_common.Colours()
        runs = [("fragmentation-h100-580.159.04.json", frag), ("sizes-h100-580.159.04.json", sizes)]
        panels = (figure_colours(report_memory, lambda: report_memory.section_fragmentation(runs[:1], colours))
                  + figure_colours(report_memory, lambda: report_memory.section_sizes(runs[1:], colours)))
        seen = {label.split(",")[0] for panel in panels for label in panel}
        self.assertEqual(seen, {"caching", "expandable"})
        for allocator in seen:
            found = {c for panel in panels for label, c in panel.items() if label.split(",")[0] == allocator}
            self.assertEqual(len(found), 1, f"{allocator} is drawn in {found}")
        self.assertNotEqual(*[next(c for panel in panels for label, c in panel.items() if label == a)
                              for a in ("caching", "expandable")])

    def test_a_collective_has_one_colour_in_every_run_panel(self) -> None:
        from memstress.report import common as report_common
        from memstress.report import links as report_links

        two = records.document(ROOT / "results" / "h200x2" / "collectives-h200x2-580.159.04.json.xz")
        four = records.document(ROOT / "results" / "h200x4" / "collectives-h200x4-580.159.04.json.xz")
        four["rows"] = [r for r in four["rows"] if r["params"]["collective"] in ("all_reduce", "broadcast")]
        runs = [("collectives-h200x2-580.159.04.json", two), ("collectives-h200x4-580.159.04.json", four)]
        panels = figure_colours(report_links,
                                lambda: report_links.section_collectives(runs, report_common.Colours()))
        self.assertEqual(len(panels), 2)
        self.assertEqual(set(panels[1]), {"all_reduce", "broadcast"})
        for name in panels[1]:
            self.assertEqual(panels[0][name], panels[1][name], name)
        self.assertEqual(len(set(panels[0].values())), 6)  # six collectives, six colours


BURN = ROOT / "tests" / "data" / "burn"
GPU0, GPU1 = "GPU-00000000-0000-0000-0000-0000000000b0", "GPU-00000000-0000-0000-0000-0000000000b1"


def burn_metric(unit: str, better: str, samples: list[float]) -> dict:
    """A metric as a burn writes it (memstress-run-1's metric: its statistics and its samples)."""
    ordered = sorted(samples)

    def at(q: float) -> float:  # linear between the closest ranks, as the harness's percentiles
        k = q * (len(ordered) - 1)
        low = int(k)
        return ordered[low] + (ordered[min(low + 1, len(ordered) - 1)] - ordered[low]) * (k - low)

    mean = sum(samples) / len(samples)
    stddev = (sum((x - mean) ** 2 for x in samples) / len(samples)) ** 0.5
    return {"unit": unit, "better": better, "n": len(samples), "median": at(0.5), "p10": at(0.1), "p90": at(0.9),
            "p99": at(0.99), "min": ordered[0], "max": ordered[-1], "mean": mean, "stddev": stddev,
            "cv": stddev / mean if mean else 0.0, "samples": samples}


def gpu_burn(path: Path) -> Path:
    """A burn of two H100s of one node, as `mpirun -np 2 memstress burn --interval 2` writes it on real GPUs: six
    intervals of 2 s, two NVML samples each. GPU 1 has no HBM sensor, and its interval 3 FAILs (a thermal slowdown:
    power, clocks and throughput drop, the temperature climbs)."""
    base = json.loads((BURN / "sim-flip.json").read_text())
    rows = []
    for k in range(6):
        for rank, uuid in ((0, GPU0), (1, GPU1)):
            hot = rank == 1 and k == 3
            metrics = {
                "memory.GB/s": burn_metric("GB/s", "higher", [1900.0 if hot else 2950.0 + k]),
                "h2d.GB/s": burn_metric("GB/s", "higher", [54.0]),
                "d2h.GB/s": burn_metric("GB/s", "higher", [55.0]),
                "gemm.bf16.TFLOP/s": burn_metric("TFLOP/s", "higher", [450.0 if hot else 690.0]),
                "gemm.fp64.TFLOP/s": burn_metric("TFLOP/s", "higher", [51.0]),
                "steps": burn_metric("count", "none", [40.0]),
                "at.s": burn_metric("s", "none", [2.0 * k]),
                "power.W": burn_metric("W", "none", [430.0, 440.0] if hot else [680.0, 690.0]),
                "power.share": burn_metric("share", "none", [430.0 / 700, 440.0 / 700] if hot else
                                           [680.0 / 700, 690.0 / 700]),
                "temp.gpu.C": burn_metric("C", "lower", [88.0, 90.0] if hot else [60.0 + k, 61.0 + k]),
                "clock.sm.MHz": burn_metric("MHz", "none", [1200.0, 1150.0] if hot else [1980.0, 1980.0]),
                "clock.mem.MHz": burn_metric("MHz", "none", [2619.0, 2619.0]),
            }
            notes = []
            if rank == 0:
                metrics["temp.hbm.C"] = burn_metric("C", "lower", [70.0 + k, 71.0 + k])
            else:
                notes.append("not measured: temp.hbm.C (NVML does not give it on this GPU)")
            reason = ("clocks: hw_thermal_slowdown in 2 of 2 samples; golden: memory.GB/s 1,900 GB/s is below "
                      "0.75 x golden 2,900 GB/s") if hot else ""
            rows.append({
                "workload": "burn", "case": f"interval={k}", "params": {"interval": str(k)}, "allocator": "caching",
                "rank": rank, "device": {"label": f"cuda:{rank}", "kind": "cuda", "ordinal": rank,
                                         "name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "node": "node01"},
                "verdict": "fail" if hot else "pass", "reason": reason,
                "verification": {"checked": 1 << 30, "errors": 0}, "metrics": metrics, "notes": notes,
                "allocator_stats": {}, "started_at": "2026-12-07T11:00:00Z", "seconds": 2.0,
            })
    base["rows"] = rows
    base["config"].update({"device": "cuda", "device_label": "cuda:0", "duration_s": 12.0, "interval_s": 2.0,
                           "intervals": 6, "ranks": 2, "profile": "h100-burn"})
    base["summary"] = {"rows": len(rows), "pass": len(rows) - 1, "fail": 1, "skip": 0, "error": 0}
    path.write_text(json.dumps(base))
    return path


class BurnSeries(unittest.TestCase):
    """The report's burns.py, Note [A burn against time]: where an interval's samples are put, and a long burn drawn
    as each interval's median and band."""

    def gpu(self):
        from memstress.report import burns

        doc = json.loads((BURN / "sim-flip.json").read_text())
        rows = [{**r, "seconds": 2.0, "metrics": {**r["metrics"], "at.s": burn_metric("s", "none", [2.0 * k]),
                                                  "power.W": burn_metric("W", "none", [600.0, 650.0, 700.0])}}
                for k, r in enumerate(doc["rows"])]
        return burns, burns.Gpu("sim-flip", rows)

    def test_an_intervals_samples_are_spread_evenly_over_it(self) -> None:
        _, gpu = self.gpu()
        xs, ys, band = gpu.series("power.W")
        self.assertIsNone(band)
        self.assertEqual(ys[:3], [600.0, 650.0, 700.0])
        for got, want in zip(xs[3:6], (2 + 1 / 3, 3.0, 4 - 1 / 3)):  # interval 1: [2 s, 4 s], three samples
            self.assertAlmostEqual(got, want)
        self.assertAlmostEqual(gpu.series("memory.GB/s")[0][2], 5.0)  # one sample: the interval's middle
        self.assertEqual([i.failed for i in gpu.intervals], [False, False, True, True])

    def test_a_long_burn_draws_each_intervals_median_and_band(self) -> None:
        burns, gpu = self.gpu()
        kept, burns.MAX_POINTS = burns.MAX_POINTS, 5
        try:
            xs, ys, band = gpu.series("power.W")
        finally:
            burns.MAX_POINTS = kept
        self.assertEqual(xs, [1.0, 3.0, 5.0, 7.0])
        self.assertEqual(ys, [650.0] * 4)
        self.assertEqual(band, ([600.0] * 4, [700.0] * 4))


@unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
class BurnSection(unittest.TestCase):
    """A burn's section: per GPU, power, temperatures, clocks and throughput against time, failed intervals listed."""

    def test_each_gpu_has_its_figures_and_the_failed_interval_is_listed(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            page = render(tmp, gpu_burn(Path(tmp) / "burn-h100x2.json"))
        found = section_of(page, "Burn")
        self.assertIn("<h3>burn-h100x2: 2 GPU(s), 6 interval(s) over 12.0 s, 1 failed</h3>", found)
        for rank, uuid in ((0, GPU0), (1, GPU1)):
            self.assertIn(f"<h4>rank {rank}, cuda:{rank}: NVIDIA H100 80GB HBM3 ({uuid}), host node01</h4>", found)
            for what in ("power", "temperature", "clocks", "throughput"):
                self.assertEqual(found.count(f'<img alt="burn {what}: rank {rank}, cuda:{rank} ({uuid})"'), 1,
                                 (what, rank))
        self.assertEqual(found.count("<img "), 8)
        self.assertIn(f"<p>Not measured on rank 1, cuda:1 ({GPU1}), so not drawn: HBM temperature: NVML does not "
                      "give it on this GPU.</p>", found)
        self.assertIn("<th>GPU</th><th>interval</th><th>seconds since the burn began</th><th>verdict</th>"
                      "<th>findings</th>", found)
        self.assertIn(f"<tr class='fail'><td>rank 1, cuda:1 ({GPU1})</td><td>3</td><td>6.00-8.00</td><td>fail</td>"
                      "<td>clocks: hw_thermal_slowdown in 2 of 2 samples; golden: memory.GB/s 1,900 GB/s is below "
                      "0.75 x golden 2,900 GB/s</td></tr>", found)
        self.assertEqual(found.count("<tr class='fail'>"), 1)
        # A burn names its profile as an accept run does: it is no accept run. Its rows are still in the table.
        self.assertNotIn("<h2>Acceptance</h2>", page)
        self.assertIn("<td>burn</td><td>interval=3</td>", section_of(page, "Every row"))

    def test_a_simulated_burn_draws_throughput_and_says_the_telemetry_was_not_measured(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            found = section_of(render(tmp, BURN / "sim-flip.json"), "Burn")
        self.assertIn("<h3>sim-flip: 1 GPU(s), 4 interval(s) over ", found)
        self.assertIn("<h4>rank 0, sim:80G: simulated (80G)</h4>", found)
        self.assertIn('<img alt="burn throughput: rank 0, sim:80G"', found)
        self.assertEqual(found.count("<img "), 1)  # no power, temperature or clocks
        self.assertIn("<p>Not measured on rank 0, sim:80G, so not drawn: power, GPU and HBM temperature, SM and "
                      "memory clocks: the simulated device has no telemetry.</p>", found)
        self.assertIn("<p>2 failed interval(s), shaded red above, with the judge's findings:</p>", found)
        self.assertRegex(found, r"<tr class='fail'><td>rank 0, sim:80G</td><td>2</td><td>2\.\d\d-3\.\d\d</td>"
                                r"<td>fail</td><td>data: \d+ wrong word\(s\) of \d+ checked; ")
        self.assertRegex(found, r"<tr class='fail'><td>rank 0, sim:80G</td><td>3</td>")

    def test_the_page_leaves_the_burn_section_out_without_a_burn(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            page = render(tmp, small_run(tmp, ROOT / "tests" / "data" / "compare" / "base.json", lambda r: True))
        self.assertNotIn("<h2>Burn</h2>", page)


@unittest.skipUnless(importlib.util.find_spec("matplotlib"), "needs matplotlib (requirements.txt)")
class BurnFigures(unittest.TestCase):
    """What the burn's figures hold: the power limit on the power panel, the failed interval shaded on each panel."""

    def test_power_shows_its_limit_and_failed_intervals_are_shaded(self) -> None:
        import matplotlib
        import matplotlib.pyplot as plt
        from memstress.report import burns
        from memstress.report.common import Colours

        matplotlib.use("Agg")
        drawn: dict[str, list[tuple[list[str], str]]] = {}

        def keep(fig, alt: str) -> str:
            drawn[alt] = [(ax.get_legend_handles_labels()[1], ax.get_ylabel()) for ax in fig.axes if ax.get_legend()]
            plt.close(fig)
            return ""

        with tempfile.TemporaryDirectory() as tmp:
            doc = json.loads(gpu_burn(Path(tmp) / "burn.json").read_text())
        kept, burns.figure_html = burns.figure_html, keep
        try:
            burns.section_burn([("burn.json", doc)], Colours())
        finally:
            burns.figure_html = kept
        self.assertEqual(drawn[f"burn power: rank 0, cuda:0 ({GPU0})"], [(["power", "power limit (700 W)"], "W")])
        self.assertEqual(drawn[f"burn power: rank 1, cuda:1 ({GPU1})"],
                         [(["power", "power limit (700 W)", "failed interval"], "W")])
        self.assertEqual(drawn[f"burn temperature: rank 0, cuda:0 ({GPU0})"], [(["GPU", "HBM"], "°C")])
        self.assertEqual(drawn[f"burn temperature: rank 1, cuda:1 ({GPU1})"], [(["GPU", "failed interval"], "°C")])
        self.assertEqual(drawn[f"burn clocks: rank 1, cuda:1 ({GPU1})"], [(["SM", "memory", "failed interval"], "MHz")])
        self.assertEqual([labels for labels, _ in drawn[f"burn throughput: rank 1, cuda:1 ({GPU1})"]],
                         [["memory", "failed interval"], ["H2D", "D2H", "failed interval"],
                          ["BF16", "failed interval"], ["FP64", "failed interval"]])


class BurnValidates(unittest.TestCase):
    """python3 -m memstress.validate accepts a burn's documents: the simulated burn as memstress burn wrote it, and
    the two-GPU burn these tests draw."""

    def test_burn_documents_are_valid(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            gpu = gpu_burn(Path(tmp) / "burn-h100x2.json")
            result = subprocess.run(memstress_package.command("memstress.validate", BURN / "sim-flip.json", gpu),
                                    capture_output=True, text=True, check=False, env=memstress_package.environment())
        if result.returncode == 77 and not SCHEMAS_REQUIRED:
            self.skipTest("needs jsonschema (requirements.txt)")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("sim-flip.json: ok (4 rows)", result.stdout)
        self.assertIn("burn-h100x2.json: ok (12 rows from 2 ranks)", result.stdout)


if __name__ == "__main__":
    unittest.main()


ALLOCATORS = H100 / "allocators-580.159.04"


class AllocatorTable(unittest.TestCase):
    """The report's allocators.py on the committed H100 run of scripts/lab/gpu-allocators: every peer has its rows,
    the table it writes is the one committed, and the report draws it from the documents and from the table."""

    def module(self):
        from memstress.report import allocators

        return allocators

    def test_every_peer_on_every_trace_and_in_the_benchmarks(self) -> None:
        committed = json.loads((ALLOCATORS / "allocators.json").read_text())
        m = self.module()
        peers = {p["name"] for p in registry.peers()} | {m.EXAMPLE_PLUGIN}  # scripts/lab/gpu-allocators' peers
        self.assertEqual(len(committed["traces"]), 4)
        for trace, rows in committed["traces"].items():
            self.assertEqual(set(rows), peers, trace)
            for peer, row in rows.items():
                self.assertLessEqual(row["peak_allocated_bytes"], row["peak_reserved_bytes"], (trace, peer))
                self.assertEqual(row["oom_margin_bytes"], row["capacity_bytes"] - row["peak_reserved_bytes"])
        self.assertEqual(set(committed["bench"]), peers)
        for peer, row in committed["bench"].items():
            self.assertEqual(len(row["latency"]), 6, peer)
        self.assertEqual({r["against"] for r in committed["ratios"]},
                         {p["name"] for p in registry.peers() if p["origin"] in m.OTHER_LIBRARIES})

    def test_the_committed_table_is_what_the_documents_give(self) -> None:
        m = self.module()
        replays, benches = [], []
        for path in sorted(ALLOCATORS.glob("*.json.xz")):
            doc = records.document(path)
            (benches if "benchmarks" in doc else replays).append(doc)
        data = m.build(replays, benches)
        self.assertEqual(m.markdown(data), (ALLOCATORS / "allocators.md").read_text())

    @unittest.skipUnless(matplotlib_reachable(), "needs matplotlib (requirements.txt)")
    def test_the_report_draws_the_table(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            table = section_of(render(tmp, ALLOCATORS / "allocators.json"), "Allocator table")
            self.assertIn("rmm-arena", table)
            self.assertIn("caching's pair latency over each peer's", table)
            docs = [ALLOCATORS / f"transformer_train-{peer}.json.xz" for peer in ("caching", "rmm-pool", "torch")]
            table = section_of(render(tmp, *docs, ALLOCATORS / "bench-allocators.json.xz"), "Allocator table")
            self.assertIn("transformer_train", table)
            self.assertIn("rmm-pool", table)
