"""OpportunisticBatch, the profile's memory of the last ranking: when it hints a node, when it
flushes (with upstream's reasons), and what it keeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime.batch import (
    GET_NODE_HINT,
    MAX_BATCH_AGE_SECONDS,
    STORE_SCHEDULE_RESULTS,
    OpportunisticBatch,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.testing import make_node, make_pod

REJECT = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
FITS = Status()


@dataclass
class Probe:
    """A batch with a fake clock, the counts it reported and the durations it observed."""

    now: float = 0.0
    counts: list[tuple[str, str]] = field(default_factory=list)
    observed: list[tuple[str, str, float]] = field(default_factory=list)
    nodes: dict[str, NodeInfo] = field(
        default_factory=lambda: {n: NodeInfo(make_node(n).obj()) for n in ("n0", "n1", "n2")}
    )
    filtered: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.batch = OpportunisticBatch(
            lambda: self.now,
            lambda k, v: self.counts.append((k, v)),
            lambda h, label, seconds: self.observed.append((h, label, seconds)),
        )

    def hint(self, signature: str | None, cycle: int, verdict: Status = REJECT) -> str:
        def run_filters(state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
            self.filtered.append(node_info.name)
            return verdict

        hint, signed = self.batch.node_hint(
            lambda: signature,
            cycle,
            CycleState(),
            PodInfo(make_pod("p").obj()),
            self.nodes.get,
            run_filters,
        )
        assert signed == signature
        return hint


def _ranked(*names: str) -> Callable[[], list[str]]:
    return lambda: list(names)


def test_a_first_pod_gets_no_hint() -> None:
    probe = Probe()
    assert probe.hint("sig", 1) == ""
    assert probe.counts == [("attempt", "no_hint")]


def _after_first_pod(probe: Probe) -> None:
    """The first pod (cycle 1) was scored over n0, n2, n1 and went to n0."""
    probe.hint("sig", 1)
    probe.batch.store_results("sig", "", "n0", _ranked("n2", "n1"), 1)
    probe.counts.clear()


def _expire(probe: Probe) -> None:
    probe.now += MAX_BATCH_AGE_SECONDS + 0.01


def _drop_n0(probe: Probe) -> None:
    del probe.nodes["n0"]


# (id, what happens before the second pod, its signature, its cycle, the Filter verdict on
# the last chosen node, expected hint, expected counts)
CASES: list[tuple[str, Callable[[Probe], None] | None, str | None, int, Status, str, list]] = [
    ("same-signature-node-full", None, "sig", 2, REJECT, "n2", []),
    ("another-pod-in-between", None, "sig", 3, REJECT, "", [("flush", "pod_skipped")]),
    ("other-signature", None, "other", 2, REJECT, "", [("flush", "pod_incompatible")]),
    ("unsignable-pod", None, None, 2, REJECT, "", [("flush", "pod_incompatible")]),
    ("ranking-too-old", _expire, "sig", 2, REJECT, "", [("flush", "expired")]),
    ("last-node-deleted", _drop_n0, "sig", 2, REJECT, "", [("flush", "node_missing")]),
    ("pod-fits-last-node-again", None, "sig", 2, FITS, "", [("flush", "node_not_full")]),
]


@pytest.mark.parametrize(
    ("before", "signature", "cycle", "verdict", "hint", "counts"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_second_pod_of_a_batch(
    before: Callable[[Probe], None] | None,
    signature: str | None,
    cycle: int,
    verdict: Status,
    hint: str,
    counts: list[tuple[str, str]],
) -> None:
    probe = Probe()
    _after_first_pod(probe)
    if before is not None:
        before(probe)
    assert probe.hint(signature, cycle, verdict) == hint
    no_hint = [] if hint else [("attempt", "no_hint")]
    assert probe.counts == counts + no_hint


def test_the_last_chosen_node_is_filtered_only_when_the_rest_matches() -> None:
    probe = Probe()
    _after_first_pod(probe)
    probe.hint("other", 2)
    assert probe.filtered == []
    probe.batch.store_results("sig", "", "n0", _ranked("n2", "n1"), 2)
    probe.hint("sig", 3)
    assert probe.filtered == ["n0"]


def test_a_used_hint_keeps_the_rest_of_the_ranking_until_it_runs_out() -> None:
    probe = Probe()
    _after_first_pod(probe)
    assert probe.hint("sig", 2) == "n2"
    probe.batch.store_results("sig", "n2", "n2", None, 2)
    assert probe.hint("sig", 3) == "n1"
    probe.batch.store_results("sig", "n1", "n1", None, 3)
    assert probe.hint("sig", 4) == ""
    assert probe.counts == [
        ("attempt", "hint_used"),
        ("attempt", "hint_used"),
        ("attempt", "no_hint"),
    ]
    # The second and third pods were checked against the node chosen just before them.
    assert probe.filtered == ["n0", "n2"]


def test_a_hint_not_taken_is_replaced_by_the_new_ranking() -> None:
    probe = Probe()
    _after_first_pod(probe)
    assert probe.hint("sig", 2) == "n2"
    # The hinted node failed its filters; the pod was scored over the others.
    probe.batch.store_results("sig", "n2", "n1", _ranked("n0"), 2)
    assert probe.counts == [("attempt", "hint_not_used")]
    assert probe.hint("sig", 3) == "n0"


STORE_CASES: list[tuple[str, str | None, Any, list[tuple[str, str]]]] = [
    ("signed-several-feasible", "sig", _ranked("n1"), []),
    ("unsigned", None, _ranked("n1"), [("flush", "pod_not_batchable")]),
    ("one-feasible-node", "sig", None, [("flush", "empty_list")]),
]


@pytest.mark.parametrize(
    ("signature", "ranked", "counts"),
    [c[1:] for c in STORE_CASES],
    ids=[c[0] for c in STORE_CASES],
)
def test_what_a_cycle_without_a_hint_keeps(
    signature: str | None, ranked: Any, counts: list[tuple[str, str]]
) -> None:
    probe = Probe()
    probe.batch.store_results(signature, "", "n0", ranked, 1)
    assert probe.counts == counts
    assert probe.hint("sig", 2) == ("n1" if not counts else "")


def test_an_unsigned_pod_is_not_ranked() -> None:
    probe = Probe()

    def rank() -> list[str]:
        raise AssertionError("an unsigned pod's nodes were ranked")

    probe.batch.store_results(None, "", "n0", rank, 1)
    assert probe.counts == [("flush", "pod_not_batchable")]


def test_each_call_observes_its_duration_once_with_upstreams_labels() -> None:
    probe = Probe()
    _after_first_pod(probe)
    probe.observed.clear()
    assert probe.hint("sig", 2) == "n2"
    probe.batch.store_results("sig", "n2", "n2", None, 2)
    assert probe.hint("other", 3) == ""
    assert [(h, label) for h, label, _ in probe.observed] == [
        (GET_NODE_HINT, "hint"),
        (STORE_SCHEDULE_RESULTS, ""),
        (GET_NODE_HINT, "no_hint"),
    ]
    assert all(seconds >= 0 for *_, seconds in probe.observed)


def test_the_node_hint_duration_includes_signing(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    events: list[str] = []

    def timer() -> float:
        events.append("timer")
        return float(len(events))

    def sign() -> str:
        events.append("sign")
        return "sig"

    monkeypatch.setattr("kubesched.framework.runtime.batch.time.perf_counter", timer)
    probe.batch.node_hint(
        sign, 1, CycleState(), PodInfo(make_pod("p").obj()), probe.nodes.get, None
    )
    assert events == ["timer", "sign", "timer"]
    assert probe.observed == [(GET_NODE_HINT, "no_hint", 2.0)]
