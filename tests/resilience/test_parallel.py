"""A sweep's report is the same whoever plays it: this process, local processes, or the
workers of a real Dask cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.resilience import every_node, random_failures, resilience

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resilience"


def _sweep(**engine: object) -> list[dict]:
    report = resilience(
        load_manifests([str(EXAMPLE)]),
        lambda nodes: [*every_node(nodes), *random_failures(nodes, 3, 2, 7, "example")],
        seed=7,
        **engine,
    )
    # Everything but the wall time, which is the one thing that may differ.
    data = report.to_dict()
    data.pop("wallTime")
    return data


@pytest.fixture(scope="module")
def alone() -> dict:
    return _sweep(workers=1)


def test_the_example_has_losses_to_compare(alone: dict) -> None:
    assert alone["summary"]["failures"] == 9
    assert 0 < alone["summary"]["harmless"] < 9


@pytest.mark.parametrize("workers", [2, 3], ids=["2-processes", "3-processes"])
def test_local_processes_give_the_same_report(alone: dict, workers: int) -> None:
    assert _sweep(workers=workers) == alone


def test_dask_workers_give_the_same_report(alone: dict, dask_cluster) -> None:
    assert _sweep(address=dask_cluster.scheduler_address) == alone
