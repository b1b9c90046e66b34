"""Plugins declaring the pods they skip (``skips_pods_without``): the framework does not
call them for such pods and records the Skip exactly as if they had answered it."""

from __future__ import annotations

import pytest

from kubesched import FeatureGates, NodeInfo, PodInfo, Status, hookimpl
from kubesched.framework.runtime import FrameworkError
from kubesched.framework.runtime.framework import POD_FIELDS
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.nodeaffinity import NodeAffinity
from kubesched_builtin.nodeports import NodePorts
from kubesched_builtin.nodevolumelimits import NodeVolumeLimits
from kubesched_builtin.volumebinding.plugin import VolumeBinding
from kubesched_builtin.volumerestrictions import VolumeRestrictions
from kubesched_builtin.volumezone import VolumeZone

CALLS: list[str] = []


class VolumesOnly:
    """A third-party plugin declaring that it skips pods without volumes."""

    name = "VolumesOnly"
    skips_pods_without = {"PreFilter": ("volumes",), "PreScore": ("volumes", "host_ports")}

    def __init__(self, args, handle) -> None:
        pass

    @hookimpl
    def pre_filter(self, pod_info) -> Status | None:
        CALLS.append("pre_filter")
        return None

    @hookimpl
    def filter(self, node_info) -> Status | None:
        return None

    @hookimpl
    def pre_score(self, pod_info) -> Status | None:
        CALLS.append("pre_score")
        return None


NODES = [NodeInfo(make_node("n1").capacity(cpu="4", memory="8Gi").obj())]


@pytest.mark.parametrize(
    ("pod", "calls"),
    [
        (make_pod("plain").obj(), []),
        (make_pod("vol").pvc("c").obj(), ["pre_filter", "pre_score"]),
        (make_pod("port").host_port(80).obj(), ["pre_score"]),
    ],
    ids=["no-fields-no-call", "volumes-both-called", "host-port-pre-score-only"],
)
def test_declared_skip_is_not_called_and_recorded_as_skip(pod, calls):
    CALLS.clear()
    fw = make_framework(VolumesOnly)
    state = fw.new_cycle_state()
    _, status, _ = fw.run_pre_filter_plugins(state, PodInfo(pod), NODES)
    assert status.is_success()
    assert fw.run_pre_score_plugins(state, PodInfo(pod), NODES).is_success()
    assert calls == CALLS
    assert ("VolumesOnly" in state.skip_filter_plugins) is ("pre_filter" not in calls)
    assert ("VolumesOnly" in state.skip_score_plugins) is ("pre_score" not in calls)


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (("volumes",), "must map extension points to pod fields, got tuple"),
        ({"Filter": ("volumes",)}, "names ['Filter']; only ['PreFilter', 'PreScore']"),
        ({"PreFilter": "volumes"}, "['PreFilter'] must be a list of pod field names"),
        ({"PreFilter": ("volume",)}, "names unknown pod field(s) ['volume']; known: ["),
    ],
    ids=["not-a-mapping", "unknown-point", "a-string", "unknown-field"],
)
def test_a_wrong_declaration_is_a_framework_error(declared, message):
    cls = type("Bad", (VolumesOnly,), {"name": "Bad", "skips_pods_without": declared})
    with pytest.raises(FrameworkError, match="plugin 'Bad': skips_pods_without") as err:
        make_framework(cls)
    assert message in str(err.value)


PODS = {
    "plain": make_pod("p").obj(),
    "priority-and-tolerations": make_pod("p").priority(7).toleration("k", "v").obj(),
    "pod-affinity": make_pod("p").pod_affinity("zone", {"matchLabels": {"a": "b"}}).obj(),
    "anti-affinity": make_pod("p").pod_anti_affinity("zone", {"matchLabels": {"a": "b"}}).obj(),
    "spread": make_pod("p")
    .spread_constraint(1, "zone", selector={"matchLabels": {"a": "b"}})
    .obj(),
    "container-port-no-host-port": make_pod("p").container(ports=[{"containerPort": 80}]).obj(),
    "node-selector": make_pod("p").node_selector({"zone": "a"}).obj(),
    "required-node-affinity": make_pod("p").node_affinity_in("zone", ["a"]).obj(),
    "preferred-node-affinity": make_pod("p").preferred_node_affinity(5, "zone", ["a"]).obj(),
    "host-port": make_pod("p").host_port(80).obj(),
    "volume": make_pod("p").pvc("c").obj(),
}

SCORING = FeatureGates({"StorageCapacityScoring": True})

ADDED_AFFINITY = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
        ],
    }
}


@pytest.mark.parametrize("pod_name", list(PODS), ids=list(PODS))
@pytest.mark.parametrize(
    ("plugins", "args", "gates"),
    [
        (
            (
                NodePorts,
                VolumeZone,
                NodeVolumeLimits,
                VolumeRestrictions,
                NodeAffinity,
                VolumeBinding,
            ),
            None,
            None,
        ),
        ((NodeAffinity,), {"NodeAffinity": ADDED_AFFINITY}, None),
        ((VolumeBinding,), None, SCORING),
    ],
    ids=["built-ins", "node-affinity-with-added-affinity", "volume-binding-scoring"],
)
def test_built_in_declarations_skip_only_what_the_plugin_skips(pod_name, plugins, args, gates):
    """Where a built-in declares a skip, its own hook answers Skip for that pod (the
    declaration is sound); with added affinity NodeAffinity declares nothing."""
    fw = make_framework(*plugins, args=args, feature_gates=gates)
    pod_info = PodInfo(PODS[pod_name])
    for ep, hook in (("PreFilter", "pre_filter"), ("PreScore", "pre_score")):
        declared = fw._declared_skips[ep].skipped(pod_info)
        for name in declared:
            runner = fw.runners[name]
            state = fw.new_cycle_state()
            answer = runner.call(hook)(state, pod_info.pod, pod_info, NODES)
            assert isinstance(answer, Status) and answer.is_skip(), (name, ep)
    if "NodeAffinity" in (args or {}):
        assert not fw._declared_skips["PreFilter"].by_runner
        assert not fw._declared_skips["PreScore"].by_runner
    elif gates is not None:
        # Under StorageCapacityScoring VolumeBinding scores the pods with volumes only.
        declared = fw._declared_skips["PreScore"].skipped(pod_info)
        assert ("VolumeBinding" in declared) is (pod_name != "volume")
    else:
        # Without StorageCapacityScoring VolumeBinding's PreScore skips every pod.
        assert "VolumeBinding" in fw._declared_skips["PreScore"].skipped(pod_info)


def test_pod_fields_see_what_they_name():
    have = {
        name: {f for f, has in POD_FIELDS.items() if has(PodInfo(p))} for name, p in PODS.items()
    }
    assert have["plain"] == set()
    assert have["priority-and-tolerations"] == set()
    assert have["container-port-no-host-port"] == set()
    assert have["pod-affinity"] == {"pod_affinity"}
    assert have["anti-affinity"] == {"pod_anti_affinity"}
    assert have["spread"] == {"topology_spread_constraints"}
    assert have["node-selector"] == {"node_selector"}
    assert have["required-node-affinity"] == {"node_affinity"}
    assert have["preferred-node-affinity"] == {"node_affinity"}
    assert have["host-port"] == {"host_ports"}
    assert have["volume"] == {"volumes"}
