"""The report's section of comparisons (memstress.compare/1): the rows that changed, with their verdicts. Imported
by __main__.py."""

from __future__ import annotations

import html

from .common import (
    quantity,
    section,
    table,
)


def median_of(side: object) -> float | None:
    """A compared metric's median on one side: compare's JSON writes {"n": N, "median": M}."""
    median = side.get("median") if isinstance(side, dict) else None
    return median if isinstance(median, (int, float)) and not isinstance(median, bool) else None


def number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else quantity(value, unit)


def compare_changes(doc: dict) -> list[tuple[dict, dict]]:
    """(row, metric) of every metric that is not SAME and every row whose verdict changed."""
    changed = []
    for row in doc.get("rows", []):
        if row.get("presence") == "both" and row.get("base_verdict") != row.get("new_verdict"):
            changed.append((row, {"name": "verdict", "verdict": row.get("verdict"),
                                  "base_text": row.get("base_verdict"), "new_text": row.get("new_verdict")}))
        for m in row.get("metrics", []):
            if m.get("verdict") not in (None, "SAME", "-"):
                changed.append((row, m))
    return changed


def compare_line(row: dict, m: dict) -> list[str]:
    unit = str(m.get("unit") or "")
    change = m.get("change_pct")
    rank = f" rank {row['rank']}" if isinstance(row.get("rank"), int) and row.get("rank") else ""
    return [str(row.get("workload")), f"{row.get('case')}{rank}", str(row.get("allocator", "")), str(m.get("name")),
            str(m.get("base_text") or number(median_of(m.get("base")), unit)),
            str(m.get("new_text") or number(median_of(m.get("new")), unit)),
            f"{change:+.1f}%" if isinstance(change, (int, float)) else "-", str(m.get("verdict"))]


def section_compare(compares: list[tuple[str, dict]]) -> str:
    """Each comparison: its result, then every metric that is not SAME and every row whose verdict changed, with
    base, new, change and verdict (memstress compare --format json, schema memstress.compare/1)."""
    out = ""
    for name, doc in compares:
        changed = compare_changes(doc)
        verdict = ("REGRESSION" if doc.get("regression") is True
                   else f"NOTHING COMPARED ({doc['nothing_compared']})" if doc.get("nothing_compared")
                   else "no regression")
        sides = " against ".join(html.escape(str((doc.get(k) or {}).get("path", "?"))) for k in ("new", "base"))
        out += (f"<h3>{html.escape(name)}</h3><p>{sides}: <b>{html.escape(verdict)}</b>; {len(changed)} change(s) "
                "beyond SAME.</p>"
                + table(["workload", "case", "allocator", "metric", "base", "new", "change", "verdict"],
                        [compare_line(row, m) for row, m in changed], [str(m.get("verdict")) for _, m in changed]))
    return section("Comparisons", "What changed between a base run and a new one: every metric beyond the noise, "
                   "and every row whose verdict changed.", out) if out else ""
