"""The report's fleet page: what `memstress db` says of many GPUs. Imported by the report's __main__.py, which owns the
page and its errors.

Inputs (told apart by their schema):
- `memstress db outliers --format json --groups` (memstress.outliers/1 with groups[]): per judged group (a
  case's metric on one GPU model under one driver, as many ranks at once), every GPU's value as a point, the
  group's median and its outlier threshold as lines, the outliers in red and named (host, the UUID's first
  digits); groups with an outlier first, then the rest as a table of their medians and spreads;
- `memstress db history --format json` (memstress.history/1): each series (one GPU's measurement over time), a
  line per series, a dashed vertical line at each driver change, labelled with the new driver.
At most 24 figures of each (groups with an outlier, then the widest; the first series): the page says how many
were left out.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any, Callable

from .common import digits, section, table

MAX_FIGURES = 24


def short_uuid(uuid: str) -> str:
    return uuid[:12] if uuid.startswith("GPU-") else uuid[:8]


def group_key(g: dict) -> tuple:
    """What names a group (memstress db outliers): the measurement, the GPU model, the driver, the ranks at once;
    an outlier carries the same fields as its group."""
    return (g["workload"], g["case"], g["allocator"], g["metric"], g["unit"], g["model"], g["driver"],
            g["concurrent_ranks"])


def group_title(g: dict) -> str:
    ranks = f", {g['concurrent_ranks']} ranks at once" if int(g.get("concurrent_ranks", 1)) > 1 else ""
    unit = "" if g["metric"] == g["unit"] else f" ({g['unit']})"
    return f"{g['workload']} {g['case']} | {g['allocator']} | {g['metric']}{unit} | {g['model']}, driver {g['driver']}{ranks}"


def threshold_line(g: dict, threshold: float) -> float:
    """The value beyond which a GPU is an outlier, on the worse side of the median: each GPU's own limit where the
    store gives it (its standard error counts: Note [Fleet outliers: median and MAD]), the median GPU's."""
    limits = sorted(p["limit"] for p in g["gpus"] if "limit" in p)
    if limits:
        return limits[len(limits) // 2]
    return g["median"] - threshold * g["spread"] if g["better"] == "higher" else g["median"] + threshold * g["spread"]


def group_figure(g: dict, flagged: dict[str, dict], threshold: float, figure_html: Callable[[Any, str], str]) -> str:
    import matplotlib.pyplot as plt

    rnd = random.Random(0)  # the jitter is the same on every page
    fig, ax = plt.subplots(figsize=(8, 2.6))
    healthy = [p for p in g["gpus"] if p["gpu_uuid"] not in flagged]
    bad = [p for p in g["gpus"] if p["gpu_uuid"] in flagged]
    ax.scatter([p["value"] for p in healthy], [rnd.uniform(-0.3, 0.3) for _ in healthy], s=9, color="#4878a8",
               alpha=0.6, label=f"{len(healthy)} GPUs")
    ax.scatter([p["value"] for p in bad], [rnd.uniform(-0.3, 0.3) for _ in bad], s=28, color="#c0392b",
               label=f"{len(bad)} outlier(s)")
    for p in bad[:8]:
        ax.annotate(f"{p['host']} {short_uuid(p['gpu_uuid'])}", (p["value"], 0.32), fontsize=7, color="#c0392b",
                    rotation=30, ha="left", va="bottom")
    ax.axvline(g["median"], color="#333333", lw=1, label=f"median {digits(g['median'])}")
    ax.axvline(threshold_line(g, threshold), color="#c0392b", lw=1, ls="--",
               label=f"{threshold:g} spreads worse (median runs)")
    ax.set_yticks([])
    ax.set_ylim(-0.5, 1.2)
    ax.set_xlabel(g["unit"])
    ax.set_title(group_title(g), fontsize=8)
    ax.legend(fontsize=7, loc="upper right", ncol=4)
    return figure_html(fig, group_title(g))


def section_fleet_outliers(docs: list[tuple[str, dict]], figure_html: Callable[[Any, str], str]) -> str:
    if not docs:
        return ""
    body = ""
    for name, doc in docs:
        groups = doc.get("groups")
        if not isinstance(groups, list):
            body += (f"<p>{name}: no groups (write it with <code>memstress db outliers --format json --groups</code> "
                     f"to draw every GPU); {len(doc['outliers'])} outlier(s) listed.</p>")
            continue
        threshold = float(doc["threshold"])
        by_group: dict[tuple, dict[str, dict]] = {}
        for o in doc["outliers"]:
            by_group.setdefault(group_key(o), {})[o["gpu_uuid"]] = o
        keyed = [(group_key(g), g) for g in groups]
        with_outliers = [(k, g) for k, g in keyed if k in by_group]
        rest = [(k, g) for k, g in keyed if k not in by_group]
        body += (f"<h3>{name}</h3><p>{len(doc['outliers'])} outlier(s) among {doc['gpus']} GPU(s) in "
                 f"{doc['groups_judged']} group(s) judged; {doc['groups_too_small']} group(s) of fewer than "
                 f"{doc['min_gpus']} GPUs not judged.</p>")
        for k, g in with_outliers[:MAX_FIGURES]:
            body += group_figure(g, by_group[k], threshold, figure_html)
        if len(with_outliers) > MAX_FIGURES:
            body += f"<p>{len(with_outliers) - MAX_FIGURES} more group(s) with outliers not drawn.</p>"
        body += table(["group", "GPUs", "median", "spread", "spread %"],
                      [[group_title(g), str(len(g["gpus"])), digits(g["median"]), digits(g["spread"]),
                        f"{100 * g['spread'] / abs(g['median']):.2f}" if g["median"] else "-"] for _, g in rest])
    return section("Fleet: GPUs against their siblings",
                   "Each point is a GPU's median in one group (a case's metric on one GPU model under one driver); the "
                   "red ones are memstress db outliers' outliers (median and MAD, each GPU's standard error counted); "
                   "the dashed line is where a GPU with the group's median number of runs becomes one (a GPU of fewer runs needs "
                   "to lie further out).", body)


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def section_fleet_history(docs: list[tuple[str, dict]], figure_html: Callable[[Any, str], str]) -> str:
    if not docs:
        return ""
    import matplotlib.pyplot as plt

    body = ""
    for name, doc in docs:
        series = doc["series"]
        body += f"<h3>{name}</h3>"
        for s in series[:MAX_FIGURES]:
            points = s["points"]
            fig, ax = plt.subplots(figsize=(8, 2.6))
            ax.plot([when(p["started_at"]) for p in points], [p["median"] for p in points], marker="o", ms=3,
                    color="#4878a8")
            for p in points:
                if p.get("driver_changed_from"):
                    ax.axvline(when(p["started_at"]), color="#c0392b", ls="--", lw=1)
                    ax.annotate(f"driver {p['driver']}", (when(p["started_at"]), ax.get_ylim()[1]), fontsize=7,
                                color="#c0392b", va="top", ha="left")
            title = (f"{s['gpu_uuid']} ({s['host'] or 'host unknown'}): {s['workload']} {s['case']} | "
                     f"{s['allocator']} | {s['metric']}")
            ax.set_title(title, fontsize=8)
            ax.set_ylabel(s["unit"])
            fig.autofmt_xdate()
            body += figure_html(fig, title)
        if len(series) > MAX_FIGURES:
            body += f"<p>{len(series) - MAX_FIGURES} more series not drawn (db history --metric narrows them).</p>"
    return section("Fleet: a GPU's history",
                   "Each line is one GPU's median of one measurement run after run; a dashed line marks a driver "
                   "change.", body)
