"""The report's section of burns (`memstress burn`, docs/burn.md): per GPU, its power, temperatures, clocks and
throughput against the time since the burn began, the failed intervals shaded, and their findings in a table.
Imported by the report's __main__.py, which owns the page and its errors.

Note [A burn against time]
--------------------------
A burn writes a row per interval and GPU (workload `burn`, parameter `interval`): the interval's start (`at.s`,
seconds since the burn began), its length (the row's `seconds`), its throughput by wall clock (one sample each:
`memory.GB/s`, `h2d.GB/s`, `d2h.GB/s`, `gemm.bf16.TFLOP/s`, `gemm.fp64.TFLOP/s`) and NVML's samples taken during
it, about one a second (`power.W`, `power.share`, `temp.gpu.C`, `temp.hbm.C`, `clock.sm.MHz`, `clock.mem.MHz`).
A row keeps the values of its samples, not their times, so the page spreads an interval's samples evenly over
it, each at the middle of its share of [at.s, at.s + seconds]: a throughput's one sample sits at the interval's
middle. A GPU is a rank and its device's UUID (its label where it has none, as on the simulated device).

Up to MAX_POINTS samples of a series are drawn as they are; a longer burn (a sample a second is 3,600 an hour) is
drawn as each interval's median with its min-max band, read from the row's summary, so a week's burn draws as
fast as an afternoon's and a spike of one second still shows in the band.

A metric the device did not give (the simulated device has no telemetry; some GPUs have no HBM sensor) is not
drawn: the row says so in a note, `not measured: NAME (why)`, and the page says so in one line. A figure whose
metrics were all not measured is left out.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from .common import Colours, digits, figure_html, metric, natural, run_stem, section, short_name, table

BURN = "burn"
MAX_POINTS = 5000  # Note [A burn against time]: per series and GPU, above which intervals are drawn whole

# The telemetry a burn samples, by figure: (metric, line label, series colour's name).
POWER = "power.W"
SHARE = "power.share"
TEMPERATURES = (("temp.gpu.C", "GPU", "temp.gpu.C"), ("temp.hbm.C", "HBM", "temp.hbm.C"))
CLOCKS = (("clock.sm.MHz", "SM", "clock.sm.MHz"), ("clock.mem.MHz", "memory", "clock.mem.MHz"))
# Throughput by panel: (panel title, unit, [(metric, line label, colour's name)]). H2D and D2H take the copy
# directions' colours of the transfers section (common.py: Note [Series colours]).
THROUGHPUT = (
    ("memory (fill and check)", "GB/s", (("memory.GB/s", "memory", "memory.GB/s"),)),
    ("copies", "GB/s", (("h2d.GB/s", "H2D", "h2d"), ("d2h.GB/s", "D2H", "d2h"))),
    ("BF16 GEMM", "TFLOP/s", (("gemm.bf16.TFLOP/s", "BF16", "gemm.bf16"),)),
    ("FP64 GEMM", "TFLOP/s", (("gemm.fp64.TFLOP/s", "FP64", "gemm.fp64"),)),
)
TELEMETRY = (POWER, SHARE, *(m[0] for m in TEMPERATURES), *(m[0] for m in CLOCKS))
NOT_MEASURED = "not measured: "
FAILED = "#d62728"  # a failed interval's band and marks


def is_burn(doc: dict) -> bool:
    """Whether a run document is a burn's: its rows are intervals (workload `burn`)."""
    rows = doc.get("rows")
    return isinstance(rows, list) and any(isinstance(r, dict) and r.get("workload") == BURN for r in rows)


class Interval:
    """One row of a burn: its index, where it lies in time, its verdict and reason, and its metrics."""

    def __init__(self, row: dict, start: float) -> None:
        self.row = row
        self.index = int(str((row.get("params") or {}).get("interval", "-1")))
        at = metric(row, "at.s")
        self.start = float(at["median"]) if at else start  # a row without at.s follows the one before
        self.seconds = max(float(row.get("seconds") or 0.0), 0.0)
        self.verdict = str(row.get("verdict", ""))
        self.failed = self.verdict in ("fail", "error")

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def samples(self, name: str) -> list[float]:
        """The metric's samples (its median alone where the row kept none)."""
        m = metric(self.row, name)
        if m is None:
            return []
        values = [float(v) for v in m.get("samples") or [] if isinstance(v, (int, float)) and math.isfinite(v)]
        return values or [float(m["median"])]

    def times(self, n: int) -> list[float]:
        """Note [A burn against time]: n samples spread evenly over the interval, each at its share's middle."""
        return [self.start + (i + 0.5) * self.seconds / n for i in range(n)]

    def summary(self, name: str) -> tuple[float, float, float] | None:
        """(median, min, max) of the metric in this interval."""
        m = metric(self.row, name)
        if m is None:
            return None
        low, high = m.get("min", m["median"]), m.get("max", m["median"])
        return float(m["median"]), float(low), float(high)


class Gpu:
    """The intervals of one GPU of a burn, in order."""

    def __init__(self, run: str, rows: list[dict]) -> None:
        self.run = run
        first = rows[0]
        device = first.get("device") or {}
        self.rank = int(first.get("rank", 0))
        self.label = str(device.get("label", "?"))
        self.name = str(device.get("name", ""))
        self.uuid = str(device.get("uuid", ""))
        self.node = str(device.get("node", ""))
        ordered = sorted(rows, key=lambda r: natural(str((r.get("params") or {}).get("interval", ""))))
        self.intervals: list[Interval] = []
        for r in ordered:
            self.intervals.append(Interval(r, self.intervals[-1].end if self.intervals else 0.0))

    def title(self) -> str:
        """`rank 0, cuda:0: NVIDIA H100 80GB HBM3 (GPU-...), host node01`."""
        return (f"rank {self.rank}, {self.label}" + (f": {self.name}" if self.name else "")
                + (f" ({self.uuid})" if self.uuid else "") + (f", host {self.node}" if self.node else ""))

    def short(self) -> str:
        """`rank 0, cuda:0 (GPU-...)`: the GPU in a table cell."""
        return f"rank {self.rank}, {self.label}" + (f" ({self.uuid})" if self.uuid else "")

    def measured(self, name: str) -> bool:
        return any(metric(i.row, name) for i in self.intervals)

    def series(self, name: str) -> tuple[list[float], list[float], tuple[list[float], list[float]] | None]:
        """(times, values, band) of a metric over the burn: every sample, or, past MAX_POINTS, each interval's
        median with its (min, max) band (Note [A burn against time])."""
        count = sum(len(i.samples(name)) for i in self.intervals)
        xs: list[float] = []
        ys: list[float] = []
        if count <= MAX_POINTS:
            for i in self.intervals:
                values = i.samples(name)
                xs += i.times(len(values))
                ys += values
            return xs, ys, None
        low: list[float] = []
        high: list[float] = []
        for i in self.intervals:
            s = i.summary(name)
            if s:
                xs.append(i.start + i.seconds / 2)
                ys.append(s[0])
                low.append(s[1])
                high.append(s[2])
        return xs, ys, (low, high)

    def not_measured(self) -> dict[str, str]:
        """{metric: why} of the telemetry no interval measured, with the reason the rows' notes give."""
        out = {}
        for name in TELEMETRY:
            if self.measured(name):
                continue
            why = ""
            for i in self.intervals:
                for note in i.row.get("notes") or []:
                    text = str(note)
                    if text.startswith(f"{NOT_MEASURED}{name} (") and text.endswith(")"):
                        why = text[len(f"{NOT_MEASURED}{name} ("):-1]
                        break
                if why:
                    break
            out[name] = why
        return out


def burns(runs: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The burn documents among the runs, a burn given twice (RUN.json and its stream RUN.jsonl) once: the one
    with more intervals."""
    chosen: dict[Path, tuple[str, dict]] = {}
    for name, doc in runs:
        if not is_burn(doc):
            continue
        key = run_stem(name)
        if key not in chosen or len(doc.get("rows", [])) > len(chosen[key][1].get("rows", [])):
            chosen[key] = (name, doc)
    return list(chosen.values())


def gpus_of(name: str, doc: dict) -> list[Gpu]:
    """Each GPU of a burn (a rank and its device's UUID, or label where it has none) with its intervals."""
    by_gpu: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for r in doc.get("rows", []):
        if isinstance(r, dict) and r.get("workload") == BURN:
            device = r.get("device") or {}
            by_gpu[(int(r.get("rank", 0)), str(device.get("uuid") or device.get("label", "")))].append(r)
    return [Gpu(short_name(name), rows) for _, rows in sorted(by_gpu.items(), key=lambda kv: (kv[0][0], kv[0][1]))]


class TimeAxis:
    """Seconds since the burn began, drawn in s, min or h as the burn's length asks."""

    def __init__(self, span: float) -> None:
        self.unit, self.div = ("h", 3600.0) if span > 3 * 3600 else ("min", 60.0) if span > 600 else ("s", 1.0)
        self.span = span

    def __call__(self, xs: list[float]) -> list[float]:
        return [x / self.div for x in xs]

    def dress(self, ax: Any, gpu: Gpu) -> None:
        """The axis's label and limits, and the failed intervals shaded (once in the legend)."""
        shaded = False
        for i in gpu.intervals:
            if i.failed:
                ax.axvspan(i.start / self.div, max(i.end, i.start + 1e-9) / self.div, color=FAILED, alpha=0.15,
                           linewidth=0, label=None if shaded else "failed interval")
                shaded = True
        ax.set_xlim(0, max(self.span, 1e-9) / self.div)
        ax.set_xlabel(f"time since the burn began ({self.unit})")
        ax.grid(True, alpha=0.3)


def draw_series(ax: Any, gpu: Gpu, time: TimeAxis, name: str, label: str, colour: str, marks: bool = False) -> None:
    """A metric's line over the burn (with its per-interval band where drawn whole); `marks`: a point per sample,
    those of failed intervals marked."""
    xs, ys, band = gpu.series(name)
    label += " (each interval's median, min-max band)" if band else ""
    ax.plot(time(xs), ys, color=colour, label=label, lw=1, marker="o" if marks else None, ms=3)
    if band:
        ax.fill_between(time(xs), band[0], band[1], color=colour, alpha=0.2, linewidth=0)
    if marks:
        bad = [(i.start + i.seconds / 2, v) for i in gpu.intervals if i.failed for v in i.samples(name)[:1]]
        if bad:
            ax.plot(time([b[0] for b in bad]), [b[1] for b in bad], ls="none", marker="x", ms=7, mew=2,
                    color=FAILED)


def power_limit(gpu: Gpu) -> float | None:
    """The power limit, as each interval's power over its share of the limit gives it, where it held one value
    all burn (within 1 %); None otherwise."""
    limits = []
    for i in gpu.intervals:
        watts, share = metric(i.row, POWER), metric(i.row, SHARE)
        if watts and share and share["median"] > 0:
            limits.append(watts["median"] / share["median"])
    if not limits or max(limits) > 1.01 * min(limits):
        return None
    return statistics.median(limits)


def figure_power(gpu: Gpu, time: TimeAxis, colours: Colours) -> str:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    if not gpu.measured(POWER) and not gpu.measured(SHARE):
        return ""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    if gpu.measured(POWER):
        draw_series(ax, gpu, time, POWER, "power", colours(POWER))
        limit = power_limit(gpu)
        if limit:
            ax.axhline(limit, color="grey", ls="--", lw=1, label=f"power limit ({digits(limit)} W)")
            share = ax.secondary_yaxis("right", functions=(lambda w: w / limit, lambda s: s * limit))
            share.yaxis.set_major_formatter(PercentFormatter(xmax=1))
            share.set_ylabel("share of the power limit")
        ax.set_ylabel("W")
    else:  # the share without the watts
        draw_series(ax, gpu, time, SHARE, "share of the power limit", colours(SHARE))
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))
        ax.set_ylabel("share of the power limit")
    time.dress(ax, gpu)
    ax.set_title(f"{gpu.run} {gpu.short()}: power")
    ax.legend(fontsize=7, loc="best")
    return figure_html(fig, f"burn power: {gpu.short()}")


def figure_lines(gpu: Gpu, time: TimeAxis, colours: Colours, what: str, unit: str,
                 lines: tuple[tuple[str, str, str], ...]) -> str:
    """Temperatures or clocks: a line per metric measured; nothing where none was."""
    import matplotlib.pyplot as plt

    drawn = [line for line in lines if gpu.measured(line[0])]
    if not drawn:
        return ""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for name, label, colour in drawn:
        draw_series(ax, gpu, time, name, label, colours(colour))
    time.dress(ax, gpu)
    ax.set_ylabel(unit)
    ax.set_title(f"{gpu.run} {gpu.short()}: {what}")
    ax.legend(fontsize=7, loc="best")
    return figure_html(fig, f"burn {what}: {gpu.short()}")


def figure_throughput(gpu: Gpu, time: TimeAxis, colours: Colours) -> str:
    """A panel per kind of work (memory, copies, BF16, FP64), a point per interval, the failed ones marked."""
    import matplotlib.pyplot as plt

    panels = [(title, unit, [m for m in lines if gpu.measured(m[0])]) for title, unit, lines in THROUGHPUT]
    panels = [p for p in panels if p[2]]
    if not panels:
        return ""
    columns = min(2, len(panels))
    grid_rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(grid_rows, columns, figsize=(6.5 * columns, 3.2 * grid_rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, unit, lines) in zip(axes.flat, panels):
        for name, label, colour in lines:
            draw_series(ax, gpu, time, name, label, colours(colour), marks=True)
        time.dress(ax, gpu)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{gpu.run} {gpu.short()}: throughput by wall clock, a point per interval", fontsize=10)
    fig.tight_layout()
    return figure_html(fig, f"burn throughput: {gpu.short()}")


def missing_text(names: set[str]) -> str:
    """`power, GPU and HBM temperature, SM and memory clocks`: the telemetry in `names`, as few words as say it."""
    parts = []
    if POWER in names:
        parts.append("power")  # its share of the limit with it
    elif SHARE in names:
        parts.append("power's share of its limit")
    for pair, one, several in ((TEMPERATURES, "temperature", "temperature"), (CLOCKS, "clock", "clocks")):
        which = [label for name, label, _ in pair if name in names]
        if which:
            parts.append(f"{' and '.join(which)} {several if len(which) > 1 else one}")
    return ", ".join(parts)


def not_measured_lines(gpus: list[Gpu]) -> str:
    """One line per set of metrics not measured, naming the GPUs (all of the run's, where all lack the same)."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Gpu]] = defaultdict(list)
    for gpu in gpus:
        missing = gpu.not_measured()
        if missing:
            groups[(tuple(missing), tuple(dict.fromkeys(w for w in missing.values() if w)))].append(gpu)
    out = ""
    for (names, whys), members in groups.items():
        who = "any GPU" if len(members) == len(gpus) and len(gpus) > 1 else ", ".join(g.short() for g in members)
        why = f": {'; '.join(whys)}" if whys else ""
        out += (f"<p>Not measured on {html.escape(who)}, so not drawn: "
                f"{html.escape(missing_text(set(names)))}{html.escape(why)}.</p>")
    return out


def failed_table(gpus: list[Gpu]) -> str:
    """The failed (and errored) intervals with the judge's findings."""
    lines, classes = [], []
    for gpu in gpus:
        for i in gpu.intervals:
            if i.failed:
                lines.append([gpu.short(), str(i.index), f"{digits(i.start)}-{digits(i.end)}", i.verdict,
                              str(i.row.get("reason") or "")])
                classes.append(i.verdict)
    if not lines:
        return ""
    return (f"<p>{len(lines)} failed interval(s), shaded red above, with the judge's findings:</p>"
            + table(["GPU", "interval", "seconds since the burn began", "verdict", "findings"], lines, classes))


def section_burn(runs: list[tuple[str, dict]], colours: Colours) -> str:
    out = ""
    for name, doc in burns(runs):
        gpus = gpus_of(name, doc)
        if not gpus:
            continue
        span = max(i.end for gpu in gpus for i in gpu.intervals)
        time = TimeAxis(span)
        failed = sum(i.failed for gpu in gpus for i in gpu.intervals)
        intervals = max(len(gpu.intervals) for gpu in gpus)
        out += (f"<h3>{html.escape(short_name(name))}: {len(gpus)} GPU(s), {intervals} interval(s) over "
                f"{html.escape(digits(span))} s, {failed} failed</h3>" + not_measured_lines(gpus))
        for gpu in gpus:
            out += f"<h4>{html.escape(gpu.title())}</h4>"
            out += figure_power(gpu, time, colours)
            out += figure_lines(gpu, time, colours, "temperature", "°C", TEMPERATURES)
            out += figure_lines(gpu, time, colours, "clocks", "MHz", CLOCKS)
            out += figure_throughput(gpu, time, colours)
        out += failed_table(gpus)
    return section("Burn", "Each GPU of a burn against the time since it began: power (with its share of the limit), "
                   "GPU and HBM temperature, SM and memory clocks as NVML sampled them about once a second, and the "
                   "throughput of each interval by wall clock; failed intervals are shaded red and listed with the "
                   "judge's findings.", out) if out else ""
