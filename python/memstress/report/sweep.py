"""The report's section for a bytes sweep (`memstress run WORKLOAD -b 4K -e 1G -f 4`, nccl-tests' grammar): each
swept workload's headline metric (common.py: Note [Headline metrics]) against size. Imported by
the report's __main__.py, which owns the page and its errors.

A run was a sweep when its document's config records the sizes (`config.sizes`). Workloads whose own section
already draws against size (transfers, collectives, p2p) are left to it. One panel per workload, a line per
run, allocator and the parameters other than bytes that vary among its rows (their colour by that name).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from .common import (
    Colours,
    Point,
    draw_lines,
    figure_html,
    headline,
    natural,
    parse_size,
    section,
    short_name,
    size_ticks,
    spread,
    value_labels,
)

DRAWN_BY_SIZE_ELSEWHERE = {"transfers", "collectives", "p2p"}


def swept_rows(runs: list[tuple[str, dict]]) -> dict[str, list[tuple[str, dict]]]:
    """{workload: [(run, row)]} of the rows with a `bytes` parameter in runs that swept sizes, that passed or
    failed."""
    out: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for name, doc in runs:
        if not (doc.get("config") or {}).get("sizes"):
            continue
        for r in doc.get("rows", []):
            if (r.get("workload") not in DRAWN_BY_SIZE_ELSEWHERE and "bytes" in (r.get("params") or {})
                    and r.get("verdict") in ("pass", "fail")):
                out[str(r["workload"])].append((short_name(name), r))
    return out


def sweep_series(rows: list[tuple[str, dict]]) -> tuple[str, str, dict[str, list[Point]]]:
    """(metric, unit, {label: points}) of one workload's swept rows: its headline metric, a line per run, allocator
    and the other parameters that vary; the median over ranks at each size."""
    varying = sorted({k for _, r in rows for k in r["params"] if k != "bytes"
                      and len({str(x["params"].get(k)) for _, x in rows}) > 1})
    several_runs = len({run for run, _ in rows}) > 1
    found: dict[str, dict[float, list[tuple[str, dict]]]] = defaultdict(lambda: defaultdict(list))
    for run, r in rows:
        top = headline(r)
        if top:
            label = " ".join([*([run] if several_runs else []), r.get("allocator", "?"),
                              *[f"{k}={r['params'].get(k)}" for k in varying]])
            found[label][parse_size(str(r["params"]["bytes"]))].append(top)
    name = min((n for by_size in found.values() for tops in by_size.values() for n, _ in tops), default="")
    unit, series = "", {}
    for label, by_size in found.items():
        series[label] = []
        for size, tops in sorted(by_size.items()):
            ms = [m for n, m in tops if n == name]
            if ms:
                unit = str(ms[0].get("unit", ""))
                series[label].append((size, statistics.median(m["median"] for m in ms),
                                      spread(ms[0]) if len(ms) == 1 else None))
    return name, unit, series


def sweep_panel(ax: Any, workload: str, rows: list[tuple[str, dict]], colours: Colours) -> None:
    name, unit, series = sweep_series(rows)
    allocators = {r.get("allocator") for _, r in rows}
    for label, points in sorted(series.items(), key=lambda item: natural(item[0])):
        # A line that is only an allocator takes the allocator's colour; any other its own (by workload and label).
        draw_lines(ax, label, points, colours(label if label in allocators else f"{workload}: {label}"))
    size_ticks(ax, {p[0] for points in series.values() for p in points})
    value_labels(ax.yaxis, unit)
    banded = any(p[2] for points in series.values() for p in points)
    ax.set_title(f"{workload}: {name}" + (f" ({unit})" if unit and unit != name else ""), fontsize=10)
    ax.set_xlabel("bytes")
    ax.set_ylabel(f"{name} (median{', p10-p90 band' if banded else ''})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def section_sweep(runs: list[tuple[str, dict]], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    swept = swept_rows(runs)
    if not swept:
        return ""
    fig, axes = plt.subplots(1, len(swept), figsize=(6.5 * len(swept), 4.4), squeeze=False)
    for ax, (workload, rows) in zip(axes[0], sorted(swept.items())):
        sweep_panel(ax, workload, rows, colours)
    fig.tight_layout()
    return section("Size sweeps", "Each workload swept over sizes (-b/-e/-f): its headline metric against the size, a "
                   "line per allocator and the other parameters that vary.", figure_html(fig, "size sweep"))
