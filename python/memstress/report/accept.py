"""The report's acceptance section: what `memstress accept` reported, read from its JUnit XML (`accept --junit
FILE`, committed beside every accept run as results/*/accept-*.xml), as a table per file of check, PASS, FAIL
or SKIP, measured value with its unit, bound and GPU, with the suite's counts. Imported by the report's __main__.py,
which owns the page and its errors.

Note [The page shows accept's verdicts]
---------------------------------------
A check is judged once, by `memstress accept` (harness/accept/judge.hpp, Note [Judging a check]), against
the profile as it was when the run was judged. The page does not judge the rows of a run again: doing so
in Python would copy those rules (and drift from them), and would judge a past run against today's
profile, so a run that printed FAIL under an older threshold would read PASS here. So the section draws
from accept's own JUnit file. Since fce8ee6 each <testcase> carries its parts as <properties> (workload,
metric, measured, unit, bound, gpu) beside the whole line (<system-out> for a pass, <failure message> or
<skipped message>); an older file has the check's name and, for a FAIL or a SKIP, the message only, and
its row shows that message where the GPU would be. A run document of accept (`config.profile`) given
without its JUnit file shows no verdict: the page says where the verdicts are.

Note [Reading JUnit XML safely]
-------------------------------
Python's xml.etree reads the file (defusedxml is not at hand). What could make it misbehave is refused
first, with a message that does not name the file (the report prefixes the name): a file over
MAX_BYTES; any <!DOCTYPE or <!ENTITY (an entity declared there can expand to gigabytes: "billion laughs";
no JUnit file needs one); elements nested more than MAX_DEPTH deep, or more than MAX_ELEMENTS of them,
counted as the file is parsed, a chunk at a time. Then the shape: <testsuites> of <testsuite>s (or one
bare <testsuite>), each named memstress.accept.PROFILE, with counts (tests, failures, errors, skipped)
that are those of its <testcase>s: the JUnit of another tool, or of `memstress run` (memstress.WORKLOAD),
is refused, not drawn.
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from .common import quantity, run_stem, section, table

SUITE_PREFIX = "memstress.accept."
MAX_BYTES = 8 << 20  # an accept file is about 1 KiB a check
MAX_DEPTH = 32  # accept writes 5 levels: testsuites, testsuite, testcase, properties, property
MAX_ELEMENTS = 100_000
CHUNK = 64 << 10
COUNTS = ("tests", "failures", "errors", "skipped")
VERDICTS = {"failure": "FAIL", "error": "ERROR", "skipped": "SKIP"}  # a <testcase> without one passed


class NotAcceptJUnit(ValueError):
    """The file is not the JUnit XML of `memstress accept`, or not safe to read; the message says why."""


def is_xml(data: bytes) -> bool:
    """Whether `data` is XML rather than JSON (which never starts with '<'): told apart by content."""
    return data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"<"


def parse(data: bytes) -> ET.Element:
    """The root element of `data`, read under the limits of Note [Reading JUnit XML safely]."""
    if len(data) > MAX_BYTES:
        raise NotAcceptJUnit(f"{len(data):,} bytes of XML, more than the {MAX_BYTES >> 20} MiB an accept run's "
                             "JUnit file could need: refused")
    declaration = re.search(rb"<!(DOCTYPE|ENTITY)", data)
    if declaration:
        line = data.count(b"\n", 0, declaration.start()) + 1
        raise NotAcceptJUnit(f"XML with a <!{declaration[1].decode()} declaration (line {line}): refused "
                             "(entities can expand without bound; JUnit needs none)")
    parser = ET.XMLPullParser(events=("start", "end"))
    root, depth, elements = None, 0, 0
    try:
        for at in range(0, len(data), CHUNK):
            parser.feed(data[at:at + CHUNK])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                root = element if root is None else root
                depth, elements = depth + 1, elements + 1
                if depth > MAX_DEPTH:
                    raise NotAcceptJUnit(f"XML nested more than {MAX_DEPTH} elements deep (<{element.tag[:40]}>): "
                                         "refused")
                if elements > MAX_ELEMENTS:
                    raise NotAcceptJUnit(f"XML of more than {MAX_ELEMENTS:,} elements: refused")
        parser.close()
    except ET.ParseError as e:
        raise NotAcceptJUnit(f"not XML ({e})") from None
    assert root is not None  # parser.close() raises on a document without an element
    return root


def count(suite: ET.Element, name: str, label: str) -> int:
    text = suite.get(name)
    if text is None or not text.isdigit() or not text.isascii():
        raise NotAcceptJUnit(f"{label}: its {name}= is {text[:40]!r}, not a count" if text is not None
                             else f"{label}: no {name}= count")
    return int(text)


def case_of(element: ET.Element, label: str) -> dict:
    """A <testcase> as {name, verdict, message, properties, parts (whether it has <properties>)}."""
    name = element.get("name")
    if name is None:
        raise NotAcceptJUnit(f"{label}: a <testcase> without a name")
    found = [child for child in element if child.tag in VERDICTS]
    if len(found) > 1:
        raise NotAcceptJUnit(f"{label}: <testcase name={name[:80]!r}> has {len(found)} results "
                             f"({', '.join(c.tag for c in found)}), not one")
    outcome = found[0] if found else None
    message = "" if outcome is None else outcome.get("message") or (outcome.text or "")
    properties: dict[str, str] = {}
    for group in element.iter("properties"):
        for p in group.iter("property"):
            if p.get("name") is not None:
                properties[p.get("name")] = p.get("value") or ""
    return {"name": name, "verdict": "PASS" if outcome is None else VERDICTS[outcome.tag],
            "message": message.strip(), "properties": properties,
            "parts": element.find("properties") is not None}  # written since fce8ee6, even where empty (a SKIP)


def read_junit(data: bytes) -> dict:
    """The suites of an accept run's JUnit file: {"suites": [{name, profile, counts, cases}]}, or
    NotAcceptJUnit saying why the file is not one (Note [Reading JUnit XML safely])."""
    root = parse(data)
    if root.tag == "testsuite":
        suites = [root]
    elif root.tag == "testsuites":
        suites = [child for child in root if child.tag == "testsuite"]
    else:
        raise NotAcceptJUnit(f"XML whose root is <{root.tag[:40]}>, not JUnit's <testsuites> or <testsuite>")
    if not suites:
        raise NotAcceptJUnit("JUnit XML without a <testsuite>")
    out = []
    for suite in suites:
        name = suite.get("name") or ""
        if not name.startswith(SUITE_PREFIX) or not name[len(SUITE_PREFIX):]:
            raise NotAcceptJUnit(f"the JUnit of another tool or of memstress run (testsuite {name[:80]!r}): the "
                                 f"report reads memstress accept's, whose testsuite is {SUITE_PREFIX}PROFILE")
        label = f"testsuite {name[:80]!r}"
        cases = [case_of(c, label) for c in suite if c.tag == "testcase"]
        counts = {k: count(suite, k, label) for k in COUNTS}
        held = {"tests": len(cases), **{k: sum(c["verdict"] == VERDICTS[tag] for c in cases)
                                       for k, tag in (("failures", "failure"), ("errors", "error"),
                                                      ("skipped", "skipped"))}}
        if counts != held:
            said = ", ".join(f"{k}={counts[k]}" for k in COUNTS)
            holds = ", ".join(f"{k}={held[k]}" for k in COUNTS)
            raise NotAcceptJUnit(f"{label}: its counts ({said}) are not those of its testcases ({holds})")
        out.append({"name": name, "profile": name[len(SUITE_PREFIX):], "counts": counts, "cases": cases})
    return {"suites": out}


# ---- the section ---------------------------------------------------------------------------------------------


def measured_text(properties: dict) -> str:
    """The measured value with its unit, as the page writes numbers (common.py: Note [Numbers on the page])."""
    value, unit = properties.get("measured"), properties.get("unit", "")
    if not value:
        return "-"
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    return quantity(number, unit) if math.isfinite(number) else f"{value} {unit}".strip()


def suite_html(name: str, suite: dict) -> str:
    c = suite["counts"]
    passed = c["tests"] - c["failures"] - c["errors"] - c["skipped"]
    errors = f", {c['errors']} errors" if c["errors"] else ""
    lines, marks = [], []
    for case in suite["cases"]:
        p = case["properties"]
        lines.append([case["name"], case["verdict"], measured_text(p), p.get("bound") or "-",
                      p.get("gpu") or case["message"] or "-"])
        marks.append({"PASS": "pass", "FAIL": "fail", "ERROR": "error", "SKIP": "skip"}[case["verdict"]])
    older = "" if any(case["parts"] for case in suite["cases"]) else \
        (" This file is older than the properties of each check (memstress accept before fce8ee6): it keeps the "
         "message of a FAIL or a SKIP, and nothing of a PASS but its name; the run's text output has its values.")
    return (f"<h3>{html.escape(name)}: profile {html.escape(suite['profile'])}</h3>"
            f"<p>{c['tests']} checks: <b>{passed} passed, {c['failures']} failed, {c['skipped']} skipped{errors}</b> "
            f"(the suite's counts).{html.escape(older)}</p>"
            + table(["check", "verdict", "measured", "bound", "GPU (or accept's message)"], lines, marks))


def same_run(run: str, junit: str) -> bool:
    """Whether `junit` is the JUnit file of the accept run document `run`: beside it, with its name (RUN.json or
    RUN.jsonl, either compressed too, and RUN.xml or RUN.xml.xz), as accept's outputs are committed."""
    try:
        return run_stem(run).resolve() == run_stem(junit).resolve()
    except (OSError, ValueError):
        return False


def run_note(name: str, doc: dict) -> str:
    """An accept run document given without its JUnit file: where its verdicts are; nothing judged."""
    beside = run_stem(name).with_name(run_stem(name).name + ".xml")
    there = f" ({beside} is beside it: add it to the report's inputs)" if beside.is_file() else ""
    return (f"<h3>{html.escape(name)}: profile {html.escape(str(doc['config']['profile']))}</h3>"
            f"<p>A memstress accept run: its verdicts are in the JUnit file that run wrote (memstress accept --junit "
            f"FILE){html.escape(there)}. Nothing is judged here from its rows.</p>")


def section_acceptance(junits: list[tuple[str, dict]], runs: list[tuple[str, dict]]) -> str:
    """A table per suite of each accept JUnit file; a note for each accept run document given without its own."""
    out = "".join(suite_html(name, suite) for name, doc in junits for suite in doc["suites"])
    noted: set[Path] = set()  # RUN.json and RUN.jsonl are one run: one note
    for name, doc in runs:
        if not isinstance(doc.get("config"), dict) or not doc["config"].get("profile"):
            continue  # not an accept run
        key = run_stem(name)
        if key not in noted and not any(same_run(name, j) for j, _ in junits):
            noted.add(key)
            out += run_note(name, doc)
    return section("Acceptance", "What memstress accept reported for each check of its profile, read from the run's "
                   "--junit file: PASS, FAIL or SKIP, the value measured with its unit, the bound it had to meet "
                   "then, and the GPU it was measured on (where an older file names none, accept's message); "
                   "nothing is judged again here.", out) if out else ""
