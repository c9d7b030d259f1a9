"""scripts/report RESULTS... -o report.html: one self-contained HTML page with plots of memstress results.

Run as ``python3 -m memstress.report`` (PYTHONPATH naming python/ of the checkout, or share/memstress/python
installed), or as ``memstress report``, which runs it so; it still names itself scripts/report, its old place,
in its usage and messages.

Reads memstress run documents (`memstress.run/1`, the `.json` a run writes with --out, or the `.jsonl` its rows
stream to as they finish: a run that did not finish is drawn from the rows it wrote, and the page says so),
Google Benchmark JSON (memstress_bench), `memstress compare --format json` output (`memstress.compare/1`), replay
documents (`memstress.replay/1`, whose timeline is drawn), `memstress doctor` documents (`memstress.doctor/1`),
`memstress devices --format json`, the JUnit XML of `memstress accept --junit` (its testsuite is named
memstress.accept.PROFILE), and the fleet store's `memstress db outliers --format json --groups`
(`memstress.outliers/1`) and `memstress db history --format json` (`memstress.history/1`), in any mix, each told
apart by its content, and draws what they hold, in this order:

- doctor: what a program needed, who held the memory at its peak, the OOM, the settings (doctor.py);
- machines: each GPU's name, memory, UUID, PCI bus id and link, the driver, CUDA and NCCL;
- acceptance (the JUnit XML of a `memstress accept` run): each check as accept reported it, PASS, FAIL or
  SKIP, with the measured value and unit, the bound and the GPU, and the suite's counts; an accept run document
  given without its JUnit file is named with where its verdicts are, and nothing is judged again
  (accept.py: Note [The page shows accept's verdicts]);
- transfers: GB/s against size, a panel per direction, a line per run, host memory and engine;
- p2p: the peer copy matrix (GB/s from each GPU to each other) per engine and access at the largest size,
  the peer load latency matrix, and the slowest pair's GB/s against size (links.py);
- collectives: busbw against size, a line per collective and a panel per run, and nccl-tests' columns in a
  table (links.py);
- size sweeps (a run with -b/-e/-f): each other swept workload's headline metric against size
  (sweep.py);
- allocators: alloc+free pair latency against size per allocator (Google Benchmark), and the threads
  scaling;
- sizes: allocation churn per size distribution and allocator: ops/s, p99 allocation latency and
  utilization (memory.py);
- fragmentation: per allocation pattern and allocator, utilization, external fragmentation and reserved
  minus allocated bytes (memory.py);
- OOM thresholds: the largest single allocation as a share of free memory, and the largest batch, per
  allocator and state;
- leak: allocated bytes gained per epoch in each case against the detector's threshold, with what each case
  found (memory.py);
- streams and dataloader: concurrency against streams per block size, end-to-end H2D GB/s per configuration;
- replays: reserved vs allocated over the trace;
- comparisons: the rows that changed, with their verdicts;
- the fleet: each judged group's GPUs as points with the median and the outlier line, the outliers named; each
  history series over time with its driver changes (fleet.py);
- every row of every run in a table: its headline metric (common.py: Note [Headline metrics]) with its
  unit and, where it had several samples, its p10-p90 spread, then its other metrics.
Images are PNGs embedded as base64, so the page stands alone.

Bad input (a missing file, a directory, not UTF-8, not JSON, nested more than 128 levels deep, a document of no
known kind, or one whose fields the report cannot draw from; XML that is not accept's JUnit, holds a DOCTYPE or
ENTITY declaration, nests too deep or is too large: accept.py, Note [Reading JUnit XML safely]) exits 2
with a one-line message naming the file;
so does an -o that exists and is not a regular file (`-o /dev/null`: memstress/_output.py). Text that UTF-8
cannot encode (a file name's stray bytes, a JSON string's lone surrogate escape) is shown as U+FFFD.
Design: each section is a function of the loaded documents that returns HTML (a short title, one sentence of
what it shows, its figures) or nothing; a section with no data is left out rather than drawn empty. The
sections of other files (named above) share common.py, whose notes say how numbers are written (three
significant digits, KiB-GiB, no p10-p90 spread for a single sample) and how a series keeps one colour, chosen
by its name, on the whole page.
"""

from __future__ import annotations

import argparse
import functools
import html
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from .. import _json, _output
from .common import (
    MIB,
    Colours,
    Point,
    bytes_labels,
    digits,
    draw_lines,
    figure_html,
    headline,
    log_labels,
    metric,
    metric_text,
    parse_size,
    quantity,
    rows_of,
    section,
    size_text,
    size_ticks,
    spread,
    table,
)

EXIT_BAD_INPUT = 2
EXIT_ENV = 3


class BadInput(Exception):
    """An input the report cannot read; the message names it."""


@functools.lru_cache(maxsize=1)
def validators() -> tuple[Any, Any, Any] | None:
    """The validators of run documents, replay documents and a run stream's lines (results/schema/, through
    memstress/validate.py), or None without jsonschema."""
    try:
        import jsonschema
        import referencing
    except ImportError:
        return None
    from .. import validate

    try:
        schema_dir = validate.ROOT / "results" / "schema"
        run, line, replay = validate.load_schemas(jsonschema, referencing, schema_dir)
    except validate.Unreadable as e:
        raise BadInput(str(e)) from None
    return run, replay, line


def check_schema(path: str, doc: dict, kind: str, where: str = "") -> None:
    """A run or replay document (or a line of a run's stream: kind "line") that does not match its schema is
    named, before anything is drawn from it."""
    found = validators()
    if found is None:
        return
    from .. import validate

    errors = validate.schema_errors(found[{"run": 0, "replay": 1, "line": 2}[kind]], doc)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        schema = "memstress-rows-1 (a line of a run's stream)" if kind == "line" else doc.get("schema")
        raise BadInput(f"{path}: {where}does not match {schema}: {errors[0]}{more}")


def load(path: Path) -> tuple[str, Any]:
    """Returns (kind, document) for one input file; its strings are made encodable (_output.clean)."""
    from . import accept

    name = _output.clean_text(str(path))
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BadInput(f"{name}: cannot be read: {e.strerror or e}") from None
    if accept.is_xml(data):  # JSON never starts with '<'
        try:
            return "junit", accept.read_junit(data)
        except accept.NotAcceptJUnit as e:
            raise BadInput(f"{name}: {e}") from None
    try:
        text = _json.decode(data)
        _json.check_depth(text)  # Python's json recurses once a level: bound the nesting first
    except ValueError as e:  # _json.Unreadable, _json.TooDeep
        raise BadInput(f"{name}: {e}") from None
    encodable = _output.clean if _json.has_surrogate_escape(text) else lambda doc: doc  # the walk only if needed
    if _json.is_stream(text):
        return "run", encodable(load_stream(name, text))
    try:
        # Google Benchmark writes NaN and Infinity bare; Python's json reads them.
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{name}: not JSON ({e.msg}: line {e.lineno}, column {e.colno})") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{name}: not a memstress, compare, replay or Google Benchmark document "
                       f"(a JSON {JSON_TYPES.get(type(doc), 'value')}, not an object)")
    doc = encodable(doc)
    schema = str(doc.get("schema", ""))
    if schema.startswith("memstress.run/"):
        check_schema(name, doc, "run")
        return "run", doc
    if schema.startswith("memstress.compare/"):
        return "compare", doc
    if schema.startswith("memstress.replay/"):
        check_schema(name, doc, "replay")
        return "replay", doc
    if schema.startswith("memstress.doctor/"):
        return "doctor", doc
    if schema.startswith("memstress.outliers/"):
        return "outliers", doc  # memstress db outliers --format json [--groups]
    if schema.startswith("memstress.allocators/"):
        return "allocators", doc  # allocators.py's table (scripts/lab/gpu-allocators)
    if schema.startswith("memstress.history/"):
        return "history", doc  # memstress db history --format json
    if "benchmarks" in doc and "context" in doc:
        return "bench", doc
    if not schema and isinstance(doc.get("gpus"), list) and isinstance(doc.get("driver"), dict):
        return "devices", doc  # `memstress devices --format json`
    raise BadInput(f"{name}: a document of no known kind (schema {schema[:80]!r}): not memstress, compare, replay, "
                   "doctor, devices, db outliers, db history, allocator table or Google Benchmark JSON")


JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
STREAM_NOTE = "_report_stream"  # what load_stream saw, kept in the run document it makes


def load_stream(path: str, text: str) -> dict:
    """A run's JSON Lines stream (RUN.jsonl: a header line, a row line per finished case, a footer line once the
    run ended) as a run document. As `memstress compare` reads it (harness/results/read.cpp): a run that did not
    finish has no footer, and one killed while writing a row leaves its last line cut short, which is left out.
    The document's STREAM_NOTE says which, for the page."""
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    header: dict | None = None
    rows: list[dict] = []
    footer: dict | None = None
    cut_short = False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"line {i + 1}: "
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            if i == last and footer is None:
                cut_short = True  # the run was killed while writing it
                continue
            raise BadInput(f"{path}: {where}not JSON ({e.msg})") from None
        kind = item.get("type") if isinstance(item, dict) else None
        if not (kind == "header" and header is None or kind in ("row", "footer") and header is not None):
            expected = "a header" if header is None else "a row or footer"
            found = f'"type": {kind!r}' if isinstance(kind, str) else 'no "type"'
            raise BadInput(f"{path}: {where}expected {expected} line, found {found[:80]}")
        check_schema(path, item, "line", where)
        fields = {k: v for k, v in item.items() if k != "type"}
        if kind == "header":
            header = fields
        elif kind == "row":
            rows.append(fields)
        else:
            footer = fields
    assert header is not None  # _json.is_stream: the first line is one
    doc = {**header, "rows": rows}
    if footer is not None:
        doc.update(footer)
    doc[STREAM_NOTE] = {"finished": footer is not None, "cut_short": cut_short}
    return doc


def unfinished(doc: dict) -> bool:
    stream = doc.get(STREAM_NOTE)
    return bool(stream and not stream.get("finished")) or doc.get("status") == "running"


def run_state(doc: dict) -> str:
    """What the page says of a run that did not finish ("" for one that did)."""
    stream = doc.get(STREAM_NOTE) or {}
    rows = doc.get("rows") if isinstance(doc.get("rows"), list) else []
    said = ""
    if unfinished(doc):
        said = (f"the run did not finish ({'its stream has no footer line' if stream else 'status running'}): "
                f"the {len(rows)} row(s) it wrote are shown")
    if stream.get("cut_short"):
        said += ("; " if said else "") + "its last line was cut short (the run was killed while writing it) and is " \
                                         "left out"
    return said


# ---- sections --------------------------------------------------------------------------------------------


def run_title(name: str, doc: dict) -> str:
    ranks = doc.get("environment", {}).get("ranks", [])
    gpus = ranks[0].get("gpus", []) if ranks else []
    gpu = gpus[0].get("name", "?") if gpus else "no GPU"
    driver = ranks[0].get("driver", {}).get("version", "?") if ranks else "?"
    return f"{name} ({gpu}, driver {driver})"


def transfer_series(rows: list[tuple[str, dict]]) -> dict[tuple[str, str], list[Point]]:
    """GB/s by size, keyed by (direction, line label): one line per run, host memory and engine (1 stream)."""
    series: dict[tuple[str, str], list[Point]] = defaultdict(list)
    for title, r in rows:
        p = r["params"]
        if str(p.get("streams", "1")) != "1":
            continue
        m = metric(r, "GB/s")
        memory = "" if p["direction"] == "d2d" else f"{p['host']} "  # host memory plays no part in d2d
        series[(p["direction"], f"{title}: {memory}{p['engine']}")].append(
            (parse_size(str(p["bytes"])), m["median"], spread(m)))
    return series


def transfer_refs(rows: list[tuple[str, dict]]) -> str:
    """The table of copies of 1 MiB and more against a plain cudaMemcpyAsync loop."""
    refs = [(t, r) for t, r in rows
            if metric(r, "vs_ref") and metric(r, "ref_GB/s") and parse_size(str(r["params"]["bytes"])) >= MIB]
    if not refs:
        return ""
    lines = [[t, r["case"], metric_text(metric(r, "GB/s")), metric_text(metric(r, "ref_GB/s")),
              digits(metric(r, "vs_ref")["median"])] for t, r in refs]
    return ("<details><summary>against a plain cudaMemcpyAsync loop (sizes of 1 MiB and more)</summary>"
            + table(["run", "case", "GB/s", "plain loop GB/s", "ratio"], lines) + "</details>")


def section_transfers(runs: list[tuple[str, dict]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    rows = [(t, r) for t, r in rows_of(runs, "transfers") if r.get("verdict") == "pass" and metric(r, "GB/s")]
    series = transfer_series(rows)
    if not series:
        return ""
    order = [d for d in ("h2d", "d2h", "bidir", "d2d") if any(k[0] == d for k in series)]
    columns = min(2, len(order))
    grid_rows = (len(order) + columns - 1) // columns
    fig, axes = plt.subplots(grid_rows, columns, figsize=(6.5 * columns, 4.6 * grid_rows), squeeze=False)
    for ax in axes.flat[len(order):]:
        ax.set_visible(False)
    banded = any(p[2] for points in series.values() for p in points)
    for ax, direction in zip(axes.flat, order):
        for (d, label), points in sorted(series.items()):
            if d == direction:
                draw_lines(ax, label, points, colours(label))
        ax.set_yscale("log")
        log_labels(ax.yaxis)
        size_ticks(ax, {p[0] for pts in series.values() for p in pts})
        ax.set_title(f"{direction}" + (" (reads + writes)" if direction == "d2d" else ""))
        ax.set_xlabel("bytes per copy")
        ax.set_ylabel("GB/s (median" + (", p10-p90 band)" if banded else ")"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return section("Transfers: bandwidth by size",
                   "Copy bandwidth against copy size, a panel per direction and a line per run, host memory and "
                   "engine (one stream).",
                   figure_html(fig, "transfer bandwidth by size") + transfer_refs(rows))


def bench_samples(doc: dict) -> dict[str, list[dict]]:
    by_name: dict[str, list[dict]] = defaultdict(list)
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        by_name[b.get("run_name", b.get("name", ""))].append(b)
    return by_name


def ns(b: dict) -> float:
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    return float(b["real_time"]) * scale


XY = list[tuple[float, float]]


def bench_series(doc: dict) -> tuple[dict[str, XY], dict[tuple[str, float], XY]]:
    """(ns per pair by size, per peer; pairs/s by threads, per peer and size) of one Google Benchmark document."""
    pairs: dict[str, XY] = defaultdict(list)
    threads: dict[tuple[str, float], XY] = defaultdict(list)
    for run_name, entries in bench_samples(doc).items():
        parts = run_name.split("/")
        medians = [e for e in entries if e.get("run_type") == "aggregate"]
        chosen = medians[0] if medians else sorted(entries, key=ns)[len(entries) // 2]
        if parts[0] == "BM_Pair" and len(parts) > 3:
            pairs[parts[1]].append((float(parts[3]), ns(chosen)))
        elif parts[0] == "BM_Threads" and len(parts) > 3 and "items_per_second" in chosen:
            t = next((int(p.split(":")[1]) for p in parts if p.startswith("threads:")), 1)
            threads[(parts[1], float(parts[3]))].append((t, chosen["items_per_second"]))
    return pairs, threads


def section_allocators(benches: list[tuple[str, dict]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    html_out = ""
    for name, doc in benches:
        pairs, threads = bench_series(doc)
        if not pairs and not threads:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for peer, points in sorted(pairs.items()):
            draw_lines(axes[0], peer, [(x, y, None) for x, y in points], colours(peer))
        size_ticks(axes[0], {x for points in pairs.values() for x, _ in points})
        axes[0].set_yscale("log")
        log_labels(axes[0].yaxis)
        axes[0].set_xlabel("bytes")
        axes[0].set_ylabel("ns per alloc+free pair (median)")
        axes[0].set_title("allocation latency")
        sizes = sorted({size for _, size in threads})
        for (peer, size), points in sorted(threads.items()):
            draw_lines(axes[1], f"{peer} {size_text(size)}", [(x, y, None) for x, y in points], colours(peer),
                       linestyle=("-", "--", ":", "-.")[sizes.index(size) % 4])
        counts = sorted({t for points in threads.values() for t, _ in points})
        axes[1].set_xscale("log", base=2)
        axes[1].set_xticks(counts, [str(int(t)) for t in counts])
        axes[1].set_yscale("log")
        log_labels(axes[1].yaxis)
        axes[1].set_xlabel("threads")
        axes[1].set_ylabel("pairs per second, all threads")
        axes[1].set_title("threads sharing one allocator")
        for ax, size in zip(axes, (7, 6)):
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=size)
        gpu = doc.get("context", {}).get("gpu", "?")
        html_out += f"<h3>{html.escape(name)} ({html.escape(str(gpu))})</h3>" + figure_html(fig, "allocator latency")
    return section("Allocators", "Google Benchmark's alloc+free pair latency by size per allocator, and pairs per "
                   "second as threads share one allocator (memstress_bench).", html_out) if html_out else ""


def oom_bars(runs: list[tuple[str, dict]]) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    """(label, allocator, value) bars: the largest single allocation / free memory, and the largest batch."""
    single, batch = [], []
    for title, r in rows_of(runs, "oom"):
        label = f"{title}\n{r['allocator']} {r['params'].get('state', '')}"
        if metric(r, "ratio"):
            single.append((label, r["allocator"], metric(r, "ratio")["median"]))
        if metric(r, "max_batch"):
            batch.append((label, r["allocator"], metric(r, "max_batch")["median"]))
    return single, batch


def section_oom(runs: list[tuple[str, dict]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    single, batch = oom_bars(runs)
    if not single and not batch:
        return ""
    fig, axes = plt.subplots(1, 2, figsize=(12, max(3.0, 0.45 * max(len(single), len(batch)) + 1)))
    for ax, data, xlabel in (
        (axes[0], single, "largest single allocation / free memory"),
        (axes[1], batch, "largest batch that fits"),
    ):
        if data:
            ax.barh([d[0] for d in data], [d[2] for d in data], color=[colours(d[1]) for d in data])
            for i, d in enumerate(data):
                ax.text(d[2], i, f" {digits(d[2])}", va="center", fontsize=7)
        ax.margins(x=0.12)
        ax.set_xlabel(xlabel)
        ax.tick_params(axis="y", labelsize=6)
        ax.invert_yaxis()
    return section("OOM thresholds", "The largest single allocation that succeeded, as a share of the memory free "
                   "when the search began, and the largest batch of a model-like profile that fit, per allocator and "
                   "starting state (fresh or fragmented).", figure_html(fig, "OOM thresholds"))


def streams_figure(streams: dict[str, list[tuple[int, float]]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, points in sorted(streams.items()):
        draw_lines(ax, label, [(x, y, None) for x, y in points], colours(label))
    ticks = sorted({p[0] for pts in streams.values() for p in pts})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("streams (a host thread each)")
    ax.set_ylabel("compute kernels in flight (concurrency)")
    ax.set_title("streams: block size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return figure_html(fig, "streams concurrency")


def loader_figure(loader: list[tuple[str, float, float | None]]) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.28 * len(loader) + 1.5))
    bars = ax.barh([d[0] for d in loader], [d[1] for d in loader], color="#55a868")
    ax.bar_label(bars, [f" {digits(d[1])}" for d in loader], fontsize=7)
    refs = [d[2] for d in loader if d[2]]
    if refs:
        ax.axvline(sorted(refs)[len(refs) // 2], color="k", ls="--", lw=1, label="pinned cudaMemcpyAsync loop")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("H2D GB/s end to end (producers -> pinning -> copy -> checked on the device)")
    ax.tick_params(axis="y", labelsize=7)
    ax.invert_yaxis()
    ax.set_title("dataloader: workers x producers, pinned staging, pinning threads (pt), prefetch (pf)")
    return figure_html(fig, "dataloader throughput")


def loader_label(r: dict, run: str) -> str:
    """`thread x4 pin=true pt=4 pf=2`: workers x producers, pinned staging, pinning threads, prefetch (and the run
    where several runs are drawn)."""
    p = r["params"]
    return (f"{run + ': ' if run else ''}{p.get('workers')} x{p.get('producers')} pin={p.get('pin')} "
            f"pt={p.get('pin_threads')} pf={p.get('prefetch', p.get('depth', '?'))}")


def section_streams_dataloader(runs: list[tuple[str, dict]], colours: Colours) -> str:
    streams: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for title, r in rows_of(runs, "streams"):
        if metric(r, "concurrency"):
            streams[f"{title}: {size_text(parse_size(str(r['params']['bytes'])))}"].append(
                (int(r["params"]["streams"]), metric(r, "concurrency")["median"]))
    loaders = [(t, r) for t, r in rows_of(runs, "dataloader") if metric(r, "h2d_GB/s")]
    several = len({t for t, _ in loaders}) > 1
    loader = [(loader_label(r, t if several else ""), metric(r, "h2d_GB/s")["median"],
               metric(r, "pinned_ref_GB/s")["median"] if metric(r, "pinned_ref_GB/s") else None) for t, r in loaders]
    if not streams and not loader:
        return ""
    body = (streams_figure(streams, colours) if streams else "") + (loader_figure(loader) if loader else "")
    return section("Streams and dataloader", "How many compute kernels ran at once as streams were added (a line per "
                   "block size), and the dataloader's end-to-end H2D bandwidth per configuration against a plain "
                   "pinned copy loop.", body)


def section_replays(replays: list[tuple[str, dict]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    out = ""
    for name, doc in replays:
        replay = doc.get("replay") or {}
        timeline = replay.get("timeline") or {}
        columns = timeline.get("columns") or []
        points = timeline.get("points") or []
        if not points or not {"event_index", "allocated_bytes", "reserved_bytes"} <= set(columns):
            continue  # written before documents carried their timeline (replay --timeline has it as CSV)
        col = {c: i for i, c in enumerate(columns)}
        xs = [p[col["event_index"]] for p in points]
        fig, ax = plt.subplots(figsize=(10, 3.8))
        for what in ("reserved", "allocated"):
            ax.plot(xs, [p[col[f"{what}_bytes"]] for p in points], label=what, color=colours(what))
        trace_peak = replay.get("trace_peak_reserved_bytes")
        if trace_peak:
            ax.axhline(trace_peak, color="grey", linestyle=":", label="reserved peak in the trace (PyTorch)")
        bytes_labels(ax.yaxis)
        ax.set_xlabel("trace event")
        ax.set_ylabel("bytes")
        trace = Path((doc.get("trace") or {}).get("path", name)).name
        conf = replay.get("alloc_conf") or "defaults"
        device = replay.get("device", "")
        ax.set_title(f"{trace}: {replay.get('allocator', '')} ({conf}) on {device}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        out += figure_html(fig, "replay timeline")
    return section("Replays: reserved vs allocated", "Bytes reserved from the device and allocated to the program over "
                   "each replayed trace, against the reserved peak the recorded program itself reached.",
                   out) if out else ""


def median_of(side: object) -> float | None:
    """A compared metric's median on one side: compare's JSON writes {"n": N, "median": M}."""
    median = side.get("median") if isinstance(side, dict) else None
    return median if isinstance(median, (int, float)) and not isinstance(median, bool) else None


def number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else quantity(value, unit)


def compare_changes(doc: dict) -> list[tuple[dict, dict]]:
    """(row, metric) of every metric that is not SAME and every row whose verdict changed."""
    changed = []
    for row in doc.get("rows", []):
        if row.get("presence") == "both" and row.get("base_verdict") != row.get("new_verdict"):
            changed.append((row, {"name": "verdict", "verdict": row.get("verdict"),
                                  "base_text": row.get("base_verdict"), "new_text": row.get("new_verdict")}))
        for m in row.get("metrics", []):
            if m.get("verdict") not in (None, "SAME", "-"):
                changed.append((row, m))
    return changed


def compare_line(row: dict, m: dict) -> list[str]:
    unit = str(m.get("unit") or "")
    change = m.get("change_pct")
    rank = f" rank {row['rank']}" if isinstance(row.get("rank"), int) and row.get("rank") else ""
    return [str(row.get("workload")), f"{row.get('case')}{rank}", str(row.get("allocator", "")), str(m.get("name")),
            str(m.get("base_text") or number(median_of(m.get("base")), unit)),
            str(m.get("new_text") or number(median_of(m.get("new")), unit)),
            f"{change:+.1f}%" if isinstance(change, (int, float)) else "-", str(m.get("verdict"))]


def section_compare(compares: list[tuple[str, dict]]) -> str:
    """Each comparison: its result, then every metric that is not SAME and every row whose verdict changed, with
    base, new, change and verdict (memstress compare --format json, schema memstress.compare/1)."""
    out = ""
    for name, doc in compares:
        changed = compare_changes(doc)
        verdict = ("REGRESSION" if doc.get("regression") is True
                   else f"NOTHING COMPARED ({doc['nothing_compared']})" if doc.get("nothing_compared")
                   else "no regression")
        sides = " against ".join(html.escape(str((doc.get(k) or {}).get("path", "?"))) for k in ("new", "base"))
        out += (f"<h3>{html.escape(name)}</h3><p>{sides}: <b>{html.escape(verdict)}</b>; {len(changed)} change(s) "
                "beyond SAME.</p>"
                + table(["workload", "case", "allocator", "metric", "base", "new", "change", "verdict"],
                        [compare_line(row, m) for row, m in changed], [str(m.get("verdict")) for _, m in changed]))
    return section("Comparisons", "What changed between a base run and a new one: every metric beyond the noise, "
                   "and every row whose verdict changed.", out) if out else ""


def headline_text(top: tuple[str, dict] | None) -> str:
    """`busbw: 344 GB/s (p10-p90 343-345 GB/s)`; a metric named by its unit (GB/s, ops/s) is not named twice."""
    if top is None:
        return "-"
    named = quantity(top[1]["median"], str(top[1].get("unit") or "")).endswith(" " + top[0])  # 55.0 GB/s, not 0.700
    return metric_text(top[1]) if named else f"{top[0]}: {metric_text(top[1])}"


def row_cells(r: dict, ranks: bool) -> list[str]:
    """A row of the table of every row: its headline metric first (common.py: Note [Headline metrics]), with
    its unit and, where it had several samples, its p10-p90 spread; then up to six other metrics."""
    top = headline(r)
    others = [f"{name} {quantity(m['median'], str(m.get('unit') or ''))}"
              for name in sorted(r.get("metrics") or {}) if (m := metric(r, name)) and (not top or name != top[0])]
    return [str(r.get("workload", "")), str(r.get("case", "")), str(r.get("allocator", "")),
            *([str(r.get("rank", 0))] if ranks else []), str(r.get("verdict", "")),
            headline_text(top), ", ".join(others[:6]), str(r.get("reason") or "")]


def section_rows(runs: list[tuple[str, dict]]) -> str:
    out = ""
    for name, doc in runs:
        rows = [r for r in doc.get("rows", []) if isinstance(r, dict)]
        counts: dict[str, int] = defaultdict(int)
        for r in rows:
            counts[r.get("verdict", "?")] += 1
        ranks = len({r.get("rank", 0) for r in rows}) > 1
        summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        head = ["workload", "case", "allocator", *(["rank"] if ranks else []), "verdict", "headline metric",
                "other metrics (up to six)", "reason"]
        out += (
            f"<details><summary>{html.escape(run_title(name, doc))}: {len(rows)} rows ({summary}), "
            f"status {html.escape(str(doc.get('status')))}{' (did not finish)' if unfinished(doc) else ''}, "
            f"commit {html.escape(str(doc.get('memstress', {}).get('git_sha')))}</summary>"
            + table(head, [row_cells(r, ranks) for r in rows], [str(r.get("verdict", "")) for r in rows])
            + "</details>"
        )
    return section("Every row", "Every row of every run, its headline metric first (median, with the p10-p90 spread "
                   "where it had several samples), then its other metrics; open a run to see them.", out) if out else ""


def section_machines(devices: list[tuple[str, dict]]) -> str:
    """`memstress devices --format json` documents: one line per GPU, with what tells machines apart."""
    lines = []
    for name, doc in devices:
        host = doc.get("host") or {}
        versions = (f"driver {(doc.get('driver') or {}).get('version')}, CUDA {(doc.get('cuda_runtime') or {}).get('version')}, "
                    f"NCCL {(doc.get('nccl') or {}).get('version')}")
        for gpu in doc.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            memory = gpu.get("memory_bytes")
            cells = (name, host.get("name"), gpu.get("ordinal"), gpu.get("name"),
                     f"{memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) else None, gpu.get("uuid"),
                     gpu.get("pci_bus_id"), f"gen {gpu.get('pcie_link_gen')} x{gpu.get('pcie_link_width')}", versions)
            lines.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    if not lines:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("file", "host", "GPU", "name", "memory", "UUID", "PCI bus id", "PCIe",
                                             "software"))
    return f"<h2>Machines</h2><table><tr>{head}</tr>{''.join(lines)}</table>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 1400px; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
tr.fail td, tr.WORSE td, tr.error td { background: #fdd; }
tr.skip td, tr.UNSURE td { background: #f6f6f6; color: #666; }
tr.BETTER td { background: #dfd; }
p.unfinished { background: #fff3cd; border: 1px solid #e0c060; padding: 4px 8px; margin: 0.3em 0; }
p.what { color: #333; margin: 0.2em 0 0.5em; }
"""


# What a document of the right kind but with fields of the wrong shape raises in a section (compare, benchmark,
# devices and doctor documents have no schema to check them against first).
DRAW_ERRORS = (KeyError, TypeError, IndexError, AttributeError, ValueError, ArithmeticError)


def draw(section: Callable[[list[tuple[str, dict]]], str], docs: list[tuple[str, dict]]) -> str:
    """One section of the page from `docs`; where it cannot be drawn, BadInput naming the document it fails on
    alone (or all of them, where none does alone)."""
    try:
        return section(docs)
    except DRAW_ERRORS as e:
        import matplotlib.pyplot as plt

        plt.close("all")
        culprits, error = [n for n, _ in docs], e
        for name, doc in docs if len(docs) > 1 else []:
            try:
                section([(name, doc)])
            except DRAW_ERRORS as alone:
                culprits, error = [name], alone
                break
            finally:
                plt.close("all")
        unchecked = "" if validators() else \
            " (documents are checked against their schemas only where jsonschema is installed)"
        raise BadInput(f"cannot draw from {', '.join(culprits)}: {type(error).__name__}: {str(error)[:300]}"
                       f"{unchecked}") from None


def build(inputs: list[tuple[str, str, Any]]) -> str:
    from .accept import section_acceptance
    from .allocators import section_allocator_table, section_allocators_documents
    from .doctor import section_doctor
    from .fleet import section_fleet_history, section_fleet_outliers
    from .links import section_collectives, section_p2p
    from .memory import section_fragmentation, section_leak, section_sizes
    from .sweep import section_sweep

    colours = Colours()  # one colour per series name on the whole page (common.py: Note [Series colours])
    junits = [(n, d) for n, k, d in inputs if k == "junit"]  # checked whole as they were read: nothing to draw wrong
    sections: list[tuple[str, Callable[[list[tuple[str, dict]]], str]]] = [
        ("doctor", lambda docs: section_doctor(docs, figure_html)),
        ("devices", section_machines),
        ("run", lambda docs: section_acceptance(junits, docs)),
        ("run", lambda docs: section_transfers(docs, colours)),
        ("run", lambda docs: section_p2p(docs, colours)),
        ("run", lambda docs: section_collectives(docs, colours)),
        ("run", lambda docs: section_sweep(docs, colours)),
        ("bench", lambda docs: section_allocators(docs, colours)),
        ("run", lambda docs: section_sizes(docs, colours)),
        ("run", lambda docs: section_fragmentation(docs, colours)),
        ("run", lambda docs: section_oom(docs, colours)),
        ("run", lambda docs: section_leak(docs, colours)),
        ("run", lambda docs: section_streams_dataloader(docs, colours)),
        ("allocators", section_allocators_documents),
        ("replay", lambda docs: section_allocator_table(docs, [(n, d) for n, k, d in inputs if k == "bench"])),
        ("replay", lambda docs: section_replays(docs, colours)),
        ("compare", section_compare),
        ("outliers", lambda docs: section_fleet_outliers(docs, figure_html)),
        ("history", lambda docs: section_fleet_history(docs, figure_html)),
        ("run", section_rows),
    ]
    files = ""
    for n, k, d in inputs:
        state = run_state(d) if k == "run" else ""
        files += f"<li>{html.escape(n)} ({k}{', stream' if STREAM_NOTE in d else ''})"
        files += f"<p class='unfinished'>{html.escape(n)}: {html.escape(state)}.</p></li>" if state else "</li>"
    body = "".join(draw(section, [(n, d) for n, k, d in inputs if k == kind]) for kind, section in sections)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>memstress report</title>"
        f"<style>{STYLE}</style></head><body><h1>memstress report</h1><ul>{files}</ul>{body}</body></html>\n"
    )


def once(paths: list[Path]) -> list[Path]:
    """The inputs, each file once (`results/h100/*.json results/h100/accept-*.json` names one twice): a file read
    twice would be drawn twice."""
    seen: set[Path] = set()
    out = []
    for p in paths:
        key = p.resolve() if p.exists() else p
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/report", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path,
                        help="memstress, compare, replay, doctor, devices or Google Benchmark JSON; accept's JUnit XML")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    args = parser.parse_args(argv)
    from .. import _pyenv

    # exits 3 without matplotlib; without the optional ones, no schema check
    _pyenv.ensure("scripts/report", __file__, ["matplotlib"], ["jsonschema", "referencing"])
    import matplotlib

    matplotlib.use("Agg")
    try:
        _output.check_target(args.output, "-o")  # before the work, not after it
        inputs = [(_output.clean_text(str(p)), *load(p)) for p in once(args.results)]
        page = build(inputs)
        _output.write_text(args.output, "-o", page)
        for name, kind, doc in inputs:
            if kind == "run" and run_state(doc):
                print(f"scripts/report: note: {name}: {run_state(doc)}", file=sys.stderr)
    except (BadInput, _output.OutputError) as e:
        print(f"scripts/report: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"scripts/report: wrote {args.output} ({len(page) // 1024} KiB) from {len(inputs)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
