"""The report's sections drawn from run documents' rows: transfers (GB/s against size), OOM thresholds, streams
and the dataloader, and every row of every run in a table. Imported by __main__.py."""

from __future__ import annotations

import html
from collections import defaultdict

from .common import (
    MIB,
    Colours,
    Point,
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
    unfinished,
)


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
