"""Every workload places its pods exactly where the recorded scheduler did (a fixed seed).

The record (``tests/fixtures/bench/placements.json``) was made with
``benchmarks/record_placements.py`` before the scheduler's performance work (the
``stateful`` and ``dra`` workloads, which came later, with the scheduler of ``edd5b1c``,
just before that work was merged; ``preemption-anti-affinity``, added with the batched
dry run for active PreFilter extensions, with that batching switched off, i.e. with the
per-node dry run): a speed-up that moves any pod, or evicts another victim, fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.bench import WORKLOADS
from kubesched.bench.placements import RECORDED_CASES, case_id, record

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bench" / "placements.json"
RECORDED = json.loads(FIXTURE.read_text())


def test_every_workload_is_recorded() -> None:
    assert {c["workload"] for c in RECORDED_CASES} == set(WORKLOADS)
    assert set(RECORDED) == {case_id(c) for c in RECORDED_CASES}


@pytest.mark.parametrize("case", RECORDED_CASES, ids=case_id)
def test_placements_identical_to_the_record(case: dict) -> None:
    now = record(case)
    before = RECORDED[case_id(case)]
    moved = {pod: (before.get(pod), node) for pod, node in now.items() if before.get(pod) != node}
    gone = sorted(set(before) - set(now))
    assert not moved, f"{len(moved)} pod(s) moved (before, now): {list(moved.items())[:5]}"
    assert not gone, f"{len(gone)} pod(s) deleted that were not before: {gone[:5]}"
