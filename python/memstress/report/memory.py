"""The report's sections on how an allocator uses device memory: fragmentation (five allocation patterns),
leak (growth per epoch against the detector's threshold) and sizes (allocation churn by size distribution).
Imported by the report's __main__.py, which owns the page and its errors.

Each section draws one figure of grouped bars: a group per case (a pattern, a distribution), a bar per series
(the allocator, and the run where several runs have such rows), coloured by the series' name
(common.py: Note [Series colours]). A run of several ranks gives each bar the median over its ranks.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from .common import (
    MIB,
    Colours,
    bytes_labels,
    figure_html,
    metric,
    parse_size,
    quantity,
    runs_with,
    section,
    size_text,
    spread,
    table,
    value_labels,
)

Bar = tuple[float, "tuple[float, float] | None"]  # median, (p10, p90) where the row had several samples
Series = tuple[str, str]  # (allocator, run): the run is "" where only one run has such rows
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")  # a run each, where several runs share a figure


def bar_values(runs: list[tuple[str, dict]], workload: str, group_of: Any, name: str) -> dict[str, dict[Series, Bar]]:
    """{group: {series: bar}} of metric `name` over the rows of `workload` that passed or failed; rows of several
    ranks give the median of their medians (and no spread)."""
    found = runs_with(runs, workload)
    medians: dict[str, dict[Series, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for run, rows in found:
        for r in rows:
            m = metric(r, name)
            if m and r.get("verdict") in ("pass", "fail"):
                medians[group_of(r)][(r.get("allocator", "?"), run if len(found) > 1 else "")].append(m)
    return {group: {s: (statistics.median(m["median"] for m in ms), spread(ms[0]) if len(ms) == 1 else None)
                    for s, ms in by_series.items()}
            for group, by_series in medians.items()}


def grouped_bars(ax: Any, data: dict[str, dict[Series, Bar]], colours: Colours, unit: str, runs: list[str]) -> None:
    """A group of bars per key of `data`, a bar per series: its allocator's colour, its run's hatching (by its
    place in `runs`, the figure's); p10-p90 whiskers where known; each bar's value over it while there are few
    enough bars to read."""
    groups = list(data)
    series = sorted({s for by_series in data.values() for s in by_series})
    width = 0.8 / max(1, len(series))
    label_bars = len(groups) * len(series) <= 24
    for i, (allocator, run) in enumerate(series):
        at = [(g, data[key][(allocator, run)]) for g, key in enumerate(groups) if (allocator, run) in data[key]]
        xs = [g + (i - (len(series) - 1) / 2) * width for g, _ in at]
        bars = [b for _, b in at]
        errors = [[b[0] - b[1][0] if b[1] else 0 for b in bars], [b[1][1] - b[0] if b[1] else 0 for b in bars]]
        ax.bar(xs, [b[0] for b in bars], width, label=f"{allocator}, {run}" if run else allocator,
               color=colours(allocator), hatch=HATCHES[runs.index(run) % len(HATCHES)], edgecolor="white",
               yerr=errors if any(b[1] for b in bars) else None, capsize=2, ecolor="#444")
        for x, b in zip(xs, bars) if label_bars else ():
            ax.text(x, b[1][1] if b[1] else b[0], " " + quantity(b[0], unit).removesuffix(" " + unit),
                    rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(groups)), groups, rotation=20, fontsize=8, ha="right")
    ax.grid(True, axis="y", alpha=0.3)
    ax.margins(y=0.25 if label_bars else 0.05)


def panels(runs: list[tuple[str, dict]], workload: str, group_of: Any, metrics: tuple[tuple[str, str, str], ...],
           colours: Colours, alt: str) -> str:
    """One row of grouped-bar panels of `workload`'s rows, one per metric, (title, unit, name) each, and one legend
    below them; "" where no row has any of the metrics."""
    import matplotlib.pyplot as plt

    data = [(title, unit, bar_values(runs, workload, group_of, name)) for title, unit, name in metrics]
    data = [d for d in data if d[2]]
    if not data:
        return ""
    groups = max(len(d[2]) for d in data)
    runs_drawn = sorted({run for _, _, values in data for by_series in values.values() for _, run in by_series})
    fig, axes = plt.subplots(1, len(data), figsize=(max(5.0, 0.9 * groups + 2) * len(data), 4.2), squeeze=False)
    for ax, (title, unit, values) in zip(axes[0], data):
        grouped_bars(ax, values, colours, unit, runs_drawn)
        ax.set_title(title, fontsize=10)
        value_labels(ax.yaxis, unit)
        ax.set_ylabel("bytes" if unit == "bytes" else unit)
    fig.tight_layout()
    legend = dict(sorted({label: handle for ax in axes[0]
                          for handle, label in zip(*ax.get_legend_handles_labels())}.items()))
    fig.legend(list(legend.values()), list(legend), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(6, len(legend)), fontsize=8)
    return figure_html(fig, alt)


def fragmentation_group(r: dict) -> str:
    p = r.get("params", {})
    pattern = str(p.get("pattern", "?"))
    return f"{pattern} {size_text(parse_size(str(p['scale'])))}" if "scale" in p else pattern


FRAGMENTATION_PANELS = (("utilization: peak allocated / peak reserved", "ratio", "utilization"),
                        ("external fragmentation: 1 - largest free / free", "ratio", "external_fragmentation"),
                        ("reserved - allocated", "bytes", "reserved_minus_allocated"))


def section_fragmentation(runs: list[tuple[str, dict]], colours: Colours) -> str:
    figure = panels(runs, "fragmentation", fragmentation_group, FRAGMENTATION_PANELS, colours,
                    "fragmentation by pattern and allocator")
    return section("Fragmentation", "Per allocation pattern (and its unit size) and allocator: utilization "
                   "(GMLake's metric, higher is better), external fragmentation at the end (RMM's, lower is better) "
                   "and the bytes reserved but not allocated.", figure) if figure else ""


def sizes_group(r: dict) -> str:
    p = r.get("params", {})
    varying = [f"{k}={p[k]}" for k in ("streams", "max_live") if k in p and str(p[k]) not in ("1", "4G")]
    return " ".join([str(p.get("dist", "?")), *varying])


SIZES_PANELS = (("allocator throughput", "ops/s", "ops"),
                ("allocation latency, p99 within a repetition", "us", "alloc_p99"),
                ("utilization: peak allocated / peak reserved", "ratio", "utilization"))


def section_sizes(runs: list[tuple[str, dict]], colours: Colours) -> str:
    figure = panels(runs, "sizes", sizes_group, SIZES_PANELS, colours, "sizes: throughput by distribution")
    return section("Sizes: allocation churn", "Random allocations and frees under a cap on live bytes, per size "
                   "distribution and allocator: operations per second (median over repetitions, p10-p90 whiskers), "
                   "the slowest 1% of allocations and how much of what was reserved was in use at the peak.",
                   figure) if figure else ""


def leak_threshold(r: dict) -> float | None:
    """The leak detector's threshold for this row, bytes per epoch: max(1 MiB, 0.5% of per_epoch), as the workload
    states it (`memstress list`; suites/support/leak_growth.cpp, growth_threshold)."""
    per_epoch = r.get("params", {}).get("per_epoch")
    return max(MIB, 0.005 * parse_size(str(per_epoch))) if per_epoch is not None else None


def leak_bars(runs: list[tuple[str, dict]]) -> list[tuple[str, dict, float, float, float | None]]:
    """(label, row, growth per epoch, R², threshold) of every leak row that measured its growth."""
    out = []
    for run, rows in runs_with(runs, "leak"):
        several = len({r.get("rank", 0) for r in rows}) > 1
        for r in rows:
            growth, r2 = metric(r, "growth_per_epoch"), metric(r, "growth_r2")
            if growth and r2:
                rank = f" rank {r.get('rank', 0)}" if several else ""
                label = f"{run}{rank}\n{r.get('allocator', '?')} {r.get('case', '')}"
                out.append((label, r, growth["median"], r2["median"], leak_threshold(r)))
    return out


def leak_figure(bars: list[tuple[str, dict, float, float, float | None]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.5 * len(bars) + 1.4))
    ys = range(len(bars))
    ax.barh(list(ys), [b[2] for b in bars], color=[colours(b[1].get("allocator", "?")) for b in bars])
    for y, (_, r, growth, r2, threshold) in zip(ys, bars):
        if threshold is not None:
            ax.plot([threshold, threshold], [y - 0.4, y + 0.4], color="black", lw=1.5)
        flagged = threshold is not None and growth > threshold and r2 > 0.9
        ax.text(growth, y, f"  {quantity(growth, 'bytes/epoch')}, R² {r2:.3f}: "
                f"{'flagged' if flagged else 'not flagged'}, {str(r.get('verdict', '?')).upper()}",
                va="center", fontsize=7)
    ax.plot([], [], color="black", lw=1.5, label="detector threshold (with R² > 0.9)")
    ax.set_yticks(list(ys), [b[0] for b in bars], fontsize=7)
    ax.invert_yaxis()
    bytes_labels(ax.xaxis)
    ax.set_xlabel("allocated bytes gained per epoch (least-squares slope)")
    ax.margins(x=0.45)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    return figure_html(fig, "leak: growth per epoch")


def section_leak(runs: list[tuple[str, dict]], colours: Colours) -> str:
    bars = leak_bars(runs)
    if not bars:
        return ""
    notes = [[label.replace("\n", ": "), "; ".join(r.get("notes") or []) or r.get("reason") or ""]
             for label, r, *_ in bars]
    return section("Leak", "Allocated bytes gained per epoch in each case, against the detector's threshold "
                   "(max(1 MiB, 0.5% of the bytes allocated per epoch), with R² above 0.9); a case passes when the "
                   "detector flags growth exactly where the case retains memory.",
                   leak_figure(bars, colours) + "<details><summary>what each case found</summary>"
                   + table(["case", "note"], notes) + "</details>")
