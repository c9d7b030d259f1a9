#!/usr/bin/env python3
"""A synthetic fleet, made from real results, with slow GPUs planted: what `memstress db` is proven on at scale
(scripts/dev/fleet-bench; a small one in CTest: tests/cli/fleet.cmake).

    scripts/dev/synthetic_fleet.py OUT [--nodes 250] [--gpus-per-node 8] [--runs 20] [--seed 1] [--source FILE]

Writes OUT/<driver>/<node>-<run>.json, `memstress run` documents of 8-rank jobs (one rank per GPU, one file per
node and run), and OUT/truth.json, the GPUs planted slow. Each file holds the rows of a real run
(--source, by default results/h200x4/default-h200x4-580.159.04.json.xz, four H200s) that a fleet check keeps: pinned
H2D and D2H copies of 256 MiB (memstress's and the reference loop's GB/s), an all-reduce of 256 MiB (busbw) and the
allocator's 1 MiB alloc and free latencies (alloc-smoke). Two drivers, every node running --runs times under
each (250 nodes x 2 drivers x 20 runs: 10,000 files, 2,000 GPUs).

Noise is the real run's: as many repetitions as the real row has (5 for copies and collectives, 80 for the
allocator's 16 allocations x 5), each the metric's level times one plus a deviation drawn from the
real repetitions' deviations from their own GPU's median (all four GPUs' pooled, resampled: the real run's
shape, tails included: its concurrent pinned copies have repetitions 5-12% slow). Each GPU's level is the real
GPUs' median times 1 + N(0, 0.5%), an assumed silicon spread: the real run's four GPUs are too few to estimate
one (their allocator latencies differ by 60% between ranks, by CPU placement, not by GPU). Planted (recorded in
truth.json, each with its reason):
- h2d: GPUs whose pinned H2D (both loops) is 5-8% slower: a PCIe link trained down, a bad riser;
- all_reduce: nodes whose all-reduce busbw is 5-8% lower on all 8 GPUs (an NVLink or NIC fault slows the
  whole job: every rank of a collective waits for the slowest), so each of its GPUs is planted;
- alloc: GPUs whose allocator is 10-20% slower (alloc latency up: a host with a noisy neighbour, a CPU
  frequency cap).
About 1% of GPUs each, under both drivers. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import copy
import json
import lzma
import random
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ("570.195.03", "580.159.04")
KEEP = {
    ("transfers", "direction=h2d host=pinned engine=ce streams=1 bytes=256M"),
    ("transfers", "direction=d2h host=pinned engine=ce streams=1 bytes=256M"),
    ("collectives", "collective=all_reduce dtype=float place=out pressure=none bytes=256M"),
    ("alloc-smoke", "bytes=1M count=16"),
}
LEVEL_SIGMA = 0.005  # a GPU's own level: 1 + N(0, 0.5%)


def templates(source: dict) -> dict:
    """Per kept row: the rank-0 row as a template and, per metric, the real GPUs' relative spread and the
    repetitions' relative deviations."""
    out = {}
    for key in KEEP:
        rows = [r for r in source["rows"] if (r["workload"], r["case"]) == key and r["verdict"] == "pass"]
        if not rows:
            raise SystemExit(f"{key}: no such passing row in the source")
        noise = {}
        for name in rows[0]["metrics"]:
            medians = [r["metrics"][name]["median"] for r in rows if name in r["metrics"]]
            centre = statistics.median(medians)
            if centre == 0:
                continue
            deviations = [s / r["metrics"][name]["median"] - 1 for r in rows for s in r["metrics"][name]["samples"]
                          if r["metrics"][name]["median"]]
            noise[name] = (centre, LEVEL_SIGMA, deviations)
        out[key] = (rows[0], noise)
    return out


def metric_from(template: dict, level: float, deviations: list[float], rnd: random.Random, n: int) -> dict:
    samples = [level * (1 + rnd.choice(deviations)) for _ in range(n)]
    ordered = sorted(samples)
    m = dict(template)
    q = statistics.quantiles(ordered, n=10, method="inclusive")
    mean = sum(ordered) / n
    stddev = (sum((v - mean) ** 2 for v in ordered) / n) ** 0.5
    m.update(median=statistics.median(ordered), p10=q[0], p90=q[-1], p99=ordered[-1], min=ordered[0], max=ordered[-1],
             mean=mean, stddev=stddev, samples=samples, n=n)
    m["cv"] = m["stddev"] / m["mean"] if m["mean"] else 0
    return m


def plan(nodes: int, per_node: int, rnd: random.Random) -> dict:
    gpus = nodes * per_node
    share = max(1, gpus // 100)
    everyone = list(range(gpus))
    h2d = set(rnd.sample(everyone, share))
    alloc = set(rnd.sample([g for g in everyone if g not in h2d], share))
    slow_nodes = set(rnd.sample(range(nodes), max(1, share // per_node)))
    return {"h2d": {g: rnd.uniform(0.92, 0.95) for g in sorted(h2d)},
            "alloc": {g: rnd.uniform(1.10, 1.20) for g in sorted(alloc)},
            "all_reduce": {n: rnd.uniform(0.92, 0.95) for n in sorted(slow_nodes)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=250)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", type=Path, default=ROOT / "results/h200x4/default-h200x4-580.159.04.json.xz")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    raw = a.source.read_bytes()  # the committed run is xz-compressed; another may be plain
    source = json.loads(lzma.decompress(raw) if raw.startswith(b"\xfd7zXZ\x00") else raw)
    kept = templates(source)
    env0 = source["environment"]["ranks"][0]
    gpu0 = next(g for g in env0["gpus"] if g["uuid"] == env0["device"]["uuid"])
    planted = plan(a.nodes, a.gpus_per_node, rnd)
    # Each GPU's own level per metric, the same under both drivers (a GPU is what it is).
    level = {}
    for g in range(a.nodes * a.gpus_per_node):
        for key, (_, noise) in kept.items():
            for name, (centre, sigma, _) in noise.items():
                level[g, key, name] = centre * (1 + rnd.gauss(0, sigma))

    def uuid(g: int) -> str:
        return f"GPU-{a.seed:08x}-{g // 65536:04x}-{g % 65536:04x}-0000-{g:012x}"

    truth = {"gpus": a.nodes * a.gpus_per_node, "nodes": a.nodes, "drivers": list(DRIVERS), "planted": []}
    for g, f in planted["h2d"].items():
        truth["planted"].append({"gpu_uuid": uuid(g), "host": f"node{g // a.gpus_per_node:04d}", "what": "h2d",
                                 "factor": f})
    for g, f in planted["alloc"].items():
        truth["planted"].append({"gpu_uuid": uuid(g), "host": f"node{g // a.gpus_per_node:04d}", "what": "alloc",
                                 "factor": f})
    for n, f in planted["all_reduce"].items():
        for r in range(a.gpus_per_node):
            g = n * a.gpus_per_node + r
            truth["planted"].append({"gpu_uuid": uuid(g), "host": f"node{n:04d}", "what": "all_reduce", "factor": f})

    header = {k: source[k] for k in ("schema", "memstress", "config")}
    files = 0
    for d, driver in enumerate(DRIVERS):
        (a.out / driver).mkdir(parents=True, exist_ok=True)
        for node in range(a.nodes):
            host = f"node{node:04d}"
            for run in range(a.runs):
                started = f"2026-{10 + d:02d}-{1 + run:02d}T{node % 24:02d}:{node % 60:02d}:00Z"
                ranks, rows = [], []
                for r in range(a.gpus_per_node):
                    g = node * a.gpus_per_node + r
                    bus = f"0000:{0x18 + r * 0x10:02x}:00.0"
                    env = copy.deepcopy({k: v for k, v in env0.items() if k != "gpus"})
                    env["rank"] = r
                    env["host"] = dict(env0["host"], name=host)
                    env["driver"] = dict(env0["driver"], version=driver)
                    env["device"] = {"label": "cuda:0", "pci_bus_id": bus, "uuid": uuid(g)}
                    env["gpus"] = [dict(gpu0, uuid=uuid(g), pci_bus_id=bus, serial=f"{1653924000000 + g}", ordinal=0)]
                    env.pop("variables", None)
                    ranks.append(env)
                    for key in sorted(kept):
                        template, noise = kept[key]
                        row = {k: v for k, v in template.items() if k != "allocator_stats"}
                        row["rank"] = r
                        row["started_at"] = started
                        row["device"] = dict(template["device"], uuid=uuid(g), label="cuda:0", ordinal=0)
                        metrics = {}
                        for name, m in template["metrics"].items():
                            if name not in noise:
                                metrics[name] = m
                                continue
                            factor = 1.0
                            if key[0] == "transfers" and "h2d" in key[1] and g in planted["h2d"] and "GB/s" in name:
                                factor = planted["h2d"][g]
                            if key[0] == "collectives" and node in planted["all_reduce"] and "bw" in name:
                                factor = planted["all_reduce"][node]
                            if key[0] == "alloc-smoke" and g in planted["alloc"] and name == "alloc":
                                factor = planted["alloc"][g]
                            metrics[name] = metric_from(m, level[g, key, name] * factor, noise[name][2], rnd,
                                                        m.get("n", 5))
                        row["metrics"] = metrics
                        rows.append(row)
                doc = dict(header, started_at=started, ended_at=started, status="complete", abort_reason="",
                           argv=["memstress", "run", "--out", f"{host}-{run}.json"],
                           environment={"ranks": ranks}, rows=rows,
                           summary={"rows": len(rows), "pass": len(rows), "fail": 0, "skip": 0, "error": 0})
                doc["config"] = dict(doc["config"], ranks=a.gpus_per_node)
                (a.out / driver / f"{host}-{run:02d}.json").write_text(json.dumps(doc) + "\n")
                files += 1
    (a.out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{files} files, {truth['gpus']} GPUs on {a.nodes} nodes, {len(DRIVERS)} drivers, "
          f"{len(truth['planted'])} GPUs planted slow: {a.out}")


if __name__ == "__main__":
    main()
