"""PodInfo shares what pods have in common without mixing up pods that differ."""

from __future__ import annotations

import pytest

from kubesched.api import Pod, Toleration
from kubesched.framework.types import PodInfo

TOLS = [Toleration(key="a", operator="Exists"), Toleration(key="b", operator="Exists")]


def _pod(name: str, tolerations: list[Toleration], labels: dict[str, str] | None = None) -> Pod:
    p = Pod.model_validate({"metadata": {"name": name, "labels": labels or {}}})
    p.spec.tolerations = tolerations
    return p


@pytest.mark.parametrize(
    ("second", "shared"),
    [
        (list(TOLS), True),
        ([TOLS[0]], False),
        ([TOLS[0], Toleration(key="b", operator="Exists")], False),
        ([], False),
    ],
    ids=["same-objects", "fewer", "equal-but-another-object", "none"],
)
def test_tolerations_tuple_is_shared_only_for_the_same_objects(second, shared: bool):
    first = PodInfo(_pod("a", list(TOLS)))
    other = PodInfo(_pod("b", second))
    assert (first.tolerations is other.tolerations) is shared
    assert other.tolerations == tuple(second)
    assert all(x is y for x, y in zip(other.tolerations, second, strict=True))


def test_labels_are_the_pods_own_dict():
    empty, labelled = _pod("a", []), _pod("b", [], {"app": "x"})
    assert PodInfo(empty).labels is empty.metadata.labels == {}
    assert PodInfo(labelled).labels is labelled.metadata.labels
