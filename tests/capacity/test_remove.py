"""``capacity remove``: cluster-autoscaler's scale-down rules, each case checked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.capacity.nodes import COST_ANNOTATION
from kubesched.capacity.remove import (
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    SCALE_DOWN_DISABLED,
    DrainOptions,
    capacity_remove,
)
from kubesched.errors import UserInputError
from kubesched.testing import make_node, make_pod, objects_from

pytestmark = pytest.mark.filterwarnings("ignore")


def _node(name: str, cpu: str = "4", **annotations: str) -> dict[str, Any]:
    manifest = (
        make_node(name)
        .capacity(cpu=cpu, memory="16Gi", pods="110")
        .labels({"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"})
        .manifest()
    )
    manifest["metadata"]["annotations"] = dict(annotations)
    return manifest


def _keeper(name: str) -> dict[str, Any]:
    """A node that stays whatever happens (scale-down disabled): room for moved pods."""
    return _node(name, **{SCALE_DOWN_DISABLED: "true"})


def _replicaset(name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-ReplicaSet-{name}"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }


def _replica(name: str, app: str, node: str, cpu: str = "1", namespace: str = "default") -> Any:
    return (
        make_pod(name)
        .namespace(namespace)
        .labels(app=app)
        .owner("ReplicaSet", app)
        .req(cpu=cpu)
        .node(node)
    )


def _pdb(name: str, app: str, max_unavailable: int, namespace: str = "default") -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


def _kept(report: Any) -> dict[str, tuple[str, str]]:
    return {k.name: (k.reason, k.message) for k in report.kept}


def test_empty_node_first_then_the_least_utilised() -> None:
    report = capacity_remove(
        objects_from(
            _node("a"),
            _node("b"),
            _node("c"),
            _replicaset("web", 3),
            _replica("web-1", "web", "a"),
            _replica("web-2", "web", "b"),
            _replica("web-3", "web", "b"),
        )
    )
    # c is empty: removed first, with no simulation; a (25%) next, its pod to b; b (50%)
    # is not below the 0.5 threshold.
    assert [r.name for r in report.removable] == ["c", "a"]
    assert report.removable[0].empty and report.removable[0].moved == {}
    assert report.removable[1].moved == {"default/web-1": "b"}
    assert _kept(report) == {"b": ("NotUnderutilized", "cpu utilisation 0.50 is not below 0.5")}
    assert report.simulations == 1
    assert (report.cost, report.cost_saved, report.pods_moved) == (3.0, 2.0, 1)


def test_a_removal_is_kept_only_when_every_pod_finds_a_node() -> None:
    # a and b run a 3-cpu pod each on 8 cpu (37.5%), c a 2-cpu pod on 4 cpu (50%).
    report = capacity_remove(
        objects_from(
            _node("a", cpu="8"),
            _node("b", cpu="8"),
            _node("c", cpu="4"),
            _replicaset("big", 2),
            _replicaset("small", 1),
            _replica("big-1", "big", "a", cpu="3"),
            _replica("big-2", "big", "b", cpu="3"),
            _replica("small-1", "small", "c", cpu="2"),
        ),
        options=DrainOptions(utilization_threshold=0.4),
    )
    assert [r.name for r in report.removable] == ["a"]
    assert report.removable[0].moved == {"default/big-1": "b"}
    kept = _kept(report)
    assert kept["c"] == ("NotUnderutilized", "cpu utilisation 0.50 is not below 0.4")
    # b now runs both big pods (6 of 8 cpu) but is tried at its utilisation before the
    # removals, as cluster-autoscaler does; c has 2 cpu left for pods of 3.
    reason, message = kept["b"]
    assert reason == "NoPlaceToMovePods"
    assert message.startswith("2 of 2 pod(s) found no other node; default/big-1: ")
    assert message.endswith("0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        pytest.param(
            make_pod("bare").req(cpu="1").node("a"),
            "NotReplicated: default/bare is not replicated",
            id="no-controller",
        ),
        pytest.param(
            make_pod("custom").owner("Widget", "w").req(cpu="1").node("a"),
            "NotReplicated: default/custom is not replicated",
            id="custom-controller",
        ),
        pytest.param(
            make_pod("lost").labels(app="lost").owner("ReplicaSet", "gone").req(cpu="1").node("a"),
            "ControllerNotFound: ReplicaSet gone of default/lost is not available",
            id="controller-not-found",
        ),
        pytest.param(
            _replica("web-1", "web", "a").annotations({SAFE_TO_EVICT: "false"}),
            "NotSafeToEvictAnnotation: pod annotated as not safe to evict present: web-1",
            id="safe-to-evict-false",
        ),
    ],
)
def test_pods_that_block_a_drain(pod: Any, reason: str) -> None:
    report = capacity_remove(objects_from(_node("a"), _node("b"), _replicaset("web", 1), pod))
    assert [r.name for r in report.removable] == ["b"]
    assert _kept(report)["a"] == ("BlockedByPod", reason)
    assert report.kept[0].blocking_pod == f"default/{objects_from(pod)[0].name}"


def test_safe_to_evict_true_lifts_the_controller_rule() -> None:
    pod = make_pod("bare").req(cpu="1").node("a").annotations({SAFE_TO_EVICT: "true"})
    report = capacity_remove(objects_from(_node("a"), _node("b", cpu="8"), pod))
    # b is empty and goes first; a's pod then has nowhere to go.
    assert [r.name for r in report.removable] == ["b"]
    assert _kept(report)["a"][0] == "NoPlaceToMovePods"
    report = capacity_remove(
        objects_from(
            _node("a"),
            _node("b", cpu="8"),
            _node("c", cpu="8", **{SCALE_DOWN_DISABLED: "true"}),
            pod,
        )
    )
    assert "a" in [r.name for r in report.removable]
    assert _kept(report)["c"] == ("ScaleDownDisabledAnnotation", f"{SCALE_DOWN_DISABLED}=true")


def _with_volume(volume: dict[str, Any], annotations: dict[str, str] | None = None) -> Any:
    manifest = _replica("web-1", "web", "a").annotations(annotations or {}).manifest()
    manifest["spec"]["volumes"] = [volume]
    return manifest


@pytest.mark.parametrize(
    ("pod", "options", "blocked"),
    [
        pytest.param(_with_volume({"name": "tmp", "emptyDir": {}}), {}, True, id="emptydir"),
        pytest.param(
            _with_volume({"name": "h", "hostPath": {"path": "/var"}}), {}, True, id="hostpath"
        ),
        pytest.param(
            _with_volume({"name": "tmp", "emptyDir": {"medium": "Memory"}}),
            {},
            False,
            id="emptydir-in-memory",
        ),
        pytest.param(
            _with_volume({"name": "tmp", "emptyDir": {}}, {SAFE_TO_EVICT_LOCAL_VOLUMES: "x,tmp"}),
            {},
            False,
            id="listed-safe",
        ),
        pytest.param(
            _with_volume({"name": "tmp", "emptyDir": {}}),
            {"skip_nodes_with_local_storage": False},
            False,
            id="flag-off",
        ),
        pytest.param(
            _with_volume({"name": "tmp", "emptyDir": {}}, {SAFE_TO_EVICT: "true"}),
            {},
            False,
            id="safe-to-evict",
        ),
    ],
)
def test_local_storage(pod: Any, options: dict[str, Any], blocked: bool) -> None:
    report = capacity_remove(
        objects_from(_node("a"), _keeper("b"), _replicaset("web", 1), pod),
        options=DrainOptions(**options),
    )
    kept = _kept(report)
    if blocked:
        assert kept["a"] == (
            "BlockedByPod",
            "LocalStorageRequested: pod with local storage present: web-1",
        )
    else:
        assert "a" not in kept


def test_kube_system_pods_need_a_budget() -> None:
    objects = [
        _node("a"),
        _keeper("b"),
        _replicaset("dns", 1, namespace="kube-system"),
        _replica("dns-1", "dns", "a", namespace="kube-system"),
    ]
    kept = _kept(capacity_remove(objects_from(*objects)))
    assert kept["a"] == (
        "BlockedByPod",
        "UnmovableKubeSystemPod: non-daemonset, non-mirrored, non-pdb-assigned kube-system "
        "pod present: dns-1",
    )
    with_pdb = capacity_remove(objects_from(*objects, _pdb("dns", "dns", 1, "kube-system")))
    assert "a" in [r.name for r in with_pdb.removable]
    flag_off = capacity_remove(
        objects_from(*objects), options=DrainOptions(skip_nodes_with_system_pods=False)
    )
    assert "a" in [r.name for r in flag_off.removable]


def test_disruption_budget_is_spent_across_removals() -> None:
    # maxUnavailable 1 over three replicas on three nodes: one node's pod may move, the
    # second node is then refused; the fourth node, empty, goes first.
    report = capacity_remove(
        objects_from(
            _node("a", cpu="8"),
            _node("b", cpu="8"),
            _node("c", cpu="8"),
            _node("d", cpu="8"),
            _replicaset("web", 3),
            _replica("web-1", "web", "a"),
            _replica("web-2", "web", "b"),
            _replica("web-3", "web", "c"),
            _pdb("web", "web", 1),
        )
    )
    assert [r.name for r in report.removable] == ["d", "a"]
    kept = _kept(report)
    assert kept["b"] == (
        "BlockedByPod",
        "NotEnoughPdb: not enough pod disruption budget to move default/web-2 "
        "(PodDisruptionBudget default/web)",
    )
    assert kept["c"][0] == "BlockedByPod"


def test_daemonset_pods_go_with_the_node_and_count_in_utilisation() -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2500m"}}}
                    ]
                },
            },
        },
    }
    objects = [_node("a"), _node("b"), ds]
    report = capacity_remove(objects_from(*objects))
    # Each node runs the agent (2.5 of 4 cpu, 62.5%): both stay.
    assert report.removable == []
    assert _kept(report)["a"] == ("NotUnderutilized", "cpu utilisation 0.62 is not below 0.5")
    report = capacity_remove(
        objects_from(*objects), options=DrainOptions(ignore_daemonsets_utilization=True)
    )
    # Without the agent, both are empty; the first goes, its agent pod with it.
    assert [(r.name, r.empty, r.dropped_pods) for r in report.removable] == [
        ("a", True, 1),
        ("b", True, 1),
    ]


def test_gpu_nodes_use_their_gpu_utilisation() -> None:
    gpu = make_node("gpu").capacity(cpu="8", memory="16Gi", pods="110", **{"nvidia.com/gpu": "4"})
    pod = (
        make_pod("train-1")
        .labels(app="train")
        .owner("ReplicaSet", "train")
        .container({"cpu": "7", "nvidia.com/gpu": 1})
        .node("gpu")
    )
    report = capacity_remove(objects_from(gpu, _replicaset("train", 1), pod))
    # 7 of 8 cpu, but 1 of 4 GPUs: under the GPU threshold; the pod has nowhere to go.
    assert _kept(report)["gpu"][0] == "NoPlaceToMovePods"
    assert report.kept[0].utilization == 0.25
    assert report.kept[0].utilization_resource == "nvidia.com/gpu"
    report = capacity_remove(
        objects_from(gpu, _replicaset("train", 1), pod),
        options=DrainOptions(gpu_utilization_threshold=0.25),
    )
    assert _kept(report)["gpu"][0] == "NotUnderutilized"


def test_cost_and_max_removals() -> None:
    objects = objects_from(
        _node("a", **{COST_ANNOTATION: "2.5"}), _node("b"), _node("c", **{COST_ANNOTATION: "4"})
    )
    report = capacity_remove(objects, max_removals=2)
    assert [r.name for r in report.removable] == ["a", "b"]
    assert _kept(report)["c"] == ("MaxRemovalsReached", "--max-removals 2 nodes already removed")
    assert (report.cost, report.cost_saved) == (7.5, 3.5)


def test_bad_cost_annotation_is_refused() -> None:
    with pytest.raises(UserInputError, match=r'Invalid value: "cheap": must be a positive'):
        capacity_remove(objects_from(_node("a", **{COST_ANNOTATION: "cheap"})), source="c.yaml")


def test_moved_pods_respect_the_profile() -> None:
    # The web replicas repel each other per node: a's replica cannot join b's.
    def anti(name: str, node: str) -> Any:
        return _replica(name, "web", node).pod_anti_affinity(
            "kubernetes.io/hostname", {"app": "web"}
        )

    report = capacity_remove(
        objects_from(
            _node("a"), _node("b"), _replicaset("web", 2), anti("w1", "a"), anti("w2", "b")
        )
    )
    assert report.removable == []
    reason, message = _kept(report)["a"]
    assert reason == "NoPlaceToMovePods"
    assert "didn't match pod anti-affinity rules" in message
