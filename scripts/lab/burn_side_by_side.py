#!/usr/bin/env python3
"""scripts/lab/burn_side_by_side.py OUTDIR: the side-by-side table of scripts/lab/gpu-burn's runs.

Reads every NAME.smi.csv that scripts/lab/gpu-burn sampled (nvidia-smi, one line a second) and, for each
run, gpu-burn.txt (its last Gflop/s figure) or NAME.verdict.json (the burn's steady GEMM medians); writes
OUTDIR/side-by-side.md and prints it. Power "reached" is the first second at or above 95% of the limit,
counted from the first sample; the steady figures are over the run's loaded samples (the first to the last at
half its peak power or more) after their first minute (after their first 10 s in a run shorter than that).
"""

import csv
import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path


def number(text):
    try:
        return float(text.strip())
    except ValueError:
        return None


def samples(path):
    rows = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = [h.strip().split(" ")[0] for h in next(reader, [])]
        for line in reader:
            if len(line) != len(header):
                continue
            row = dict(zip(header, line))
            try:
                when = datetime.strptime(row["timestamp"].strip(), "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            rows.append((when, {k: number(v) for k, v in row.items() if k != "timestamp"}))
    return rows


def figures(rows):
    if not rows:
        return None
    t0 = rows[0][0]
    limit = statistics.median(r["power.limit"] for _, r in rows if r["power.limit"])
    reached = next(
        ((t - t0).total_seconds() for t, r in rows if r["power.draw"] and r["power.draw"] >= 0.95 * limit),
        None,
    )
    # The load's own span: from the first to the last sample at half the peak power or more, so the idle
    # seconds before a run starts and after it ends (gpu-burn exits well after its last kernel) are left out.
    peak = max((r["power.draw"] or 0) for _, r in rows)
    loaded = [i for i, (_, r) in enumerate(rows) if (r["power.draw"] or 0) >= 0.5 * peak]
    span = rows[loaded[0] : loaded[-1] + 1] if loaded else rows
    start = span[0][0]
    steady = (
        [r for t, r in span if (t - start).total_seconds() >= 60]
        or [r for t, r in span if (t - start).total_seconds() >= 10]
        or [r for _, r in span]
    )

    def most(key):
        values = [r[key] for _, r in rows if r.get(key) is not None]
        return max(values) if values else None

    def median(key):
        values = [r[key] for r in steady if r.get(key) is not None]
        return statistics.median(values) if values else None

    return {
        "seconds": (rows[-1][0] - t0).total_seconds(),
        "limit": limit,
        "reached": reached,
        "power": median("power.draw"),
        "gpu": most("temperature.gpu"),
        "hbm": most("temperature.memory"),
        "gpu_steady": median("temperature.gpu"),
        "hbm_steady": median("temperature.memory"),
        "sm": median("clocks.current.sm") or median("clocks.sm"),
    }


def tflops(out, name):
    if name == "gpu-burn":
        text = (out / "gpu-burn.txt").read_text(errors="replace").replace("\r", "\n")
        found = re.findall(r"\(([0-9.]+) Gflop/s\)", text)
        return f"{float(found[-1]) / 1000:.1f} (FP32 SGEMM)" if found else "-"
    verdict = out / f"{name}.verdict.json"
    if not verdict.exists():
        return "-"
    gpus = json.loads(verdict.read_text()).get("gpus") or [{}]
    medians = gpus[0].get("steady_state_median") or {}
    bf16, fp64 = medians.get("gemm.bf16.TFLOP/s"), medians.get("gemm.fp64.TFLOP/s")
    if bf16 is None:
        return "-"
    return f"{bf16:.1f} BF16, {fp64:.1f} FP64"


def cell(value, fmt):
    return "-" if value is None else fmt.format(value)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/lab/burn_side_by_side.py OUTDIR")
    out = Path(sys.argv[1])
    lines = [
        "| run | seconds | power limit (W) | 95% of the limit after | steady power (W) | steady share"
        " | GPU max / steady (C) | HBM max / steady (C) | steady SM clock (MHz) | TFLOP/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for path in sorted(out.glob("*.smi.csv")):
        name = path.name[: -len(".smi.csv")]
        f = figures(samples(path))
        if f is None:
            continue
        share = f["power"] / f["limit"] if f["power"] and f["limit"] else None
        lines.append(
            f"| {name} | {f['seconds']:.0f} | {f['limit']:.0f} | {cell(f['reached'], '{:.0f} s')}"
            f" | {cell(f['power'], '{:.0f}')} | {cell(share, '{:.1%}')}"
            f" | {cell(f['gpu'], '{:.0f}')} / {cell(f['gpu_steady'], '{:.0f}')}"
            f" | {cell(f['hbm'], '{:.0f}')} / {cell(f['hbm_steady'], '{:.0f}')}"
            f" | {cell(f['sm'], '{:.0f}')} | {tflops(out, name)} |"
        )
    text = "\n".join(lines) + "\n"
    (out / "side-by-side.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
