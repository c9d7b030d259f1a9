"""What every section of the report shares: the rows of a run, numbers with their units, series colours
and the embedded figure. Imported by the report's __main__.py and its section modules (accept.py, links.py,
...) and inputs.py; __main__.py owns the page and its errors, inputs.py reads the inputs.

Note [Numbers on the page]
--------------------------
One rule for every number a person reads, in tables, labels and annotations: three significant digits,
but no integer digit is ever rounded away (2957 GB/s stays 2,957; 55.11 is 55.1; 0.9626 is 0.963).
Bytes take binary prefixes (KiB, MiB, GiB: 1.28 MiB); counts and rates of things (ops/s, samples/s) of ten
thousand or more take SI ones (76.5 k samples/s, 2.05 M ops/s); GB/s is 1e9 bytes/s as everywhere in
memstress. A metric's spread (p10-p90) is shown only where the row has more than one sample: the spread of
one sample is no spread.

Note [Series colours]
---------------------
A series (an allocator, a copy direction, a collective, a p2p path) has one colour on the whole page,
chosen by its name, never by the order it was drawn in: `caching` is the same blue in the OOM bars, the
fragmentation bars and the sizes bars. Names every page may hold have fixed colours (KNOWN); any other
name takes the next colour of a palette the fixed ones do not use, the first time the page asks for it,
and keeps it. One Colours object serves one page.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from pathlib import Path
from typing import Any

from .. import registry

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

BYTE_UNITS = {"bytes": 1, "B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB}
COUNTED_UNITS = {"ops/s", "samples/s", "count", "words", "items/s"}  # SI prefixes from ten thousand up
UNITLESS = {"ratio", "share", "share of total", "count", "flag"}  # shown as bare numbers (0, not 0 flag)


def digits(x: float, significant: int = 3) -> str:
    """Note [Numbers on the page]: `significant` digits, integer digits kept, thousands separated."""
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    whole = math.floor(math.log10(abs(x))) + 1  # digits before the point
    decimals = max(0, significant - whole)
    if decimals and abs(round(x, decimals)) >= 10.0 ** whole:
        decimals -= 1  # rounded up to the next power of ten: 0.9999 is 1.00, not 1.000
    return f"{x:,.{decimals}f}"


def size_text(n: float) -> str:
    """Bytes with a binary prefix: 512 B, 4 KiB, 1.28 MiB, 80 GiB (a whole number of the unit as a whole
    number: a size someone asked for, 256 MiB, is not 256.0 MiB)."""
    for unit, div in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB), ("B", 1)):
        if abs(n) >= div or div == 1:
            value = n / div
            return f"{value:,.0f} {unit}" if value == int(value) else f"{digits(value)} {unit}"
    raise AssertionError("unreachable")


def si_text(x: float) -> str:
    """A count or a rate of things: 937, 9,812, 76.5 k, 2.05 M, 1.20 G."""
    for prefix, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= max(div, 1e4):
            return f"{digits(x / div)} {prefix}"
    return digits(x)


def quantity(value: float, unit: str = "") -> str:
    """A metric's value as a person reads it, with its unit (Note [Numbers on the page])."""
    unit = unit or ""
    base, _, per = unit.partition("/") if unit.startswith("bytes/") else (unit, "", "")
    if base in BYTE_UNITS:
        return size_text(value * BYTE_UNITS[base]) + (f"/{per}" if per else "")
    whole = unit in COUNTED_UNITS and value == int(value) and abs(value) < 1e4  # 12 probes, not 12.0
    number = f"{int(value):,}" if whole else si_text(value) if unit in COUNTED_UNITS else digits(value)
    return number if unit in UNITLESS else f"{number} {unit}".rstrip()


def metric(row: dict, name: str) -> dict | None:
    """A row's metric, where it was measured (a finite median)."""
    m = (row.get("metrics") or {}).get(name)
    if not isinstance(m, dict) or not isinstance(m.get("median"), (int, float)) or isinstance(m["median"], bool):
        return None
    return m if math.isfinite(m["median"]) else None


def several_samples(m: dict) -> bool:
    n = m.get("n")
    return isinstance(n, int) and n > 1


def spread(m: dict) -> tuple[float, float] | None:
    """(p10, p90) of a metric with more than one sample; None for one sample, where there is no spread."""
    low, high = m.get("p10"), m.get("p90")
    if not several_samples(m) or not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return None
    return float(low), float(high)


def metric_text(m: dict) -> str:
    """`55.1 GB/s (p10-p90 54.9-55.2)`, or `55.1 GB/s` for a single sample."""
    unit = str(m.get("unit") or "")
    text = quantity(m["median"], unit)
    band = spread(m)
    low, high = (quantity(band[0], unit), quantity(band[1], unit)) if band else ("", "")
    if low != high:  # as written: a spread narrower than the digits shown is no spread to the reader
        low_number, _, low_unit = low.partition(" ")
        high_unit = high.partition(" ")[2]
        text += f" (p10-p90 {low_number if low_unit == high_unit else low}-{high})"
    return text


def natural(text: str) -> list:
    """A sort key that puts streams=4 before streams=16."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def parse_size(text: str) -> float:
    """A size as memstress writes it in parameters: 4096, 4K, 256M, 512B."""
    text = text.strip().rstrip("B")
    mult = {"K": KIB, "M": MIB, "G": GIB, "T": 1 << 40}
    if text and text[-1] in mult:
        return float(text[:-1]) * mult[text[-1]]
    return float(text)


def run_stem(name: str) -> Path:
    """The run a results file is of, its path without the endings: `a/RUN.json`, `a/RUN.jsonl`, `a/RUN.xml` and
    their compressed copies (`a/RUN.json.xz`) -> `a/RUN`."""
    path = Path(name)
    bare = path.name.removesuffix(".xz").removesuffix(".gz")
    return path.with_name(bare.removesuffix(".json").removesuffix(".jsonl").removesuffix(".xml"))


def short_name(name: str) -> str:
    """`results/h100/transfers-h100-580.159.04.json` (or `.json.xz`) -> `transfers (h100)`,
    `transfers-in-turn-h200x4-580.159.04.json` -> `transfers-in-turn (h200x4)`: a legend-sized run name."""
    stem = run_stem(name).name
    tagged = re.match(r"^(.+)-([A-Za-z0-9]+)-(\d+(?:\.\d+)+)$", stem)  # <what>-<gpu>-<driver>
    return f"{tagged[1]} ({tagged[2]})" if tagged else stem


def rows_of(runs: list[tuple[str, dict]], workload: str) -> list[tuple[str, dict]]:
    """The rows of `workload`, each with its run's name; rows of a run of several ranks also name the rank."""
    out = []
    for n, d in runs:
        rows = d.get("rows", [])
        several = len({r.get("rank", 0) for r in rows}) > 1
        for r in rows:
            if r.get("workload") == workload:
                out.append((short_name(n) + (f" rank {r.get('rank', 0)}" if several else ""), r))
    return out


def runs_with(runs: list[tuple[str, dict]], workload: str) -> list[tuple[str, list[dict]]]:
    """Each run that has rows of `workload`: its short name and those rows (every rank's)."""
    out = []
    for n, d in runs:
        rows = [r for r in d.get("rows", []) if r.get("workload") == workload]
        if rows:
            out.append((short_name(n), rows))
    return out


# Note [Series colours]: the fixed ones, from matplotlib's tab10; series of one kind never share a colour.
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
# allocators (and the benchmark's peers): tab10's, in the order `memstress list` names them (caching blue)
PEER_COLOURS = dict(zip((p["name"] for p in registry.peers()), TAB10))
KNOWN = {
    **PEER_COLOURS,
    # copy directions
    "h2d": "#1f77b4", "d2h": "#ff7f0e", "bidir": "#2ca02c", "d2d": "#d62728",
    # collectives, as nccl-tests names them
    "all_reduce": "#1f77b4", "all_gather": "#ff7f0e", "reduce_scatter": "#2ca02c", "broadcast": "#d62728",
    "alltoall": "#9467bd", "sendrecv": "#8c564b",
    # memory over time (as doctor.py draws it)
    "reserved": "#1f77b4", "allocated": "#ff7f0e",
    # sizes' distributions
    "fixed": "#8c564b", "uniform": "#1f77b4", "log_uniform": "#ff7f0e", "pow2": "#2ca02c", "bimodal": "#d62728",
}
# For every other name: colours none of KNOWN uses (Dark2, then tab10's and tab20b's others), the most distinct
# first.
SPARE = [c for c in ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#17becf", "#666666",
                     "#a6761d", "#bcbd22", "#393b79", "#e377c2", "#637939", "#843c39", "#7b4173", "#5254a3",
                     "#8ca252", "#bd9e39", "#ad494a", "#a55194", "#7f7f7f", "#8c6d31")
         if c not in PEER_COLOURS.values()]


class Colours:
    """A page's colour per series name (Note [Series colours])."""

    def __init__(self) -> None:
        self._given: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name in KNOWN:
            return KNOWN[name]
        if name not in self._given:
            self._given[name] = SPARE[len(self._given) % len(SPARE)]
        return self._given[name]


def figure_html(fig: Any, alt: str) -> str:
    """The figure as an embedded PNG (the page stands alone); the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def size_tick(n: float) -> str:
    """A tick's size: 512 MiB, 1.5 GiB (its digits as few as it needs)."""
    div, unit = next(((d, u) for d, u in ((1 << 40, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB"))
                      if abs(n) >= d), (1, "B"))
    return f"{n / div:g} {unit}"


def si_tick(v: float) -> str:
    """A tick's number: 1, 10, 1,000, 500 k, 2.5 M (its digits as few as it needs)."""
    prefix, div = next(((p, d) for p, d in (("G", 1e9), ("M", 1e6), ("k", 1e3)) if abs(v) >= max(d, 1e4)), ("", 1))
    return f"{v / div:,g}{' ' + prefix if prefix else ''}"


def log_labels(axis: Any) -> None:
    """A log axis labelled 1, 10, 1,000, 100 k, 10 M rather than 10^0, 10^1."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: si_tick(v)))


def bytes_labels(axis: Any) -> None:
    """A linear axis of bytes with ticks at multiples of a power of two (0, 512 MiB, 1 GiB, 1.5 GiB): matplotlib's
    locators step by powers of ten."""
    from matplotlib.ticker import FuncFormatter, Locator

    class BinaryLocator(Locator):
        def __call__(self) -> list[float]:
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin: float, vmax: float) -> list[float]:
            step = 2.0 ** math.ceil(math.log2(max(vmax - vmin, 1.0) / 6))
            first = math.floor(vmin / step)
            return [(first + i) * step for i in range(int((vmax - vmin) / step) + 2)]

    axis.set_major_locator(BinaryLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: size_tick(v)))


def value_labels(axis: Any, unit: str) -> None:
    """A linear axis of a metric's values, labelled as the page writes them (bytes in KiB-GiB, 2 M for ops/s)."""
    from matplotlib.ticker import FuncFormatter

    if unit in BYTE_UNITS and unit != "bytes":
        unit = "bytes"  # drawn in bytes: see quantity
    if unit == "bytes":
        bytes_labels(axis)
    elif unit in COUNTED_UNITS:
        axis.set_major_formatter(FuncFormatter(lambda v, _: si_tick(v)))


def bytes_axis(ax: Any, ticks: list[float] | None = None, which: str = "x") -> None:
    """A log2 axis of sizes (x or y) labelled 4 KiB, 1 MiB, 1 GiB (at `ticks`, where given)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    getattr(ax, f"set_{which}scale")("log", base=2)
    axis = ax.xaxis if which == "x" else ax.yaxis
    if ticks:
        axis.set_ticks(ticks)
    axis.set_major_formatter(FuncFormatter(lambda v, _: size_tick(v)))
    axis.set_minor_formatter(NullFormatter())


Point = tuple[float, float, "tuple[float, float] | None"]  # x, median, (p10, p90) where several samples


def draw_lines(ax: Any, label: str, points: list[Point], colour: str, **style: Any) -> None:
    """One series: its medians joined, and its p10-p90 band where the points had several samples."""
    points = sorted(points, key=lambda p: p[0])
    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=label, color=colour, **style)
    banded = [p for p in points if p[2] is not None]
    if banded:
        ax.fill_between([p[0] for p in banded], [p[2][0] for p in banded], [p[2][1] for p in banded],
                        alpha=0.2, color=colour, linewidth=0)


def size_ticks(ax: Any, sizes: set[float]) -> None:
    bytes_axis(ax, sorted(sizes))
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)


def table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """An HTML table of text cells (escaped here); `classes` marks rows (pass, fail, skip)."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = ""
    for i, row in enumerate(rows):
        mark = f" class='{html.escape(classes[i])}'" if classes and classes[i] else ""
        body += f"<tr{mark}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
    return f"<table><tr>{th}</tr>{body}</table>"


def section(title: str, sentence: str, body: str) -> str:
    """A section of the page: a short title, one plain sentence of what it shows, then its figures."""
    return f"<h2>{html.escape(title)}</h2><p class='what'>{html.escape(sentence)}</p>{body}"


# Note [Headline metrics]. Each row names its headline metric ("headline": the figure its section draws and a person
# quotes first), which memstress chose from its workload's headline metrics (WorkloadDef::headline, harness/run/
# workload.hpp). A row of an older file, which names none, heads with the first of its workload's headline metrics
# that it measured, as `memstress list --format json` gives them (..registry); a row of a workload the registry does
# not know, with its first higher-is-better rate (a unit per second), else its first metric by name.


def headline(row: dict) -> tuple[str, dict] | None:
    """(name, metric) of a row's headline metric (Note [Headline metrics]); None where it measured nothing."""
    metrics = {name: m for name in sorted(row.get("metrics") or {}) if (m := metric(row, name))}
    named = row.get("headline")
    for name in (named,) if isinstance(named, str) and named in metrics else registry.headline_names(
            str(row.get("workload"))):
        if name in metrics:
            return name, metrics[name]
    rates = [n for n, m in metrics.items() if m.get("better") == "higher" and "/s" in str(m.get("unit"))]
    first = rates[0] if rates else next(iter(metrics), None)
    return (first, metrics[first]) if first else None


# Runs read from their JSON Lines stream (inputs.py, load_stream) -------------------------------------------

STREAM_NOTE = "_report_stream"  # what load_stream saw, kept in the run document it makes


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
