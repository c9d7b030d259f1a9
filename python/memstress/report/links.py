"""The report's sections on the links between GPUs: collectives (NCCL, as nccl-tests reports them) and p2p (the
peer copy matrix of a node). Imported by the report's __main__.py, which owns the page and its errors.

Collectives: per run, bus bandwidth against size, a line per collective (its colour by name, the same in every
run's panel), dashed where another thread churned the allocator meanwhile; and a table with nccl-tests'
columns. A run of several ranks draws the median over the ranks' medians, its band from the lowest rank's p10
to the highest rank's p90.

P2P: per run, the one-way bandwidth matrix (source GPU by destination GPU) at the largest size measured, for
each engine and access, and the peer load latency matrix; then the slowest pair's bandwidth against size, a
line per engine, access and direction.
"""

from __future__ import annotations

import html
import re
import statistics
from collections import defaultdict
from typing import Any

from .common import (
    Colours,
    Point,
    digits,
    draw_lines,
    figure_html,
    metric,
    parse_size,
    runs_with,
    section,
    size_text,
    size_ticks,
    spread,
    table,
)


def across_ranks(rows: list[dict], name: str) -> tuple[float, "tuple[float, float] | None"] | None:
    """The median over the rows' (ranks') medians of metric `name`, and the band from the lowest p10 to the
    highest p90 where the rows had several samples."""
    found = [m for r in rows if (m := metric(r, name))]
    if not found:
        return None
    bands = [spread(m) for m in found]
    band = (min(b[0] for b in bands), max(b[1] for b in bands)) if all(bands) else None
    return statistics.median(m["median"] for m in found), band


def collective_label(p: dict, varying: set[str]) -> str:
    """`all_reduce`, with the dtype and the place (in place, out of place) where they vary in the run (the
    pressure is said by the caller)."""
    places = {"in": "in place", "out": "out of place"}
    extra = [str(p[k]) if k != "place" else places.get(str(p[k]), str(p[k])) for k in ("dtype", "place")
             if k in varying]
    return str(p.get("collective", "?")) + (f" ({', '.join(extra)})" if extra else "")


def collective_series(rows: list[dict]) -> dict[tuple[str, str, str], list[Point]]:
    """Busbw by size, keyed by (label, collective, pressure), over the rows that passed or failed."""
    judged = [r for r in rows if r.get("verdict") in ("pass", "fail")]
    varying = {k for k in ("dtype", "place") if len({str(r["params"].get(k)) for r in judged}) > 1}
    cases: dict[tuple[str, str, str, float], list[dict]] = defaultdict(list)
    for r in judged:
        p = r["params"]
        cases[(collective_label(p, varying), str(p.get("collective")), str(p.get("pressure", "none")),
               parse_size(str(p["bytes"])))].append(r)
    series: dict[tuple[str, str, str], list[Point]] = defaultdict(list)
    for (label, collective, pressure, size), case_rows in cases.items():
        value = across_ranks(case_rows, "busbw")
        if value:
            series[(label, collective, pressure)].append((size, *value))
    return series


def collectives_panel(ax: Any, run: str, rows: list[dict], colours: Colours) -> None:
    series = collective_series(rows)
    for (label, collective, pressure), points in sorted(series.items()):
        draw_lines(ax, label + ("" if pressure == "none" else f", {pressure}"), points, colours(collective),
                   linestyle="-" if pressure == "none" else "--")
    size_ticks(ax, {p[0] for points in series.values() for p in points})
    ranks = len({r.get("rank", 0) for r in rows})
    ax.set_title(f"{run}: {ranks} rank{'s' if ranks > 1 else ''}", fontsize=10)
    ax.set_xlabel("size (bytes, nccl-tests' size)")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def nccl_table(rows: list[dict]) -> str:
    """The rows in nccl-tests' columns (rank 0's where several ranks report): size, type, time, algbw, busbw,
    #wrong, and memstress' ratio to plain cudaMalloc buffers."""
    first = min((r.get("rank", 0) for r in rows), default=0)
    lines, marks = [], []
    for r in sorted((r for r in rows if r.get("rank", 0) == first and metric(r, "busbw")),
                    key=lambda r: (r["params"].get("collective"), r["params"].get("pressure", ""),
                                   parse_size(str(r["params"]["bytes"])))):
        p = r["params"]
        cells = [metric(r, n) for n in ("time", "algbw", "busbw", "vs_ref")]
        lines.append([str(p.get("collective")), str(p.get("pressure", "none")), size_text(parse_size(str(p["bytes"]))),
                      str(p.get("dtype", "")), str(p.get("place", "")),
                      *[digits(m["median"]) if m else "-" for m in cells],
                      str((r.get("verification") or {}).get("errors", "-"))])
        marks.append(str(r.get("verdict", "")))
    return table(["collective", "pressure", "size", "type", "place", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                  "vs plain cudaMalloc", "#wrong"], lines, marks)


def collectives_figure(found: list[tuple[str, list[dict]]], colours: Colours) -> str:
    """A panel per run that measured more than one size (three to a line)."""
    import matplotlib.pyplot as plt

    curves = [(run, rows) for run, rows in found
              if len({p[0] for points in collective_series(rows).values() for p in points}) > 1]
    if not curves:
        return ""
    columns = min(3, len(curves))
    lines = (len(curves) + columns - 1) // columns
    fig, axes = plt.subplots(lines, columns, figsize=(6.5 * columns, 4.6 * lines), squeeze=False)
    for ax in axes.flat[len(curves):]:
        ax.set_visible(False)
    for ax, (run, rows) in zip(axes.flat, curves):
        collectives_panel(ax, run, rows, colours)
    fig.tight_layout()
    return figure_html(fig, "collectives busbw by size")


def section_collectives(runs: list[tuple[str, dict]], colours: Colours) -> str:
    found = [(run, rows) for run, rows in runs_with(runs, "collectives") if collective_series(rows)]
    if not found:
        return ""
    tables = "".join(f"<details><summary>{html.escape(run)}: nccl-tests' columns (rank "
                     f"{min(r.get('rank', 0) for r in rows)})</summary>{nccl_table(rows)}</details>"
                     for run, rows in found)
    return section("Collectives: bus bandwidth by size", "NCCL collectives over the shared allocator's buffers: bus "
                   "bandwidth (nccl-tests' busbw) against size, a line per collective, dashed where another thread "
                   "churned the allocator meanwhile; the median over the ranks. Runs that measured one size only "
                   "are in the tables below.", collectives_figure(found, colours) + tables)


PAIR = re.compile(r"^(GB/s|latency_us) (\d+)->(\d+)$")


def matrix(row: dict) -> tuple[list[list[float | None]], str] | None:
    """The source-by-destination matrix of a p2p row's `GB/s i->j` (or `latency_us i->j`) medians, and its unit."""
    cells: dict[tuple[int, int], float] = {}
    unit = ""
    for name in row.get("metrics") or {}:
        found, m = PAIR.match(name), metric(row, name)
        if found and m:
            cells[(int(found[2]), int(found[3]))] = m["median"]
            unit = str(m.get("unit", ""))
    if not cells:
        return None
    n = max(max(i, j) for i, j in cells) + 1
    return [[cells.get((i, j)) for j in range(n)] for i in range(n)], unit


def largest_matrices(rows: list[dict]) -> list[tuple[str, list[list[float | None]], str]]:
    """(title, matrix, unit): the one-way bandwidth matrix per engine and access, and the latency matrix, each
    at the largest size measured."""
    by_kind: dict[str, tuple[float, dict]] = {}
    for r in rows:
        p = r.get("params", {})
        if r.get("verdict") != "pass" or p.get("direction", "uni") != "uni":
            continue
        kind = (f"{p.get('engine')} {p.get('access')}: GB/s at" if p.get("measure") == "bandwidth"
                else "peer load latency at")
        size = parse_size(str(p.get("bytes", 0)))
        if kind not in by_kind or size > by_kind[kind][0]:
            by_kind[kind] = (size, r)
    out = []
    for kind, (size, r) in sorted(by_kind.items()):
        found = matrix(r)
        if found:
            out.append((f"{kind} {size_text(size)}", *found))
    return out


def heatmap(ax: Any, title: str, cells: list[list[float | None]], unit: str, top: float) -> None:
    """One matrix, coloured on a scale from 0 to `top` (the same for every bandwidth matrix of the figure, so that
    equal bandwidths look equal), each cell's value written on it."""
    values = [[float("nan") if v is None else v for v in line] for line in cells]
    ax.imshow(values, cmap="viridis_r" if unit == "us" else "viridis", vmin=0, vmax=top)
    for i, line in enumerate(cells):
        for j, v in enumerate(line):
            if v is not None:
                ax.text(j, i, digits(v), ha="center", va="center", fontsize=7, color="white",
                        bbox={"facecolor": "black", "alpha": 0.35, "pad": 1, "linewidth": 0})
    ticks = range(len(cells))
    ax.set_xticks(ticks, [f"GPU {j}" for j in ticks], fontsize=7)
    ax.set_yticks(ticks, [f"GPU {i}" for i in ticks], fontsize=7)
    ax.set_xlabel("to (destination)", fontsize=8)
    ax.set_ylabel("from (source)", fontsize=8)
    ax.set_title(f"{title} ({unit})", fontsize=9)


def matrices_figure(matrices: list[tuple[str, list[list[float | None]], str]]) -> str:
    import matplotlib.pyplot as plt

    columns = min(3, len(matrices))
    lines = (len(matrices) + columns - 1) // columns
    n = max(len(cells) for _, cells, _ in matrices)
    side = 1.2 + 0.75 * n
    fig, axes = plt.subplots(lines, columns, figsize=(side * columns + 0.6, side * lines), squeeze=False)
    for ax in axes.flat[len(matrices):]:
        ax.set_visible(False)
    tops = defaultdict(float)
    for _, cells, unit in matrices:
        tops[unit] = max([tops[unit], *[v for line in cells for v in line if v is not None]])
    for ax, (title, cells, unit) in zip(axes.flat, matrices):
        heatmap(ax, title, cells, unit, tops[unit])
    fig.tight_layout()
    return figure_html(fig, "p2p bandwidth matrix")


def p2p_lines(ax: Any, rows: list[dict], colours: Colours) -> None:
    series: dict[str, list[Point]] = defaultdict(list)
    for r in rows:
        p = r.get("params", {})
        m = metric(r, "GB/s min")
        if r.get("verdict") == "pass" and m:
            series[f"{p.get('engine')} {p.get('access')} {p.get('direction')}"].append(
                (parse_size(str(p["bytes"])), m["median"], spread(m)))
    for label, points in sorted(series.items()):
        draw_lines(ax, label, points, colours(label), linestyle="-" if label.endswith("uni") else "--")
    size_ticks(ax, {p[0] for points in series.values() for p in points})
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("GB/s of the slowest pair")
    ax.set_title("the slowest pair by size (bidir: both ways at once)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def p2p_figure(rows: list[dict], colours: Colours) -> str:
    import matplotlib.pyplot as plt

    matrices = largest_matrices(rows)
    out = matrices_figure(matrices) if matrices else ""
    if any(metric(r, "GB/s min") for r in rows if r.get("verdict") == "pass"):
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        p2p_lines(ax, rows, colours)
        out += figure_html(fig, "p2p bandwidth of the slowest pair by size")
    return out


def section_p2p(runs: list[tuple[str, dict]], colours: Colours) -> str:
    out = ""
    for run, rows in runs_with(runs, "p2p"):
        figure = p2p_figure(rows, colours)
        if figure:
            out += f"<h3>{html.escape(run)}</h3>" + figure
    return section("P2P: copies between the GPUs of a node", "Peer copy bandwidth from each GPU (row) to each other "
                   "GPU (column) at the largest size, per engine (copy engine or SM kernel) and access (the source "
                   "writes or the destination reads), the peer load latency, and the slowest pair's bandwidth by "
                   "size.", out) if out else ""
