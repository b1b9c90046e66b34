"""The verdicts of ``kubesched compare``, from real decisions written by hand: placements
that agree, ties, differences with kubesched's scores or filter, FailedScheduling messages."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import load_manifests
from kubesched.compare import normalise_message
from kubesched.compare.prepare import prepare
from kubesched.compare.real import RealDecision, RealRun
from kubesched.compare.replay import Replay
from kubesched.config import default_configuration, effective_configuration
from kubesched.errors import UserInputError
from kubesched.framework.registry import default_registry
from kubesched.testing import make_node, make_pod

PREFIX = "cmp-1234-"
NS = f"{PREFIX}default"
UPSTREAM_BIG = (
    "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new "
    "claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful "
    "for scheduling."
)
"""What kube-scheduler v1.36.2 said for ``big`` below (its DynamicResources PostFilter
included), read from a real run."""


def _nodes() -> list[dict[str, Any]]:
    same = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).manifest()
            for i in (1, 2)]  # fmt: skip
    tainted = make_node("db").capacity(cpu="4", memory="8Gi", pods=110).taint("dedicated", "db")
    return [*same, tainted.manifest()]


def _pod(name: str, cpu: str = "1") -> dict[str, Any]:
    return make_pod(name).namespace(NS).req(cpu=cpu, memory="1Gi").manifest()


def _replay(*decisions: RealDecision) -> Replay:
    registry = default_registry()
    effective = effective_configuration(default_configuration(registry), registry)
    run = RealRun(objects=_nodes(), decisions=list(decisions), foreign=[])
    return Replay(run, effective, registry, PREFIX)


def _decision(name: str, node: str | None = None, message: str = "", **kw: Any) -> RealDecision:
    return RealDecision(key=f"{NS}/{name}", created=kw.pop("created", _pod(name)), node=node,
                        unschedulable=bool(message), message=message, **kw)  # fmt: skip


def test_equal_nodes_are_a_tie_not_a_difference() -> None:
    verdicts = {}
    for real in ("n1", "n2"):
        replay = _replay(d := _decision("web", real))
        result = replay.compare(d, {})
        replay.close()
        verdicts[real] = result
    assert sorted(r.verdict for r in verdicts.values()) == ["agree", "tie"]
    tie = next(r for r in verdicts.values() if r.verdict == "tie")
    assert tie.tied_nodes == ["n1", "n2"]
    assert tie.pod == "default/web"  # the scratch prefix is not shown


def test_earlier_pods_sit_where_the_real_scheduler_put_them() -> None:
    # n1 holds the first pod (as the real scheduler decided): the least allocated node for
    # the second is n2, whatever kubesched would have done with the first.
    first, second = _decision("a", "n1"), _decision("b", "n2")
    replay = _replay(first, second)
    assert replay.compare(second, {f"{NS}/a": "n1"}).verdict == "agree"
    assert replay.cluster.get("Pod", NS, "a").spec.node_name == "n1"
    replay.close()


def test_a_lower_scored_node_differs_with_both_scores() -> None:
    replay = _replay(first := _decision("a", "n1"), second := _decision("b", "n1"))
    result = replay.compare(second, {f"{NS}/a": "n1"})
    replay.close()
    assert result.verdict == "differ"
    assert (result.real_node, result.kubesched_node) == ("n1", "n2")
    assert result.note == "kubesched scored n2 higher than n1"
    assert [s.node for s in result.scores] == ["n2", "n1"]
    mine, real = result.scores
    assert mine.total > real.total
    assert mine.plugins["NodeResourcesFit"] > real.plugins["NodeResourcesFit"]
    assert first.key != second.key


def test_a_node_kubesched_filters_out_differs_with_the_reason() -> None:
    replay = _replay(d := _decision("web", "db"))
    result = replay.compare(d, {})
    replay.close()
    assert result.verdict == "differ"
    assert result.note == "kubesched filtered db out: node(s) had untolerated taint(s)"


@pytest.mark.parametrize(
    ("real_message", "verdict"),
    [
        (UPSTREAM_BIG, "agree"),
        (UPSTREAM_BIG.replace("2 Insufficient cpu", "2 Insufficient memory"), "differ"),
        (UPSTREAM_BIG + ".", "differ"),
    ],
    ids=["same-after-normalising", "another-reason", "doubled-period"],
)
def test_failed_scheduling_messages(real_message: str, verdict: str) -> None:
    replay = _replay(d := _decision("big", message=real_message, created=_pod("big", "6")))
    result = replay.compare(d, {})
    replay.close()
    assert result.verdict == verdict, result.kubesched_message
    assert result.real_message == real_message
    assert result.kubesched_message.startswith("0/3 nodes are available: ")


def test_a_pod_kubesched_places_but_the_real_scheduler_could_not() -> None:
    replay = _replay(d := _decision("web", message="0/3 nodes are available: whatever."))
    result = replay.compare(d, {})
    replay.close()
    assert (result.verdict, result.note) == (
        "differ", "kubesched placed a pod the real scheduler could not",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("created", "note"),
    [
        (make_pod("x").namespace(NS).scheduler_name("other").manifest(),
         "no kubesched profile serves schedulerName 'other'"),
        (_pod("x"), "the real scheduler neither bound it nor reported it unschedulable"),
    ],
    ids=["no-kubesched-profile", "no-real-decision"],
)  # fmt: skip
def test_undecided(created: dict[str, Any], note: str) -> None:
    replay = _replay(d := _decision("x", created=created))
    result = replay.compare(d, {})
    replay.close()
    assert (result.verdict, result.note) == ("undecided", note)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("0/2 nodes are available: 2 b, 1 a.", ["0/2 nodes are available: 1 a, 2 b"]),
        ("0/2 nodes are available: 2 b.  no new claims to deallocate",
         ["0/2 nodes are available: 2 b"]),
        ("0/1 nodes are available: 1 x. no new claims to deallocate, preemption: not eligible "
         "due to preemptionPolicy=Never.",
         ["0/1 nodes are available: 1 x", "not eligible due to preemptionPolicy=Never"]),
        ("0/1 nodes are available: 1 x. preemption: y..",
         ["0/1 nodes are available: 1 x", "y."]),
    ],
    ids=["reasons-sorted", "dra-alone", "dra-then-preemption", "one-period-only"],
)  # fmt: skip
def test_normalise_message(message: str, expected: list[str]) -> None:
    assert normalise_message(message) == expected


def test_prepare_moves_namespaces_and_expands_workloads(tmp_path) -> None:
    (tmp_path / "w.yaml").write_text(
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, namespaces: [shop],
             labelSelector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 30
  containers: [{name: c, image: i}]
"""
    )
    plan = prepare(load_manifests([str(tmp_path)]), "cmp-1-")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"][:4]) for p in plan.pods] == [
        ("cmp-1-default", "solo"), ("cmp-1-shop", "web-"), ("cmp-1-shop", "web-"),
    ]  # fmt: skip
    solo, web = plan.pods[0], plan.pods[1]
    assert "priority" not in solo["spec"] and "preemptionPolicy" not in solo["spec"]
    assert solo["spec"]["terminationGracePeriodSeconds"] == 0
    anti = web["spec"]["affinity"]["podAntiAffinity"]
    term = anti["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["namespaces"] == ["cmp-1-shop"]
    assert web["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    kinds = [o["kind"] for o in plan.objects]
    assert "Deployment" not in kinds and "ReplicaSet" in kinds
    assert {o["metadata"]["name"] for o in plan.objects if o["kind"] == "Namespace"} == {
        "cmp-1-default", "cmp-1-shop",
    }  # fmt: skip


def test_prepare_refuses_a_kind_it_cannot_create(tmp_path) -> None:
    (tmp_path / "l.yaml").write_text(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l, namespace: x}\n"
    )
    with pytest.raises(UserInputError, match="compare cannot create Lease objects"):
        prepare(load_manifests([str(tmp_path)]), "cmp-1-")
