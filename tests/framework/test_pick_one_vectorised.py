"""Picking the preemption candidate by upstream's default criteria, one numpy column per
criterion, equals applying the criteria candidate by candidate."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched import PodInfo
from kubesched.framework.preemption import (
    CRITERIA,
    FIRST_IN_ORDER,
    Candidate,
    _default_score_funcs,
    pick_one_node_for_preemption_explained,
)
from kubesched.testing import make_pod

START_TIMES = ("2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z", "2026-01-01T01:00:00Z", None)
"""Few values, so that candidates often tie; None: not started (counts as now)."""

PRIORITIES = (-(2**31), -5, 0, 1, 7, 2**31 - 1)
victim = st.tuples(st.sampled_from(PRIORITIES), st.sampled_from(START_TIMES))
candidate = st.tuples(st.lists(victim, min_size=1, max_size=4), st.integers(0, 2))


def build(specs) -> list[Candidate]:
    out = []
    for i, (victims, violations) in enumerate(specs):
        infos = []
        for j, (priority, start) in enumerate(victims):
            b = make_pod(f"v{i}-{j}").priority(priority)
            if start is not None:
                b = b.start_time(start)
            infos.append(PodInfo(b.obj()))
        # Most important first, as the dry run hands them over.
        infos.sort(key=lambda p: (-p.priority, p.pod.status.start_time is None))
        out.append(Candidate(f"n{i}", infos, violations))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(candidate, min_size=1, max_size=8))
def test_default_criteria_vectorised_equal_one_by_one(specs):
    candidates = build(specs)
    chosen, decided_by = pick_one_node_for_preemption_explained(candidates)
    # The same functions as custom score functions take the candidate-by-candidate path.
    plain, plain_by = pick_one_node_for_preemption_explained(
        candidates, _default_score_funcs(candidates)
    )
    assert chosen is plain
    names = {f"custom score function {i}": name for i, name in enumerate(CRITERIA)}
    assert decided_by == names.get(plain_by, plain_by)
    assert decided_by in (*CRITERIA, FIRST_IN_ORDER)
