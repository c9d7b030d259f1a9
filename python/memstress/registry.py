"""The workloads and allocator peers as the memstress binary registers them, for the Python that reads its results.

The facts are `memstress list --format json`'s (apps/cmd_list.cpp): each workload's name and headline metrics,
every allocator peer (its origin, and whether it runs on the simulated device or is the baseline), and the second
names older files recorded some figures under (Note [One name per figure] in harness/results/former_names.hpp).
registry_facts.py holds them as the binary printed them; scripts/dev/registry.py writes it from a built binary,
and the test scripts.registry fails while the two differ. Nothing here keeps a list of its own.

Imports the standard library only.
"""

from __future__ import annotations

from typing import Any

from .registry_facts import FACTS


def workloads() -> list[dict[str, Any]]:
    """Every workload, in the order `memstress list` shows them."""
    return list(FACTS["workloads"])


def workload(name: str) -> dict[str, Any] | None:
    return next((w for w in FACTS["workloads"] if w["name"] == name), None)


def headline_names(name: str) -> tuple[str, ...]:
    """The metrics a row of workload `name` heads with, in order of preference (WorkloadDef::headline); () for a
    workload the binary does not know."""
    found = workload(name)
    return tuple(found["headline"]) if found else ()


def peers() -> list[dict[str, Any]]:
    """Every allocator peer, in the order `memstress list` shows them: name, origin ("memstress", "PyTorch",
    "CUDA", "RMM"), simulated, baseline."""
    return list(FACTS["peers"])


def _median(metric: Any) -> Any:
    return metric.get("median") if isinstance(metric, dict) else None


def adopt_one_names(row: dict) -> None:
    """A row read from a results file, its metrics given their one names in place (Note [One name per figure]):
    a figure an older file recorded under a second name takes its one name; where the row has both and their
    medians agree, the second is dropped; where they disagree, both stay as recorded. The order is kept."""
    metrics = row.get("metrics")
    if not isinstance(metrics, dict):
        return
    for f in FACTS["former_metric_names"]:
        if f["workload"] != row.get("workload") or f["former"] not in metrics:
            continue
        if f["name"] not in metrics:
            row["metrics"] = metrics = {f["name"] if k == f["former"] else k: v for k, v in metrics.items()}
        elif _median(metrics[f["name"]]) == _median(metrics[f["former"]]):
            del metrics[f["former"]]
