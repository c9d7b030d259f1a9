#!/usr/bin/env python3
"""Writes the small fleet the `db` CLI tests ingest (tests/cli/fleet.cmake): six H100s on six nodes, each
a copy of a real run (results/h100/compare/base-h100-580.159.04.json.xz: pinned H2D and D2H at 64 and 256
MiB) with its own host, GPU UUID, bus id and start time, the medians and samples moved by a little noise
(at most 0.3%), and node04's H2D planted 8% slower (memstress's loop and the reference loop alike, so their
ratio vs_ref stays). Also the same six GPUs a week earlier under an older driver (driver-570/, for `db
history` and `db compare`): every figure 10% higher on H2D at 64 MiB (so 580 reads as a regression there,
node04's planted slowness included), the rest with fresh noise. Deterministic; run from the repository root:

    tests/data/fleet/make_fleet.py
"""

import copy
import json
import lzma
import random
from pathlib import Path

SOURCE = Path("results/h100/compare/base-h100-580.159.04.json.xz")
OUT = Path(__file__).resolve().parent
NODES = 6
SLOW_NODE = 4
SLOW_FACTOR = 0.92  # 8% slower H2D
OLD_DRIVER = "570.195.03"
OLD_FASTER = 1.10  # H2D at 64 MiB under the old driver
STATS = ("median", "p10", "p90", "p99", "min", "max", "mean")


def scaled(metric, factor):
    m = dict(metric)
    for key in STATS:
        m[key] = metric[key] * factor
    m["samples"] = [v * factor for v in metric["samples"][:5]]
    m["n"] = len(m["samples"])
    return m


def main():
    base = json.loads(lzma.decompress(SOURCE.read_bytes()))  # committed xz-compressed
    write_fleet(base, random.Random(17), OUT, None)
    (OUT / "driver-570").mkdir(exist_ok=True)
    write_fleet(base, random.Random(570), OUT / "driver-570", OLD_DRIVER)


def write_fleet(base, rnd, out, old_driver):
    for node in range(1, NODES + 1):
        doc = copy.deepcopy(base)
        host = f"node{node:02d}"
        uuid = f"GPU-00000000-0000-0000-0000-0000000000{node:02d}"
        bus = f"0000:{node:02x}:00.0"
        doc["started_at"] = f"2026-11-{(1 if old_driver else 2)}{node % 3}T1{node}:00:00Z"
        doc["ended_at"] = doc["started_at"]
        doc["argv"] = ["memstress", "run", "transfers", "--out", f"{host}.json"]
        for rank in doc["environment"]["ranks"]:
            rank["host"]["name"] = host
            rank["device"]["uuid"] = uuid
            rank["device"]["pci_bus_id"] = bus
            rank["gpus"] = [dict(rank["gpus"][0], uuid=uuid, pci_bus_id=bus, serial=f"16539240{node:05d}")]
            rank["variables"] = {}
            if old_driver:
                rank["driver"]["version"] = old_driver
        for row in doc["rows"]:
            row.pop("allocator_stats", None)
            row["device"]["uuid"] = uuid
            slow = node == SLOW_NODE and "direction=h2d" in row["case"]
            for name, metric in row["metrics"].items():
                factor = 1 + rnd.uniform(-0.003, 0.003)
                if slow and name.endswith("GB/s"):  # a slow link: both loops slow, their ratio not
                    factor *= SLOW_FACTOR
                if old_driver and "direction=h2d" in row["case"] and "bytes=64M" in row["case"]:
                    factor *= OLD_FASTER if name.endswith("GB/s") else 1
                row["metrics"][name] = scaled(metric, factor)
        (out / f"{host}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
