#!/usr/bin/env python3
"""Checks memstress's OpenMetrics output with the parsers Prometheus users rely on (prometheus_client: its
strict OpenMetrics parser, and its Prometheus text parser, the format node_exporter's textfile collector reads).

    openmetrics_check.py run MEMSTRESS            `memstress run --format openmetrics` on the simulated device
    openmetrics_check.py export MEMSTRESS DB      `memstress db export --format openmetrics --db DB`, a fleet of
                                                  six GPUs held under two drivers (tests/cli/fleet.cmake)

Exit 0 when both parsers read it and the series say what the run or the store holds; 1 otherwise; 77 (skip)
when prometheus_client is not installed (requirements.txt has it; CI requires it).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
    from prometheus_client.parser import text_string_to_metric_families as parse_prometheus
except ImportError:
    print("skipped: needs prometheus_client (pip install -r requirements.txt)")
    sys.exit(77)

FAMILIES = {"memstress_metric_median", "memstress_metric_p10", "memstress_metric_p90",
            "memstress_metric_repetitions", "memstress_case_verdict", "memstress_case_checked",
            "memstress_case_data_errors", "memstress_run_start_timestamp_seconds"}
CASE_LABELS = {"host", "gpu_uuid", "model", "rank", "workload", "case", "allocator"}


def families(text: str) -> dict[str, list]:
    """Both parsers must read it; the OpenMetrics one's families by name, with their samples."""
    strict = {f.name: f for f in parse_openmetrics(text)}
    loose = {f.name for f in parse_prometheus(text)}
    # The Prometheus text parser strips nothing from gauges' names; the textfile collector sees the same series.
    if not FAMILIES <= loose:
        raise AssertionError(f"the Prometheus text parser misses {sorted(FAMILIES - loose)}")
    for name, family in strict.items():
        if family.type != "gauge":
            raise AssertionError(f"{name}: type {family.type}, expected gauge")
    return {name: f.samples for name, f in strict.items()}


def check_common(got: dict[str, list]) -> None:
    missing = FAMILIES - set(got)
    if missing:
        raise AssertionError(f"families missing: {sorted(missing)}")
    for s in got["memstress_metric_median"]:
        if not CASE_LABELS | {"metric", "unit"} <= set(s.labels):
            raise AssertionError(f"a median without the case's labels: {s}")
    # Each case: exactly one verdict holds.
    held: dict[tuple, float] = {}
    for s in got["memstress_case_verdict"]:
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "verdict"))
        held[key] = held.get(key, 0) + s.value
    if any(v != 1 for v in held.values()):
        raise AssertionError("a case whose verdicts do not sum to 1")


def check_run(memstress: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([memstress, "run", "alloc-smoke", "transfers", "--device", "sim:8G", "-n", "3", "-w", "0",
                               "-p", "transfers.bytes=1M", "-p", "alloc-smoke.bytes=1M", "--format", "openmetrics", "--out", str(Path(tmp) / "r.json")],
                              capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"memstress run exited {done.returncode}: {done.stderr}")
    if not done.stdout.endswith("# EOF\n"):
        raise AssertionError("the exposition does not end in '# EOF'")
    got = families(done.stdout)
    check_common(got)
    # alloc-smoke measures on the simulated device; transfers are skipped there (needs a real GPU): a skip held.
    measured = {s.labels["workload"] for s in got["memstress_metric_median"]}
    if measured != {"alloc-smoke"}:
        raise AssertionError(f"workloads with medians: {sorted(measured)}")
    skipped = {s.labels["workload"] for s in got["memstress_case_verdict"] if s.labels["verdict"] == "skip" and s.value == 1}
    if skipped != {"transfers"}:
        raise AssertionError(f"workloads skipped: {sorted(skipped)}")
    if not all(s.value > 0 for s in got["memstress_metric_repetitions"]):
        raise AssertionError("a metric over no repetitions")
    starts = got["memstress_run_start_timestamp_seconds"]
    if len(starts) != 1 or starts[0].value < 1.7e9:
        raise AssertionError(f"run start: {starts}")


def check_export(memstress: str, db: str) -> None:
    done = subprocess.run([memstress, "db", "export", "--db", db, "--format", "openmetrics"], capture_output=True,
                          text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"memstress db export exited {done.returncode}: {done.stderr}")
    got = families(done.stdout)
    check_common(got)
    gpus = {s.labels["gpu_uuid"] for s in got["memstress_metric_median"]}
    if len(gpus) != 6:
        raise AssertionError(f"{len(gpus)} GPUs exported, expected the fleet's 6")
    # The newest run of each host is the 580 one: its start and driver.
    drivers = {s.labels["driver"] for s in got["memstress_run_start_timestamp_seconds"]}
    if drivers != {"580.159.04"}:
        raise AssertionError(f"newest runs' drivers: {drivers}")
    # node04's H2D is the planted slow one, in the newest rows too.
    h2d = [s for s in got["memstress_metric_median"]
           if s.labels["metric"] == "GB/s" and "direction=h2d" in s.labels["case"] and "bytes=64M" in s.labels["case"]]
    if len(h2d) != 6:
        raise AssertionError(f"{len(h2d)} H2D 64M medians, expected one per GPU")
    slowest = min(h2d, key=lambda s: s.value)
    if slowest.labels["host"] != "node04":
        raise AssertionError(f"the slowest H2D is {slowest.labels['host']}'s, expected node04's")


def main() -> int:
    try:
        if len(sys.argv) == 3 and sys.argv[1] == "run":
            check_run(sys.argv[2])
        elif len(sys.argv) == 4 and sys.argv[1] == "export":
            check_export(sys.argv[2], sys.argv[3])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("ok: both parsers read it, and it holds what was run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
