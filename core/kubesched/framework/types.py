"""What plugins read: PodInfo and NodeInfo with pre-computed requests, terms and ports."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Node,
    Pod,
    PodAffinityTerm,
    Toleration,
    WeightedPodAffinityTerm,
    compile_label_selector,
    node_allocatable,
    pod_non_zero_requests,
    pod_requests,
)
from kubesched.api.selectors import LabelSelectorError, LabelSelectorMatcher, aggregate_message

if TYPE_CHECKING:
    from kubesched.framework.node_table import NodeTable
    from kubesched.framework.status import Status

_generation = itertools.count(1)


def pod_uid(pod: Pod) -> str:
    """The pod's identity in the scheduler: its uid, or ``namespace/name`` for a pod
    without one (hand-written test objects). Every part keys pods by this."""
    meta = pod.metadata
    return meta.uid or f"{meta.namespace or 'default'}/{meta.name or ''}"


def next_generation() -> int:
    """A process-wide increasing number stamped on every NodeInfo change."""
    return next(_generation)


class Resource:
    """Amounts of compute resources: cpu in millicores, the rest in base units.

    ``allowed_pod_number`` is the ``pods`` resource; in a NodeInfo's ``requested`` it
    counts the node's pods. ``scalar_resources`` holds
    extended resources (``nvidia.com/gpu``), hugepages and attachable volumes.
    """

    __slots__ = (
        "allowed_pod_number",
        "ephemeral_storage",
        "memory",
        "milli_cpu",
        "scalar_resources",
    )

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar_resources: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar_resources: dict[str, int] = scalar_resources or {}

    @classmethod
    def from_mapping(cls, amounts: Mapping[str, int]) -> Resource:
        """A Resource from ``{"cpu": 500, "memory": ..., "nvidia.com/gpu": 1}``."""
        r = cls()
        r.add(amounts)
        return r

    def add(self, amounts: Mapping[str, int], sign: int = 1) -> None:
        """Add (``sign=-1``: subtract) ``amounts`` given as a resource-name mapping."""
        for name, value in amounts.items():
            if name == CPU:
                self.milli_cpu += sign * value
            elif name == MEMORY:
                self.memory += sign * value
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += sign * value
            elif name == PODS:
                self.allowed_pod_number += sign * value
            else:
                self.scalar_resources[name] = self.scalar_resources.get(name, 0) + sign * value

    def get(self, name: str) -> int:
        """The amount of resource ``name``."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def as_dict(self) -> dict[str, int]:
        """All amounts by resource name (zero scalars omitted)."""
        d = {
            CPU: self.milli_cpu,
            MEMORY: self.memory,
            EPHEMERAL_STORAGE: self.ephemeral_storage,
            PODS: self.allowed_pod_number,
        }
        d.update((k, v) for k, v in self.scalar_resources.items() if v)
        return d

    def clone(self) -> Resource:
        """An independent copy."""
        c = Resource.__new__(Resource)
        c.milli_cpu = self.milli_cpu
        c.memory = self.memory
        c.ephemeral_storage = self.ephemeral_storage
        c.allowed_pod_number = self.allowed_pod_number
        c.scalar_resources = dict(self.scalar_resources) if self.scalar_resources else {}
        return c

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Resource({self.as_dict()!r})"


@dataclass(frozen=True)
class AffinityTerm:
    """A parsed pod (anti-)affinity term: which pods it selects, in which namespaces.

    ``namespaces`` is the term's explicit list, or the pod's own namespace when the
    term names neither namespaces nor a namespace selector (upstream's rule).
    ``namespace_selector`` is ``None`` when the term has none (it then matches no
    namespace by label).
    """

    selector: LabelSelectorMatcher
    namespaces: frozenset[str]
    namespace_selector: LabelSelectorMatcher | None
    topology_key: str

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` is selected: its namespace qualifies and its labels match.

        ``namespace_labels`` are the labels of the pod's namespace; ``None`` counts as no
        labels (upstream's nil ``labels.Set``), which an empty namespace selector matches.
        """
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None
            and self.namespace_selector.matches(namespace_labels or {})
        ):
            return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True)
class WeightedAffinityTerm:
    """A preferred (anti-)affinity term and its weight (1..100)."""

    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class HostPort:
    """A host port a pod uses: ``(ip, protocol, port)``; ``ip`` ``0.0.0.0`` is any address."""

    ip: str
    protocol: str
    port: int


def _affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    namespaces = frozenset(term.namespaces or ())
    if not namespaces and term.namespace_selector is None:
        namespaces = frozenset({pod.metadata.namespace or "default"})
    return AffinityTerm(
        selector=compile_label_selector(term.label_selector),
        namespaces=namespaces,
        namespace_selector=(
            compile_label_selector(term.namespace_selector)
            if term.namespace_selector is not None
            else None
        ),
        topology_key=term.topology_key,
    )


def _parsed(what: str, errors: list[str], parse: Callable[[], tuple]) -> tuple:
    try:
        return parse()
    except LabelSelectorError as err:
        errors.append(f"{what}: {err}")
        return ()


def _weighted_terms(pod: Pod, terms: Iterable[WeightedPodAffinityTerm]) -> tuple:
    return tuple(
        WeightedAffinityTerm(_affinity_term(pod, t.pod_affinity_term), t.weight)
        for t in terms
        if t.weight
    )


_last_tolerations: list[tuple[Toleration, ...]] = [()]


def _tolerations_of(tolerations: Sequence[Toleration] | None) -> tuple[Toleration, ...]:
    """``tuple(tolerations)``; the previous pod's tuple when it holds the same objects
    (a tuple of the same objects is as good as a new one): the embedded cluster shares
    the tolerations it admits, so pods share one tuple (64 bytes a pod)."""
    tols = tolerations or ()
    last = _last_tolerations[0]
    if len(last) == len(tols) and all(a is b for a, b in zip(last, tols, strict=True)):
        return last
    last = _last_tolerations[0] = tuple(tols)
    return last


class PodInfo:
    """A pod with what the scheduler computes from it once, not on every node.

    Built when the pod enters the scheduler (queue or cache) and rebuilt when the pod
    changes. Plugins read ``requests``, the parsed affinity terms, ``tolerations``
    and ``host_ports`` from here instead of re-parsing ``pod``. ``parse_error`` is the
    text of upstream's ``NewPodInfo`` error when a term's label selector is invalid (the
    terms of that kind are then empty), None otherwise.
    """

    __slots__ = (
        "host_ports",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "non_zero_cpu",
        "non_zero_memory",
        "parse_error",
        "pod",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "priority",
        "pvc_claims",
        "requests",
        "required_affinity_terms",
        "required_anti_affinity_terms",
        "start_timestamp",
        "tolerations",
        "uid",
    )

    def __init__(self, pod: Pod) -> None:
        self.update(pod)

    def update(self, pod: Pod) -> None:
        """Re-compute everything from ``pod`` (a new version of the same pod)."""
        meta = pod.metadata
        spec = pod.spec
        self.pod = pod
        self.name = meta.name or ""
        self.namespace = meta.namespace or "default"
        self.key = f"{self.namespace}/{self.name}"
        self.uid = pod_uid(pod)
        self.start_timestamp: float | None = None
        """``status.startTime`` in seconds once preemption asked for it (None: not yet)."""
        # The pod's own dict, also when empty (``or {}`` made a new one per pod).
        self.labels: Mapping[str, str] = meta.labels if meta.labels is not None else {}
        self.node_name: str = spec.node_name or ""
        self.priority: int = spec.priority or 0
        self.requests: dict[str, int] = pod_requests(pod)
        self.non_zero_cpu, self.non_zero_memory = pod_non_zero_requests(pod)
        self.tolerations = _tolerations_of(spec.tolerations)
        self.pvc_claims: tuple[str, ...] = tuple(
            f"{self.namespace}/{v.persistent_volume_claim.claim_name}"
            for v in spec.volumes or ()
            if getattr(v, "persistent_volume_claim", None) is not None
        )
        """``namespace/name`` of each PVC the pod's volumes use."""
        # Upstream's GetHostPorts: sidecars (restartable init containers) run for the
        # pod's whole life, so their host ports count; other init containers' do not.
        sidecars = [c for c in spec.init_containers or () if c.restart_policy == "Always"]
        self.host_ports: tuple[HostPort, ...] = tuple(
            HostPort(p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port)
            for c in (*sidecars, *spec.containers)
            for p in (c.ports or ())
            if p.host_port
        )
        affinity = spec.affinity
        pod_affinity = affinity.pod_affinity if affinity else None
        anti = affinity.pod_anti_affinity if affinity else None
        # Upstream's PodInfo.Update: a category whose selectors do not parse has no terms,
        # and the errors are kept for InterPodAffinity to report (others ignore them).
        errors: list[str] = []
        self.required_affinity_terms: tuple[AffinityTerm, ...] = _parsed(
            "requiredAffinityTerms",
            errors,
            lambda: tuple(
                _affinity_term(pod, t)
                for t in (
                    pod_affinity.required_during_scheduling_ignored_during_execution
                    if pod_affinity
                    else None
                )
                or ()
            ),
        )
        self.required_anti_affinity_terms: tuple[AffinityTerm, ...] = _parsed(
            "requiredAntiAffinityTerms",
            errors,
            lambda: tuple(
                _affinity_term(pod, t)
                for t in (
                    anti.required_during_scheduling_ignored_during_execution if anti else None
                )
                or ()
            ),
        )
        self.preferred_affinity_terms: tuple[WeightedAffinityTerm, ...] = _parsed(
            "preferredAffinityTerms",
            errors,
            lambda: _weighted_terms(
                pod,
                (
                    pod_affinity.preferred_during_scheduling_ignored_during_execution
                    if pod_affinity
                    else None
                )
                or (),
            ),
        )
        self.preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...] = _parsed(
            "preferredAntiAffinityTerms",
            errors,
            lambda: _weighted_terms(
                pod,
                (anti.preferred_during_scheduling_ignored_during_execution if anti else None) or (),
            ),
        )
        self.parse_error: str | None = aggregate_message(errors) if errors else None

    def for_version(self, pod: Pod) -> PodInfo:
        """A PodInfo for ``pod``, a newer version of this PodInfo's pod.

        The pre-computed fields are reused when what they are computed from is shared
        with the old version (a bind or a status write copies only what it changes), and
        computed anew otherwise: a bind's watch event then costs no re-parsing.
        """
        old_spec, spec = self.pod.spec, pod.spec
        meta = pod.metadata
        if not (
            spec.containers is old_spec.containers
            and spec.init_containers is old_spec.init_containers
            and spec.overhead is old_spec.overhead
            and spec.tolerations is old_spec.tolerations
            and spec.affinity is old_spec.affinity
            and spec.volumes is old_spec.volumes
            and spec.priority == old_spec.priority
            and pod_uid(pod) == self.uid
            and (meta.labels if meta.labels is not None else {}) == self.labels
        ):
            return PodInfo(pod)
        copy = self._copy()
        copy.pod = pod
        copy.start_timestamp = None  # the status may differ
        copy.labels = meta.labels if meta.labels is not None else {}
        copy.node_name = spec.node_name or ""
        return copy

    def _copy(self) -> PodInfo:
        """A shallow copy (the pre-computed fields are shared)."""
        copy = PodInfo.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            setattr(copy, slot, getattr(self, slot))
        return copy

    def assumed_on(self, node_name: str) -> PodInfo:
        """A copy of this PodInfo for the pod bound to ``node_name`` (what the scheduler
        assumes in its cache); the pre-computed fields are shared, not recomputed."""
        copy = self._copy()
        spec = self.pod.spec.model_copy(update={"node_name": node_name})
        copy.pod = self.pod.model_copy(update={"spec": spec})
        copy.node_name = node_name
        return copy

    def has_affinity(self) -> bool:
        """True when the pod has any pod affinity or anti-affinity term."""
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


NO_PLUGINS: frozenset[str] = frozenset()
"""The empty set of plugins, shared (``frozenset()`` makes a new object each time)."""


class QueuedPodInfo:
    """A pod in the scheduling queue, with its queueing history.

    ``timestamp`` is when it was last added to the queue (QueueSort's tie breaker),
    ``initial_attempt_timestamp`` when it first entered the active queue, ``attempts`` how many
    scheduling attempts it has had, ``unschedulable_plugins`` / ``pending_plugins``
    the plugins that rejected it last time (their events move it back),
    ``gated`` whether PreEnqueue holds it back and ``gating_plugin`` which one.
    The two sets of plugins are frozensets, replaced when they change.
    """

    __slots__ = (
        "attempts",
        "backoff_expiration",
        "gated",
        "gating_plugin",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod_info",
        "timestamp",
        "unschedulable_plugins",
    )

    def __init__(self, pod_info: PodInfo, timestamp: float) -> None:
        self.pod_info = pod_info
        self.timestamp = timestamp
        self.initial_attempt_timestamp: float | None = None
        self.attempts = 0
        self.backoff_expiration: float | None = None
        # Replaced, never changed in place: a new pod shares one empty frozenset (two
        # empty sets were 432 bytes of each queued pod).
        self.unschedulable_plugins: frozenset[str] = NO_PLUGINS
        self.pending_plugins: frozenset[str] = NO_PLUGINS
        self.gated = False
        self.gating_plugin: str | None = None

    @property
    def pod(self) -> Pod:
        """The queued pod."""
        return self.pod_info.pod

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.key}, attempts={self.attempts})"


@dataclass
class ImageStateSummary:
    """An image on a node: its size and on how many nodes of the cluster it is."""

    size: int
    num_nodes: int


class NodeInfo:
    """A node and the pods the scheduler counts on it, aggregated.

    ``requested`` sums the pods' requests; ``non_zero_requested`` the same with
    upstream's defaults (100m cpu, 200Mi memory) for containers that request
    nothing, used by scoring. ``generation`` changes on every modification, which
    is how the snapshot knows what to copy. ``node`` is ``None`` for a node whose
    Node object was deleted while pods remain on it. ``allocatable`` is replaced when
    the Node changes, never modified in place: copies share it.
    """

    __slots__ = (
        "allocatable",
        "generation",
        "image_states",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None, pods: Iterable[PodInfo] = ()) -> None:
        self.node: Node | None = None
        self.name = ""
        """The node's name ("" without a Node); kept as a field, read on every hot path."""
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports: dict[tuple[str, int], set[str]] = {}
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        """Set or replace the Node object."""
        self.node = node
        self.name = node.metadata.name
        self.allocatable = Resource.from_mapping(node_allocatable(node))
        self.generation = next_generation()

    def remove_node(self) -> None:
        """Forget the Node object; the pods stay until they are removed."""
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pod_info: PodInfo) -> None:
        """Count ``pod_info`` on this node."""
        self.pods.append(pod_info)
        if pod_info.has_affinity():
            self.pods_with_affinity.append(pod_info)
        if pod_info.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pod_info)
        self._account(pod_info, 1)

    def remove_pod(self, pod_info: PodInfo) -> None:
        """Stop counting the pod with ``pod_info``'s uid; ``KeyError`` if it is not here."""
        uid = pod_info.uid
        index = next((i for i, p in enumerate(self.pods) if p.uid == uid), None)
        if index is None:
            raise KeyError(f"no pod {pod_info.key} (uid {uid}) on node {self.name!r}")
        removed = self.pods.pop(index)
        for group in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            for j, p in enumerate(group):
                if p.uid == uid:
                    del group[j]
                    break
        self._account(removed, -1)

    def _account(self, pod_info: PodInfo, sign: int) -> None:
        self.requested.add(pod_info.requests, sign)
        self.requested.allowed_pod_number += sign
        self.non_zero_requested.milli_cpu += sign * pod_info.non_zero_cpu
        self.non_zero_requested.memory += sign * pod_info.non_zero_memory
        self.non_zero_requested.allowed_pod_number += sign
        for hp in pod_info.host_ports:
            key = (hp.protocol, hp.port)
            ips = self.used_ports.setdefault(key, set())
            if sign > 0:
                ips.add(hp.ip)
            else:
                ips.discard(hp.ip)
                if not ips:
                    del self.used_ports[key]
        for claim in pod_info.pvc_claims:
            n = self.pvc_ref_counts.get(claim, 0) + sign
            if n:
                self.pvc_ref_counts[claim] = n
            else:
                self.pvc_ref_counts.pop(claim, None)
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        """A copy whose pod lists and totals can change independently (PodInfos shared)."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = {k: set(v) for k, v in self.used_ports.items()}
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable  # replaced by set_node, never changed in place
        c.image_states = dict(self.image_states)
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)}, generation={self.generation})"


NodeToStatus = dict[str, "Status"]
"""Each rejected node's Filter status, by node name (PostFilter's input, the diagnosis)."""


class NodeBatch:
    """A batch of nodes for a vectorised hook (``filter_nodes``, ``score_nodes``).

    ``rows[i]`` is a node's row in ``table``, the snapshot's column arrays
    (``table.allocatable["cpu"][rows]`` are the batch's cpu allocatables); ``infos[i]``
    is its NodeInfo and ``names[i]`` its name, both built on first use because a
    vectorised plugin rarely needs them. Everything in a batch is read-only.

    ``build``, when given, makes the NodeInfo of a row on demand: a what-if batch
    (preemption's dry run) whose ``table`` columns describe copies of the nodes with
    other pods builds those copies only if a plugin reads ``infos``.

    ``copies``, on such a batch, holds per plugin name the per-copy PreFilter state of
    each plugin whose PreFilter AddPod/RemovePod extension is active (what the plugin's
    ``pre_filter_copies`` built): its ``filter_nodes`` reads that instead of the
    CycleState's, which describes the nodes as they are.
    """

    __slots__ = ("_build", "_infos", "_names", "_span", "copies", "rows", "table")

    def __init__(
        self,
        table: NodeTable,
        rows: Sequence[int],
        infos: Sequence[NodeInfo] | None = None,
        build: Callable[[int], NodeInfo] | None = None,
        copies: Mapping[str, Any] | None = None,
    ) -> None:
        self.table = table
        self.rows = np.asarray(rows, dtype=np.intp)
        self._infos = infos
        self._names: list[str] | None = None
        self._build = build
        self.copies = copies
        self._span: tuple[int, int] | bool | None = False  # False: not worked out yet

    def span(self) -> tuple[int, int] | None:
        """``(first, end)`` when the rows are a slice ``table.all_rows[first:end]`` (the
        scheduler's usual batch: a run of the table, in order), else ``None``."""
        span = self._span
        if span is False:
            rows, all_rows = self.rows, getattr(self.table, "all_rows", None)
            span = None
            # A view of the read-only arange with its step: only the first row is read.
            if rows is all_rows or (
                len(rows) and rows.base is all_rows and rows.strides == all_rows.strides
            ):
                first = int(rows[0])  # all_rows[i] is i
                span = (first, first + len(rows))
            self._span = span
        return span

    def take(self, column: np.ndarray) -> np.ndarray:
        """``column[rows]``: the batch's values of one of ``table``'s columns, in batch
        order. Read-only: when the rows are a run of the table (:meth:`span`) it is a
        view of the column, not a copy (an indexed copy costs a few microseconds per
        column and per pod)."""
        span = self.span()
        if span is None:
            return column[self.rows]
        return self.table.read_only(column)[span[0] : span[1]]

    @property
    def infos(self) -> Sequence[NodeInfo]:
        """The batch's NodeInfos, in batch order."""
        if self._infos is None:
            if self._build is not None:
                self._infos = [self._build(r) for r in self.rows.tolist()]
            elif (span := self.span()) is not None:
                self._infos = self.table.infos[span[0] : span[1]]
            else:
                self._infos = self.table.info_array[self.rows].tolist()
        return self._infos

    def info(self, i: int) -> NodeInfo:
        """The NodeInfo of the batch's node ``i``, without building the others'."""
        if self._infos is None and self._build is not None:
            return self._build(int(self.rows[i]))
        return self.infos[i]

    @property
    def names(self) -> list[str]:
        """The batch's node names, in batch order."""
        if self._names is None:
            self._names = self.table.name_array[self.rows].tolist()
        return self._names

    def subset(self, positions: np.ndarray) -> NodeBatch:
        """The nodes at ``positions`` (indices into this batch) as a new batch."""
        sub = NodeBatch(self.table, self.rows[positions], build=self._build, copies=self.copies)
        if self._infos is not None:
            sub._infos = [self._infos[i] for i in positions.tolist()]
        return sub

    def __len__(self) -> int:
        return len(self.rows)
