"""The guarantees a scheduler owes, checked independently of the scheduler's own code.

An :class:`InvariantChecker` watches an embedded cluster (and, optionally, the
scheduler running on it). At every binding it checks, against the pods bound at that
moment, that the node is not over-committed, that the pod is bound once, and that every
hard constraint of the pod holds: node selector and required node affinity, taints
(and ``spec.unschedulable``), host ports, required pod affinity and anti-affinity in
both directions, DoNotSchedule topology spread (maxSkew as upstream computes it), and
the volume restrictions: a ReadWriteOncePod claim used by one pod only, no in-tree disk
mounted read-write twice on a node (GCE PD, AWS EBS, iSCSI, RBD), no node over its
CSINode attach limit, and the node in the node affinity of every PV the pod's claims
are bound to.
:meth:`InvariantChecker.finish` then checks the final state: no pod lost (each
unbound pod of the scheduler is queued, waiting or assumed), no node over its
allocatable, and the scheduler cache's aggregates equal to a recomputation from pods.

The checks re-derive each rule from the pod and node objects with the ``kubesched.api``
helpers (selectors, node affinity, tolerations, resource sums); they share no code with
the plugins whose decisions they check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api import (
    CSINode,
    LabelSelectorMatcher,
    Node,
    NodeSelectorTermsMatcher,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    RequiredNodeAffinity,
    StorageClass,
    compile_label_selector,
    find_untolerated_taint,
    node_allocatable,
    pod_requests,
    tolerations_tolerate_taint,
)
from kubesched.api.core import Taint
from kubesched.api.volumeutil import pod_claim_names
from kubesched.backend.protocol import EventType, WatchEvent
from kubesched.errors import KubeschedError

if TYPE_CHECKING:
    from kubesched.backend.memory import MemoryCluster
    from kubesched.scheduler import Scheduler

__all__ = ["InvariantChecker", "InvariantViolation", "Violation"]

_FILTER_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


@dataclass(frozen=True)
class Violation:
    """One broken guarantee: which (``resources``, ``double-binding``, ``lost-pod``,
    ``node-affinity``, ``taints``, ``host-ports``, ``pod-affinity``,
    ``pod-anti-affinity``, ``topology-spread``, ``volumes``, ``cache``), about what, and
    why."""

    invariant: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.subject}: {self.message}"


class InvariantViolation(KubeschedError):
    """Raised by :meth:`InvariantChecker.assert_ok` when a guarantee was broken."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        shown = "\n".join(f"  - {v}" for v in violations[:20])
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__(f"{len(violations)} invariant violation(s):\n{shown}{more}")


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name or ''}"


class _Term:
    """A required pod (anti-)affinity term, compiled: selector, namespaces, topology key."""

    __slots__ = ("match_labels", "namespaces", "ns_selector", "selector", "topology_key")

    def __init__(self, owner: Pod, term: PodAffinityTerm) -> None:
        # A nil selector matches nothing (upstream); the admitted pod has matchLabelKeys
        # merged in already.
        self.selector: LabelSelectorMatcher | None = (
            compile_label_selector(term.label_selector) if term.label_selector else None
        )
        self.match_labels = (term.label_selector.match_labels or {}) if term.label_selector else {}
        self.namespaces = frozenset(term.namespaces)
        self.ns_selector = (
            compile_label_selector(term.namespace_selector)
            if term.namespace_selector is not None
            else None
        )
        if not self.namespaces and self.ns_selector is None:
            self.namespaces = frozenset({owner.metadata.namespace or "default"})
        self.topology_key = term.topology_key

    def matches(self, pod: Pod, ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if self.selector is None or not self.selector.matches(pod.metadata.labels):
            return False
        ns = pod.metadata.namespace or "default"
        if ns in self.namespaces:
            return True
        return self.ns_selector is not None and self.ns_selector.matches(ns_labels.get(ns, {}))


def _required_terms(pod: Pod, anti: bool) -> list[_Term]:
    aff = pod.spec.affinity
    part = (aff.pod_anti_affinity if anti else aff.pod_affinity) if aff else None
    if part is None:
        return []
    return [_Term(pod, t) for t in part.required_during_scheduling_ignored_during_execution]


def _host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    return [
        (p.protocol or "TCP", p.host_ip or "0.0.0.0", p.host_port)
        for c in (*sidecars, *pod.spec.containers)
        for p in c.ports
        if p.host_port
    ]


def _ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    if a[0] != b[0] or a[2] != b[2]:
        return False
    return a[1] == b[1] or "0.0.0.0" in (a[1], b[1])


class InvariantChecker:
    """Checks a run's guarantees; see the module's description.

    ``attach()`` subscribes to the cluster (and to the scheduler, for the final
    checks); bindings are checked as they happen; ``finish()`` runs the final checks
    and returns every violation; ``assert_ok()`` raises :class:`InvariantViolation`.
    ``checks`` counts the individual checks made.
    """

    def __init__(self, cluster: MemoryCluster, scheduler: Scheduler | None = None) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.violations: list[Violation] = []
        self.checks = 0
        self.bindings = 0
        self._bound: dict[str, Pod] = {}
        self._by_node: dict[str, dict[str, Pod]] = defaultdict(dict)
        self._requested: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._anti_holders: dict[str, Pod] = {}
        # Indexes that keep each binding's checks proportional to the pods concerned, not
        # to the cluster: anti-affinity holders by node, the topology keys they use,
        # nodes by label, bound pods by namespace and by (namespace, label, value).
        self._anti_by_node: dict[str, dict[str, Pod]] = defaultdict(dict)
        self._anti_keys: dict[str, int] = defaultdict(int)
        self._nodes_by_label: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._by_ns: dict[str, set[str]] = defaultdict(set)
        self._by_label: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self._claim_users: dict[str, set[str]] = defaultdict(set)
        self._nodes_by_name: dict[str, Node] = {}
        self._scheduled_nodes: set[str] = set()
        self._watches: list[Any] = []

    # -- wiring ----------------------------------------------------------------------------

    @property
    def attached(self) -> bool:
        """Whether the checker is watching the cluster."""
        return bool(self._watches)

    def attach(self) -> InvariantChecker:
        """Index the pods already bound and watch every later pod change."""
        for pod in self.cluster.pods():
            if pod.spec.node_name:
                self._add(pod)
        for node in self.cluster.iter_objects("Node"):
            self._set_node(node)  # type: ignore[arg-type]
        rv = self.cluster.resource_version
        self._watches = [
            self.cluster.watch("Pod", rv, self._on_event),
            self.cluster.watch("Node", rv, self._on_node_event),
        ]
        return self

    def detach(self) -> None:
        """Stop watching."""
        for w in self._watches:
            w.stop()
        self._watches = []

    def _on_node_event(self, ev: WatchEvent) -> None:
        node = ev.object
        if not isinstance(node, Node):
            return
        if ev.type is EventType.DELETED:
            self._unset_node(node.name)
        else:
            self._set_node(node)

    def _set_node(self, node: Node) -> None:
        self._unset_node(node.name)
        self._nodes_by_name[node.name] = node
        for label in node.metadata.labels.items():
            self._nodes_by_label[label].add(node.name)

    def _unset_node(self, name: str) -> None:
        old = self._nodes_by_name.pop(name, None)
        if old is not None:
            for label in old.metadata.labels.items():
                self._nodes_by_label[label].discard(name)

    def _violate(self, invariant: str, subject: str, message: str) -> None:
        self.violations.append(Violation(invariant, subject, message))

    def _add(self, pod: Pod) -> None:
        uid = pod.metadata.uid or _key(pod)
        node = pod.spec.node_name or ""
        self._bound[uid] = pod
        self._by_node[node][uid] = pod
        self._index_labels(uid, pod, add=True)
        if _has_required_anti(pod):
            self._anti_holders[uid] = pod
            self._anti_by_node[node][uid] = pod
            for term in _required_terms(pod, anti=True):
                self._anti_keys[term.topology_key] += 1
        for claim in _claim_keys(pod):
            self._claim_users[claim].add(uid)
        acc = self._requested[node]
        for name, amount in pod_requests(pod).items():
            acc[name] += amount

    def _remove(self, pod: Pod) -> None:
        uid = pod.metadata.uid or _key(pod)
        old = self._bound.pop(uid, None)
        if old is None:
            return
        node = old.spec.node_name or ""
        self._by_node[node].pop(uid, None)
        self._index_labels(uid, old, add=False)
        if self._anti_holders.pop(uid, None) is not None:
            self._anti_by_node[node].pop(uid, None)
            for term in _required_terms(old, anti=True):
                self._anti_keys[term.topology_key] -= 1
                if not self._anti_keys[term.topology_key]:
                    del self._anti_keys[term.topology_key]
        for claim in _claim_keys(old):
            self._claim_users[claim].discard(uid)
        acc = self._requested[node]
        for name, amount in pod_requests(old).items():
            acc[name] -= amount

    def _index_labels(self, uid: str, pod: Pod, add: bool) -> None:
        ns = pod.metadata.namespace or "default"
        keys = [(ns, k, v) for k, v in pod.metadata.labels.items()]
        if add:
            self._by_ns[ns].add(uid)
            for key in keys:
                self._by_label[key].add(uid)
        else:
            self._by_ns[ns].discard(uid)
            for key in keys:
                self._by_label[key].discard(uid)

    def _candidates(self, namespace: str, match_labels: Mapping[str, str]) -> Iterable[Pod]:
        """Bound pods of ``namespace`` that may match a selector with ``match_labels``
        (the smallest index set; the caller still matches the whole selector)."""
        best = self._by_ns.get(namespace, set())
        for k, v in match_labels.items():
            found = self._by_label.get((namespace, k, v), set())
            if len(found) < len(best):
                best = found
        return [self._bound[u] for u in best]

    def _nodes_in_domain(self, topology_key: str, value: str) -> Iterable[str]:
        return self._nodes_by_label.get((topology_key, value), set())

    def _on_event(self, ev: WatchEvent) -> None:
        pod = ev.object
        if not isinstance(pod, Pod):
            return
        if ev.type is EventType.DELETED:
            self._remove(pod)
            return
        node = pod.spec.node_name or ""
        old_node = (ev.old.spec.node_name or "") if isinstance(ev.old, Pod) else ""
        uid = pod.metadata.uid or _key(pod)
        if ev.type is EventType.MODIFIED and old_node and node != old_node:
            self._violate(
                "double-binding", _key(pod), f"bound to {old_node}, then to {node or '(none)'}"
            )
        if not node:
            return
        if uid in self._bound:
            # A status (or metadata) write of a bound pod: re-index it.
            self._remove(self._bound[uid])
            self._add(pod)
            return
        if ev.type is EventType.MODIFIED and not old_node:
            self.bindings += 1
            self._check_binding(pod, node)
        self._add(pod)

    # -- at each binding -------------------------------------------------------------------

    def _nodes(self) -> dict[str, Node]:
        return self._nodes_by_name

    def _ns_labels(self) -> dict[str, dict[str, str]]:
        return {ns.name: ns.metadata.labels for ns in self.cluster.iter_objects("Namespace")}

    def _check_binding(self, pod: Pod, node_name: str) -> None:
        key = _key(pod)
        node = self._nodes_by_name.get(node_name)
        self.checks += 1
        if node is None:
            self._violate("node-affinity", key, f"bound to {node_name}, which does not exist")
            return
        self._scheduled_nodes.add(node_name)
        self._check_resources(key, node, pod)
        self.checks += 1
        if not RequiredNodeAffinity(pod).matches(node):
            self._violate(
                "node-affinity", key, f"{node_name} does not match its node selector/affinity"
            )
        self.checks += 1
        taint = find_untolerated_taint(node.spec.taints, pod.spec.tolerations, _FILTER_EFFECTS)
        if taint is not None:
            self._violate(
                "taints", key, f"{node_name} has taint {taint.key}:{taint.effect} not tolerated"
            )
        if node.spec.unschedulable and not tolerations_tolerate_taint(
            pod.spec.tolerations, _UNSCHEDULABLE_TAINT
        ):
            self._violate("taints", key, f"{node_name} is unschedulable")
        self.checks += 1
        ports = _host_ports(pod)
        if ports:
            for other in self._by_node[node_name].values():
                for a in ports:
                    for b in _host_ports(other):
                        if _ports_conflict(a, b):
                            self._violate(
                                "host-ports",
                                key,
                                f"host port {a[0]}/{a[2]} already used on {node_name} by "
                                f"{_key(other)}",
                            )
        self._check_pod_affinity(pod, node)
        self._check_spread(pod, node)
        if pod.spec.volumes:
            self._check_volumes(pod, node)

    def _check_resources(self, key: str, node: Node, pod: Pod) -> None:
        self.checks += 1
        allocatable = node_allocatable(node)
        acc = self._requested[node.name]
        for name, amount in pod_requests(pod).items():
            if amount and acc.get(name, 0) + amount > allocatable.get(name, 0):
                self._violate(
                    "resources",
                    key,
                    f"{node.name}: {name} requested {acc.get(name, 0) + amount} > allocatable "
                    f"{allocatable.get(name, 0)}",
                )
        pods_allowed = allocatable.get("pods")
        if pods_allowed is not None and len(self._by_node[node.name]) + 1 > pods_allowed:
            self._violate("resources", key, f"{node.name}: more than {pods_allowed} pods")

    def _pods_in_domain(self, topology_key: str, value: str) -> Iterable[Pod]:
        for name in self._nodes_in_domain(topology_key, value):
            yield from self._by_node.get(name, {}).values()

    def _check_pod_affinity(self, pod: Pod, node: Node) -> None:
        affinity = _required_terms(pod, anti=False)
        anti = _required_terms(pod, anti=True)
        if not affinity and not anti and not self._anti_holders:
            return
        self.checks += 1
        key = _key(pod)
        nodes = self._nodes()
        ns_labels = self._ns_labels()
        labels = node.metadata.labels
        for term in anti:
            value = labels.get(term.topology_key)
            if value is None:
                continue
            for other in self._pods_in_domain(term.topology_key, value):
                if term.matches(other, ns_labels):
                    self._violate(
                        "pod-anti-affinity",
                        key,
                        f"{_key(other)} matches its anti-affinity in {term.topology_key}={value}",
                    )
                    break
        # The holders that matter are those in one of the node's domains, for a topology
        # key some holder uses.
        for topology_key in list(self._anti_keys):
            value = labels.get(topology_key)
            if value is None:
                continue
            for name in self._nodes_in_domain(topology_key, value):
                for holder in list(self._anti_by_node.get(name, {}).values()):
                    for term in _required_terms(holder, anti=True):
                        if term.topology_key == topology_key and term.matches(pod, ns_labels):
                            self._violate(
                                "pod-anti-affinity",
                                key,
                                f"placed in {topology_key}={value}, where {_key(holder)} "
                                "forbids it",
                            )
        if affinity:
            self._check_positive_affinity(pod, node, affinity, nodes, ns_labels)

    def _check_positive_affinity(
        self,
        pod: Pod,
        node: Node,
        terms: list[_Term],
        nodes: Mapping[str, Node],
        ns_labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        assumed = self._assumed_pods()
        unmet = []
        for term in terms:
            value = node.metadata.labels.get(term.topology_key)
            if value is None or not any(
                term.matches(p, ns_labels)
                and nodes.get(p.spec.node_name or "") is not None
                and nodes[p.spec.node_name or ""].metadata.labels.get(term.topology_key) == value
                for p in (*self._term_candidates(term), *assumed)
            ):
                unmet.append(term)
        if not unmet:
            return
        pods = list(self._bound.values()) + assumed
        # Upstream lets the first pod of a group through: no pod anywhere matches all
        # the terms, and the pod matches them itself.
        nobody = not any(all(t.matches(p, ns_labels) for t in terms) for p in pods)
        if nobody and all(t.matches(pod, ns_labels) for t in terms):
            return
        self._violate(
            "pod-affinity",
            _key(pod),
            f"no matching pod in its {unmet[0].topology_key} domain on {node.name}",
        )

    def _term_candidates(self, term: _Term) -> Iterable[Pod]:
        if term.ns_selector is not None:
            return self._bound.values()
        return [p for ns in term.namespaces for p in self._candidates(ns, term.match_labels)]

    def _assumed_pods(self) -> list[Pod]:
        if self.scheduler is None:
            return []
        cache = self.scheduler.cache
        return [
            info.pod
            for uid in cache.dump().assumed_pods
            if (info := cache.assumed_pod_info(uid)) is not None
        ]

    def _check_spread(self, pod: Pod, node: Node) -> None:
        constraints = [
            c
            for c in pod.spec.topology_spread_constraints
            if c.when_unsatisfiable == "DoNotSchedule"
        ]
        if not constraints:
            return
        self.checks += 1
        key = _key(pod)
        keys = [c.topology_key for c in constraints]
        affinity = RequiredNodeAffinity(pod)
        ns = pod.metadata.namespace or "default"
        for c in constraints:
            selector = (
                compile_label_selector(c.label_selector) if c.label_selector is not None else None
            )
            counts: dict[str, int] = {}
            eligible: dict[str, str] = {}  # node name -> its domain
            for name, n in self._nodes().items():
                labels = n.metadata.labels
                if any(k not in labels for k in keys):
                    continue
                if (c.node_affinity_policy or "Honor") == "Honor" and not affinity.matches(n):
                    continue
                if (c.node_taints_policy or "Ignore") == "Honor" and find_untolerated_taint(
                    n.spec.taints, pod.spec.tolerations, _FILTER_EFFECTS
                ):
                    continue
                eligible[name] = labels[c.topology_key]
                counts.setdefault(labels[c.topology_key], 0)
            if selector is not None:
                match_labels = c.label_selector.match_labels or {}  # type: ignore[union-attr]
                for other in self._candidates(ns, match_labels):
                    domain = eligible.get(other.spec.node_name or "")
                    if (
                        domain is not None
                        and other.metadata.deletion_timestamp is None
                        and selector.matches(other.metadata.labels)
                    ):
                        counts[domain] += 1
            domain = node.metadata.labels.get(c.topology_key)
            if domain is None or domain not in counts:
                self._violate(
                    "topology-spread", key, f"{node.name} is not in an eligible {c.topology_key}"
                )
                continue
            minimum = min(counts.values())
            if c.min_domains is not None and len(counts) < c.min_domains:
                minimum = 0
            own = 1 if selector is not None and selector.matches(pod.metadata.labels) else 0
            skew = counts[domain] + own - minimum
            if skew > c.max_skew:
                self._violate(
                    "topology-spread",
                    key,
                    f"{c.topology_key}={domain}: skew {skew} > maxSkew {c.max_skew}",
                )

    def _check_volumes(self, pod: Pod, node: Node) -> None:
        self.checks += 1
        key = _key(pod)
        ns = pod.metadata.namespace or "default"
        claims: list[PersistentVolumeClaim] = []
        for name, _ephemeral in pod_claim_names(pod):
            claim = self.cluster.try_get("PersistentVolumeClaim", ns, name)
            if isinstance(claim, PersistentVolumeClaim):
                claims.append(claim)
        uid = pod.metadata.uid or key
        for claim in claims:
            ckey = f"{ns}/{claim.name}"
            if "ReadWriteOncePod" in claim.spec.access_modes:
                others = self._claim_users.get(ckey, set()) - {uid}
                if others:
                    other = self._bound[min(others)]
                    self._violate(
                        "volumes",
                        key,
                        f"ReadWriteOncePod claim {ckey} is already used by {_key(other)}",
                    )
            pv = self._volume_of(claim)
            affinity = pv.spec.node_affinity if pv is not None else None
            if affinity is not None and affinity.required is not None:
                matcher = NodeSelectorTermsMatcher(affinity.required.node_selector_terms)
                if not matcher.matches_node(node):
                    self._violate(
                        "volumes",
                        key,
                        f"{node.name} is outside the node affinity of PV {pv.name} "  # type: ignore[union-attr]
                        f"(claim {ckey})",
                    )
        for other in self._by_node.get(node.name, {}).values():
            conflict = _disk_conflict(pod, other)
            if conflict:
                self._violate(
                    "volumes", key, f"{conflict} is already mounted on {node.name} by {_key(other)}"
                )
        self._check_attach_limits(key, pod, node)

    def _volume_of(self, claim: PersistentVolumeClaim) -> PersistentVolume | None:
        name = claim.spec.volume_name
        pv = self.cluster.try_get("PersistentVolume", None, name) if name else None
        return pv if isinstance(pv, PersistentVolume) else None

    def _csi_volumes(self, pod: Pod) -> set[tuple[str, str]]:
        """The pod's attachable CSI volumes as ``(driver, handle)``: its claims' CSI PVs,
        and a claim not bound yet counted once under its class's provisioner."""
        ns = pod.metadata.namespace or "default"
        out: set[tuple[str, str]] = set()
        for name, _ephemeral in pod_claim_names(pod):
            claim = self.cluster.try_get("PersistentVolumeClaim", ns, name)
            if not isinstance(claim, PersistentVolumeClaim):
                continue
            pv = self._volume_of(claim)
            if pv is not None:
                if pv.spec.csi is not None:
                    out.add((pv.spec.csi.driver, pv.spec.csi.volume_handle))
                continue
            cls = self.cluster.try_get("StorageClass", None, claim.class_name)
            if isinstance(cls, StorageClass) and cls.provisioner:
                out.add((cls.provisioner, f"{ns}/{name}"))
        return out

    def _check_attach_limits(self, key: str, pod: Pod, node: Node) -> None:
        csi_node = self.cluster.try_get("CSINode", None, node.name)
        if not isinstance(csi_node, CSINode):
            return
        new = self._csi_volumes(pod)
        if not new:
            return
        attached: set[tuple[str, str]] = set()
        for other in self._by_node.get(node.name, {}).values():
            if other.spec.volumes:
                attached |= self._csi_volumes(other)
        for driver in sorted({d for d, _ in new - attached}):
            entry = csi_node.driver(driver)
            limit = entry.allocatable.count if entry and entry.allocatable else None
            if limit is None:
                continue
            total = len({v for v in attached | new if v[0] == driver})
            if total > limit:
                self._violate(
                    "volumes",
                    key,
                    f"{node.name}: {total} {driver} volumes attached > CSINode limit {limit}",
                )

    # -- at the end ------------------------------------------------------------------------

    def finish(self) -> list[Violation]:
        """Run the final-state checks; return every violation found during the run.

        Final violations already reported by an earlier ``finish`` are not repeated."""
        self._check_final_resources()
        if self.scheduler is not None:
            self._check_lost_pods()
            self._check_cache()
        self.violations = list(dict.fromkeys(self.violations))
        return self.violations

    def summary(self) -> str:
        """One line: bindings checked, checks made, violations."""
        found = f"{len(self.violations)} violation(s)" if self.violations else "no violation"
        return f"invariants: {self.bindings} bindings, {self.checks} checks, {found}"

    def assert_ok(self) -> None:
        """:meth:`finish`, then raise :class:`InvariantViolation` if anything broke."""
        if self.finish():
            raise InvariantViolation(self.violations)

    def _check_final_resources(self) -> None:
        on_node: dict[str, list[Pod]] = defaultdict(list)
        for pod in self.cluster.pods():
            if pod.spec.node_name in self._scheduled_nodes:
                on_node[pod.spec.node_name].append(pod)
        for name in sorted(self._scheduled_nodes):
            node = self.cluster.try_get("Node", None, name)
            if not isinstance(node, Node):
                continue
            self.checks += 1
            total: dict[str, int] = defaultdict(int)
            count = len(on_node[name])
            for pod in on_node[name]:
                for res, amount in pod_requests(pod).items():
                    total[res] += amount
            allocatable = node_allocatable(node)
            for res, amount in sorted(total.items()):
                if amount and amount > allocatable.get(res, 0):
                    self._violate(
                        "resources",
                        name,
                        f"{res} requested {amount} > allocatable "
                        f"{allocatable.get(res, 0)} at the end",
                    )
            if "pods" in allocatable and count > allocatable["pods"]:
                self._violate("resources", name, f"{count} pods > {allocatable['pods']} allowed")

    def _check_lost_pods(self) -> None:
        s = self.scheduler
        assert s is not None
        for pod in self.cluster.pods():
            if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
                continue
            if pod.spec.scheduler_name not in s.frameworks:
                continue
            if pod.status.phase in ("Succeeded", "Failed"):
                continue
            self.checks += 1
            uid = pod.metadata.uid or ""
            if s.queue.queue_of(uid) is not None or s.cache.assumed_pod_info(uid) is not None:
                continue
            if any(fwk.waiting_pods.get(uid) is not None for fwk in s.frameworks.values()):
                continue
            self._violate("lost-pod", _key(pod), "neither bound, queued, waiting nor assumed")

    def _check_cache(self) -> None:
        s = self.scheduler
        assert s is not None
        dump = s.cache.dump()
        bound_by_node: dict[str, set[str]] = defaultdict(set)
        for pod in self.cluster.pods():
            if pod.spec.node_name:
                bound_by_node[pod.spec.node_name].add(pod.metadata.uid or "")
        for name, info in sorted(dump.nodes.items()):
            self.checks += 1
            uids = {p.uid for p in info.pods}
            expected = bound_by_node.get(name, set()) | {u for u in uids if u in dump.assumed_pods}
            if uids != expected:
                self._violate(
                    "cache",
                    name,
                    f"cache holds {len(uids)} pods, the cluster {len(expected)} "
                    f"(missing {sorted(expected - uids)[:3]}, extra {sorted(uids - expected)[:3]})",
                )
            total: dict[str, int] = defaultdict(int)
            for p in info.pods:
                for res, amount in pod_requests(p.pod).items():
                    total[res] += amount
            for res, amount in sorted(total.items()):
                if res == "pods":
                    continue
                if info.requested.get(res) != amount:
                    self._violate(
                        "cache",
                        name,
                        f"requested {res} is {info.requested.get(res)}, pods sum to {amount}",
                    )
            if info.requested.allowed_pod_number != len(info.pods):
                self._violate(
                    "cache",
                    name,
                    f"pod count {info.requested.allowed_pod_number} != {len(info.pods)} pods",
                )


def _claim_keys(pod: Pod) -> list[str]:
    ns = pod.metadata.namespace or "default"
    return [f"{ns}/{name}" for name, _ephemeral in pod_claim_names(pod)] if pod.spec.volumes else []


def _disk_conflict(pod: Pod, other: Pod) -> str | None:
    """The in-tree disk both pods mount where one of them writes (upstream's rule: an
    EBS volume conflicts even read-only; RBD images are the same when they share a
    monitor, the pool and the image), or None."""
    for v in pod.spec.volumes:
        for o in other.spec.volumes:
            gce, ogce = v.gce_persistent_disk, o.gce_persistent_disk
            if (
                gce
                and ogce
                and gce.pd_name == ogce.pd_name
                and not (gce.read_only and ogce.read_only)
            ):
                return f"GCE PD {gce.pd_name}"
            ebs, oebs = v.aws_elastic_block_store, o.aws_elastic_block_store
            if ebs and oebs and ebs.volume_id == oebs.volume_id:
                return f"AWS EBS {ebs.volume_id}"
            iscsi, oiscsi = v.iscsi, o.iscsi
            if (
                iscsi
                and oiscsi
                and iscsi.iqn == oiscsi.iqn
                and not (iscsi.read_only and oiscsi.read_only)
            ):
                return f"iSCSI {iscsi.iqn}"
            rbd, orbd = v.rbd, o.rbd
            if (
                rbd
                and orbd
                and set(rbd.monitors) & set(orbd.monitors)
                and (rbd.pool, rbd.image) == (orbd.pool, orbd.image)
                and not (rbd.read_only and orbd.read_only)
            ):
                return f"RBD {rbd.pool}/{rbd.image}"
    return None


def _has_required_anti(pod: Pod) -> bool:
    aff = pod.spec.affinity
    anti = aff.pod_anti_affinity if aff else None
    return bool(anti and anti.required_during_scheduling_ignored_during_execution)
