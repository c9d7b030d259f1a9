"""The allocator table: every allocator peer side by side, from one GPU run of scripts/lab/gpu-allocators.

Inputs are the documents that run writes: one `memstress replay --device cuda --out` document
(memstress.replay/1) per committed PyTorch trace and allocator, and memstress_bench's Google Benchmark JSON
(medians of repetitions). Outputs:

- per trace: peak reserved, utilization (peak allocated / peak reserved; and peak requested / peak reserved,
  the same measure for every peer, since the caching peers count allocated bytes rounded) and the OOM margin
  (capacity - peak reserved) of every allocator, on the real GPU;
- per allocator: alloc+free pair latency (ns per pair per thread, BM_Threads at 1 and 16 threads, 512 B and
  1 MiB), and the random-allocation benchmark's peak reserved, utilization and operations per second;
- the ratios the targets are set on (caching against torch and each RMM resource), and the best peer of
  each column.

The report draws the same tables as its "Allocator table" section; run as a program, it writes
OUTDIR/allocators.md and OUTDIR/allocators.json from the documents in OUTDIR (its messages name it as it was
run):

    PYTHONPATH=python python3 -m memstress.report.allocators results/h100/allocators-580.159.04
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path
from typing import Any

from .. import _json, registry

MIB = 1 << 20
GIB = 1 << 30
# The order rows appear in: memstress's own peers, PyTorch's, CUDA's, RMM's (each origin's as `memstress list`
# orders them: ..registry), the example plugin, the baseline.
ORIGINS = ("memstress", "PyTorch", "CUDA", "RMM")
EXAMPLE_PLUGIN = "plugin-caching"  # examples/allocator-plugin's caching plugin, as scripts/lab/gpu-allocators runs it
# The other libraries' allocators, which caching's pair latency is set against.
OTHER_LIBRARIES = ("PyTorch", "RMM")
# (family, bytes, threads): BM_Pair is one thread on the default stream; BM_Threads gives each thread a stream.
LATENCY_COLUMNS = [("BM_Pair", 512, 1), ("BM_Pair", 1 << 20, 1), ("BM_Threads", 512, 1), ("BM_Threads", 512, 16),
                   ("BM_Threads", 1 << 20, 1), ("BM_Threads", 1 << 20, 16)]
RANDOM_MIX = "log_uniform"


def peer_of(allocator: str) -> str:
    """The table's name of a replay's allocator ("plugin:libmemstress_caching_plugin.so" is plugin-caching)."""
    if allocator.startswith("plugin:"):  # as scripts/lab/gpu-allocators labels it
        stem = Path(allocator.removeprefix("plugin:")).name.removesuffix(".so").removeprefix("lib")
        return "plugin-" + stem.removeprefix("memstress_").removesuffix("_plugin")
    return allocator


def trace_of(doc: dict) -> str:
    path = str((doc.get("trace") or {}).get("path", "?"))
    return Path(path).name.removesuffix(".gz").removesuffix(".csv").removesuffix(".trace")


def _ratio(num: Any, den: Any) -> float | None:
    if isinstance(num, (int, float)) and isinstance(den, (int, float)) and den > 0:
        return num / den
    return None


def replay_rows(replays: list[dict]) -> dict[str, dict[str, dict]]:
    """{trace: {peer: {peak_reserved, utilization, oom_margin, capacity, ooms}}}."""
    out: dict[str, dict[str, dict]] = {}
    for doc in replays:
        r = doc.get("replay") or {}
        peaks = r.get("peaks") or {}
        frag = r.get("fragmentation") or {}
        out.setdefault(trace_of(doc), {})[peer_of(str(r.get("allocator", "?")))] = {
            "peak_reserved_bytes": peaks.get("reserved_bytes"),
            "peak_allocated_bytes": peaks.get("allocated_bytes"),
            "utilization": frag.get("utilization"),
            # direct and async keep no requested bytes: their allocated bytes are the bytes asked for
            "utilization_requested": _ratio(peaks.get("requested_bytes") or peaks.get("allocated_bytes"),
                                            peaks.get("reserved_bytes")),
            "oom_margin_bytes": r.get("oom_margin_bytes"),
            "capacity_bytes": r.get("capacity_bytes"),
            "ooms": r.get("num_ooms"),
        }
    return out


def _medians(bench: dict) -> dict[str, dict]:
    runs: dict[str, list[dict]] = {}
    for b in bench.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        runs.setdefault(str(b.get("run_name", b.get("name", ""))), []).append(b)
    chosen = {}
    for name, entries in runs.items():
        medians = [e for e in entries if e.get("run_type") == "aggregate"]
        chosen[name] = medians[0] if medians else sorted(entries, key=lambda e: e.get("real_time", 0))[len(entries) // 2]
    return chosen


def bench_rows(bench: dict) -> dict[str, dict]:
    """{peer: {"threads": {"512x1": ns, ...}, "random": {...}}} from one Google Benchmark document (cuda rows)."""
    out: dict[str, dict] = {}
    for name, b in _medians(bench).items():
        parts = name.split("/")
        if len(parts) < 4 or parts[2] != "cuda":
            continue
        peer = parts[1]
        if parts[0] in ("BM_Pair", "BM_Threads") and b.get("items_per_second"):
            threads = next((int(p.split(":")[1]) for p in parts if p.startswith("threads:")), 1)
            key = latency_key(parts[0], int(parts[3]), threads)
            out.setdefault(peer, {}).setdefault("latency", {})[key] = threads / float(b["items_per_second"]) * 1e9
        elif parts[0] == "BM_Random" and parts[3] == RANDOM_MIX:
            out.setdefault(peer, {})["random"] = {
                "peak_reserved_bytes": b.get("peak_reserved_bytes"),
                "utilization": b.get("utilization"),
                "ops_per_second": b.get("items_per_second"),
            }
    return out


def latency_key(family: str, size: int, threads: int) -> str:
    return f"{family}/{size}/threads:{threads}"


def order() -> list[str]:
    """Every peer's name in the order of the table's rows (ORIGINS)."""
    peers = registry.peers()
    ranked = sorted((p for p in peers if not p["baseline"]),
                    key=lambda p: ORIGINS.index(p["origin"]) if p["origin"] in ORIGINS else len(ORIGINS))
    return [p["name"] for p in ranked] + [EXAMPLE_PLUGIN] + [p["name"] for p in peers if p["baseline"]]


def ratios(bench: dict[str, dict]) -> list[dict]:
    """caching's pair latency over each other library's allocator's (torch's, each RMM resource's), per benchmark,
    size and threads."""
    out = []
    mine = bench.get("caching", {}).get("latency", {})
    for other in (p["name"] for p in registry.peers() if p["origin"] in OTHER_LIBRARIES):
        theirs = bench.get(other, {}).get("latency", {})
        for key in (latency_key(*column) for column in LATENCY_COLUMNS):
            if key in mine and key in theirs and theirs[key] > 0:
                out.append({"against": other, "case": key, "ratio": mine[key] / theirs[key]})
    return out


def build(replays: list[dict], benches: list[dict]) -> dict[str, Any]:
    bench: dict[str, dict] = {}
    context: dict = {}
    for doc in benches:
        for peer, row in bench_rows(doc).items():
            bench.setdefault(peer, {}).update(row)
        context = context or doc.get("context", {})
    env = next((d.get("environment") for d in replays if d.get("environment")), {})
    return {"schema": "memstress.allocators/1", "traces": replay_rows(replays), "bench": bench,
            "ratios": ratios(bench), "bench_context": context, "environment": env}


def _peers(data: dict) -> list[str]:
    seen = set(data["bench"]) | {p for rows in data["traces"].values() for p in rows}
    known = order()
    return [p for p in known if p in seen] + sorted(seen - set(known))


def _best(values: dict[str, float | None], low: bool) -> str:
    present = {k: v for k, v in values.items() if isinstance(v, (int, float))}
    if not present:
        return "-"
    return (min if low else max)(present, key=present.get)


def _size(size: int) -> str:
    return "512 B" if size == 512 else f"{size // MIB} MiB"


def tables(data: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, head, rows) of each table, for markdown and html alike."""
    peers = _peers(data)
    traces = sorted(data["traces"])
    out = []
    for title, key, fmt, low in (
        ("Peak reserved on the GPU (MiB), replaying each committed PyTorch trace", "peak_reserved_bytes",
         lambda v: f"{v / MIB:,.1f}", True),
        ("Utilization (peak allocated / peak reserved)", "utilization", lambda v: f"{v:.3f}", False),
        # caching, expandable and torch count allocated bytes rounded (PyTorch's 512 B and power-of-two
        # rules); the peers behind the statistics adaptor count the bytes asked for: this one measure is the
        # same for every peer.
        ("Utilization of the bytes asked for (peak requested / peak reserved: the same measure for every peer)",
         "utilization_requested", lambda v: f"{v:.3f}", False),
        ("OOM margin (capacity - peak reserved, GiB)", "oom_margin_bytes", lambda v: f"{v / GIB:,.2f}", False),
    ):
        rows = []
        for peer in peers:
            cells = []
            for t in traces:
                v = data["traces"][t].get(peer, {}).get(key)
                cells.append(fmt(v) if isinstance(v, (int, float)) else "-")
            rows.append([peer] + cells)
        rows.append(["best"] + [_best({p: data["traces"][t].get(p, {}).get(key) for p in peers}, low) for t in traces])
        out.append((title, ["allocator"] + traces, rows))
    head = ["allocator"] + [
        f"{'pair' if f == 'BM_Pair' else 'own stream'}, {_size(s)}, {n} thread{'s' if n > 1 else ''}"
        for f, s, n in LATENCY_COLUMNS] + [
        f"random {RANDOM_MIX}: peak reserved (GiB)", "utilization", "Mops/s"]
    rows = []
    n_lat = len(LATENCY_COLUMNS)
    columns: list[dict[str, float | None]] = [{} for _ in range(len(head) - 1)]
    for peer in peers:
        b = data["bench"].get(peer, {})
        values: list[float | None] = [b.get("latency", {}).get(latency_key(*c)) for c in LATENCY_COLUMNS]
        rnd = b.get("random", {})
        values += [rnd.get("peak_reserved_bytes"), rnd.get("utilization"), rnd.get("ops_per_second")]
        for i, v in enumerate(values):
            columns[i][peer] = v
        rows.append([peer] + [
            "-" if v is None else (f"{v:,.0f}" if i < n_lat else f"{v / GIB:.2f}" if i == n_lat else
                                   f"{v:.3f}" if i == n_lat + 1 else f"{v / 1e6:.2f}") for i, v in enumerate(values)])
    rows.append(["best"] + [_best(c, low=i <= n_lat) for i, c in enumerate(columns)])
    out.append(("alloc+free pair latency (ns per pair per thread, median of the repetitions: BM_Pair on the "
                "default stream, BM_Threads with a stream per thread) and the random-allocation benchmark", head, rows))
    return out


def environment_line(data: dict) -> str:
    ctx = data.get("bench_context") or {}
    gpus = (data.get("environment") or {}).get("gpus") or [{}]
    gpu = ctx.get("gpu") or gpus[0].get("name", "?")
    return (f"GPU {gpu}, driver {ctx.get('driver_version', '?')}, CUDA runtime {ctx.get('cuda_runtime', '?')}, "
            f"memstress {ctx.get('memstress_version', '?')}")


def markdown(data: dict) -> str:
    out = [f"# Allocators side by side\n\n{environment_line(data)}\n"]
    for title, head, rows in tables(data):
        out.append(f"\n## {title}\n\n| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
        out.extend("| " + " | ".join(r) + " |\n" for r in rows)
    if data["ratios"]:
        out.append("\n## caching's pair latency over each peer's (below 1: caching is faster)\n\n"
                   "| against | benchmark | ratio |\n|---|---|---|\n")
        out.extend(f"| {r['against']} | {r['case']} | {r['ratio']:.3f} |\n" for r in data["ratios"])
    return "".join(out)


def section_html(data: dict) -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><tr>{th}</tr>{body}</table>"

    out = f"<p>{html.escape(environment_line(data))}</p>"
    for title, head, rows in tables(data):
        out += f"<h3>{html.escape(title)}</h3>" + table(head, rows)
    if data["ratios"]:
        out += "<h3>caching's pair latency over each peer's (below 1: caching is faster)</h3>" + table(
            ["against", "benchmark", "ratio"],
            [[r["against"], r["case"], f"{r['ratio']:.3f}"] for r in data["ratios"]])
    return out


def section_allocator_table(replays: list[tuple[str, dict]], benches: list[tuple[str, dict]]) -> str:
    """The report's "Allocator table": drawn when two or more allocators replayed one trace."""
    from .common import section

    by_trace: dict[str, set[str]] = {}
    for _, doc in replays:
        by_trace.setdefault(trace_of(doc), set()).add(str((doc.get("replay") or {}).get("allocator", "")))
    if not any(len(allocators) > 1 for allocators in by_trace.values()):
        return ""
    data = build([d for _, d in replays], [d for _, d in benches])
    return section("Allocator table", "Every allocator side by side: peak reserved, utilization and OOM margin per "
                   "replayed trace, and pair latency and the random-allocation benchmark where given "
                   "(scripts/lab/gpu-allocators).", section_html(data))


def section_allocators_documents(docs: list[tuple[str, dict]]) -> str:
    """The report's section for allocators.json documents (memstress.allocators/1), one table set each."""
    from .common import section

    if not docs:
        return ""
    body = "".join(f"<h3>{html.escape(name)}</h3>" + section_html(doc) for name, doc in docs)
    return section("Allocator table", "Every allocator side by side, as scripts/lab/gpu-allocators measured them.", body)


def main(argv: list[str]) -> int:
    from .. import _pyenv

    prog = _pyenv.prog("memstress.report.allocators")
    parser = argparse.ArgumentParser(prog=prog,
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="the folder scripts/lab/gpu-allocators wrote")
    args = parser.parse_args(argv)
    replays, benches = [], []
    for path in sorted([*args.outdir.glob("*.json"), *args.outdir.glob("*.json.xz")]):
        if path.name == "allocators.json":
            continue
        try:
            doc = _json.loads(_json.read_text(path))  # a document committed xz-compressed too
        except (OSError, ValueError) as e:
            print(f"{prog}: {path}: not JSON: {e}", file=sys.stderr)
            return 2
        if str(doc.get("schema", "")).startswith("memstress.replay/"):
            replays.append(doc)
        elif "benchmarks" in doc and "context" in doc:
            benches.append(doc)
    if not replays and not benches:
        print(f"{prog}: {args.outdir}: no replay or benchmark documents", file=sys.stderr)
        return 2
    data = build(replays, benches)
    (args.outdir / "allocators.json").write_text(json.dumps(data, indent=1) + "\n")
    (args.outdir / "allocators.md").write_text(markdown(data))
    sys.stdout.write(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
