"""Each default plugin's ``sign_pod``, case by case: the fragments it signs a pod with, or
why it refuses to, as upstream v1.36's signers do (the refusal messages are the real
v1.36.2 scheduler's words; ``tests/fixtures/scheduler/opportunistic-batching.json`` records
what that scheduler batched)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import PodInfo, Status
from kubesched.testing.builders import objects_from
from kubesched.testing.run import framework_for
from kubesched_builtin import signers

REFUSED_CLAIMS = "pods with dra resource claims are not signable"
REFUSED_AFFINITY = "pods with InterPodAffinity are not signable"
REFUSED_SPREAD = "pods with topology constraints are not signable"
REFUSED_DEFAULT_SPREAD = "pods with default topology constraints are not signable"
REFUSED_DRA_EXTENDED = "signature disabled when dra extended resources are used in the cluster"


class _DeviceClasses:
    """A lister holding one DeviceClass that backs ``example.com/gpu``."""

    def list_objects(self, kind: str) -> list[Any]:
        assert kind == "DeviceClass"
        return objects_from(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu"},
                "spec": {"extendedResourceName": "example.com/gpu"},
            }
        )


def _pod(**spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {"app": "web"})
    containers = spec.pop("containers", [{"name": "c", "image": "app"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": labels},
        "spec": {"containers": containers, **spec},
    }


def _requesting(**amounts: str) -> list[dict[str, Any]]:
    """One container requesting ``amounts`` (extended resources with equal limits)."""
    resources: dict[str, Any] = {"requests": dict(amounts)}
    extended = {k: v for k, v in amounts.items() if "/" in k}
    if extended:
        resources["limits"] = extended
    return [{"name": "c", "image": "app", "resources": resources}]


def _ported(*ports: int) -> dict[str, Any]:
    return {
        "name": f"c{ports[0]}",
        "image": "app",
        "ports": [{"containerPort": p, "hostPort": p} for p in ports],
    }


def _tolerating(*keys: tuple[str, str]) -> list[dict[str, Any]]:
    return [
        {"key": k, "operator": "Equal", "value": v} if v else {"key": k, "operator": "Exists"}
        for k, v in keys
    ]


NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
VOLUMES = [
    {"name": "cfg", "configMap": {"name": "settings"}},
    {"name": "tls", "secret": {"secretName": "cert"}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
    {"name": "scratch", "emptyDir": {}},
]
SIGNED_VOLUMES = [
    {"emptyDir": {}},
    {"persistentVolumeClaim": {"claimName": "data", "readOnly": False}},
]
REQUIRED_ANTI_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    ]
}
PREFERRED_AFFINITY = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {
            "weight": 1,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "zone",
            },
        }
    ]
}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]
NO_DEFAULTS = {"defaultingType": "List", "defaultConstraints": []}

# (id, plugin, its args, the pod, what it signs: {signer: value}, {} for nothing, or the
# refusal message)
CASES: list[tuple[str, str, Any, dict[str, Any], dict[str, Any] | str]] = [
    ("NodeName-unset", "NodeName", None, _pod(), {signers.NODE_NAME: ""}),
    ("NodeName-set", "NodeName", None, _pod(nodeName="n1"), {signers.NODE_NAME: "n1"}),
    ("NodePorts-none", "NodePorts", None, _pod(), {signers.HOST_PORTS: []}),
    (
        # Init containers' host ports count, sidecar or not; each port once, sorted.
        "NodePorts-containers-and-init-containers",
        "NodePorts",
        None,
        _pod(containers=[_ported(8080, 80)], initContainers=[_ported(81, 80)]),
        {signers.HOST_PORTS: [80, 81, 8080]},
    ),
    (
        "TaintToleration-sorted-by-key-then-value",
        "TaintToleration",
        None,
        _pod(tolerations=_tolerating(("b", ""), ("a", "x"), ("a", "w"))),
        {
            signers.TOLERATIONS: [
                {"key": "a", "operator": "Equal", "value": "w"},
                {"key": "a", "operator": "Equal", "value": "x"},
                {"key": "b", "operator": "Exists"},
            ]
        },
    ),
    (
        "TaintToleration-every-field",
        "TaintToleration",
        None,
        _pod(tolerations=[NOT_READY]),
        {signers.TOLERATIONS: [NOT_READY]},
    ),
    (
        "NodeUnschedulable-tolerations",
        "NodeUnschedulable",
        None,
        _pod(tolerations=_tolerating(("b", ""))),
        {signers.TOLERATIONS: [{"key": "b", "operator": "Exists"}]},
    ),
    *[
        (
            f"{plugin}-volumes-without-config-maps-and-secrets",
            plugin,
            None,
            _pod(volumes=VOLUMES),
            {signers.VOLUMES: SIGNED_VOLUMES},
        )
        for plugin in ("VolumeBinding", "VolumeZone", "NodeVolumeLimits", "VolumeRestrictions")
    ],
    (
        "ImageLocality-images-with-their-tags",
        "ImageLocality",
        None,
        _pod(
            containers=[{"name": "c", "image": "nginx"}],
            initContainers=[{"name": "i", "image": "busybox:1.36"}],
        ),
        {signers.IMAGE_NAMES: ["busybox:1.36", "nginx:latest"]},
    ),
    (
        "NodeAffinity-none",
        "NodeAffinity",
        None,
        _pod(),
        {signers.NODE_SELECTOR: {}, signers.NODE_AFFINITY: None},
    ),
    (
        "NodeAffinity-selector",
        "NodeAffinity",
        None,
        _pod(nodeSelector={"zone": "a", "disk": "ssd"}),
        {signers.NODE_SELECTOR: {"disk": "ssd", "zone": "a"}, signers.NODE_AFFINITY: None},
    ),
    (
        "NodeResourcesFit-requests",
        "NodeResourcesFit",
        None,
        _pod(containers=_requesting(cpu="500m", memory="1Gi")),
        {signers.RESOURCES: {"cpu": 500, "memory": 1 << 30}},
    ),
    (
        "NodeResourcesFit-extended-resource-no-device-class-backs",
        "NodeResourcesFit",
        None,
        _pod(containers=_requesting(cpu="1", **{"example.com/fpga": "1"})),
        {signers.RESOURCES: {"cpu": 1000, "example.com/fpga": 1}},
    ),
    (
        "NodeResourcesFit-extended-resource-a-device-class-backs",
        "NodeResourcesFit",
        None,
        _pod(containers=_requesting(cpu="1", **{"example.com/gpu": "1"})),
        REFUSED_DRA_EXTENDED,
    ),
    (
        "BalancedAllocation-requests",
        "NodeResourcesBalancedAllocation",
        None,
        _pod(containers=_requesting(cpu="2")),
        {signers.RESOURCES: {"cpu": 2000}},
    ),
    (
        "BalancedAllocation-extended-resource-a-device-class-backs",
        "NodeResourcesBalancedAllocation",
        None,
        _pod(containers=_requesting(**{"example.com/gpu": "2"})),
        REFUSED_DRA_EXTENDED,
    ),
    ("DynamicResources-no-claims", "DynamicResources", None, _pod(), {}),
    (
        "DynamicResources-claims",
        "DynamicResources",
        None,
        _pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}]),
        REFUSED_CLAIMS,
    ),
    (
        "InterPodAffinity-labels",
        "InterPodAffinity",
        None,
        _pod(labels={"b": "2", "a": "1"}),
        {signers.LABELS: {"a": "1", "b": "2"}},
    ),
    (
        # Labels only matter to the running pods' preferred terms, which are ignored.
        "InterPodAffinity-labels-ignoring-preferred-terms",
        "InterPodAffinity",
        {"ignorePreferredTermsOfExistingPods": True},
        _pod(labels={"a": "1"}),
        {},
    ),
    (
        "InterPodAffinity-required-anti-affinity",
        "InterPodAffinity",
        None,
        _pod(affinity={"podAntiAffinity": REQUIRED_ANTI_AFFINITY}),
        REFUSED_AFFINITY,
    ),
    (
        "InterPodAffinity-preferred-affinity",
        "InterPodAffinity",
        None,
        _pod(affinity={"podAffinity": PREFERRED_AFFINITY}),
        REFUSED_AFFINITY,
    ),
    (
        "InterPodAffinity-empty-anti-affinity",
        "InterPodAffinity",
        None,
        _pod(affinity={"podAntiAffinity": {}}),
        REFUSED_AFFINITY,
    ),
    (
        "InterPodAffinity-node-affinity-only",
        "InterPodAffinity",
        None,
        _pod(affinity={"nodeAffinity": {}}),
        {signers.LABELS: {"app": "web"}},
    ),
    (
        "PodTopologySpread-system-defaults",
        "PodTopologySpread",
        None,
        _pod(),
        REFUSED_DEFAULT_SPREAD,
    ),
    ("PodTopologySpread-no-defaults", "PodTopologySpread", NO_DEFAULTS, _pod(), {}),
    (
        "PodTopologySpread-own-constraints",
        "PodTopologySpread",
        NO_DEFAULTS,
        _pod(topologySpreadConstraints=SPREAD),
        REFUSED_SPREAD,
    ),
    ("NodeDeclaredFeatures-none", "NodeDeclaredFeatures", None, _pod(), {signers.FEATURES: []}),
]


def _sign(plugin: str, args: Any, pod: dict[str, Any]) -> dict[str, Any] | str:
    """What ``plugin`` signs ``pod`` with ({} for nothing), or why it refuses."""
    fwk = framework_for(plugin, args=args, lister=_DeviceClasses())
    obj = objects_from(pod)[0]
    result = fwk.runners[plugin].call("sign_pod")(obj, PodInfo(obj))
    if isinstance(result, Status):
        assert not result.is_success()
        return result.message()
    return dict(result or ())


@pytest.mark.parametrize(
    ("plugin", "args", "pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_what_each_plugin_signs(
    plugin: str, args: Any, pod: dict[str, Any], expected: dict[str, Any] | str
) -> None:
    assert _sign(plugin, args, pod) == expected


def _preferring(*terms: tuple[int, list[tuple[str, list[str]]]]) -> dict[str, Any]:
    """Preferred node affinity: each term a weight and (key, values) In-expressions."""
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": weight,
                    "preference": {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": v} for k, v in expressions
                        ]
                    },
                }
                for weight, expressions in terms
            ]
        }
    }


def _requiring(*terms: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """Required node affinity: each term (key, values) In-expressions."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": v} for k, v in expressions
                        ]
                    }
                    for expressions in terms
                ]
            }
        }
    }


GOLD = ("tier", ["gold", "platinum"])
SSD = ("disk", ["ssd"])

# (id, two pods' affinity, whether NodeAffinity signs them alike)
AFFINITY_PAIRS: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "preferred-terms-reordered",
        _preferring((100, [GOLD]), (10, [SSD])),
        _preferring((10, [SSD]), (100, [GOLD])),
        True,
    ),
    (
        "values-reordered",
        _preferring((100, [GOLD])),
        _preferring((100, [("tier", ["platinum", "gold"])])),
        True,
    ),
    (
        "expressions-reordered",
        _requiring([GOLD, SSD]),
        _requiring([SSD, GOLD]),
        True,
    ),
    ("required-terms-reordered", _requiring([GOLD], [SSD]), _requiring([SSD], [GOLD]), True),
    ("other-weight", _preferring((100, [GOLD])), _preferring((50, [GOLD])), False),
    ("other-values", _preferring((100, [GOLD])), _preferring((100, [("tier", ["gold"])])), False),
    ("one-term-or-two", _requiring([GOLD, SSD]), _requiring([GOLD], [SSD]), False),
    ("required-or-preferred", _requiring([GOLD]), _preferring((1, [GOLD])), False),
]


@pytest.mark.parametrize(
    ("first", "second", "alike"),
    [c[1:] for c in AFFINITY_PAIRS],
    ids=[c[0] for c in AFFINITY_PAIRS],
)
def test_node_affinity_is_signed_whatever_its_order(
    first: dict[str, Any], second: dict[str, Any], alike: bool
) -> None:
    one = _sign("NodeAffinity", None, _pod(affinity=first))
    two = _sign("NodeAffinity", None, _pod(affinity=second))
    assert (one == two) is alike
