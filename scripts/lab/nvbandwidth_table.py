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
How the two count: nvbandwidth's bidirectional testcases report one direction while the other runs, so the
pair's two entries (device to device) or the host-to-device and device-to-host testcases (host) are added
up to compare with memstress's bidir, which counts both directions; nvbandwidth's read testcases print
"row <- column", so entry [i][j] is the copy from GPU j into GPU i. Exit 2 when an input cannot be read.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ms_json  # noqa: E402
import report_common  # noqa: E402

TOLERANCE = 0.02  # the target: within 2 % on every path
MIB = 1 << 20

# nvbandwidth's device-to-device testcases: (engine, access, direction) of memstress's p2p case.
PEER = {
    f"device_to_device_{bidir}memcpy_{access}_{engine}": (engine, access, "bidir" if bidir else "uni")
    for bidir in ("", "bidirectional_")
    for access in ("write", "read")
    for engine in ("ce", "sm")
}
# nvbandwidth's host testcases: (memstress transfers direction, engine, all GPUs at once), the testcases
# whose entries add up to it (two for bidir: the measured direction of each).
HOST = [
    (direction, engine, together, names)
    for engine in ("ce", "sm")
    for together, h2d, d2h in ((False, "host_to_device", "device_to_host"), (True, "host_to_all", "all_to_host"))
    for direction, names in (
        ("h2d", [f"{h2d}_memcpy_{engine}"]),
        ("d2h", [f"{d2h}_memcpy_{engine}"]),
        ("bidir", [f"{h2d}_bidirectional_memcpy_{engine}", f"{d2h}_bidirectional_memcpy_{engine}"]),
    )
]


class BadInput(Exception):
    """An input file that cannot be read as what it should be."""


def number(text: str) -> float:
    return math.nan if text == "N/A" else float(text)


def nvbandwidth_text(path: Path) -> dict[str, list[list[float]]]:
    """Per testcase printed whole, its matrix: after `Running NAME.`, a description, the column header, one
    line per row (a label, then a value or N/A per column), a blank line and `SUM NAME total`, the line that
    says the testcase finished. A testcase cut short (a timeout) has none and is left out."""
    matrices: dict[str, list[list[float]]] = {}
    name, rows, header = "", [], False
    for line in path.read_text(errors="replace").splitlines():
        cols = line.split()
        if line.startswith("Running ") and line.endswith("."):
            name, rows, header = line[len("Running "):-1], [], False
        elif not name:
            continue
        elif cols[:2] == ["SUM", name]:
            if rows and all(len(r) == len(rows[0]) for r in rows):
                matrices[name] = rows
            name = ""
        elif "bandwidth (GB/s)" in line:
            header = True
        elif header and cols and not rows and all(c.isdigit() for c in cols):
            continue  # the column indices
        elif header and len(cols) >= 2:
            try:
                rows.append([number(c) for c in cols[1:]])
            except ValueError:
                name = ""
    return matrices


def nvbandwidth(outdir: Path) -> dict[str, list[list[float]]]:
    """Per passed testcase, its matrix (NaN where nvbandwidth printed N/A), from nvbandwidth.txt or .json."""
    if (outdir / "nvbandwidth.txt").is_file():
        matrices = nvbandwidth_text(outdir / "nvbandwidth.txt")
    else:
        path = outdir / "nvbandwidth.json"
        try:
            cases = ms_json.read_stored(path)["nvbandwidth"]["testcases"]
        except (ValueError, KeyError, TypeError) as e:
            raise BadInput(f"{path}: not nvbandwidth -j output ({e})") from None
        matrices = {c["name"]: [[number(v) for v in row] for row in c["bandwidth_matrix"]]
                    for c in cases if c.get("status") == "Passed" and "bandwidth_matrix" in c}
    if not matrices:
        raise BadInput(f"{outdir}: no nvbandwidth testcase finished (nvbandwidth.txt or nvbandwidth.json)")
    return matrices


def rows_of(path: Path) -> list[dict]:
    """The passed rows of a memstress results document."""
    try:
        doc = ms_json.read_stored(path)
    except ValueError as e:
        raise BadInput(f"{path}: {e}") from None
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise BadInput(f"{path}: no rows")
    return [r for r in rows if isinstance(r, dict) and r.get("verdict") == "pass"]


def params_match(row: dict, **want: str) -> bool:
    return all(row.get("params", {}).get(k) == v for k, v in want.items())


def size_of(row: dict) -> int:
    return int(report_common.parse_size(row["params"]["bytes"]))


def median_gbs(row: dict, metric: str) -> float:
    m = row.get("metrics", {}).get(metric)
    return float(m["median"]) if m and m.get("median") is not None else math.nan


def peer_entries(name: str, matrix: list[list[float]], rows: list[dict], size: int) -> list[tuple[float, float]]:
    """(nvbandwidth, memstress) GB/s per GPU pair of one device-to-device testcase."""
    engine, access, direction = PEER[name]
    row = next((r for r in rows if r["workload"] == "p2p" and size_of(r) == size and params_match(
        r, measure="bandwidth", engine=engine, access=access, direction=direction)), None)
    if row is None:
        return []
    n = len(matrix)
    out = []
    for i in range(n):
        for j in range(n):
            if i == j or (direction == "bidir" and i > j):
                continue
            if direction == "bidir":  # the pair's two measured directions against memstress's both at once
                theirs, ours = matrix[i][j] + matrix[j][i], median_gbs(row, f"GB/s {i}<->{j}")
            elif access == "read":  # row <- column
                theirs, ours = matrix[i][j], median_gbs(row, f"GB/s {j}->{i}")
            else:
                theirs, ours = matrix[i][j], median_gbs(row, f"GB/s {i}->{j}")
            if not (math.isnan(theirs) or math.isnan(ours)):
                out.append((theirs, ours))
    return out


def host_entries(names: list[str], matrices: dict, rows: list[dict], direction: str, engine: str,
                 size: int) -> list[tuple[float, float]]:
    """(nvbandwidth, memstress) GB/s per GPU of one host path: GPU j is the rank of local rank j."""
    if any(n not in matrices for n in names):
        return []
    out = []
    gpus = len(matrices[names[0]][0])
    for j in range(gpus):
        theirs = sum(matrices[n][0][j] for n in names)
        mine = [r for r in rows if r["workload"] == "transfers" and r["rank"] == j and size_of(r) == size
                and params_match(r, direction=direction, engine=engine, host="pinned")]
        if mine and not math.isnan(theirs):
            out.append((theirs, median_gbs(mine[0], "GB/s")))
    return out


def line(label: str, what: str, entries: list[tuple[float, float]]) -> str:
    diffs = [ours / theirs - 1 for theirs, ours in entries if theirs > 0]
    within = sum(abs(d) <= TOLERANCE for d in diffs)
    return (f"| {label} | {what} | {len(entries)} | {statistics.median(t for t, _ in entries):.1f} | "
            f"{statistics.median(o for _, o in entries):.1f} | {statistics.median(diffs) * 100:+.1f} "
            f"({min(diffs) * 100:+.1f} … {max(diffs) * 100:+.1f}) | {within} of {len(diffs)} |")


def table(outdir: Path) -> list[str]:
    matrices = nvbandwidth(outdir)
    p2p = rows_of(outdir / "memstress-p2p.json")
    sizes = {size_of(r) for r in p2p if r.get("workload") == "p2p"}
    if len(sizes) != 1:
        raise BadInput(f"{outdir / 'memstress-p2p.json'}: {len(sizes)} sizes, one expected (nvbandwidth's)")
    size = sizes.pop()
    in_turn = rows_of(outdir / "memstress-transfers-in-turn.json")
    together = rows_of(outdir / "memstress-transfers-together.json")
    head = ["| nvbandwidth testcase | memstress | entries | nvbandwidth GB/s | memstress GB/s | "
            "memstress / nvbandwidth - 1, % (range) | within 2 % |", "| --- | --- | --- | --- | --- | --- | --- |"]
    lines = [f"# memstress beside nvbandwidth ({size // MIB} MiB buffers)", "", "## Between GPUs", "",
             "Entries are GPU pairs (bidirectional: unordered pairs, both directions added). Medians over them.", ""]
    lines += head
    for name, (engine, access, direction) in PEER.items():
        if name in matrices:
            entries = peer_entries(name, matrices[name], p2p, size)
            if entries:
                lines.append(line(name, f"p2p engine={engine} access={access} direction={direction}", entries))
    lines += ["", "## Between the host and the GPUs", "",
              "Entries are GPUs: each alone (nvbandwidth's host_to_device and device_to_host testcases; memstress "
              "`--in-turn transfers`), or all at once (host_to_all, all_to_host; memstress's ranks together). "
              "Pinned host memory.", ""]
    lines += head
    for direction, engine, at_once, names in HOST:
        entries = host_entries(names, matrices, together if at_once else in_turn, direction, engine, size)
        if entries:
            lines.append(line(" + ".join(names), f"transfers direction={direction} engine={engine}"
                              f"{' (all GPUs at once)' if at_once else ' (in turn)'}", entries))
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
