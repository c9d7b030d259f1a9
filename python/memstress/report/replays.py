"""The report's section of replays (memstress.replay/1): reserved and allocated bytes over the trace. Imported by
__main__.py."""

from __future__ import annotations

from pathlib import Path

from .common import (
    Colours,
    bytes_labels,
    figure_html,
    section,
)


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
