#!/usr/bin/env python3
"""Write the SYNTHETIC fixtures of `memstress compare`'s tests (tests/cli, tests/unit) into this folder.

    tests/data/compare/make_fixtures.py

None of these numbers were measured: they are made up, small and chosen so that each file shows one
thing. Every file says so (memstress files: git_sha "synthetic" and a note in every row; Google
Benchmark files: the context's "synthetic" key). Real results live in results/ and are never edited.

    base.json           memstress.run/1 document: 3 rows (smoke, alloc-smoke, a skipped smoke row)
    base.jsonl          the same run as a JSON Lines stream (header, rows, footer)
    same-noise.json     every sample within +-2% of base's: SAME everywhere, exit 0
    slower.json         another driver version and a 20% slowdown: fill bandwidth 20% down, samples
                        wholly apart (WORSE, exit 1); alloc latency 20% up, samples overlapping
                        (p = 0.032: UNSURE)
    verdict-fail.json   the alloc-smoke row fails (pass -> fail): a regression, exit 1
    gbench-base.json    Google Benchmark JSON, 5 repetitions and their aggregates, a NaN counter
    gbench-slower.json  the same, 20% slower: WORSE, exit 1
    unknown-schema.json a memstress document of a schema this memstress does not read: exit 2
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTE = "SYNTHETIC test fixture (tests/data/compare/make_fixtures.py), not a measurement"


def quantile(sorted_values: list[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def metric(unit: str, better: str, samples: list[float]) -> dict:
    s = sorted(samples)
    mean = statistics.fmean(samples)
    stddev = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return {
        "unit": unit,
        "better": better,
        "n": len(samples),
        "median": quantile(s, 0.5),
        "p10": quantile(s, 0.1),
        "p90": quantile(s, 0.9),
        "p99": quantile(s, 0.99),
        "min": s[0],
        "max": s[-1],
        "mean": mean,
        "stddev": stddev,
        "cv": stddev / mean if mean else 0.0,
        "samples": samples,
    }


def row(workload: str, params: dict, verdict: str, metrics: dict, reason: str = "") -> dict:
    return {
        "workload": workload,
        "case": " ".join(f"{k}={v}" for k, v in params.items()),
        "params": params,
        "allocator": "caching",
        "rank": 0,
        "device": {"label": "cuda:0", "kind": "cuda", "ordinal": 0, "name": "NVIDIA H200",
                   "uuid": "GPU-00000000-0000-0000-0000-000000000000"},
        "verdict": verdict,
        "reason": reason,
        "verification": {"checked": 1024 if verdict != "skip" else 0, "errors": 7 if verdict == "fail" else 0},
        "metrics": metrics,
        "notes": [NOTE],
        "allocator_stats": {},
        "started_at": "2026-01-01T00:00:00Z" if verdict != "skip" else "",
        "seconds": 0.5 if verdict != "skip" else 0,
    }


def document(driver: str, rows: list[dict]) -> dict:
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("pass", "fail", "skip", "error")}
    return {
        "schema": "memstress.run/1",
        "memstress": {"version": "0.1.0", "git_sha": "synthetic"},
        "argv": ["memstress", "run", "(synthetic fixture)"],
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:00:05Z",
        "status": "complete",
        "abort_reason": "",
        "config": {"note": NOTE},
        "environment": {"ranks": [{
            "rank": 0,
            "driver": {"version": driver, "source": "nvml", "cuda_driver_version": "13.0"},
            "cuda_runtime": {"version": "13.0"},
            "nccl": {"version": "2.28.3"},
            "mpi": {"library": "Open MPI v4.1.6", "standard": "3.1"},
            "gpus": [{"ordinal": 0, "name": "NVIDIA H200", "memory_bytes": 150109880320, "ecc_enabled": True,
                      "sm_clock_max_mhz": 1980, "memory_clock_max_mhz": 3201}],
            "variables": {},
        }]},
        "rows": rows,
        "summary": {"rows": len(rows), **counts},
    }


# Base samples: bandwidth in GB/s (higher is better), latency in us (lower is better).
FILL = [3724.9, 3751.6, 3778.6, 3685.7, 3765.1]
CHECK = [2983.1, 3004.5, 2971.8, 2755.8, 2928.9]
ALLOC = [0.145, 0.171, 0.141, 0.139, 0.152]
FREE = [0.146, 0.151, 0.140, 0.139, 0.148]
PAIR_ALLOC = [0.106, 0.104, 0.109, 0.107, 0.105]
PAIR_FREE = [0.127, 0.125, 0.129, 0.126, 0.128]
# Within +-2%, in both directions.
JITTER = [1.02, 0.99, 0.98, 1.01, 1.0]


def scaled(values: list[float], factors: list[float] | float) -> list[float]:
    if isinstance(factors, float):
        factors = [factors] * len(values)
    return [round(v * f, 6) for v, f in zip(values, factors)]


def memstress_rows(fill, check, alloc, free, pair_alloc, pair_free, pair_verdict="pass") -> list[dict]:
    return [
        row("smoke", {"bytes": "64M", "pattern": "random"}, "pass", {
            "fill": metric("GB/s", "higher", fill),
            "check": metric("GB/s", "higher", check),
            "alloc": metric("us", "lower", alloc),
            "free": metric("us", "lower", free),
        }),
        row("alloc-smoke", {"bytes": "1M", "count": "4"}, pair_verdict, {
            "alloc": metric("us", "lower", pair_alloc),
            "free": metric("us", "lower", pair_free),
        }, reason="7 of 1024 words wrong (synthetic)" if pair_verdict == "fail" else ""),
        row("smoke", {"bytes": "1G", "pattern": "random"}, "skip", {},
            reason="needs a real GPU (synthetic fixture)"),
    ]


def write_json(name: str, value: dict) -> None:
    (HERE / name).write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")


def gbench(slowdown: float) -> str:
    """Google Benchmark JSON as JSONReporter writes it (bare NaN included), 5 repetitions."""
    base_ns = {"BM_Pair/caching/cuda/512": [99.1, 98.7, 100.2, 99.5, 98.9],
               "BM_Pair/direct/cuda/512": [55189.2, 54901.7, 55620.3, 55012.8, 55377.1]}
    entries = []
    for run_name, times in base_ns.items():
        times = [round(t * slowdown, 4) for t in times]
        for i, t in enumerate(times):
            entries.append({
                "name": run_name, "family_index": 0, "per_family_instance_index": 0, "run_name": run_name,
                "run_type": "iteration", "repetitions": 5, "repetition_index": i, "threads": 1,
                "iterations": 1000, "real_time": t, "cpu_time": t * 0.999, "time_unit": "ns",
                "items_per_second": 1e9 / t, "device_allocs_per_pair": "NaN", "label": "NVIDIA H200",
            })
        for agg in ("mean", "median", "stddev", "cv"):
            t = {"mean": statistics.fmean(times), "median": statistics.median(times),
                 "stddev": statistics.stdev(times), "cv": statistics.stdev(times) / statistics.fmean(times)}[agg]
            entries.append({
                "name": f"{run_name}_{agg}", "family_index": 0, "per_family_instance_index": 0,
                "run_name": run_name, "run_type": "aggregate", "repetitions": 5, "threads": 1,
                "aggregate_name": agg, "aggregate_unit": "percentage" if agg == "cv" else "time",
                "iterations": 5, "real_time": t, "cpu_time": t * 0.999, "time_unit": "ns",
                "items_per_second": 1e9 / t, "device_allocs_per_pair": "NaN", "label": "NVIDIA H200",
            })
    doc = {"context": {"synthetic": NOTE, "date": "2026-01-01T00:00:00+00:00", "host_name": "synthetic",
                       "num_cpus": 16, "library_build_type": "release", "driver_version": "580.159.04",
                       "gpu": "NVIDIA H200", "load_avg": [1.0, 1.0, 1.0]},
           "benchmarks": entries}
    # JSONReporter writes NaN bare, which is not JSON; so does this.
    return json.dumps(doc, indent=2).replace('"NaN"', "NaN") + "\n"


def main() -> None:
    base_rows = memstress_rows(FILL, CHECK, ALLOC, FREE, PAIR_ALLOC, PAIR_FREE)
    base = document("580.159.04", base_rows)
    write_json("base.json", base)

    header = {k: v for k, v in base.items() if k not in ("rows", "summary")}
    lines = [dict(header, type="header", status="running", ended_at=None)]
    lines += [dict(r, type="row") for r in base_rows]
    lines.append({"type": "footer", "status": "complete", "ended_at": base["ended_at"], "summary": base["summary"]})
    (HERE / "base.jsonl").write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))

    write_json("same-noise.json", document("580.159.04", memstress_rows(
        scaled(FILL, JITTER), scaled(CHECK, JITTER[::-1]), scaled(ALLOC, JITTER), scaled(FREE, JITTER[::-1]),
        scaled(PAIR_ALLOC, JITTER), scaled(PAIR_FREE, JITTER))))
    write_json("slower.json", document("590.0.0-synthetic", memstress_rows(
        scaled(FILL, 0.8), CHECK, scaled(ALLOC, 1.2), FREE, PAIR_ALLOC, PAIR_FREE)))
    write_json("verdict-fail.json", document("580.159.04", memstress_rows(
        FILL, CHECK, ALLOC, FREE, PAIR_ALLOC, PAIR_FREE, pair_verdict="fail")))
    unknown = copy.deepcopy(base)
    unknown["schema"] = "memstress.run/99"
    write_json("unknown-schema.json", unknown)

    (HERE / "gbench-base.json").write_text(gbench(1.0))
    (HERE / "gbench-slower.json").write_text(gbench(1.2))


if __name__ == "__main__":
    main()
