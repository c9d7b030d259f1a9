"""python3 -m memstress.report RESULTS... -o report.html: one self-contained HTML page with plots of memstress
results.

Run as ``python3 -m memstress.report`` (PYTHONPATH naming python/ of the checkout, or share/memstress/python
installed), or as ``memstress report``, which runs it so; it names itself as it was run in its usage and
messages (``memstress report: wrote ...``).

Reads memstress run documents (`memstress.run/1`, the `.json` a run writes with --out, or the `.jsonl` its rows
stream to as they finish: a run that did not finish is drawn from the rows it wrote, and the page says so),
Google Benchmark JSON (memstress_bench), `memstress compare --format json` output (`memstress.compare/1`), replay
documents (`memstress.replay/1`, whose timeline is drawn), `memstress doctor` documents (`memstress.doctor/1`),
`memstress devices --format json`, the JUnit XML of `memstress accept --junit` (its testsuite is named
memstress.accept.PROFILE), and the fleet store's `memstress db outliers --format json --groups`
(`memstress.outliers/1`) and `memstress db history --format json` (`memstress.history/1`), in any mix, each told
apart by its content, and draws what they hold, in this order:

- doctor: what a program needed, who held the memory at its peak, the OOM, the settings (doctor.py);
- machines: each GPU's name, memory, UUID, PCI bus id and link, the driver, CUDA and NCCL (machines.py);
- acceptance (the JUnit XML of a `memstress accept` run): each check as accept reported it, PASS, FAIL or
  SKIP, with the measured value and unit, the bound and the GPU, and the suite's counts; an accept run document
  given without its JUnit file is named with where its verdicts are, and nothing is judged again
  (accept.py: Note [The page shows accept's verdicts]);
- burn (a `memstress burn` run): per GPU against the time since the burn began, power with its share of the
  limit, GPU and HBM temperature, SM and memory clocks, and each interval's throughput, the failed intervals
  shaded and listed with the judge's findings; telemetry the device did not give is named, not drawn (burns.py:
  Note [A burn against time]);
- transfers: GB/s against size, a panel per direction, a line per run, host memory and engine (runs.py);
- p2p: the peer copy matrix (GB/s from each GPU to each other) per engine and access at the largest size,
  the peer load latency matrix, and the slowest pair's GB/s against size (links.py);
- collectives: busbw against size, a line per collective and a panel per run, and nccl-tests' columns in a
  table (links.py);
- size sweeps (a run with -b/-e/-f): each other swept workload's headline metric against size
  (sweep.py);
- allocators: alloc+free pair latency against size per allocator (Google Benchmark), and the threads
  scaling (benchmarks.py);
- sizes: allocation churn per size distribution and allocator: ops/s, p99 allocation latency and
  utilization (memory.py);
- fragmentation: per allocation pattern and allocator, utilization, external fragmentation and reserved
  minus allocated bytes (memory.py);
- OOM thresholds: the largest single allocation as a share of free memory, and the largest batch, per
  allocator and state (runs.py);
- leak: allocated bytes gained per epoch in each case against the detector's threshold, with what each case
  found (memory.py);
- streams and dataloader: concurrency against streams per block size, end-to-end H2D GB/s per configuration
  (runs.py);
- replays: reserved vs allocated over the trace (replays.py);
- comparisons: the rows that changed, with their verdicts (compare.py);
- the fleet: each judged group's GPUs as points with the median and the outlier line, the outliers named; each
  history series over time with its driver changes (fleet.py);
- every row of every run in a table: its headline metric (common.py: Note [Headline metrics]) with its
  unit and, where it had several samples, its p10-p90 spread, then its other metrics (runs.py).
Images are PNGs embedded as base64, so the page stands alone.

Bad input (a missing file, a directory, not UTF-8, not JSON, nested more than 128 levels deep, a document of no
known kind, or one whose fields the report cannot draw from; XML that is not accept's JUnit, holds a DOCTYPE or
ENTITY declaration, nests too deep or is too large: accept.py, Note [Reading JUnit XML safely]; inputs.py reads
them all) exits 2
with a one-line message naming the file;
so does an -o that exists and is not a regular file (`-o /dev/null`: memstress/_output.py). Text that UTF-8
cannot encode (a file name's stray bytes, a JSON string's lone surrogate escape) is shown as U+FFFD.
Design: each section is a function of the loaded documents that returns HTML (a short title, one sentence of
what it shows, its figures) or nothing; a section with no data is left out rather than drawn empty. This
module owns the page and its errors; the sections, each in the module named above, share common.py, whose
notes say how numbers are written (three significant digits, KiB-GiB, no p10-p90 spread for a single sample)
and how a series keeps one colour, chosen by its name, on the whole page.
"""

from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path
from typing import Any, Callable

from .. import _output
from .common import STREAM_NOTE, Colours, figure_html, run_state
from .inputs import BadInput, load, validators

EXIT_BAD_INPUT = 2
EXIT_ENV = 3


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 1400px; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
tr.fail td, tr.WORSE td, tr.error td { background: #fdd; }
tr.skip td, tr.UNSURE td { background: #f6f6f6; color: #666; }
tr.BETTER td { background: #dfd; }
p.unfinished { background: #fff3cd; border: 1px solid #e0c060; padding: 4px 8px; margin: 0.3em 0; }
p.what { color: #333; margin: 0.2em 0 0.5em; }
"""


# What a document of the right kind but with fields of the wrong shape raises in a section (compare, benchmark,
# devices and doctor documents have no schema to check them against first).
DRAW_ERRORS = (KeyError, TypeError, IndexError, AttributeError, ValueError, ArithmeticError)


def draw(section: Callable[[list[tuple[str, dict]]], str], docs: list[tuple[str, dict]]) -> str:
    """One section of the page from `docs`; where it cannot be drawn, BadInput naming the document it fails on
    alone (or all of them, where none does alone)."""
    try:
        return section(docs)
    except DRAW_ERRORS as e:
        import matplotlib.pyplot as plt

        plt.close("all")
        culprits, error = [n for n, _ in docs], e
        for name, doc in docs if len(docs) > 1 else []:
            try:
                section([(name, doc)])
            except DRAW_ERRORS as alone:
                culprits, error = [name], alone
                break
            finally:
                plt.close("all")
        unchecked = "" if validators() else \
            " (documents are checked against their schemas only where jsonschema is installed)"
        raise BadInput(f"cannot draw from {', '.join(culprits)}: {type(error).__name__}: {str(error)[:300]}"
                       f"{unchecked}") from None


def build(inputs: list[tuple[str, str, Any]]) -> str:
    from .accept import section_acceptance
    from .allocators import section_allocator_table, section_allocators_documents
    from .benchmarks import section_allocators
    from .burns import is_burn, section_burn
    from .compare import section_compare
    from .doctor import section_doctor
    from .fleet import section_fleet_history, section_fleet_outliers
    from .links import section_collectives, section_p2p
    from .machines import section_machines
    from .memory import section_fragmentation, section_leak, section_sizes
    from .replays import section_replays
    from .runs import section_oom, section_rows, section_streams_dataloader, section_transfers
    from .sweep import section_sweep

    colours = Colours()  # one colour per series name on the whole page (common.py: Note [Series colours])
    junits = [(n, d) for n, k, d in inputs if k == "junit"]  # checked whole as they were read: nothing to draw wrong
    sections: list[tuple[str, Callable[[list[tuple[str, dict]]], str]]] = [
        ("doctor", lambda docs: section_doctor(docs, figure_html)),
        ("devices", section_machines),
        # A burn's config names its profile as an accept run's does: it is not one (its verdicts are its rows').
        ("run", lambda docs: section_acceptance(junits, [(n, d) for n, d in docs if not is_burn(d)])),
        ("run", lambda docs: section_burn(docs, colours)),
        ("run", lambda docs: section_transfers(docs, colours)),
        ("run", lambda docs: section_p2p(docs, colours)),
        ("run", lambda docs: section_collectives(docs, colours)),
        ("run", lambda docs: section_sweep(docs, colours)),
        ("bench", lambda docs: section_allocators(docs, colours)),
        ("run", lambda docs: section_sizes(docs, colours)),
        ("run", lambda docs: section_fragmentation(docs, colours)),
        ("run", lambda docs: section_oom(docs, colours)),
        ("run", lambda docs: section_leak(docs, colours)),
        ("run", lambda docs: section_streams_dataloader(docs, colours)),
        ("allocators", section_allocators_documents),
        ("replay", lambda docs: section_allocator_table(docs, [(n, d) for n, k, d in inputs if k == "bench"])),
        ("replay", lambda docs: section_replays(docs, colours)),
        ("compare", section_compare),
        ("outliers", lambda docs: section_fleet_outliers(docs, figure_html)),
        ("history", lambda docs: section_fleet_history(docs, figure_html)),
        ("run", section_rows),
    ]
    files = ""
    for n, k, d in inputs:
        state = run_state(d) if k == "run" else ""
        if k == "doctor":  # what it diagnosed, not the file of its answers (memstress doctor's is temporary)
            n = _output.clean_text(str((d.get("input") or {}).get("path") or n))
        files += f"<li>{html.escape(n)} ({k}{', stream' if STREAM_NOTE in d else ''})"
        files += f"<p class='unfinished'>{html.escape(n)}: {html.escape(state)}.</p></li>" if state else "</li>"
    body = "".join(draw(section, [(n, d) for n, k, d in inputs if k == kind]) for kind, section in sections)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>memstress report</title>"
        f"<style>{STYLE}</style></head><body><h1>memstress report</h1><ul>{files}</ul>{body}</body></html>\n"
    )


def once(paths: list[Path]) -> list[Path]:
    """The inputs, each file once (`results/h100/*.json results/h100/accept-*.json` names one twice): a file read
    twice would be drawn twice."""
    seen: set[Path] = set()
    out = []
    for p in paths:
        key = p.resolve() if p.exists() else p
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def main(argv: list[str]) -> int:
    from .. import _pyenv

    prog = _pyenv.prog("memstress.report")
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("results", nargs="+", type=Path,
                        help="memstress, compare, replay, doctor, devices or Google Benchmark JSON; accept's JUnit XML")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    args = parser.parse_args(argv)
    # exits 3 without matplotlib; without the optional ones, no schema check
    _pyenv.ensure(prog, __file__, ["matplotlib"], ["jsonschema", "referencing"])
    import matplotlib

    matplotlib.use("Agg")
    try:
        _output.check_target(args.output, "-o")  # before the work, not after it
        inputs = [(_output.clean_text(str(p)), *load(p)) for p in once(args.results)]
        page = build(inputs)
        _output.write_text(args.output, "-o", page)
        for name, kind, doc in inputs:
            if kind == "run" and run_state(doc):
                print(f"{prog}: note: {name}: {run_state(doc)}", file=sys.stderr)
    except (BadInput, _output.OutputError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{prog}: wrote {args.output} ({len(page) // 1024} KiB) from {len(inputs)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
