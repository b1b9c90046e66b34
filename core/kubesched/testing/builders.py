"""Objects for tests: fluent Pod and Node builders (as upstream's ``st.MakePod()``), manifests."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubesched.api import KubeObject, Node, Pod
from kubesched.api.validation import check_object

_uids = itertools.count(1)


def _quantities(values: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


def _requirement(key: str, operator: str, values: Sequence[str] | None) -> dict[str, Any]:
    req: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        req["values"] = list(values)
    return req


class PodBuilder:
    """Builds a ``Pod``: ``make_pod("web").namespace("prod").req(cpu="500m").obj()``.

    Each method sets part of the manifest and returns the builder; ``obj()`` validates
    the manifest into a ``Pod`` and fails loudly if kube-apiserver would refuse it (a
    builder still produces invalid-input tests through ``manifest()``). Every pod gets a
    unique uid unless ``uid`` is called.
    """

    def __init__(self, name: str = "pod") -> None:
        self._m: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}-{next(_uids)}"},
            "spec": {"containers": []},
        }

    @property
    def _spec(self) -> dict[str, Any]:
        return self._m["spec"]

    @property
    def _meta(self) -> dict[str, Any]:
        return self._m["metadata"]

    # -- metadata ---------------------------------------------------------------------
    def name(self, name: str) -> PodBuilder:
        self._meta["name"] = name
        return self

    def namespace(self, namespace: str) -> PodBuilder:
        self._meta["namespace"] = namespace
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._meta["uid"] = uid
        return self

    def labels(self, labels: Mapping[str, str] | None = None, **kw: str) -> PodBuilder:
        """Add labels (``labels({"app": "web"})`` or ``labels(app="web")``)."""
        self._meta.setdefault("labels", {}).update({**(labels or {}), **kw})
        return self

    def annotations(self, annotations: Mapping[str, str]) -> PodBuilder:
        self._meta.setdefault("annotations", {}).update(annotations)
        return self

    def owner(
        self, kind: str, name: str, uid: str | None = None, controller: bool = True
    ) -> PodBuilder:
        """Add an owner reference (``owner("ReplicaSet", "web-abc")``)."""
        self._meta.setdefault("ownerReferences", []).append(
            {
                "apiVersion": "v1" if kind in ("ReplicationController",) else "apps/v1",
                "kind": kind,
                "name": name,
                "uid": uid or f"uid-{kind}-{name}",
                "controller": controller,
            }
        )
        return self

    def creation_timestamp(self, ts: str) -> PodBuilder:
        self._meta["creationTimestamp"] = ts
        return self

    def deletion_timestamp(self, ts: str) -> PodBuilder:
        self._meta["deletionTimestamp"] = ts
        return self

    # -- containers and resources -----------------------------------------------------
    def container(
        self,
        requests: Mapping[str, Any] | None = None,
        limits: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        image: str | None = None,
        ports: Sequence[Mapping[str, Any]] = (),
    ) -> PodBuilder:
        """Add a container with the given requests (``{"cpu": "100m"}``) and limits;
        an extended resource or hugepages request without a limit gets it as its limit
        (the only form kube-apiserver accepts)."""
        containers = self._spec["containers"]
        c: dict[str, Any] = {"name": name or f"c{len(containers)}", "image": image or "busybox"}
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = _quantities(requests)
        limits = _quantities(limits or {})
        for res, amount in resources.get("requests", {}).items():
            # Extended resources and hugepages cannot be overcommitted: kube-apiserver
            # wants their limit, equal to the request; a user writes both.
            if res not in limits and (
                ("/" in res and "kubernetes.io/" not in res) or res.startswith("hugepages-")
            ):
                limits[res] = amount
        if limits:
            resources["limits"] = limits
        if resources:
            c["resources"] = resources
        if ports:
            c["ports"] = [dict(p) for p in ports]
        containers.append(c)
        return self

    def req(self, **requests: Any) -> PodBuilder:
        """Add a container requesting ``requests`` (``req(cpu="1", memory="1Gi")``);
        names with underscores map to dashes (``ephemeral_storage``). Extended resources
        go through ``container({"nvidia.com/gpu": 1})``."""
        return self.container({k.replace("_", "-"): v for k, v in requests.items()})

    def init_container(
        self, requests: Mapping[str, Any] | None = None, *, sidecar: bool = False
    ) -> PodBuilder:
        """Add an init container (``sidecar=True``: ``restartPolicy: Always``)."""
        inits = self._spec.setdefault("initContainers", [])
        c: dict[str, Any] = {"name": f"init{len(inits)}", "image": "busybox"}
        if requests:
            c["resources"] = {"requests": _quantities(requests)}
        if sidecar:
            c["restartPolicy"] = "Always"
        inits.append(c)
        return self

    def overhead(self, **overhead: Any) -> PodBuilder:
        self._spec["overhead"] = _quantities(overhead)
        return self

    def image(self, image: str) -> PodBuilder:
        """Add a container running ``image``."""
        return self.container(image=image)

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        """Add a container using ``port`` on the host."""
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        return self.container(ports=[p])

    # -- placement --------------------------------------------------------------------
    def node(self, node_name: str) -> PodBuilder:
        """Set ``spec.nodeName`` (the pod is bound, or asks for that node)."""
        self._spec["nodeName"] = node_name
        return self

    def node_selector(self, selector: Mapping[str, str]) -> PodBuilder:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def scheduler_name(self, name: str) -> PodBuilder:
        self._spec["schedulerName"] = name
        return self

    def priority(self, priority: int) -> PodBuilder:
        self._spec["priority"] = priority
        return self

    def priority_class(self, name: str) -> PodBuilder:
        self._spec["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec["preemptionPolicy"] = policy
        return self

    def scheduling_gates(self, *gates: str) -> PodBuilder:
        self._spec["schedulingGates"] = [{"name": g} for g in gates]
        return self

    def nominated_node(self, node_name: str) -> PodBuilder:
        self._m.setdefault("status", {})["nominatedNodeName"] = node_name
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._m.setdefault("status", {})["phase"] = phase
        return self

    def start_time(self, ts: str) -> PodBuilder:
        self._m.setdefault("status", {})["startTime"] = ts
        return self

    def termination_grace_period(self, seconds: int) -> PodBuilder:
        self._spec["terminationGracePeriodSeconds"] = seconds
        return self

    def pvc(self, claim_name: str) -> PodBuilder:
        self._spec.setdefault("volumes", []).append(
            {"name": claim_name, "persistentVolumeClaim": {"claimName": claim_name}}
        )
        return self

    def toleration(
        self,
        key: str = "",
        value: str = "",
        effect: str = "",
        operator: str = "Equal",
        seconds: int | None = None,
    ) -> PodBuilder:
        """Add a toleration; ``operator="Exists"`` ignores ``value``."""
        t: dict[str, Any] = {"operator": operator}
        if key:
            t["key"] = key
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        if seconds is not None:
            t["tolerationSeconds"] = seconds
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def _affinity(self, kind: str) -> dict[str, Any]:
        return self._spec.setdefault("affinity", {}).setdefault(kind, {})

    def node_affinity_in(self, key: str, values: Sequence[str], operator: str = "In") -> PodBuilder:
        """Add a required node-affinity term with one expression (terms are ORed)."""
        return self.node_affinity_term([_requirement(key, operator, values)])

    def node_affinity_term(
        self,
        match_expressions: Sequence[Mapping[str, Any]] = (),
        match_fields: Sequence[Mapping[str, Any]] = (),
    ) -> PodBuilder:
        """Add a required node-selector term (expressions ANDed; terms ORed)."""
        term: dict[str, Any] = {}
        if match_expressions:
            term["matchExpressions"] = [dict(e) for e in match_expressions]
        if match_fields:
            term["matchFields"] = [dict(f) for f in match_fields]
        required = self._affinity("nodeAffinity").setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
        )
        required["nodeSelectorTerms"].append(term)
        return self

    def preferred_node_affinity(
        self, weight: int, key: str, values: Sequence[str] | None, operator: str = "In"
    ) -> PodBuilder:
        """Add a preferred node-affinity term with one expression."""
        self._affinity("nodeAffinity").setdefault(
            "preferredDuringSchedulingIgnoredDuringExecution", []
        ).append(
            {
                "weight": weight,
                "preference": {"matchExpressions": [_requirement(key, operator, values)]},
            }
        )
        return self

    def _pod_term(
        self,
        selector: Mapping[str, Any] | None,
        topology_key: str,
        namespaces: Sequence[str] | None,
        namespace_selector: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        term: dict[str, Any] = {"topologyKey": topology_key}
        if selector is not None:
            term["labelSelector"] = _selector(selector)
        if namespaces is not None:
            term["namespaces"] = list(namespaces)
        if namespace_selector is not None:
            term["namespaceSelector"] = _selector(namespace_selector)
        return term

    def pod_affinity(
        self,
        topology_key: str,
        selector: Mapping[str, Any] | None,
        *,
        weight: int | None = None,
        anti: bool = False,
        namespaces: Sequence[str] | None = None,
        namespace_selector: Mapping[str, Any] | None = None,
    ) -> PodBuilder:
        """Add a pod (anti-)affinity term; required unless ``weight`` is given.

        ``selector`` is either ``{"app": "web"}`` (matchLabels) or a full label
        selector with ``matchLabels`` / ``matchExpressions`` keys.
        """
        kind = "podAntiAffinity" if anti else "podAffinity"
        term = self._pod_term(selector, topology_key, namespaces, namespace_selector)
        aff = self._affinity(kind)
        if weight is None:
            aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            aff.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def pod_anti_affinity(
        self, topology_key: str, selector: Mapping[str, Any] | None, **kw: Any
    ) -> PodBuilder:
        """``pod_affinity(..., anti=True)``."""
        return self.pod_affinity(topology_key, selector, anti=True, **kw)

    def spread_constraint(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str = "DoNotSchedule",
        selector: Mapping[str, Any] | None = None,
        *,
        min_domains: int | None = None,
        node_affinity_policy: str | None = None,
        node_taints_policy: str | None = None,
        match_label_keys: Sequence[str] | None = None,
    ) -> PodBuilder:
        """Add a topology spread constraint."""
        c: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when_unsatisfiable,
        }
        if selector is not None:
            c["labelSelector"] = _selector(selector)
        if min_domains is not None:
            c["minDomains"] = min_domains
        if node_affinity_policy is not None:
            c["nodeAffinityPolicy"] = node_affinity_policy
        if node_taints_policy is not None:
            c["nodeTaintsPolicy"] = node_taints_policy
        if match_label_keys is not None:
            c["matchLabelKeys"] = list(match_label_keys)
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    # -- output -----------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """A deep copy of the manifest built so far, with one container (no requests) if
        none was added: kube-apiserver refuses a pod without one."""
        m = copy.deepcopy(self._m)
        if not m["spec"]["containers"]:
            m["spec"]["containers"] = [{"name": "c0", "image": "busybox"}]
        return m

    def obj(self) -> Pod:
        """The Pod, validated as kube-apiserver would (``InvalidObjectError`` listing every
        error otherwise)."""
        pod = Pod.model_validate(self.manifest())
        check_object(pod)
        return pod


def _selector(selector: Mapping[str, Any]) -> dict[str, Any]:
    if "matchLabels" in selector or "matchExpressions" in selector:
        return copy.deepcopy(dict(selector))
    return {"matchLabels": dict(selector)}


class NodeBuilder:
    """Builds a ``Node``: ``make_node("n1").capacity(cpu="4", memory="8Gi").zone("a").obj()``.

    ``capacity`` sets both capacity and allocatable (``pods`` defaults to 110, as a
    kubelet does); ``allocatable`` overrides allocatable alone.
    """

    def __init__(self, name: str = "node") -> None:
        self._m: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": f"uid-node-{name}",
                "labels": {"kubernetes.io/hostname": name},
            },
            "spec": {},
            "status": {"capacity": {"pods": "110"}, "allocatable": {"pods": "110"}},
        }

    def name(self, name: str) -> NodeBuilder:
        self._m["metadata"]["name"] = name
        self._m["metadata"]["labels"]["kubernetes.io/hostname"] = name
        return self

    def labels(self, labels: Mapping[str, str] | None = None, **kw: str) -> NodeBuilder:
        self._m["metadata"]["labels"].update({**(labels or {}), **kw})
        return self

    def zone(self, zone: str, region: str | None = None) -> NodeBuilder:
        """Set ``topology.kubernetes.io/zone`` (and ``/region``)."""
        self.labels({"topology.kubernetes.io/zone": zone})
        if region is not None:
            self.labels({"topology.kubernetes.io/region": region})
        return self

    def capacity(self, values: Mapping[str, Any] | None = None, **kw: Any) -> NodeBuilder:
        """Set capacity and allocatable (``capacity(cpu="4", memory="8Gi")``)."""
        amounts = _quantities({**(values or {}), **{k.replace("_", "-"): v for k, v in kw.items()}})
        self._m["status"]["capacity"].update(amounts)
        self._m["status"]["allocatable"].update(amounts)
        return self

    def allocatable(self, values: Mapping[str, Any] | None = None, **kw: Any) -> NodeBuilder:
        """Set allocatable only."""
        amounts = _quantities({**(values or {}), **{k.replace("_", "-"): v for k, v in kw.items()}})
        self._m["status"]["allocatable"].update(amounts)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: dict[str, Any] = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._m["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, value: bool = True) -> NodeBuilder:
        self._m["spec"]["unschedulable"] = value
        return self

    def image(self, name: str, size_bytes: int) -> NodeBuilder:
        """Add an image present on the node."""
        self._m["status"].setdefault("images", []).append(
            {"names": [name], "sizeBytes": size_bytes}
        )
        return self

    def condition(self, type_: str, status: str) -> NodeBuilder:
        self._m["status"].setdefault("conditions", []).append({"type": type_, "status": status})
        return self

    def declared_features(self, *names: str) -> NodeBuilder:
        """Set ``status.declaredFeatures``, the node features its kubelet declares."""
        self._m["status"]["declaredFeatures"] = list(names)
        return self

    def manifest(self) -> dict[str, Any]:
        """A deep copy of the manifest built so far."""
        return copy.deepcopy(self._m)

    def obj(self) -> Node:
        """The Node (validated)."""
        node = Node.model_validate(self.manifest())
        check_object(node)
        return node


def make_pod(name: str = "pod") -> PodBuilder:
    """Start building a Pod named ``name`` in namespace ``default``."""
    return PodBuilder(name)


def make_node(name: str = "node") -> NodeBuilder:
    """Start building a Node named ``name`` (hostname label set, 110 pods allocatable)."""
    return NodeBuilder(name)


def objects_from(*sources: Any) -> list[KubeObject]:
    """Kubernetes objects from what a test has at hand, in order.

    Each source is an object, a builder (``make_pod(...)``), a manifest (a dict as in
    YAML, camelCase keys), YAML text (one or more ``---``-separated documents; ``List``
    documents expand), a ``pathlib.Path`` to a manifest file, or an iterable of any of
    these. Invalid manifests raise ``kubesched.UserInputError`` naming the object and
    the field path.
    """
    from kubesched.api.manifests import load_manifests, parse_manifests, parse_objects

    out: list[KubeObject] = []
    for source in sources:
        if isinstance(source, PodBuilder | NodeBuilder):
            out.append(source.obj())
        elif isinstance(source, KubeObject):
            out.append(source)
        elif isinstance(source, Mapping):
            out.extend(parse_objects(dict(source)))
        elif isinstance(source, str):
            out.extend(parse_manifests(source))
        elif isinstance(source, Path):
            out.extend(load_manifests([source]))
        elif isinstance(source, Iterable):
            out.extend(objects_from(*source))
        else:
            raise TypeError(f"cannot make Kubernetes objects of {source!r}")
    return out
