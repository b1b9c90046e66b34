"""PodTopologySpread's matching-pod counts from the snapshot's pod groups equal the walk."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import Node, Pod, compile_label_selector
from kubesched.api.meta import LabelSelector
from kubesched.cache import Snapshot
from kubesched.framework.types import PodInfo
from kubesched_builtin.podtopologyspread.common import PodCounter, grouped_counts

NAMESPACES = ("default", "other")
SELECTORS = [
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
    {},
]
pods = st.lists(
    st.tuples(
        st.sampled_from(NAMESPACES),
        st.fixed_dictionaries(
            {}, optional={"app": st.sampled_from(["a", "b"]), "tier": st.just("t")}
        ),
        st.booleans(),  # terminating
        st.integers(0, 5),  # node
    ),
    max_size=25,
)


def node(i: int) -> Node:
    return Node.model_validate(
        {"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}}, "status": {}}
    )


def pod(i: int, namespace: str, labels: dict, terminating: bool, n: int) -> PodInfo:
    meta = {"name": f"p{i}", "namespace": namespace, "uid": f"u{i}", "labels": labels}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return PodInfo(
        Pod.model_validate(
            {"metadata": meta, "spec": {"nodeName": f"n{n}", "containers": [{"name": "c"}]}}
        )
    )


@settings(max_examples=100, deadline=None)
@given(
    specs=pods,
    selector=st.sampled_from(SELECTORS),
    namespace=st.sampled_from(NAMESPACES),
    rows=st.lists(st.integers(0, 5), max_size=6),
)
def test_grouped_counts_equal_the_walk(specs, selector, namespace, rows) -> None:
    snap = Snapshot.from_objects(
        [pod(i, *spec) for i, spec in enumerate(specs)], [node(i) for i in range(6)]
    )
    matcher = compile_label_selector(LabelSelector.model_validate(selector))
    wanted = np.array(rows, dtype=np.intp)
    walked = PodCounter().counts(snap.table.infos, wanted, matcher, namespace)
    grouped = PodCounter().counts(snap.table.infos, wanted, matcher, namespace, snap)
    assert grouped.tolist() == walked.tolist()
    assert grouped_counts(snap, matcher, namespace).sum() == sum(
        1
        for ns, labels, terminating, _ in specs
        if ns == namespace and not terminating and matcher.matches(labels)
    )
