#!/usr/bin/env python3
"""The tables of scripts/lab/gpu-nccl-tests: memstress's collectives beside nccl-tests, size by size.

    python3 scripts/lab/nccl_tests_table.py OUTDIR > OUTDIR/TABLE.md
    python3 scripts/lab/nccl_tests_table.py --repeat OUTDIR1 OUTDIR2 > REPEAT.md
    python3 scripts/lab/nccl_tests_table.py --beside OUTDIR MODE TIMING NAME... > BESIDE.md

OUTDIR holds nccl-tests' outputs (nccl-tests-<collective>-host.txt, -graph.txt: several lines per size, from
-N) and memstress's results: memstress-collectives-ncclmem.json (buffers from ncclMemAlloc, as nccl-tests
has them: timing=graph and graph_each, and host where it ran there too) with memstress-collectives-ncclmem-host.json
(timing=host in a run of its own), and memstress-collectives.json (buffers from memstress's shared allocator: host,
graph and events) with memstress-collectives-graph.json (graph, in a run of its own), where they are. For each collective and size: nccl-tests' median out-of-place time and busbw over
its lines, memstress's median (and p99) over its repetitions measured the same way, and their ratios; then
memstress's own figures beside them. A results file may be stored xz-compressed (NAME.json.xz). Then NCCL's memory: nccl-tests -M's line
and memstress's nccl_memory figures (memstress-nccl-memory-*.json). nccl-tests' outputs may be stored xz-compressed
too (NAME.txt.xz). With --repeat, two such folders of the
same commands on the same GPUs, one after the other: how far each tool repeats itself from one to the next,
per collective and timing mode, below and from 4 MiB. With --beside, nccl-tests' MODE (host or graph) outputs in
OUTDIR beside memstress's TIMING rows of each NAME.json there, size by size: the same timing in several runs
set side by side (memstress runs in different orders or environments). Exit 2 when an input cannot be read.
"""

from __future__ import annotations

import lzma
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from memstress import _json  # noqa: E402
from memstress.report import common as report_common  # noqa: E402

COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv"]
MODES = ["host", "graph"]
TOLERANCE = 0.03  # the target: within 3% at every size
LARGE = 4 << 20  # from here on, nccl-tests repeats itself within about 2% from one run to the next
SPREADS = ("host time", "host busbw", "graph time", "host time from 4 MiB", "graph time from 4 MiB")
EACH = "graph_each time"  # where memstress also ran timing=graph_each (nccl-tests' -G 1 as it does it)


class BadInput(Exception):
    """An input file that cannot be read as what it should be."""


def size_bytes(text: str) -> int:
    """memstress's canonical size ("8B", "4K", "64M") in bytes."""
    try:
        return int(report_common.parse_size(text))
    except ValueError:
        raise BadInput(f"not a size: {text!r}") from None


def stored_as(path: Path) -> Path:
    """The file a read of PATH reads: PATH, or, where only that exists, PATH.xz."""
    packed = path.with_name(path.name + ".xz")
    return packed if not path.exists() and packed.exists() else path


def stored(path: Path) -> bool:
    """Whether a results file is there, as PATH or as PATH.xz."""
    return stored_as(path).exists()


def text_of(path: Path) -> tuple[str, Path]:
    """An output's text, from PATH or, where only that exists, PATH.xz; and the file it was read from."""
    read = stored_as(path)
    if not read.is_file():
        raise BadInput(f"{path}: missing")
    if read == path:
        return path.read_text(errors="replace"), path
    try:
        return lzma.decompress(read.read_bytes()).decode(errors="replace"), read
    except lzma.LZMAError as e:
        raise BadInput(f"{read}: {e}") from None


def nccl_tests_lines(path: Path) -> dict[int, dict[str, list[float]]]:
    """Per size (nccl-tests' size column), the out-of-place time (us) and busbw (GB/s) of every line."""
    out: dict[int, dict[str, list[float]]] = {}
    text, path = text_of(path)
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 13 or not cols[0].isdigit():
            continue
        try:
            time_us, busbw, wrong = float(cols[5]), float(cols[7]), cols[8]
        except ValueError:
            continue
        if wrong not in ("0", "N/A"):
            raise BadInput(f"{path}: nccl-tests found {wrong} wrong elements at size {cols[0]}")
        entry = out.setdefault(int(cols[0]), {"time": [], "busbw": []})
        entry["time"].append(time_us)
        entry["busbw"].append(busbw)
    if not out:
        raise BadInput(f"{path}: no result lines")
    return out


def memstress_rows(path: Path) -> list[dict]:
    """Rank 0's passed rows of a results document, read from PATH or, where only that exists, PATH.xz."""
    read = stored_as(path)
    try:
        rows = [r for r in _json.passed_rows(path) if r.get("rank", 0) == 0]
    except ValueError as e:
        message = str(e)
        raise BadInput(message if message.startswith(str(read)) else f"{read}: {message}") from None
    for r in rows:
        p, m = r.get("params"), r.get("metrics")
        if not isinstance(p, dict) or not isinstance(m, dict):
            raise BadInput(f"{read}: a row without params and metrics: {str(r)[:80]}")
        if r.get("workload") == "collectives":
            if not all(isinstance(p.get(k), str) for k in ("collective", "bytes")):
                raise BadInput(f"{read}: a collectives row without its collective and bytes: {p}")
            try:
                size_bytes(p["bytes"])
            except BadInput as e:
                raise BadInput(f"{read}: {e}") from None
    return rows


def settings(rows: list[dict]) -> str:
    """How memstress's rows on ncclMemAlloc buffers placed their collectives (rotate, l2), as they say."""
    seen = sorted(
        {
            (p.get("rotate", "0B"), p.get("l2", "warm"))
            for p in (r.get("params", {}) for r in rows)
            if p.get("buffers") == "ncclmem"
        }
    )
    return ", ".join(f"rotate={rotate} l2={l2}" for rotate, l2 in seen) or "-"


def within(values: list[float]) -> int:
    """How many of memstress / nccl-tests - 1 lie within the target."""
    return sum(1 for v in values if abs(v) <= TOLERANCE + 1e-12)


def collectives_index(rows: list[dict]) -> dict[tuple[str, str, str, int], dict]:
    """(buffers, collective, timing, bytes) -> the row's metrics."""
    index = {}
    for r in rows:
        p = r.get("params", {})
        if r.get("workload") != "collectives" or p.get("place") != "out" or p.get("pressure") != "none":
            continue
        key = (p.get("buffers", "allocator"), p["collective"], p.get("timing", "events"), size_bytes(p["bytes"]))
        index[key] = r["metrics"]
    return index


def human(n: int) -> str:
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {suffix}iB"
    return f"{n} B"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b > 0 and not math.isnan(a) else "-"


def has_each(index: dict) -> bool:
    """Whether memstress ran timing=graph_each on ncclMemAlloc buffers."""
    return any(key[0] == "ncclmem" and key[2] == "graph_each" for key in index)


def median_of(index: dict, key: tuple, metric: str = "time", stat: str = "median") -> float:
    return index.get(key, {}).get(metric, {}).get(stat, float("nan"))


def collective_table(name: str, outdir: Path, index: dict) -> tuple[list[str], dict[str, list[float]]]:
    each = has_each(index)
    lines = [
        f"### {name}",
        "",
        "| size | nccl-tests (us) | memstress host (us) | ratio | nccl-tests busbw | memstress busbw | ratio "
        "| nccl-tests -G 1 (us) | memstress graph (us) | ratio "
        + ("| memstress graph_each (us) | ratio " if each else "")
        + "| memstress host p99 (us) | allocator: host (us) | graph (us) | events (us) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: | ---: |" if each else ""),
    ]
    spread: dict[str, list[float]] = {key: [] for key in SPREADS + ((EACH,) if each else ())}
    host = nccl_tests_lines(outdir / f"nccl-tests-{name}-host.txt")
    graph_file = outdir / f"nccl-tests-{name}-graph.txt"
    graph = nccl_tests_lines(graph_file) if stored(graph_file) else {}
    for size in sorted(host):
        same = ("ncclmem", name, "host", size)
        if size == 0 or same not in index:
            continue
        nt_t = statistics.median(host[size]["time"])
        nt_b = statistics.median(host[size]["busbw"])
        nt_g = statistics.median(graph[size]["time"]) if size in graph else float("nan")
        t, b = median_of(index, same), median_of(index, same, "busbw")
        g = median_of(index, ("ncclmem", name, "graph", size))
        spread["host time"].append(t / nt_t - 1)
        if size >= LARGE:
            spread["host time from 4 MiB"].append(t / nt_t - 1)
        if nt_b > 0:
            spread["host busbw"].append(b / nt_b - 1)
        if not (math.isnan(nt_g) or math.isnan(g)):
            spread["graph time"].append(g / nt_g - 1)
            if size >= LARGE:
                spread["graph time from 4 MiB"].append(g / nt_g - 1)
        own = [median_of(index, ("allocator", name, mode, size)) for mode in ("host", "graph", "events")]
        fresh = ""
        if each:
            e = median_of(index, ("ncclmem", name, "graph_each", size))
            fresh = f"| {e:.2f} | {ratio(e, nt_g)} "
            if not (math.isnan(nt_g) or math.isnan(e)):
                spread[EACH].append(e / nt_g - 1)
        lines.append(
            f"| {human(size)} | {nt_t:.2f} | {t:.2f} | {ratio(t, nt_t)} | {nt_b:.2f} | {b:.2f} | {ratio(b, nt_b)} "
            f"| {nt_g:.2f} | {g:.2f} | {ratio(g, nt_g)} {fresh}| {median_of(index, same, 'time', 'p99'):.2f} "
            f"| {own[0]:.2f} | {own[1]:.2f} | {own[2]:.2f} |"
        )
    return lines, spread


def mib(metrics: dict, key: str) -> str:
    return f"{metrics[key]['median']:.1f}" if key in metrics else "-"


def memory_section(outdir: Path) -> list[str]:
    """nccl-tests -M's figures and memstress's nccl_memory; none where neither was run."""
    if not any(outdir.glob("nccl-tests-memory-*.txt*")) and not any(outdir.glob("memstress-nccl-memory-*.json*")):
        return []
    lines = ["## NCCL's memory", ""]
    for f in sorted({outdir / p.name.removesuffix(".xz") for p in outdir.glob("nccl-tests-memory-*.txt*")}):
        found = [line.strip("# ").strip() for line in text_of(f)[0].splitlines() if "GPU memory usage" in line]
        lines.append(
            f"- nccl-tests -M 1 ({f.stem.removeprefix('nccl-tests-memory-')}): "
            + (found[0] if found else "no memory line")
        )
    lines += [
        "",
        "| NCCL_BUFFSIZE | channels | context | comm_init | init (ms) | first all_reduce | first alltoall "
        "| comm_total | left after destroy | cycle growth |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for f in sorted({outdir / p.name.removesuffix(".xz") for p in outdir.glob("memstress-nccl-memory-*.json*")}):
        if f.suffix != ".json":
            continue  # a .jsonl stream
        for r in memstress_rows(f):
            if r.get("workload") != "nccl_memory":
                continue
            m = r["metrics"]
            lines.append(
                f"| {f.stem.removeprefix('memstress-nccl-memory-')} | {r['params']['channels']} | {mib(m, 'context')} "
                f"| {mib(m, 'comm_init')} | {mib(m, 'comm_init_time')} | {mib(m, 'first_all_reduce')} "
                f"| {mib(m, 'first_alltoall')} | {mib(m, 'comm_total')} | {mib(m, 'left_after_destroy')} "
                f"| {mib(m, 'cycle_growth')} |"
            )
    lines.append("")
    lines.append(
        "memstress's figures are MiB per GPU (init: milliseconds), medians over the repetitions on rank 0; each "
        "first_X is what X added after the collectives before it (all_reduce, all_gather, reduce_scatter, "
        "broadcast, alltoall, sendrecv)."
    )
    return lines


def rows_of(outdir: Path, *names: str) -> list[dict]:
    """The rows of those of the results files NAMES that are in OUTDIR."""
    return [row for name in names if stored(outdir / name) for row in memstress_rows(outdir / name)]


def own_rows(outdir: Path) -> list[dict]:
    """memstress's own figures (buffers from its allocator), where that step ran."""
    return rows_of(outdir, "memstress-collectives.json", "memstress-collectives-graph.json")


def sweep_section(outdir: Path) -> list[str]:
    """The collectives' tables; none where the sweep was not run (no memstress-collectives-ncclmem.json)."""
    if not stored(outdir / "memstress-collectives-ncclmem.json"):
        return []
    theirs = rows_of(outdir, "memstress-collectives-ncclmem.json", "memstress-collectives-ncclmem-host.json")
    index = collectives_index(theirs + own_rows(outdir))
    keys = SPREADS + ((EACH,) if has_each(index) else ())
    summary = [
        "## memstress beside nccl-tests, out of place",
        "",
        "| collective | host time | host busbw | graph time | host time, from 4 MiB | graph time, from 4 MiB | "
        + ("graph_each time | " if EACH in keys else "")
        + f"within ±{TOLERANCE:.0%}: host, graph"
        + (", graph_each" if EACH in keys else "")
        + " | sizes |",
        "| --- | --- | --- | --- | --- | --- | " + ("--- | " if EACH in keys else "") + "--- | ---: |",
    ]
    body: list[str] = []
    for name in COLLECTIVES:
        lines, spread = collective_table(name, outdir, index)
        body += lines + [""]
        cells = []
        for key in keys:
            v = spread[key]
            cells.append(f"{min(v):+.1%} … {max(v):+.1%} (median {statistics.median(v):+.1%})" if v else "-")
        counts = ", ".join(str(within(spread[key])) for key in ("host time", "graph time") + keys[len(SPREADS) :])
        summary.append(f"| {name} | " + " | ".join(cells) + f" | {counts} | {len(spread['host time'])} |")
    summary += [
        "",
        "Each cell: the range (and median) of memstress / nccl-tests - 1 of the time (of busbw in its column) over "
        "the sizes, both with buffers"
        f" from ncclMemAlloc (the target: within ±{TOLERANCE:.0%}); memstress's rows there ran with "
        f"{settings(theirs)}.",
        "",
    ]
    return summary + body


def change(values: list[float]) -> str:
    return f"{statistics.median(values):+.1%} ({min(values):+.1%} … {max(values):+.1%})" if values else "-"


def repeat_section(first: Path, second: Path) -> list[str]:
    """Per collective and timing mode: second / first - 1 of each tool's median time, size by size."""
    ours = [
        collectives_index(rows_of(d, "memstress-collectives-ncclmem.json", "memstress-collectives-ncclmem-host.json"))
        for d in (first, second)
    ]
    lines = [
        "## Each tool against itself, one run after the other",
        "",
        f"Second run / first - 1 of the median time at each size: median (range) over the sizes; `{first.name}` "
        f"then `{second.name}`, the same commands on the same GPUs. Both tools with buffers from ncclMemAlloc.",
        "",
        "| collective | mode | nccl-tests, 8 B - 2 MiB | memstress, 8 B - 2 MiB | nccl-tests, 4 - 64 MiB "
        "| memstress, 4 - 64 MiB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in COLLECTIVES:
        for mode in MODES:
            theirs = [nccl_tests_lines(d / f"nccl-tests-{name}-{mode}.txt") for d in (first, second)]
            cells = {key: [] for key in ("nt small", "ms small", "nt large", "ms large")}
            for size in sorted(set(theirs[0]) & set(theirs[1]) - {0}):  # nccl-tests' 0-byte lines move no data
                band = "large" if size >= LARGE else "small"
                a, b = (statistics.median(t[size]["time"]) for t in theirs)
                cells[f"nt {band}"].append(b / a - 1)
                x, y = (median_of(index, ("ncclmem", name, mode, size)) for index in ours)
                if not (math.isnan(x) or math.isnan(y)):
                    cells[f"ms {band}"].append(y / x - 1)
            lines.append(f"| {name} | {mode} | " + " | ".join(change(v) for v in cells.values()) + " |")
    return lines


def beside_section(outdir: Path, mode: str, timing: str, names: list[str]) -> list[str]:
    """nccl-tests' MODE beside memstress's TIMING rows of each NAME.json, per collective and size."""
    runs = {name: collectives_index(memstress_rows(outdir / f"{name}.json")) for name in names}
    present = [c for c in COLLECTIVES if stored(outdir / f"nccl-tests-{c}-{mode}.txt")]
    if not present:
        raise BadInput(f"{outdir}: no nccl-tests-<collective>-{mode}.txt")
    summary = [
        f"## memstress's timing={timing} beside nccl-tests' {mode} timing, run by run",
        "",
        "Each cell: memstress / nccl-tests - 1 of the median time, its median over the sizes (range), and the sizes "
        f"within ±{TOLERANCE:.0%}. Buffers from ncclMemAlloc on both sides.",
        "",
        "| collective | sizes | " + " | ".join(f"`{n}`" for n in names) + " |",
        "| --- | ---: |" + " --- |" * len(names),
    ]
    body = []
    for c in present:
        theirs = nccl_tests_lines(outdir / f"nccl-tests-{c}-{mode}.txt")
        sizes = sorted(set(theirs) - {0})  # nccl-tests' 0-byte lines move no data
        ratios = {n: [] for n in names}
        rows = []
        for size in sizes:
            reference = statistics.median(theirs[size]["time"])
            cells = [human(size), f"{reference:.2f}"]
            for n in names:
                ours = median_of(runs[n], ("ncclmem", c, timing, size))
                cells += [f"{ours:.2f}", ratio(ours, reference)]
                if not math.isnan(ours) and reference > 0:
                    ratios[n].append(ours / reference - 1)
            rows.append("| " + " | ".join(cells) + " |")
        summary.append(f"| {c} | {len(sizes)} | "
                       + " | ".join(f"{change(ratios[n])}, {within(ratios[n])}" for n in names) + " |")
        body += ["", f"### {c}", "", "| size | nccl-tests (us) | " + " | ".join(f"`{n}` (us) | ratio" for n in names)
                 + " |", "| ---: | ---: |" + " ---: | ---: |" * len(names), *rows]
    return summary + body


def emit(make) -> int:
    """Prints the lines `make()` returns (0), or the input it could not read (2)."""
    try:
        print("\n".join(make()))
    except BadInput as e:
        print(f"nccl_tests_table.py: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "--beside":
        if len(argv) < 6 or argv[3] not in MODES or argv[4] not in ("host", "graph", "graph_each", "events"):
            print("nccl_tests_table.py: --beside OUTDIR MODE TIMING NAME...: MODE host or graph, TIMING host, "
                  "graph, graph_each or events, and at least one NAME", file=sys.stderr)
            return 2
        return emit(lambda: beside_section(Path(argv[2]), argv[3], argv[4], argv[5:]))
    if len(argv) == 4 and argv[1] == "--repeat":
        return emit(lambda: repeat_section(Path(argv[2]), Path(argv[3])))
    if len(argv) != 2:
        print("\n".join(line.strip() for line in __doc__.strip().splitlines()[2:5]), file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    if not outdir.is_dir():
        print(f"nccl_tests_table.py: {outdir}: not a directory", file=sys.stderr)
        return 2
    return emit(lambda: sweep_section(outdir) + memory_section(outdir))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
