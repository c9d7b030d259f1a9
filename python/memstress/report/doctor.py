"""The report's section for `memstress doctor` documents (memstress.doctor/1): what `memstress doctor
--format html` draws. Imported by the report's __main__.py, which owns the page and its errors.

For each document, named by the snapshot it diagnosed: the figures of what the program needed; reserved and
allocated bytes over time (the replay under the program's own setting) with the peak and the OOM marked; the
sites holding the memory at the peak as one stacked bar; the OOM's verdict; the settings table at each capacity;
the floors between steps with their fitted line and the sites that grow. Each part ends with the text's own
"->" sentences (the document's "advice"), so that the page says what `memstress doctor` says, in its words.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIB = 1 << 20


def human(n: float) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{int(n)} bytes"


def table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def advice(doc: dict, section: str) -> str:
    """The text's "->" sentences of the section whose heading starts with `section`."""
    said = [a["text"] for a in doc.get("advice") or [] if str(a.get("section", "")).startswith(section)]
    return "".join("<p class='advice'>-&gt; " + html.escape(text).replace("\n", "<br>") + "</p>" for text in said)


def conf_name(row: dict) -> str:
    if row.get("allocator") == "direct":
        return "direct (cudaMalloc per allocation, for reference)"
    return row.get("pytorch_alloc_conf") or "(PyTorch's defaults)"


def _timeline(doc: dict, figure_html: Callable[[Any, str], str]) -> str:
    import matplotlib.pyplot as plt

    timeline = doc.get("timeline") or {}
    cols = {c: i for i, c in enumerate(timeline.get("columns") or [])}
    points = timeline.get("points") or []
    if not points or not {"time_ns", "allocated", "reserved"} <= set(cols):
        return ""
    needed = doc["needed"]
    start = needed.get("start_ns", 0)
    xs = [(p[cols["time_ns"]] - start) / 1e9 for p in points]
    fig, ax = plt.subplots(figsize=(10, 3.8))
    ax.plot(xs, [p[cols["reserved"]] / MIB for p in points], label="reserved", color="C0")
    ax.plot(xs, [p[cols["allocated"]] / MIB for p in points], label="allocated", color="C1")
    ax.axvline(needed["peak_time_ns"] / 1e9, color="C2", linestyle="--", label="peak (most live at once)")
    oom = doc.get("oom")
    if oom:
        ax.axvline((oom["at"]["time_ns"] - start) / 1e9, color="C3", linestyle="-", label="the OOM")
    for cap in doc.get("capacities") or []:
        ax.axhline(cap / MIB, color="grey", linestyle=":", label=f"capacity {human(cap)}")
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel("MiB")
    ax.set_title(f"reserved and allocated under {conf_name(doc['setting'])}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return figure_html(fig, "reserved and allocated over time")


def _sites_bar(doc: dict, figure_html: Callable[[Any, str], str]) -> str:
    import matplotlib.pyplot as plt

    sites = (doc.get("at_peak") or {}).get("sites") or []
    if not sites:
        return ""
    fig, ax = plt.subplots(figsize=(10, 1.9 + 0.18 * len(sites)))
    left = 0.0
    for i, s in enumerate(sites):
        ax.barh([0], [s["bytes"] / MIB], left=[left], color=f"C{i % 10}", label=f"{s['name']} ({human(s['bytes'])})")
        left += s["bytes"] / MIB
    ax.set_yticks([])
    ax.set_xlabel("MiB live at the peak")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=2)
    return figure_html(fig, "live bytes at the peak by site")


def _floors(doc: dict, figure_html: Callable[[Any, str], str]) -> str:
    import matplotlib.pyplot as plt

    growth = doc.get("growth") or {}
    floors = growth.get("floors") or []
    if len(floors) < 2:
        return ""
    fit = growth["fit"]
    ks = list(range(len(floors)))
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.plot(ks, [f["bytes"] / MIB for f in floors], marker="o", linestyle="", label="floor between steps")
    ax.plot(ks, [(fit["intercept"] + fit["slope_per_step"] * k) / MIB for k in ks], color="C3",
            label=f"Theil-Sen: {human(fit['slope_per_step'])}/step")
    ax.set_xlabel("step")
    ax.set_ylabel("MiB")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return figure_html(fig, "floors between steps")


def section_doctor(doctors: list[tuple[str, dict]], figure_html: Callable[[Any, str], str]) -> str:
    out = ""
    for name, doc in doctors:
        source = doc["input"]
        needed = doc["needed"]
        out += f"<h2>memstress doctor: {html.escape(Path(source.get('path', name)).name)}</h2>"
        out += (f"<p>{html.escape(source.get('source', ''))}, {html.escape(source.get('device', ''))}; ran with "
                f"{html.escape(conf_name(doc['setting']))} ({html.escape(doc.get('setting_origin', ''))}); "
                f"capacity judged: {', '.join(human(c) for c in doc.get('capacities') or []) or '-'}</p>")
        out += "<h3>What it needed</h3>" + table(["figure", "value"], [
            ["peak allocated", human(needed["peak_allocated"])],
            ["peak reserved (replayed)", human(needed["peak_reserved"])],
            ["peak reserved (recorded)",
             human(needed["recorded_peak_reserved"]) if needed.get("recorded_peak_reserved") is not None else "-"],
            ["reserved - allocated at the peak", human(needed["reserved_minus_allocated_at_peak"])],
            ["utilization", f"{needed['utilization']:.3f}"],
            ["external fragmentation at the peak", "-" if needed.get("external_fragmentation_at_peak") is None
             else f"{needed['external_fragmentation_at_peak']:.3f}"],
            ["the peak", f"event {needed['peak_event']} of {needed['events']}"],
        ]) + advice(doc, "What it needed") + _timeline(doc, figure_html)
        out += ("<h3>Who holds the memory at the peak</h3>" + _sites_bar(doc, figure_html)
                + advice(doc, "Who holds the memory"))
        oom = doc.get("oom")
        if oom:
            cause = {"not_reproduced": "not reproduced (the replay under the setting it ran with grants it)"}.get(
                oom.get("cause"), oom.get("cause") or "not judged (no limit known)")
            granted = [conf_name(s) for s in oom.get("would_grant") or [] if s.get("allocator") != "direct"]
            limit = oom.get("limit") or {}
            named = oom.get("named")
            out += "<h3>The OOM</h3>" + table(["figure", "value"], [
                ["request", human(oom["at"]["request"])],
                ["limit in force", f"{human(limit['bytes'])} ({limit.get('origin', '')})" if limit else "unknown"],
                ["reserved then (replayed)", human(oom["reserved"])],
                ["allocated then (replayed)", human(oom["allocated"])],
                ["largest free block", "-" if oom.get("largest_free_block") is None else human(oom["largest_free_block"])],
                ["cause", cause], ["setting that avoids it", conf_name(named) if named else "none"],
                ["settings that grant it", "; ".join(granted[:6]) or "none"],
            ]) + advice(doc, "The OOM")
        elif advice(doc, "The OOM"):  # none, or only refusals it went on after: said so
            out += "<h3>The OOM</h3>" + advice(doc, "The OOM")
        settings = doc.get("settings") or {}
        caps = doc.get("capacities") or []
        rows = []
        fits = "fits to the OOM" if oom else "fits"  # a recording that ends in an OOM fits only as far as it goes
        for i, row in enumerate(settings.get("rows") or []):
            verdicts = [fits if v["fits"] else f"OOM at event {v['oom']['event']}" if v.get("oom") else "OOM"
                        for v in row.get("capacities") or []]
            mark = " (ran with)" if settings.get("recorded") == i else ""
            mark += " (recommended)" if settings.get("recommended") == i else ""
            rows.append([str(i + 1), conf_name(row) + mark, human(row["peak_reserved"]), f"{row['utilization']:.3f}",
                         *verdicts])
        out += "<h3>Settings</h3>" + table(["rank", "PYTORCH_CUDA_ALLOC_CONF", "peak reserved", "utilization",
                                             *[f"at {human(c)}" for c in caps]], rows) + advice(doc, "Settings")
        out += advice(doc, "Other allocators")
        growth = doc.get("growth") or {}
        fit = growth.get("fit") or {}
        verdict = "memory grows step after step" if growth.get("grows", fit.get("growing")) else "no growth"
        steps = growth.get("steps", "steps")  # Note [Steps are what repeats], harness/doctor/growth.hpp
        if "advice" in doc:  # the text's own sentences
            every = f", a step every {growth['step_requests']} requests" if growth.get("step_requests") else ""
            floors = f"<p>{len(growth.get('floors') or [])} floors between steps{every}.</p>" if growth.get("judged") \
                else ""
            out += "<h3>Growth</h3>" + floors + advice(doc, "Growth")
        elif steps == "no_repeat":
            out += ("<h3>Growth</h3><p>Not judged: no loop of five or more alike steps covers half the "
                    "recording.</p>")
        elif steps == "keeps_much" and not growth.get("judged", False):
            why = "the recording ends in an OOM" if growth.get("ends_at_oom") else "most of it"
            out += (f"<h3>Growth</h3><p>Not judged: the requests repeat every {growth['step_requests']} allocations "
                    f"and frees, but each repeat keeps much of what it takes ({why}): the layers of one pass, or a "
                    "leak of that much a step.</p>")
        else:
            every = f", a step every {growth['step_requests']} requests" if growth.get("step_requests") else ""
            out += f"<h3>Growth</h3><p>{len(growth.get('floors') or [])} floors between steps{every}: {verdict}.</p>"
            if steps == "keeps_much":
                out += (f"<p>Each step keeps {human(growth['kept_per_step'])} of the {human(growth['rise_per_step'])} "
                        "it takes and gives back the rest, and the recording ends in no OOM: a leak, or memory kept "
                        "on purpose (a cache that fills, results gathered on the GPU).</p>")
            if growth.get("ends_in_the_loop") and growth.get("grows"):
                out += ("<p>The recording ends in an OOM inside the repeats: were they the layers of the pass that ran "
                        "out rather than steps, this would be no leak.</p>")
        out += _floors(doc, figure_html)
        growing = growth.get("sites") or []
        if growing:
            out += table(["site that grows", "per step", "first floor", "last floor"],
                         [[g["name"], human(g["fit"]["slope_per_step"]), human(g["first"]), human(g["last"])]
                          for g in growing])
    return out
