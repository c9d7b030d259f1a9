"""The report's section of allocator micro-benchmarks (memstress_bench's Google Benchmark JSON): alloc+free pair
latency against size per allocator, and the threads' scaling. Imported by __main__.py."""

from __future__ import annotations

import html
from collections import defaultdict

from .common import (
    Colours,
    draw_lines,
    figure_html,
    log_labels,
    section,
    size_text,
    size_ticks,
)


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
