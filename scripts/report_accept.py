"""The report's acceptance section: the run document of `memstress accept` (`config.profile` names its
profile) as a table of check, measured value, bound and PASS, FAIL or SKIP, with the verdict. Imported by
scripts/report, which owns the page, the inputs and the errors.

Note [Judging an accept run again]
----------------------------------
The document `accept --out` writes holds the rows the profile's runs measured, not the lines `accept`
printed (check, value, bound, verdict). So the page judges the rows again against the profile the document
names, as `memstress accept --from DOC --profile NAME` does, by the rules of harness/accept/profile.hpp (Note
[Judging a check]): the measured value is the worst over the rows the check matches (the lowest where higher
is better, the highest otherwise); a golden value passes higher-is-better at >= factor x golden and
lower-is-better at <= golden / factor; `min` and `max` are bounds of their own; `verification.errors` sums
the rows' data errors and `verdict` counts the rows that did not pass; a check that matches no row fails;
one whose rows were all skipped, or that needs more ranks than the run had, is skipped. The profile is
the shipped one (profiles/NAME.yaml beside scripts/, in the checkout or the installed share/memstress), as
it is now: where it changed since the run, the bounds shown are today's, and the page says which file it
used. PyYAML reads it, with every value as text (BaseLoader), as yaml-cpp gives `accept` its scalars.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from report_common import quantity, section, table

PROFILES = Path(__file__).resolve().parent.parent / "profiles"


@dataclass
class Outcome:
    """A check's verdict (PASS, FAIL, SKIP), what it measured (with its unit), the bound and the rows it read."""

    verdict: str
    measured: str = "-"
    bound: str = "-"
    rows: int = 0
    detail: str = ""


def load_profile(name: str) -> tuple[dict | None, str]:
    """(the profile, its path) of the shipped profile `name`, or (None, why not)."""
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):  # a name, not a path out of profiles/
        return None, f"profile {name[:80]!r} is not the name of a shipped profile"
    path = PROFILES / f"{name}.yaml"
    try:
        import yaml
    except ImportError:
        return None, "reading the profile needs PyYAML (requirements.txt; scripts/setup installs it)"
    try:
        profile = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    except FileNotFoundError:
        return None, f"profile {name!r} is not a shipped one ({path} does not exist): judge it with memstress " \
                     "accept --from FILE --profile YOURS.yaml"
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        return None, f"{path}: cannot be read ({type(e).__name__}: {str(e)[:200]})"
    if not isinstance(profile, dict) or not isinstance(profile.get("checks"), list):
        return None, f"{path}: not an acceptance profile (no list of checks)"
    return profile, str(path)


def matches(row: dict, check: dict) -> bool:
    where = check.get("where") or {}
    params = row.get("params") or {}
    return row.get("workload") == check.get("workload") and all(str(params.get(k)) == v for k, v in where.items())


def measure(check: dict, rows: list[dict]) -> tuple[float, bool, str, int] | None:
    """(the worst value over the matched rows, higher is better, its unit, rows matched), or None where no
    matched row measured it."""
    name, value, higher, unit, count, found = check.get("metric"), 0.0, True, "", 0, False
    for r in (r for r in rows if matches(r, check)):
        count += 1
        if name in ("verification.errors", "verdict"):
            higher, found = False, True
            value += (r.get("verification") or {}).get("errors", 0) if name == "verification.errors" \
                else r.get("verdict") != "pass"
            unit = "bad words" if name == "verification.errors" else "rows not passed"
            continue
        m = (r.get("metrics") or {}).get(name)
        if isinstance(m, dict) and isinstance(m.get("median"), (int, float)):
            higher, unit = m.get("better") != "lower", str(m.get("unit") or "")
            value = m["median"] if not found else (min(value, m["median"]) if higher else max(value, m["median"]))
            found = True
    return (value, higher, unit, count) if found else None


def bounds(check: dict, value: float, higher: bool, unit: str) -> list[tuple[str, bool]]:
    """Each bound the check sets, as text, and whether `value` meets it."""
    out = []
    if check.get("golden") not in (None, "", "~", "null"):
        golden, factor = float(check["golden"]), float(check.get("factor", 0.75))
        bound = factor * golden if higher else golden / factor
        how = f"{factor:g} x golden" if higher else f"golden / {factor:g}"
        out.append((f"{'>=' if higher else '<='} {quantity(bound, unit)} ({how} {quantity(golden, unit)})",
                    value >= bound if higher else value <= bound))
    if check.get("min") is not None:
        out.append((f">= {quantity(float(check['min']), unit)}", value >= float(check["min"])))
    if check.get("max") is not None:
        out.append((f"<= {quantity(float(check['max']), unit)}", value <= float(check["max"])))
    return out


def evaluate(check: dict, rows: list[dict], ranks: int) -> Outcome:
    """A check judged as `memstress accept` judges it (Note [Judging an accept run again])."""
    needs = int(check.get("min_ranks", 1))
    if needs > ranks:
        return Outcome("SKIP", detail=f"needs {needs} ranks (the run had {ranks})")
    matched = [r for r in rows if matches(r, check)]
    if matched and all(r.get("verdict") == "skip" for r in matched):
        return Outcome("SKIP", rows=len(matched), detail="not judged: its rows were skipped ("
                       + str(matched[0].get("reason", "")).split("\n")[0] + ")")
    found = measure(check, rows)
    if found is None:
        return Outcome("FAIL", detail=f"no {check.get('workload')} row with metric {check.get('metric')} matched")
    value, higher, unit, count = found
    judged = bounds(check, value, higher, unit)
    if not judged:
        return Outcome("FAIL", quantity(value, unit), rows=count, detail="no threshold (train the profile: --train)")
    return Outcome("PASS" if all(ok for _, ok in judged) else "FAIL", quantity(value, unit),
                   " and ".join(text for text, _ in judged), count)


def verdict(outcomes: list[Outcome], not_run: int, about: str) -> str:
    """The run's verdict line, as `memstress accept` prints it (apps/cmd_accept.cpp, judge)."""
    passed = sum(o.verdict == "PASS" for o in outcomes)
    skipped = sum(o.verdict == "SKIP" for o in outcomes)
    judged = len(outcomes) - skipped
    skips = f", {skipped} skipped" if skipped else ""
    if not outcomes:
        return f"NOT JUDGED (the profile has no checks; {about})"
    if passed < judged:
        return f"FAIL ({passed} of {judged} checks passed{skips}; {about})"
    if judged == 0 or not_run:
        return f"NOT JUDGED ({judged} of {len(outcomes)} checks judged{skips}; {about})"
    return f"PASS ({passed} of {judged} checks passed{skips}; {about})"


def accept_run(name: str, doc: dict, profile_name: str) -> str:
    rows = doc.get("rows") or []
    ranks = int((doc.get("config") or {}).get("ranks") or max([r.get("rank", 0) for r in rows] + [0]) + 1)
    profile, where = load_profile(profile_name)
    if profile is None:
        return f"<h3>{html.escape(name)}</h3><p>{html.escape(where)}</p>"
    checks = [c for c in profile["checks"] if isinstance(c, dict)]
    outcomes = [evaluate(c, rows, ranks) for c in checks]
    not_run = sum(o.detail.startswith("not judged") for o in outcomes)
    about = f"profile {profile.get('name', profile_name)}, {profile.get('gpu', '?')}, {ranks} rank{'s' * (ranks > 1)}"
    lines = [[str(c.get("name", "?")), o.measured, o.bound or "-", str(o.rows), o.verdict + (f": {o.detail}"
              if o.detail else "")] for c, o in zip(checks, outcomes)]
    marks = [{"PASS": "pass", "FAIL": "fail", "SKIP": "skip"}[o.verdict] for o in outcomes]
    return (f"<h3>{html.escape(name)}</h3><p>verdict: <b>{html.escape(verdict(outcomes, not_run, about))}</b> "
            f"(judged against {html.escape(where)})</p>"
            + table(["check", "measured (worst matched row)", "bound", "rows", "verdict"], lines, marks))


def section_acceptance(runs: list[tuple[str, dict]]) -> str:
    out = "".join(accept_run(name, doc, str(doc["config"]["profile"])) for name, doc in runs
                  if isinstance(doc.get("config"), dict) and doc["config"].get("profile"))
    return section("Acceptance", "Each check of the acceptance profile against what the run measured: the worst "
                   "value over the rows it matched, the bound it must meet, and PASS, FAIL or SKIP. The run's "
                   "document keeps its rows, not the lines accept printed, so they are judged here again against "
                   "the shipped profile as it is now, as memstress accept --from would.", out) if out else ""
