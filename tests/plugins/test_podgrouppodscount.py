"""PodGroupPodsCount: placements scored by the pods of the group they would hold."""

from __future__ import annotations

import pytest

from kubesched import Code, CycleState, Placement, PodGroupAssignments, hookimpl
from kubesched.api import parse_object
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.podgrouppodscount import ERR_NO_PODS, PodGroupPodsCount

GROUP = parse_object(
    {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
)
NODES = [make_node(f"n{i}").capacity(cpu="4", pods=110).obj() for i in range(2)]


def gpod(name: str, node: str | None = None, grp: str = "g"):
    b = make_pod(name).uid(name)
    if node:
        b = b.node(node)
    manifest = b.manifest()
    manifest["spec"]["schedulingGroup"] = {"podGroupName": grp}
    return parse_object(manifest)


def candidate(placed: int) -> PodGroupAssignments:
    """A placement on which ``placed`` pods of the group found a node."""
    return PodGroupAssignments(
        Placement(f"p{placed}", ()), tuple((gpod(f"new-{i}"), "n0") for i in range(placed))
    )


CASES = [
    # (id, pods of the group already with a node, pods placed per candidate, totals)
    ("best-gets-100", [], [2, 4], [50, 100]),
    ("rounded-down-as-go", [], [1, 2, 3], [33, 66, 100]),
    (
        "scheduled-pods-narrow-the-gap",
        [gpod("old-0", "n0"), gpod("old-1", "n1")],
        [2, 4],
        [66, 100],
    ),
    ("other-groups-pods-do-not-count", [gpod("o", "n0", grp="h")], [1, 2], [50, 100]),
    ("a-single-candidate", [], [3], [100]),
]


@pytest.mark.parametrize(
    ("assigned", "placed", "totals"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score_placements(assigned, placed, totals):
    fw = make_framework(PodGroupPodsCount, lister=StaticLister([GROUP]))
    fw.set_snapshot(new_snapshot(assigned, NODES))
    got, status = fw.run_placement_score_plugins(
        CycleState(), GROUP, [candidate(n) for n in placed]
    )
    assert status.is_success()
    assert got == totals


def test_the_weight_multiplies_the_normalised_score():
    fw = make_framework(
        PodGroupPodsCount, lister=StaticLister([GROUP]), weights={"PodGroupPodsCount": 3}
    )
    fw.set_snapshot(new_snapshot([], NODES))
    got, _ = fw.run_placement_score_plugins(CycleState(), GROUP, [candidate(1), candidate(2)])
    assert got == [150, 300]


def test_no_pod_anywhere_is_an_error():
    fw = make_framework(PodGroupPodsCount, lister=StaticLister([GROUP]))
    fw.set_snapshot(new_snapshot([], NODES))
    _, status = fw.run_placement_score_plugins(CycleState(), GROUP, [candidate(0), candidate(0)])
    assert status.code == Code.ERROR
    assert status.message() == f'running PlacementScore plugin "PodGroupPodsCount": {ERR_NO_PODS}'


class NotAScore:
    """A PlacementScore plugin whose score_placement answers something else than an int."""

    name = "NotAScore"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def score_placement(self):
        return "high"

    @hookimpl
    def normalize_placement_score(self, scores):
        return None


def test_a_score_that_is_not_an_integer_is_an_error_naming_the_plugin():
    fw = make_framework(NotAScore, lister=StaticLister([GROUP]))
    fw.set_snapshot(new_snapshot([], NODES))
    _, status = fw.run_placement_score_plugins(CycleState(), GROUP, [candidate(1)])
    assert status.code == Code.ERROR
    assert status.message().startswith('running PlacementScore plugin "NotAScore"')
