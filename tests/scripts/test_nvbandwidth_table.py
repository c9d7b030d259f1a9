"""scripts/lab/nvbandwidth_table.py: nvbandwidth's printed matrices read as it prints them (a testcase cut short is
left out), each path set beside memstress's counterpart the way both tools count (read testcases as "row <-
column", bidirectional ones added up), bad input as a clear message with exit 2, and the committed tables still
the script's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from committed_tables import assert_each_is_the_scripts_output

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lab" / "nvbandwidth_table.py"
FOLDERS = sorted(p.parent for p in ROOT.glob("results/*/nvbandwidth-*/**/TABLE.md"))

# As nvbandwidth v0.8 prints it, two GPUs: entry [i][j] is GPU i's data into GPU j for write, GPU j's data into
# GPU i for read (its arrows say otherwise); a bidirectional testcase prints each direction and the total. The
# last testcase was cut short by a timeout, mid-matrix.
NVBANDWIDTH = """nvbandwidth Version: v0.8
Built from Git version: v0.8

Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)
Device 1: NVIDIA H100 80GB HBM3 (00000000:3b:00)

Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    400.00
 1    380.00       N/A

SUM device_to_device_memcpy_write_ce 780.00

Running device_to_device_memcpy_read_ce.
memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    300.00
 1    200.00       N/A

SUM device_to_device_memcpy_read_ce 500.00

Running device_to_device_bidirectional_memcpy_write_ce.
memcpy CE GPU(row) <-> GPU(column) Write1 bandwidth (GB/s)
           0         1
 0       N/A    390.00
 1    370.00       N/A

SUM device_to_device_bidirectional_memcpy_write_ce_write1 760.00
memcpy CE GPU(row) <-> GPU(column) Write2 bandwidth (GB/s)
           0         1
 0       N/A    380.00
 1    385.00       N/A

SUM device_to_device_bidirectional_memcpy_write_ce_write2 765.00
memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)
           0         1
 0       N/A    770.00
 1    755.00       N/A

SUM device_to_device_bidirectional_memcpy_write_ce_total 1525.00

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     50.00     40.00

SUM host_to_device_memcpy_ce 90.00

Running device_to_host_memcpy_ce.
memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0     55.00
"""


def metric(median: float) -> dict:
    return {"unit": "GB/s", "better": "higher", "median": median}


def row(workload: str, rank: int, params: dict, metrics: dict) -> dict:
    return {"workload": workload, "rank": rank, "verdict": "pass", "params": params,
            "metrics": {k: metric(v) for k, v in metrics.items()}}


def p2p(engine: str, access: str, direction: str, metrics: dict) -> dict:
    params = {"measure": "bandwidth", "engine": engine, "access": access, "direction": direction, "bytes": "512M"}
    return row("p2p", 0, params, metrics)


def transfers(rank: int, direction: str, gbs: float) -> dict:
    return row("transfers", rank, {"direction": direction, "host": "pinned", "engine": "ce", "streams": "1",
                                   "bytes": "512M"}, {"GB/s": gbs})


def write_folder(folder: Path, nvbandwidth: str = NVBANDWIDTH) -> None:
    (folder / "nvbandwidth.txt").write_text(nvbandwidth)
    (folder / "memstress-p2p.json").write_text(json.dumps({"rows": [
        p2p("ce", "write", "uni", {"GB/s 0->1": 404.0, "GB/s 1->0": 380.0}),
        # read: memstress's 1->0 (GPU 0 pulls from 1) is nvbandwidth's [0][1]
        p2p("ce", "read", "uni", {"GB/s 1->0": 300.0, "GB/s 0->1": 210.0}),
        p2p("ce", "write", "bidir", {"GB/s 0<->1": 760.0}),
    ]}))
    (folder / "memstress-transfers-in-turn.json").write_text(json.dumps({"rows": [
        transfers(0, "h2d", 51.0), transfers(1, "h2d", 40.0), transfers(0, "d2h", 56.0), transfers(1, "d2h", 56.0)]}))
    (folder / "memstress-transfers-together.json").write_text(json.dumps({"rows": []}))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


def line_of(table: str, testcase: str, metric: str | None = None) -> list[str]:
    """The line of `testcase`; where two share it, the one whose memstress column ends with `metric` (or has no
    per-direction metric, where `metric` is None)."""
    found = [line for line in table.splitlines() if line.startswith(f"| {testcase} |")]
    if len(found) > 1:
        found = [line for line in found if (metric is None and "_GB/s" not in line.split("|")[2])
                 or (metric is not None and f" {metric} (" in line.split("|")[2])]
    if len(found) != 1:
        raise AssertionError(f"{testcase}: {len(found)} lines in\n{table}")
    return [cell.strip() for cell in found[0].strip("|").split("|")]


class Tables(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = Path(self.tmp.name)
        write_folder(self.folder)

    def tearDown(self):
        self.tmp.cleanup()

    def table(self) -> str:
        made = run(str(self.folder))
        self.assertEqual(made.returncode, 0, made.stderr)
        return made.stdout

    def test_write_entries_are_row_to_column(self):
        cells = line_of(self.table(), "device_to_device_memcpy_write_ce")
        self.assertEqual(cells[2], "2")  # two ordered pairs
        self.assertEqual(cells[5], "+0.5 (+0.0 … +1.0)")  # 404/400 and 380/380
        self.assertEqual(cells[6], "2 of 2")

    def test_read_entries_are_column_into_row(self):
        cells = line_of(self.table(), "device_to_device_memcpy_read_ce")
        self.assertEqual(cells[5], "+2.5 (+0.0 … +5.0)")  # 300/300 and 210/200: never 300/200

    def test_bidirectional_is_its_total_matrix(self):
        cells = line_of(self.table(), "device_to_device_bidirectional_memcpy_write_ce")
        self.assertEqual((cells[2], cells[3], cells[4]), ("1", "770.0", "760.0"))  # _total[0][1]

    def test_json_output_reads_the_same(self):
        n, nan = 2, "N/A"
        cases = [{"name": "device_to_device_memcpy_write_ce", "status": "Passed",
                  "bandwidth_matrix": [[nan, "400"], ["380", nan]]},
                 {"name": "device_to_device_bidirectional_memcpy_write_ce", "status": "Passed",  # three matrices
                  "bandwidth_matrix": [[nan, "390"], ["370", nan], [nan, "380"], ["385", nan], [nan, "770"],
                                       ["755", nan]]}]
        self.assertEqual(len(cases[1]["bandwidth_matrix"]), 3 * n)
        (self.folder / "nvbandwidth.txt").unlink()
        (self.folder / "nvbandwidth.json").write_text(json.dumps({"nvbandwidth": {"testcases": cases}}))
        table = self.table()
        self.assertEqual(line_of(table, "device_to_device_memcpy_write_ce")[5], "+0.5 (+0.0 … +1.0)")
        self.assertEqual(line_of(table, "device_to_device_bidirectional_memcpy_write_ce")[3], "770.0")

    def test_rows_without_a_figure_are_left_out_not_counted(self):
        rows = json.loads((self.folder / "memstress-transfers-in-turn.json").read_text())["rows"]
        rows[1]["metrics"] = {}  # rank 1's h2d
        (self.folder / "memstress-transfers-in-turn.json").write_text(json.dumps({"rows": rows}))
        self.assertEqual(line_of(self.table(), "host_to_device_memcpy_ce")[2], "1")

    def test_host_entries_are_gpus_and_a_testcase_cut_short_is_left_out(self):
        table = self.table()
        cells = line_of(table, "host_to_device_memcpy_ce")
        self.assertEqual(cells[2], "2")
        self.assertEqual(cells[5], "+1.0 (+0.0 … +2.0)")
        self.assertNotIn("device_to_host_memcpy_ce", table)

    def test_host_both_ways_sets_each_direction_beside_its_testcase_and_both_figures_beside_their_sum(self):
        both = "".join(
            f"Running {name}.\nmemcpy CE CPU(row) {arrow} GPU(column) bandwidth (GB/s)\n           0         1\n"
            f" 0     {a:.2f}     {b:.2f}\n\nSUM {name} {a + b:.2f}\n\n"
            for name, arrow, a, b in (("host_to_device_bidirectional_memcpy_ce", "->", 40.0, 42.0),
                                      ("device_to_host_bidirectional_memcpy_ce", "<-", 50.0, 48.0)))
        (self.folder / "nvbandwidth.txt").write_text(NVBANDWIDTH + "\n" + both)
        rows = [row("transfers", r, {"direction": "bidir", "host": "pinned", "engine": "ce", "streams": "1",
                                     "bytes": "512M"}, {"GB/s": gbs, "h2d_GB/s": h2d, "d2h_GB/s": d2h})
                for r, gbs, h2d, d2h in ((0, 81.0, 40.0, 51.0), (1, 84.0, 42.0, 48.0))]
        (self.folder / "memstress-transfers-in-turn.json").write_text(json.dumps({"rows": rows}))
        table = self.table()
        h2d = line_of(table, "host_to_device_bidirectional_memcpy_ce")
        self.assertIn("h2d_GB/s", h2d[1])
        self.assertEqual((h2d[2], h2d[5], h2d[6]), ("2", "+0.0 (+0.0 … +0.0)", "2 of 2"))
        d2h = line_of(table, "device_to_host_bidirectional_memcpy_ce")
        self.assertEqual((d2h[3], d2h[4], d2h[5]), ("49.0", "49.5", "+1.0 (+0.0 … +2.0)"))
        both_names = "host_to_device_bidirectional_memcpy_ce + device_to_host_bidirectional_memcpy_ce"
        window = line_of(table, both_names)
        self.assertEqual((window[3], window[4], window[5]), ("90.0", "82.5", "-8.3 (-10.0 … -6.7)"))
        summed = line_of(table, both_names, "h2d_GB/s + d2h_GB/s")  # each under the other's load, added up
        self.assertEqual((summed[3], summed[4], summed[5]), ("90.0", "90.5", "+0.6 (+0.0 … +1.1)"))

    def test_a_side_measured_alone_has_its_section_only(self):
        # NVBANDWIDTH_PATHS=host: no peer matrix, so no "Between GPUs" section, not an empty one.
        (self.folder / "memstress-p2p.json").unlink()
        table = self.table()
        self.assertNotIn("## Between GPUs", table)
        self.assertIn("## Between the host and the GPUs", table)
        self.assertEqual(line_of(table, "host_to_device_memcpy_ce")[2], "2")
        for name in ("memstress-transfers-in-turn.json", "memstress-transfers-together.json"):
            (self.folder / name).unlink()
        made = run(str(self.folder))  # nothing of memstress's left: no size to compare at
        self.assertEqual(made.returncode, 2)
        self.assertIn("one expected", made.stderr)

    def test_bad_input_is_exit_2_naming_it(self):
        (self.folder / "nvbandwidth.txt").write_text("nvbandwidth Version: v0.8\n")
        made = run(str(self.folder))
        self.assertEqual(made.returncode, 2)
        self.assertIn("no nvbandwidth testcase finished", made.stderr)
        write_folder(self.folder)
        (self.folder / "memstress-p2p.json").write_text("{")
        made = run(str(self.folder))
        self.assertEqual(made.returncode, 2)
        self.assertIn("memstress-p2p.json", made.stderr)
        self.assertEqual(run(str(self.folder / "none")).returncode, 2)


class CommittedTables(unittest.TestCase):
    """Every committed table (results/*/nvbandwidth-*/, its subfolders too) is still the script's output from its folder."""

    def test_there_is_one(self):
        self.assertTrue(FOLDERS, "no results/*/nvbandwidth-*/TABLE.md")

    def test_each_table_is_the_scripts_output(self):
        assert_each_is_the_scripts_output(self, ROOT, FOLDERS, run)


if __name__ == "__main__":
    unittest.main()
