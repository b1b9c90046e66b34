"""Updates validated as kube-apiserver v1.36 validates them (``ValidateXUpdate``).

The expected messages are the real API server's (v1.36.2, dry-run PUTs of the same
changes); a refused Pod spec change is compared up to the diff that follows it (upstream
diffs its internal structs, kubesched its models).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api import KINDS, KubeObject
from kubesched.api.validation import validate_update
from kubesched.api.validation.update import POD_UPDATABLE_FIELDS
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.protocol import BackendError
from kubesched.clock import FakeClock

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
        "schedulingGates": [{"name": "a.io/g1"}, {"name": "a.io/g2"}],
        "tolerations": [
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"key": "t", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100},
        ],
        "nodeSelector": {"a": "b"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "z", "operator": "In", "values": ["1", "2"]}]}
                    ]
                }
            }
        },
    },
}
SPEC = f"spec: Forbidden: {POD_UPDATABLE_FIELDS}\n"
TERM0 = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)


def _ungated(d: dict[str, Any]) -> None:
    d["spec"]["schedulingGates"] = []


def _terms(d: dict[str, Any]) -> list[dict[str, Any]]:
    na = d["spec"]["affinity"]["nodeAffinity"]
    return na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def _change(d: dict[str, Any], fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    fn(d)
    return d


# (id, change to the old pod's manifest before, change made by the update, expected errors)
POD_CASES: list[tuple[str, Callable[[dict], Any] | None, Callable[[dict], Any], list[str]]] = [
    ("image", None, lambda d: d["spec"]["containers"][0].update(image="j"), []),
    (
        "cpu-request",
        None,
        lambda d: d["spec"]["containers"][0]["resources"].update(requests={"cpu": "2"}),
        [SPEC],
    ),
    ("node-name", None, lambda d: d["spec"].update(nodeName="n1"), [SPEC]),
    ("priority", None, lambda d: d["spec"].update(priority=5), [SPEC]),
    (
        "add-container",
        None,
        lambda d: d["spec"]["containers"].append({"name": "d", "image": "i"}),
        ["spec.containers: Forbidden: pod updates may not add or remove containers"],
    ),
    (
        "spread",
        None,
        lambda d: d["spec"].update(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        ),
        [SPEC],
    ),
    (
        "toleration-added",
        None,
        lambda d: d["spec"]["tolerations"].append({"operator": "Exists"}),
        [],
    ),
    (
        "toleration-modified",
        None,
        lambda d: d["spec"]["tolerations"][0].update(value="w"),
        [
            "spec.tolerations: Forbidden: existing toleration can not be modified except its "
            "tolerationSeconds"
        ],
    ),
    (
        "toleration-removed",
        None,
        lambda d: d["spec"]["tolerations"].pop(0),
        [
            "spec.tolerations: Forbidden: existing toleration can not be modified except its "
            "tolerationSeconds"
        ],
    ),
    (
        "toleration-seconds",
        None,
        lambda d: d["spec"]["tolerations"][1].update(tolerationSeconds=500),
        [],
    ),
    ("gate-removed", None, lambda d: d["spec"]["schedulingGates"].pop(0), []),
    (
        "gate-added",
        None,
        lambda d: d["spec"]["schedulingGates"].append({"name": "a.io/g3"}),
        [
            "spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new "
            "scheduling gate 'a.io/g3'"
        ],
    ),
    (
        "gate-added-ungated",
        _ungated,
        lambda d: d["spec"].update(schedulingGates=[{"name": "a.io/g3"}]),
        [
            "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new "
            "scheduling gate 'a.io/g3'"
        ],
    ),
    ("gated-node-selector-added", None, lambda d: d["spec"]["nodeSelector"].update(c="d"), []),
    (
        "gated-node-selector-changed",
        None,
        lambda d: d["spec"]["nodeSelector"].update(a="x"),
        [
            'spec.nodeSelector: Invalid value: {"a":"x"}: only additions to spec.nodeSelector '
            "are allowed (no mutations or deletions)"
        ],
    ),
    (
        "gated-node-selector-removed",
        None,
        lambda d: d["spec"].pop("nodeSelector"),
        [
            "spec.nodeSelector: Invalid value: null: only additions to spec.nodeSelector are "
            "allowed (no mutations or deletions)"
        ],
    ),
    (
        "ungated-node-selector-added",
        _ungated,
        lambda d: d["spec"]["nodeSelector"].update(c="d"),
        [SPEC],
    ),
    (
        "gated-affinity-narrowed",
        None,
        lambda d: _terms(d)[0]["matchExpressions"].append({"key": "y", "operator": "Exists"}),
        [],
    ),
    (
        "gated-affinity-widened",
        None,
        lambda d: _terms(d)[0]["matchExpressions"][0].update(values=["1", "2", "3"]),
        [
            f'{TERM0}: Invalid value: {{"MatchExpressions":[{{"Key":"z","Operator":"In",'
            '"Values":["1","2","3"]}],"MatchFields":null}: only additions are allowed (no '
            "mutations or deletions)"
        ],
    ),
    (
        "ungated-affinity-narrowed",
        _ungated,
        lambda d: _terms(d)[0]["matchExpressions"].append({"key": "y", "operator": "Exists"}),
        [SPEC],
    ),
    ("labels", None, lambda d: d["metadata"].update(labels={"x": "y"}), []),
]


def _pod(doc: dict[str, Any]) -> KubeObject:
    return KINDS["Pod"].model_validate(doc)


@pytest.mark.parametrize(
    ("before", "change", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_pod_updates_as_the_api_server(
    before: Callable[[dict], Any] | None, change: Callable[[dict], Any], expected: list[str]
) -> None:
    import copy

    old_doc = copy.deepcopy(POD)
    if before is not None:
        before(old_doc)
    new_doc = _change(copy.deepcopy(old_doc), change)
    got = [str(e) for e in validate_update(_pod(new_doc), _pod(old_doc))]
    # The spec refusal ends with a diff of kubesched's models: compare its first line.
    assert [g if not g.startswith(SPEC) else SPEC for g in got] == expected


def test_the_spec_refusal_shows_what_changed() -> None:
    import copy

    new_doc = copy.deepcopy(POD)
    new_doc["spec"]["nodeName"] = "n1"
    (err,) = validate_update(_pod(new_doc), _pod(POD))
    assert '+ "nodeName": "n1"' in str(err)


def _obj(kind: str, doc: dict[str, Any]) -> KubeObject:
    return KINDS[kind].model_validate({"kind": kind, **doc})


OTHER_CASES = [
    (
        "priorityclass-value",
        "PriorityClass",
        {"metadata": {"name": "pc"}, "value": 10},
        {"value": 20},
        ["value: Forbidden: may not be changed in an update."],
    ),
    (
        "storageclass",
        "StorageClass",
        {"metadata": {"name": "sc"}, "provisioner": "a.io/p", "parameters": {"a": "b"}},
        {
            "parameters": {"a": "c"},
            "provisioner": "b.io/p",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        [
            'parameters: Invalid value: {"a":"c"}: field is immutable',
            'provisioner: Invalid value: "b.io/p": field is immutable',
            'reclaimPolicy: Invalid value: "Retain": field is immutable',
            'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable',
        ],
    ),
    (
        "deployment-selector",
        "Deployment",
        {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b", "c": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        },
        {"spec": "selector", "value": {"matchLabels": {"c": "d"}}},
        ['spec.selector: Invalid value: {"matchLabels":{"c":"d"}}: field is immutable'],
    ),
    (
        "resourceslice",
        "ResourceSlice",
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "d.io",
                "pool": {"name": "p", "resourceSliceCount": 1},
                "nodeName": "n1",
            },
        },
        {"spec": "merge", "value": {"nodeName": "n2", "driver": "e.io"}},
        [
            'spec.driver: Invalid value: "e.io": field is immutable',
            'spec.nodeName: Invalid value: "n2": field is immutable',
        ],
    ),
    (
        "csidriver",
        "CSIDriver",
        {"metadata": {"name": "d.io"}, "spec": {}},
        {"spec": "merge", "value": {"attachRequired": False, "storageCapacity": True}},
        ["spec.attachedRequired: Invalid value: false: field is immutable"],
    ),
    (
        "node-spec-is-free",
        "Node",
        {"metadata": {"name": "n"}, "spec": {}},
        {"spec": "merge", "value": {"taints": [{"key": "a", "effect": "NoSchedule"}]}},
        [],
    ),
    (
        "pdb-is-free",
        "PodDisruptionBudget",
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1}},
        {"spec": "merge", "value": {"minAvailable": 2, "selector": {"matchLabels": {"c": "d"}}}},
        [],
    ),
]


def _apply(doc: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    import copy

    new = copy.deepcopy(doc)
    if change.get("spec") == "merge":
        new["spec"].update(change["value"])
    elif change.get("spec") == "selector":
        new["spec"]["selector"] = change["value"]
    else:
        new.update(change)
    return new


@pytest.mark.parametrize(
    ("kind", "doc", "change", "expected"),
    [c[1:] for c in OTHER_CASES],
    ids=[c[0] for c in OTHER_CASES],
)
def test_immutable_fields_of_other_kinds(
    kind: str, doc: dict[str, Any], change: dict[str, Any], expected: list[str]
) -> None:
    got = validate_update(_obj(kind, _apply(doc, change)), _obj(kind, doc))
    assert [str(e) for e in got] == expected


def test_persistent_volume_source_is_immutable() -> None:
    doc = {
        "metadata": {"name": "v"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/a"},
        },
    }
    new = _apply(
        doc, {"spec": "merge", "value": {"hostPath": {"path": "/b"}, "claimRef": {"name": "c"}}}
    )
    (err,) = validate_update(_obj("PersistentVolume", new), _obj("PersistentVolume", doc))
    assert str(err).startswith(
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation\n@@"
    )
    claimed = _apply(doc, {"spec": "merge", "value": {"claimRef": {"name": "c"}}})
    assert validate_update(_obj("PersistentVolume", claimed), _obj("PersistentVolume", doc)) == []


def test_memory_cluster_refuses_a_forbidden_update_with_422() -> None:
    cluster = MemoryCluster(FakeClock())
    pod = cluster.create(_pod(POD))
    moved = pod.model_copy(deep=True)
    moved.spec.node_name = "n1"
    with pytest.raises(BackendError) as info:
        cluster.update(moved)
    assert info.value.code == 422
    assert str(info.value).startswith(f'Pod "p" is invalid: {SPEC}')
    ungated = pod.model_copy(deep=True)
    ungated.spec.scheduling_gates = []
    pod = cluster.update(ungated)
    assert pod.spec.scheduling_gates == []
    invalid = pod.model_copy(deep=True)
    invalid.metadata.labels = {"x": "bad value!"}
    with pytest.raises(BackendError, match=r'metadata.labels: Invalid value: "bad value!"'):
        cluster.update(invalid)
