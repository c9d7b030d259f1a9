#!/usr/bin/env python3
"""How long `memstress doctor` takes on a large snapshot: the target is 10 s for 300,000 events, with
the full sweep, on a 2-core machine.

    python3 bench/doctor_speed.py MEMSTRESS_BINARY [--steps 15800] [--runs 5]

Writes a synthetic PyTorch snapshot (tests/scripts/snapshot_fixtures.training_snapshot: a training loop with
stack frames on every allocation, a leak, and an OOM at its end, so every section of the doctor runs,
about 300,000 trace entries at the default steps) to a temporary directory, runs the doctor on it once to
warm up and then --runs times, and prints each run's wall time and the median. A benchmark, not a test:
it judges nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import snapshot_fixtures  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/doctor_speed.py")
    parser.add_argument("memstress", type=Path)
    parser.add_argument("--steps", type=int, default=15800, help="training steps (21 entries each)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = snapshot_fixtures.training_snapshot(args.steps, leak=True, oom_request=100 << 30)
        entries = sum(len(t) for t in snapshot["device_traces"])
        path = Path(tmp) / "big.snapshot.pickle"
        snapshot_fixtures.write_pickle(path, snapshot)
        times = []
        for run in range(args.runs + 1):
            start = time.monotonic()
            subprocess.run([str(args.memstress), "doctor", str(path)], check=True, capture_output=True)
            if run > 0:  # the first warms the page cache
                times.append(time.monotonic() - start)
        print(f"memstress doctor on {entries} trace entries ({path.stat().st_size >> 20} MiB pickle): "
              f"wall s min {min(times):.2f}, median {statistics.median(times):.2f}, max {max(times):.2f} "
              f"over {len(times)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
