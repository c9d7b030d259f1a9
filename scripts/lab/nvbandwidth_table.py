#!/usr/bin/env python3
"""memstress's copy figures beside NVIDIA's nvbandwidth, path by path, on the same GPUs.

    python3 scripts/lab/nvbandwidth_table.py OUTDIR > OUTDIR/TABLE.md

OUTDIR holds what scripts/lab/gpu-nvbandwidth wrote: `nvbandwidth.txt` (nvbandwidth's printed matrices, one per
testcase; or `nvbandwidth.json` from `nvbandwidth -j`),
`memstress-p2p.json` (`memstress run p2p` in one process: the peer matrix), `memstress-transfers-in-turn.json`
(`mpirun -np N memstress run transfers --in-turn transfers`: each GPU's host path alone) and
`memstress-transfers-together.json` (the same without --in-turn: every GPU at once). A results file may be
stored xz-compressed (NAME.json.xz). The memstress runs use nvbandwidth's buffer size.

For each nvbandwidth testcase with a memstress counterpart: the median over its entries (GPU pairs, or GPUs)
of each tool's GB/s, and memstress / nvbandwidth - 1 per entry (median and range), against the 2 % target.
How the two count (nvbandwidth v0.8): entry [i][j] of a device-to-device testcase is a copy between GPU i
(the row, whose context runs it) and GPU j: GPU i's data into GPU j for `write`, GPU j's data into GPU i
for `read` (whatever its printed arrow says). Its bidirectional testcases print three matrices, each
direction and `_total`, the two at once, which is what memstress's bidir counts. Its host bidirectional
copy-engine testcases report the one direction they are named after while the other runs (moving twice the
bytes); its SM ones run both directions in one split-warp kernel and report half its total. Each is set beside
memstress's figure for that direction (h2d_GB/s, d2h_GB/s: by copy engine, each timed while the other moves
twice its bytes, as nvbandwidth's), and their sum beside both its GB/s of both over one window and the sum of
its two directions' figures.
Exit 2 when an input cannot be read.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from memstress import _json  # noqa: E402
from memstress.report import common as report_common  # noqa: E402

TOLERANCE = 0.02  # the target: within 2 % on every path
MIB = 1 << 20

# nvbandwidth's device-to-device testcases: (engine, access, direction) of memstress's p2p case.
PEER = {
    f"device_to_device_{bidir}memcpy_{access}_{engine}": (engine, access, "bidir" if bidir else "uni")
    for bidir in ("", "bidirectional_")
    for access in ("write", "read")
    for engine in ("ce", "sm")
}
# nvbandwidth's host testcases: (memstress transfers direction and metric, engine, all GPUs at once), the
# testcases whose entries add up to it. bidir's GB/s (both directions over one window) and the sum of its
# h2d_GB/s and d2h_GB/s (by copy engine, each direction timed under the other's load; by SM, half of both)
# are set beside the sum of the two bidirectional testcases, and each direction's beside its testcase alone
# (suites/transfers.cpp, Note [Both ways at once]). A metric "A + B" is the sum of memstress's medians.
HOST = [
    (direction, metric, engine, together, names)
    for engine in ("ce", "sm")
    for together, h2d, d2h in ((False, "host_to_device", "device_to_host"), (True, "host_to_all", "all_to_host"))
    for direction, metric, names in (
        ("h2d", "GB/s", [f"{h2d}_memcpy_{engine}"]),
        ("d2h", "GB/s", [f"{d2h}_memcpy_{engine}"]),
        ("bidir", "GB/s", [f"{h2d}_bidirectional_memcpy_{engine}", f"{d2h}_bidirectional_memcpy_{engine}"]),
        *([("bidir", "h2d_GB/s + d2h_GB/s",  # by SM, GB/s itself
            [f"{h2d}_bidirectional_memcpy_{engine}", f"{d2h}_bidirectional_memcpy_{engine}"])] if engine == "ce" else []),
        ("bidir", "h2d_GB/s", [f"{h2d}_bidirectional_memcpy_{engine}"]),
        ("bidir", "d2h_GB/s", [f"{d2h}_bidirectional_memcpy_{engine}"]),
    )
]


class BadInput(Exception):
    """An input file that cannot be read as what it should be."""


def number(text: str) -> float:
    return math.nan if text == "N/A" else float(text)


def nvbandwidth_text(path: Path) -> dict[str, list[list[float]]]:
    """Per matrix printed whole, keyed as nvbandwidth's `SUM KEY total` line names it (the testcase's name, or
    NAME_total and the like for the three matrices of a bidirectional one): after `Running NAME.`, each
    matrix is a description, the column header, one line per row (a label, then a value or N/A per column),
    a blank line and its SUM line, which says it finished. One cut short (a timeout) has none and is left
    out."""
    matrices: dict[str, list[list[float]]] = {}
    name, rows, header = "", [], False
    for line in path.read_text(errors="replace").splitlines():
        cols = line.split()
        if line.startswith("Running ") and line.endswith("."):
            name, rows, header = line[len("Running "):-1], [], False
        elif not name:
            continue
        elif len(cols) >= 2 and cols[0] == "SUM" and (cols[1] == name or cols[1].startswith(name + "_")):
            if header and rows and all(len(r) == len(rows[0]) for r in rows):
                matrices[cols[1]] = rows
            rows, header = [], False
        elif "bandwidth (GB/s)" in line:
            rows, header = [], True
        elif header and cols and not rows and all(c.isdigit() for c in cols):
            continue  # the column indices
        elif header and len(cols) >= 2:
            try:
                rows.append([number(c) for c in cols[1:]])
            except ValueError:
                rows, header = [], False
    return matrices


def nvbandwidth_json(path: Path) -> dict[str, list[list[float]]]:
    """The same from `nvbandwidth -j`, which puts a bidirectional testcase's three matrices one under the
    other in one bandwidth_matrix: the last is its `_total`."""
    try:
        cases = _json.read_stored(path)["nvbandwidth"]["testcases"]
        matrices = {}
        for c in cases:
            if c.get("status") != "Passed" or "bandwidth_matrix" not in c:
                continue
            rows = [[number(str(v)) for v in row] for row in c["bandwidth_matrix"]]
            width = len(rows[0]) if rows else 0
            if width and len(rows) == 3 * width:
                matrices[c["name"] + "_total"] = rows[2 * width:]
            else:
                matrices[c["name"]] = rows
        return matrices
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise BadInput(f"{path}: not nvbandwidth -j output ({e})") from None


def nvbandwidth(outdir: Path) -> dict[str, list[list[float]]]:
    """Every finished matrix (NaN where nvbandwidth printed N/A), from nvbandwidth.txt or nvbandwidth.json."""
    if (outdir / "nvbandwidth.txt").is_file():
        matrices = nvbandwidth_text(outdir / "nvbandwidth.txt")
    else:
        matrices = nvbandwidth_json(outdir / "nvbandwidth.json")
    if not matrices:
        raise BadInput(f"{outdir}: no nvbandwidth testcase finished (nvbandwidth.txt or nvbandwidth.json)")
    return matrices


def rows_of(path: Path) -> list[dict]:
    """The passed rows of a memstress results document."""
    try:
        return _json.passed_rows(path)
    except ValueError as e:
        raise BadInput(f"{path}: {e}") from None


def params_match(row: dict, **want: str) -> bool:
    return all(row.get("params", {}).get(k) == v for k, v in want.items())


def size_of(row: dict) -> int:
    """The row's size in bytes; -1 where it names none (such a row matches nothing)."""
    try:
        return int(report_common.parse_size(row["params"]["bytes"]))
    except (KeyError, TypeError, ValueError):
        return -1


def median_gbs(row: dict, metric: str) -> float:
    m = row.get("metrics", {}).get(metric)
    return float(m["median"]) if m and m.get("median") is not None else math.nan


def peer_entries(name: str, matrices: dict, rows: list[dict], size: int) -> list[tuple[float, float]]:
    """(nvbandwidth, memstress) GB/s per GPU pair of one device-to-device testcase."""
    engine, access, direction = PEER[name]
    total = matrices.get(name + "_total")
    matrix = total or matrices.get(name)
    if matrix is None:
        return []
    row = next((r for r in rows if r.get("workload") == "p2p" and size_of(r) == size and params_match(
        r, measure="bandwidth", engine=engine, access=access, direction=direction)), None)
    if row is None:
        return []
    n = len(matrix)
    out = []
    for i in range(n):
        for j in range(n):
            if i == j or (direction == "bidir" and i > j):
                continue
            if direction == "bidir":  # both at once: its _total (before v0.6, its two one-way entries)
                theirs = matrix[i][j] if total else matrix[i][j] + matrix[j][i]
                ours = median_gbs(row, f"GB/s {i}<->{j}")
            elif access == "read":  # GPU j's data into GPU i
                theirs, ours = matrix[i][j], median_gbs(row, f"GB/s {j}->{i}")
            else:
                theirs, ours = matrix[i][j], median_gbs(row, f"GB/s {i}->{j}")
            if not (math.isnan(theirs) or math.isnan(ours)):
                out.append((theirs, ours))
    return out


def host_entries(names: list[str], matrices: dict, rows: list[dict], direction: str, metric: str, engine: str,
                 size: int) -> list[tuple[float, float]]:
    """(nvbandwidth, memstress) GB/s per GPU of one host path: GPU j is the rank of local rank j."""
    if any(n not in matrices for n in names):
        return []
    out = []
    gpus = len(matrices[names[0]][0])
    for j in range(gpus):
        theirs = sum(matrices[n][0][j] for n in names)
        mine = [r for r in rows if r.get("workload") == "transfers" and r.get("rank") == j and size_of(r) == size
                and params_match(r, direction=direction, engine=engine, host="pinned")]
        ours = sum(median_gbs(mine[0], m) for m in metric.split(" + ")) if mine else math.nan
        if not (math.isnan(theirs) or math.isnan(ours)):
            out.append((theirs, ours))
    return out


def line(label: str, what: str, entries: list[tuple[float, float]]) -> str:
    diffs = [ours / theirs - 1 for theirs, ours in entries if theirs > 0]
    within = sum(abs(d) <= TOLERANCE for d in diffs)
    spread = (f"{statistics.median(diffs) * 100:+.1f} ({min(diffs) * 100:+.1f} … {max(diffs) * 100:+.1f})"
              if diffs else "-")
    return (f"| {label} | {what} | {len(entries)} | {statistics.median(t for t, _ in entries):.1f} | "
            f"{statistics.median(o for _, o in entries):.1f} | {spread} | {within} of {len(diffs)} |")


def table(outdir: Path) -> list[str]:
    matrices = nvbandwidth(outdir)
    # NVBANDWIDTH_PATHS=host or =device measured one side alone: the other's files are absent.
    p2p, in_turn, together = (
        rows_of(outdir / name) if (outdir / name).exists() or (outdir / f"{name}.xz").exists() else []
        for name in ("memstress-p2p.json", "memstress-transfers-in-turn.json", "memstress-transfers-together.json")
    )
    sizes = {size_of(r) for r in p2p + in_turn + together if r.get("workload") in ("p2p", "transfers")} - {-1}
    if len(sizes) != 1:
        raise BadInput(f"{outdir}: memstress's results have {len(sizes)} sizes, one expected (nvbandwidth's)")
    size = sizes.pop()
    head = ["| nvbandwidth testcase | memstress | entries | nvbandwidth GB/s | memstress GB/s | "
            "memstress / nvbandwidth - 1, % (range) | within 2 % |", "| --- | --- | --- | --- | --- | --- | --- |"]
    peer = [line(name, f"p2p engine={engine} access={access} direction={direction}", entries)
            for name, (engine, access, direction) in PEER.items()
            if (entries := peer_entries(name, matrices, p2p, size))]
    host = [line(" + ".join(names), f"transfers direction={direction} engine={engine}"
                 f"{'' if metric == 'GB/s' else ' ' + metric}{' (all GPUs at once)' if at_once else ' (in turn)'}",
                 entries)
            for direction, metric, engine, at_once, names in HOST
            if (entries := host_entries(names, matrices, together if at_once else in_turn, direction, metric, engine,
                                        size))]
    lines = [f"# memstress beside nvbandwidth ({size // MIB} MiB buffers)"]
    # A side measured by neither tool (NVBANDWIDTH_PATHS=host or =device) has no section.
    if peer:
        lines += ["", "## Between GPUs", "",
                  "Entries are GPU pairs (bidirectional: unordered pairs, both directions at once). Medians over them.",
                  "", *head, *peer]
    if host:
        lines += ["", "## Between the host and the GPUs", "",
                  "Entries are GPUs: each alone (nvbandwidth's host_to_device and device_to_host testcases; memstress "
                  "`--in-turn transfers`), or all at once (host_to_all, all_to_host; memstress's ranks together). "
                  "Pinned host memory.", "", *head, *host]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    if not outdir.is_dir():
        print(f"nvbandwidth_table.py: {outdir}: not a directory", file=sys.stderr)
        return 2
    try:
        print("\n".join(table(outdir)))
    except BadInput as e:
        print(f"nvbandwidth_table.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
