"""MemoryCluster: the object store, watches, pod lifecycle in virtual time, leases and events."""

from __future__ import annotations

import functools
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kubesched.api import (
    KINDS,
    DeviceTaintRule,
    KubeObject,
    Lease,
    Namespace,
    Pod,
    PodDisruptionBudget,
    PodStatus,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    ResourceQuota,
    Service,
    StatefulSet,
    WorkloadPodGroup,
    resolve_kind,
    set_status_condition,
    split_kind,
    stored_key,
)
from kubesched.api import PodCondition as ApiPodCondition
from kubesched.api.rest import resource_name
from kubesched.api.validation import (
    InvalidObjectError,
    validate_object,
    validate_update,
    validating_with,
)
from kubesched.backend.memory.admission import AdmissionError, PodAdmission, validate_priority_class
from kubesched.backend.memory.autoscaling import HorizontalPodAutoscalerController
from kubesched.backend.memory.controllers import CONTROLLER_NAMES, WorkloadControllers
from kubesched.backend.memory.cronjobs import CronJobController
from kubesched.backend.memory.defaults import ObjectDefaults
from kubesched.backend.memory.devicebinding import DeviceBindingDrivers
from kubesched.backend.memory.devicetainteviction import DeviceTaintEvictionController
from kubesched.backend.memory.disruption import DisruptionController
from kubesched.backend.memory.evictions import EvictionRecord
from kubesched.backend.memory.extensions import ExtensionControllers
from kubesched.backend.memory.gatedfields import GatedFields
from kubesched.backend.memory.kubelet import KubeletEvictionManager, PodRunner
from kubesched.backend.memory.naming import deterministic_uid, random_suffix, timestamp
from kubesched.backend.memory.nodelifecycle import NodeLifecycleController
from kubesched.backend.memory.resourceclaims import ResourceClaimController
from kubesched.backend.memory.resourcequota import ResourceQuotaController
from kubesched.backend.memory.tainteviction import TaintEvictionController
from kubesched.backend.memory.volumes import VolumeControllers
from kubesched.backend.protocol import (
    BackendError,
    ConflictError,
    EventType,
    EvictionResult,
    NotFoundError,
    PodCondition,
    RecordedEvent,
    WatchEvent,
    WatchHandler,
)
from kubesched.clock import Clock
from kubesched.features import FeatureGates
from kubesched.notices import notice

__all__ = [
    "APPLY_ORDER",
    "DEFAULT_EVENT_LOG_SIZE",
    "SYSTEM_NAMESPACES",
    "AdmissionRejection",
    "MemoryCluster",
]

APPLY_ORDER: dict[str, int] = {
    "Namespace": 0,
    "PriorityClass": 1,
    "RuntimeClass": 1,
    "KubeletConfiguration": 1,
    "StorageClass": 1,
    "CSIDriver": 1,
    "Node": 2,
    "CSINode": 2,
    "CSIStorageCapacity": 3,
    "PersistentVolume": 3,
    "PersistentVolumeClaim": 3,
    "DeviceClass": 1,
    "ResourceSlice": 2,
    "Service": 3,
    "PodDisruptionBudget": 3,
    "Lease": 3,
    "LimitRange": 1,
    "ResourceQuota": 1,
    "ResourceClaimTemplate": 3,
    "ResourceClaim": 3,
    "Deployment": 4,
    "ReplicaSet": 4,
    "ReplicationController": 4,
    "StatefulSet": 4,
    "DaemonSet": 4,
    "Job": 4,
    "CronJob": 4,
    "Pod": 5,
}
"""The order in which :meth:`MemoryCluster.apply` creates kinds (stable within a kind)."""

SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
"""The namespaces kube-apiserver creates at start-up (here, on first use, without notice)."""

DEFAULT_EVENT_LOG_SIZE = 100_000
"""How many watch events the cluster keeps for watches that resume from an older rv."""

DEFAULT_TERMINATION_GRACE_PERIOD = 30

DEFAULT_MAX_PODS = 1_000_000
"""The most pods a run may hold (:attr:`MemoryCluster.max_pods`, ``kubesched simulate
--max-pods``'s default): ten times the largest run ``kubesched bench`` measures (100,000
pods), far below what would exhaust a machine's memory (about a kilobyte a pending pod,
more once scheduled)."""

# Kinds whose metadata.generation counts spec changes (PDB status reports observedGeneration).
_GENERATION_KINDS = frozenset(
    {
        "Deployment",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "PodDisruptionBudget",
        "DeviceTaintRule",
    }
)


def _stamp_rule_taint(rule: DeviceTaintRule, old: DeviceTaintRule | None, now: datetime) -> None:
    """kube-apiserver's DeviceTaintRule strategy: the taint's ``timeAdded`` is set to now
    when missing, and on an update that changes the effect while keeping the old time
    (the time says when the effect began, and a NoExecute eviction counts from it)."""
    taint = rule.spec.taint
    if taint.time_added is None or (
        old is not None
        and taint.effect != old.spec.taint.effect
        and taint.time_added == old.spec.taint.time_added
    ):
        taint.time_added = now


def _describe(obj: KubeObject) -> str:
    return f"{obj.kind} {obj.key}"


@dataclass(frozen=True)
class AdmissionRejection:
    """An object the cluster refused, and kube-apiserver's message saying why.

    ``source_object_key`` names the object as ``Kind namespace/name`` (for a pod a
    controller failed to create: the controller, e.g. ``ReplicaSet default/web-7d9c``).
    """

    source_object_key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source_object_key}: {self.message}"


class _MemoryWatch:
    """A registered watch; events with a resourceVersion above ``from_rv`` reach ``handler``."""

    __slots__ = ("_cluster", "active", "from_rv", "handler", "kind")

    def __init__(self, cluster: MemoryCluster, kind: str, from_rv: int, handler: WatchHandler):
        self._cluster = cluster
        self.kind = kind
        self.from_rv = from_rv
        self.handler = handler
        self.active = True

    def stop(self) -> None:
        """Stop delivering events (idempotent)."""
        if self.active:
            self.active = False
            self._cluster._watches[self.kind].remove(self)


class MemoryCluster:
    """An in-process Kubernetes API: implements ``ClusterBackend`` and ``ObjectLister``.

    Every write gets the next global resourceVersion and produces one watch event.
    Watch handlers run synchronously, in resourceVersion order: a write made by a
    handler is queued and delivered after the current event reached every handler,
    so all handlers see the same order. The workload controllers, the disruption
    controller and pod admission run inside the cluster, synchronously too; when
    :meth:`create` returns, a Deployment's ReplicaSet and Pods exist.

    Time is the ``clock``'s: graceful pod deletions complete when :meth:`advance`
    reaches them; :meth:`next_event_time` says when that is.

    Objects handed out (``get``, ``list``, watch events) are the stored ones: treat
    them as read-only and copy (``model_copy(deep=True)``) before changing them.
    """

    reconciles_synchronously = True
    """Controllers (PV binding, provisioning, workloads) act within the write that
    triggers them: a client need not wait for them (``ClusterBackend``)."""

    embedded = True
    """Nothing outside the process can write here: when a binding extender accepts a
    pod, the scheduler writes the Binding itself (``ClusterBackend``)."""

    def __init__(
        self,
        clock: Clock,
        *,
        event_log_size: int = DEFAULT_EVENT_LOG_SIZE,
        lenient_admission: bool = False,
        default_toleration_seconds: bool = True,
        node_pressure_eviction: bool = False,
        validate: bool = True,
        strict_namespaces: bool = False,
        feature_gates: FeatureGates | None = None,
    ) -> None:
        """``lenient_admission`` keeps explicit pod priorities/overheads that kube-apiserver
        refuses; ``default_toleration_seconds`` enables the DefaultTolerationSeconds plugin;
        ``node_pressure_eviction`` runs the kubelets' eviction managers (off by default: a
        node whose pods use their full requests of an allocatable equal to its capacity
        would be under memory pressure at once); ``validate`` refuses, as kube-apiserver
        does (422 Invalid), objects that fail
        :func:`kubesched.api.validation.validate_object`; ``strict_namespaces`` refuses,
        as the NamespaceLifecycle admission plugin does (404 NotFound), an object whose
        namespace does not exist yet, instead of creating the namespace with a notice;
        ``feature_gates`` are the API server's: while one that guards fields is off, those
        fields are dropped as kube-apiserver drops them (see
        :mod:`~kubesched.backend.memory.gatedfields`), with a notice."""
        self.clock = clock
        self.validate = validate
        self.strict_namespaces = strict_namespaces
        self._objects: dict[str, dict[str, KubeObject]] = {kind: {} for kind in KINDS}
        self._rv = 0
        # The resourceVersion of each kind's last change (``kind_generation``).
        self._kind_rv: dict[str, int] = {}
        self._uids = 0
        self._names = 0
        self._log: deque[tuple[int, str, WatchEvent]] = deque()
        self._log_size = max(1, event_log_size)
        self._compacted_rv = 0
        self._pending: deque[tuple[int, str, WatchEvent]] = deque()
        self._dispatching = False
        self._watches: dict[str, list[_MemoryWatch]] = {kind: [] for kind in KINDS}
        self._deletions: list[tuple[float, str, str]] = []  # heap of (due, pod key, uid)
        # node -> (pod key, uid) whose graceful deletion waits for the node's kubelet.
        self._stuck: dict[str, list[tuple[str, str]]] = {}
        # Controllers' timers: heap of (due, sequence, callback); the sequence keeps
        # timers due at the same moment in the order they were set.
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        self._progress_timers: list[float] = []  # heap of the due times of progress timers
        self._dependents: dict[str, dict[tuple[str, str], None]] = {}
        self._pods_by_node: dict[str, dict[str, None]] = {}  # node -> keys of its pods
        # label key -> (namespace, value) -> keys of the pods with that label; a label key
        # is indexed from its first list_pods_with_label on (client-go's indexers).
        self._pods_by_label: dict[str, dict[tuple[str, str], dict[str, None]]] = {}
        self._paused = 0
        self.events: list[RecordedEvent] = []
        """Every Kubernetes Event recorded, in order."""
        self.rejections: list[AdmissionRejection] = []
        """Every object admission refused, in order (also those of controllers)."""
        self.evictions: list[EvictionRecord] = []
        """Every eviction (taint manager, kubelet, drain, pod GC), in order."""
        self.max_pods: int | None = DEFAULT_MAX_PODS
        """The most pods the cluster may hold (``kubesched simulate --max-pods``): the
        input is checked against it before anything is created, and a workload whose
        pods would go past it is refused (a rejection naming it and the limit) before any
        is created; None: no limit."""
        self.schedule_until: float | None = None
        """The end of the run's time window (virtual seconds): CronJobs start their Jobs
        on schedule up to it; None: no scheduled run at all (nothing says how long the
        cluster lives)."""
        self.admission = PodAdmission(
            priority_class=lambda name: self.try_get("PriorityClass", "", name),  # type: ignore[arg-type,return-value]
            priority_classes=lambda: self._objects["PriorityClass"].values(),  # type: ignore[arg-type,return-value]
            runtime_class=lambda name: self.try_get("RuntimeClass", "", name),  # type: ignore[arg-type,return-value]
            limit_ranges=lambda namespace: self.iter_objects("LimitRange", namespace),  # type: ignore[arg-type,return-value]
            lenient=lenient_admission,
            default_toleration_seconds=default_toleration_seconds,
        )
        self.sources: dict[int, str] = {}
        """The file of each object being loaded, by the ``id()`` of the object handed to
        :meth:`create` (filled in while a :class:`~kubesched.simulate.Simulation` applies
        its manifests): notices of what the API server drops name it."""
        gates = self.feature_gates = feature_gates or FeatureGates()
        self.gated_fields = GatedFields(gates)
        self.clear_nomination_on_bind = gates.enabled("ClearingNominatedNodeNameAfterBinding")
        """Whether a binding clears the pod's ``status.nominatedNodeName``, as
        kube-apiserver does with its ClearingNominatedNodeNameAfterBinding gate on (the
        default); off, the nomination stays on the bound pod."""
        self.admission.merge_spread_label_keys = gates.enabled(
            "MatchLabelKeysInPodTopologySpreadSelectorMerge"
        )
        self.defaults = ObjectDefaults()
        self.quota = ResourceQuotaController(self, resource_name)
        self.controllers = WorkloadControllers(self)
        self.cron_jobs = CronJobController(self)
        self.autoscalers = HorizontalPodAutoscalerController(self)
        self.pod_runner = PodRunner(self)
        self.volumes = VolumeControllers(self)
        self.disruption = DisruptionController(self)
        self.taint_eviction = TaintEvictionController(self)
        self.device_taint_eviction = DeviceTaintEvictionController(self)
        self.node_lifecycle = NodeLifecycleController(self)
        self.kubelet = KubeletEvictionManager(self) if node_pressure_eviction else None
        self.resource_claims = ResourceClaimController(self)
        self.extensions = ExtensionControllers(self)
        self.device_binding = DeviceBindingDrivers(self)

    # -- reading -------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the latest write."""
        return str(self._rv)

    def now(self) -> float:
        """The cluster's current virtual time (the clock's)."""
        return self.clock.now()

    def now_timestamp(self) -> datetime:
        """The current virtual time as the timestamps the cluster writes (an object's
        ``creationTimestamp``, a condition's ``lastTransitionTime``)."""
        return timestamp(self.clock.now())

    def _known(self, kind: str) -> bool:
        """True for a built-in kind or one a plugin package registered (``kubesched.kinds``
        entry points, :func:`kubesched.api.register_kind`); its store and watch list are
        created the first time the kind is used, so extension kinds are stored like the
        built-in ones (keyed by kind name), with watches and resourceVersions."""
        if kind in self._objects:
            return True
        if resolve_kind(kind) is None:
            return False
        self._objects[kind] = {}
        self._watches[kind] = []
        return True

    @staticmethod
    def _key(kind: str, namespace: str | None, name: str) -> str:
        """The store key of an object of ``kind`` (a kind name, or ``apiVersion/Kind``
        for one group's kind of a name two groups share: see :func:`stored_key`)."""
        kind, api_version = split_kind(kind)
        cls = resolve_kind(kind)
        if cls is None:
            raise BackendError(f"unsupported kind {kind!r}", 400)
        key = f"{namespace or 'default'}/{name}" if cls.namespaced else name
        return stored_key(kind, key, api_version)

    @staticmethod
    def _object_key(obj: KubeObject) -> str:
        """The store key of ``obj``: its ``namespace/name`` (or name), and its group when
        another group's kind has its kind name."""
        if isinstance(obj, Pod):  # the hot path: one group
            return obj.key
        return stored_key(obj.kind or "", obj.key, obj.api_version)

    def try_get(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """The object, or None (``kind``: a kind name, or ``apiVersion/Kind``)."""
        base = split_kind(kind)[0]
        if not self._known(base):
            return None
        return self._objects[base].get(self._key(kind, namespace, name))

    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject:
        """The object; ``NotFoundError`` if it does not exist."""
        obj = self.try_get(kind, namespace, name)
        if obj is None:
            raise NotFoundError(f'{resource_name(split_kind(kind)[0])} "{name}" not found')
        return obj

    def objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), sorted by key; ``kind``
        named ``apiVersion/Kind`` gives that group's objects only."""
        base, api_version = split_kind(kind)
        if api_version is not None:
            return sorted(self.iter_objects(kind, namespace), key=self._object_key)
        if not self._known(base):
            raise BackendError(f"unsupported kind {kind!r}", 400)
        store = self._objects[base]
        if namespace is None:
            return [store[k] for k in sorted(store)]
        prefix = namespace + "/"
        return [store[k] for k in sorted(store) if k.startswith(prefix)]

    def iter_objects(self, kind: str, namespace: str | None = None) -> Iterator[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), unsorted (insertion order)."""
        base, api_version = split_kind(kind)
        if not self._known(base):
            raise BackendError(f"unsupported kind {kind!r}", 400)
        store = self._objects[base]
        if namespace is None and api_version is None:
            yield from store.values()
            return
        prefix = "" if namespace is None else namespace + "/"
        for key, o in store.items():
            if not key.startswith(prefix):
                continue
            # Another group's object of this kind name is stored as ``key@group``.
            if api_version is None or stored_key(base, o.key, api_version) == key:
                yield o

    def pods(self, namespace: str | None = None) -> list[Pod]:
        """The Pods (of ``namespace`` if given), sorted by key."""
        return self.objects("Pod", namespace)  # type: ignore[return-value]

    def list(self, kind: str) -> tuple[list[KubeObject], str]:
        """All objects of ``kind`` and the resourceVersion to watch from."""
        return self.objects(kind), str(self._rv)

    def dependents(self, owner_uid: str, kind: str | None = None) -> list[KubeObject]:
        """Objects with an ownerReference to ``owner_uid`` (of ``kind`` if given), by key."""
        refs = self._dependents.get(owner_uid, {})
        out = []
        for k, key in sorted(refs):
            if kind is None or k == kind:
                obj = self._objects[k].get(key)
                if obj is not None:
                    out.append(obj)
        return out

    # -- ObjectLister ----------------------------------------------------------------------

    def get_namespace(self, name: str) -> Namespace | None:
        """The Namespace ``name``, or None."""
        return self._objects["Namespace"].get(name)  # type: ignore[return-value]

    def list_services(self, namespace: str) -> list[Service]:
        """The Services of ``namespace``."""
        return self.objects("Service", namespace)  # type: ignore[return-value]

    def list_replication_controllers(self, namespace: str) -> list[ReplicationController]:
        """The ReplicationControllers of ``namespace``."""
        return self.objects("ReplicationController", namespace)  # type: ignore[return-value]

    def list_replica_sets(self, namespace: str) -> list[ReplicaSet]:
        """The ReplicaSets of ``namespace``."""
        return self.objects("ReplicaSet", namespace)  # type: ignore[return-value]

    def list_stateful_sets(self, namespace: str) -> list[StatefulSet]:
        """The StatefulSets of ``namespace``."""
        return self.objects("StatefulSet", namespace)  # type: ignore[return-value]

    def list_pod_disruption_budgets(
        self, namespace: str | None = None
    ) -> list[PodDisruptionBudget]:
        """The PodDisruptionBudgets (of ``namespace`` if given)."""
        return self.objects("PodDisruptionBudget", namespace)  # type: ignore[return-value]

    def list_pods_with_label(self, namespace: str, key: str, value: str) -> list[Pod]:
        """The Pods of ``namespace`` whose label ``key`` is ``value``, sorted by key
        (``ObjectLister``). The first call for a label key indexes the pods by it."""
        index = self._pods_by_label.get(key)
        if index is None:
            index = self._pods_by_label[key] = {}
            for pod in self._objects["Pod"].values():
                entry = _label_entry(pod, key)  # type: ignore[arg-type]
                if entry is not None:
                    index.setdefault(entry, {})[pod.key] = None
        store = self._objects["Pod"]
        return [store[k] for k in sorted(index.get((namespace, value), ()))]  # type: ignore[misc]

    def list_objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), sorted by key; empty for
        an unknown kind (``ObjectLister``)."""
        return self.objects(kind, namespace) if self._known(split_kind(kind)[0]) else []

    def get_object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """Any object by kind name, or None (``ObjectLister``; same as :meth:`try_get`)."""
        return self.try_get(kind, namespace, name)

    def kind_generation(self, kind: str) -> int:
        """The resourceVersion of the last change of an object of ``kind``, 0 before any
        (``ObjectLister``)."""
        return self._kind_rv.get(kind, 0)

    # -- watching --------------------------------------------------------------------------

    def watch(self, kind: str, resource_version: str, handler: WatchHandler) -> _MemoryWatch:
        """Deliver every change of ``kind`` after ``resource_version`` to ``handler``.

        Changes already made after that version are replayed first, synchronously. An
        empty or ``"0"`` version starts with a synthetic ADDED event per existing
        object. A version older than the kept event log raises ``BackendError`` with
        code 410 (Gone): re-list and watch from the list's version.
        """
        if not self._known(kind):
            raise BackendError(f"unsupported kind {kind!r}", 400)
        if resource_version in ("", "0"):
            w = _MemoryWatch(self, kind, self._rv, handler)
            self._watches[kind].append(w)
            for obj in self.objects(kind):
                if w.active:
                    handler(WatchEvent(EventType.ADDED, obj))
            return w
        try:
            rv = int(resource_version)
        except ValueError:
            raise BackendError(f"invalid resourceVersion {resource_version!r}", 400) from None
        if rv < self._compacted_rv:
            raise BackendError(f"too old resource version: {rv} ({self._compacted_rv + 1})", 410)
        w = _MemoryWatch(self, kind, rv, handler)
        self._watches[kind].append(w)
        # Events still queued (rv > every logged rv) reach the watch through the pump.
        for ev_rv, ev_kind, ev in list(self._log):
            if ev_rv > rv and ev_kind == kind and w.active:
                handler(ev)
        return w

    def _emit(self, kind: str, event: WatchEvent) -> None:
        self._pending.append((self._rv, kind, event))
        self._pump()

    def _pump(self) -> None:
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while True:
                while self._pending:
                    rv, kind, event = self._pending.popleft()
                    self._log.append((rv, kind, event))
                    while len(self._log) > self._log_size:
                        self._compacted_rv = self._log.popleft()[0]
                    for w in tuple(self._watches[kind]):
                        if w.active and rv > w.from_rv:
                            w.handler(event)
                    self.pod_runner.on_event(kind, event)
                    if not self._paused:
                        self.controllers.on_event(kind, event)
                        self.cron_jobs.on_event(kind, event)
                        self.autoscalers.on_event(kind, event)
                        self.volumes.on_event(kind, event)
                        self.resource_claims.on_event(kind, event)
                        self.extensions.on_event(kind, event)
                        self.device_binding.on_event(kind, event)
                    self.taint_eviction.on_event(kind, event)
                    self.device_taint_eviction.on_event(kind, event)
                    self.node_lifecycle.on_event(kind, event)
                    if self.kubelet is not None:
                        self.kubelet.on_event(kind, event)
                    # PDB bookkeeping runs even while controllers are held.
                    self.disruption.on_event(kind, event)
                # PDB statuses are recomputed once per burst; their writes are new events.
                if not self.disruption.flush():
                    break
        finally:
            self._dispatching = False

    @contextmanager
    def paused_controllers(self) -> Iterator[None]:
        """Hold the controllers while a batch of objects is written, then resync them all.

        :meth:`apply` uses it so a captured cluster's ReplicaSets and Pods are adopted by
        their owners instead of being created twice.
        """
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1
        if not self._paused:
            self.volumes.resync_all()
            self.controllers.resync_all()
            self.cron_jobs.resync_all()
            self.autoscalers.resync_all()
            self.resource_claims.resync_all()
            self.extensions.resync_all()
            self.disruption.sync_all()

    # -- writing ---------------------------------------------------------------------------

    def _next_uid(self, obj: KubeObject) -> str:
        self._uids += 1
        return deterministic_uid(f"{self._uids}/{obj.kind}/{obj.key}")

    def _index_owners(self, obj: KubeObject, add: bool) -> None:
        ident = (obj.kind or "", obj.key)
        for ref in obj.metadata.owner_references:
            if not ref.uid:
                continue
            if add:
                self._dependents.setdefault(ref.uid, {})[ident] = None
            else:
                deps = self._dependents.get(ref.uid)
                if deps is not None:
                    deps.pop(ident, None)
                    if not deps:
                        del self._dependents[ref.uid]

    def _index_node(self, old: Pod | None, new: Pod | None) -> None:
        before = old.spec.node_name if old is not None else None
        after = new.spec.node_name if new is not None else None
        if before == after:
            return
        if before:
            pods = self._pods_by_node.get(before)
            if pods is not None:
                pods.pop(old.key, None)  # type: ignore[union-attr]
                if not pods:
                    del self._pods_by_node[before]
        if after:
            self._pods_by_node.setdefault(after, {})[new.key] = None  # type: ignore[union-attr]

    def _index_labels(self, old: Pod | None, new: Pod | None) -> None:
        for label, index in self._pods_by_label.items():
            before = _label_entry(old, label)
            after = _label_entry(new, label)
            if before == after:
                continue
            if before is not None:
                keys = index.get(before)
                if keys is not None:
                    keys.pop(old.key, None)  # type: ignore[union-attr]
                    if not keys:
                        del index[before]
            if after is not None:
                index.setdefault(after, {})[new.key] = None  # type: ignore[union-attr]

    def pods_on_node(self, node: str) -> list[Pod]:
        """The pods bound to ``node`` (any phase), sorted by key."""
        store = self._objects["Pod"]
        return [store[k] for k in sorted(self._pods_by_node.get(node, ()))]  # type: ignore[misc]

    def _store(self, obj: KubeObject, old: KubeObject | None) -> KubeObject:
        """Stamp the next resourceVersion on ``obj`` (a private copy), store it, emit."""
        self._rv += 1
        obj.metadata.resource_version = str(self._rv)
        kind = obj.kind or ""
        if old is not None:
            self._index_owners(old, add=False)
        if kind == "Pod":
            self._index_node(old, obj)  # type: ignore[arg-type]
            self._index_labels(old, obj)  # type: ignore[arg-type]
        self._objects[kind][self._object_key(obj)] = obj
        self._kind_rv[kind] = self._rv
        self._index_owners(obj, add=True)
        self.quota.observe(old, obj)
        etype = EventType.ADDED if old is None else EventType.MODIFIED
        self._emit(kind, WatchEvent(etype, obj, old))
        self.quota.flush()
        return obj

    def _ensure_namespace(self, obj: KubeObject) -> None:
        # Upstream's NamespaceLifecycle refuses objects in a missing namespace; the
        # simulator creates it, so that a workload file needs no Namespace, and says so
        # unless it is one every cluster has.
        namespace = obj.metadata.namespace or "default"
        if namespace in self._objects["Namespace"]:
            return
        if self.strict_namespaces and namespace not in SYSTEM_NAMESPACES:
            # NamespaceLifecycle's words; the system namespaces exist from start-up.
            raise NotFoundError(f'namespaces "{namespace}" not found')
        self.create(Namespace.model_validate({"metadata": {"name": namespace}}))
        if namespace not in SYSTEM_NAMESPACES:
            notice(
                f'namespace "{namespace}" is not defined: created it (first used by '
                f"{_describe(obj)})",
                obj=f"Namespace {namespace}",
            )

    def create(self, obj: KubeObject, *, owned: bool = False) -> KubeObject:
        """Create ``obj`` (a copy of it) and return the stored object.

        ``owned=True``: the caller hands ``obj`` over and never changes it again, so it
        is stored (and admitted, changed in place) without the copy: a workload of
        100,000 pods is then held once, not twice.

        The object is validated first (``BackendError`` 422 with kube-apiserver's
        message when invalid). Pods go through admission (``AdmissionError``, 403, when
        refused); an existing object gives ``ConflictError`` (409, AlreadyExists).
        ``metadata.generateName`` is honoured, ``uid`` and ``creationTimestamp`` are set
        when missing.
        """
        kind = obj.kind or ""
        if not self._known(kind):
            raise BackendError(f"unsupported kind {kind!r}", 400)
        if self.gated_fields.off:
            obj, owned = self._drop_gated_fields(obj, None, owned)
        if self.validate:
            errs = self._validation_errors(validate_object, obj)
            if errs:
                raise BackendError(str(InvalidObjectError.of(obj, errs)), 422)
        if type(obj).namespaced:
            self._ensure_namespace(obj)
        # Admission works on (and returns) a copy; other kinds are copied here.
        if isinstance(obj, Pod):
            obj = self.admission.admit(obj, copy=not owned)
        elif not owned:
            obj = obj.model_copy(deep=True)
        if isinstance(obj, WorkloadPodGroup):
            self.admission.admit_pod_group(obj)
        self.defaults.apply(obj)
        meta = obj.metadata
        if not meta.name:
            if not meta.generate_name:
                raise BackendError(f"{resource_name(kind)}: name or generateName is required", 422)
            meta.name = self._generate_name(kind, meta.namespace, meta.generate_name)
        # The validating admission plugins see the generated name, as upstream's do.
        if isinstance(obj, Pod):
            self.admission.validate(obj)
        self.quota.admit(obj)
        if self._object_key(obj) in self._objects[kind]:
            raise ConflictError(f'{resource_name(kind)} "{meta.name}" already exists')
        if isinstance(obj, ResourceQuota):
            self.quota.prepare(obj)
        if isinstance(obj, PriorityClass):
            validate_priority_class(obj, self._objects["PriorityClass"].values())  # type: ignore[arg-type]
        now = self.clock.now()
        if not meta.uid:
            meta.uid = self._next_uid(obj)
        if meta.creation_timestamp is None:
            meta.creation_timestamp = timestamp(now)
        if kind in _GENERATION_KINDS and meta.generation is None:
            meta.generation = 1
        if isinstance(obj, DeviceTaintRule):
            _stamp_rule_taint(obj, None, meta.creation_timestamp)
        if isinstance(obj, Namespace) and not obj.status.phase:
            obj.status.phase = "Active"
        if isinstance(obj, Pod):
            self._initial_pod_status(obj, now)
        return self._store(obj, None)

    def _validation_errors(self, check: Callable[..., list[Any]], *args: Any) -> list[Any]:
        """``check(*args)`` under the cluster's feature gates (kube-apiserver validates some
        fields as its gates say)."""
        if not self.feature_gates.overrides:
            return check(*args)  # every gate at its default: no context to set per object
        with validating_with(self.feature_gates):
            return check(*args)

    def _drop_gated_fields(
        self, obj: KubeObject, old: KubeObject | None, owned: bool
    ) -> tuple[KubeObject, bool]:
        """kube-apiserver's ``dropDisabledFields``, before validation: ``obj`` without the
        fields of the gates that are off (a copy unless ``owned``; a field ``old`` uses
        already is kept), each noticed, and whether the result is the cluster's own."""
        if not self.gated_fields.set_in(obj, old):
            return obj, owned
        source = self.sources.get(id(obj))
        if not owned:
            obj = obj.model_copy(deep=True)
        for gate, path in self.gated_fields.drop(obj, old):
            notice(
                f"{path} dropped: the {gate} feature gate is off, and kube-apiserver does "
                "not keep the field then",
                source=source,
                obj=_describe(obj),
            )
        return obj, True

    def _generate_name(self, kind: str, namespace: str | None, prefix: str) -> str:
        while True:
            self._names += 1
            name = prefix + random_suffix(f"{kind}/{namespace}/{prefix}/{self._names}")
            if self._key(kind, namespace, name) not in self._objects[kind]:
                return name

    def _initial_pod_status(self, pod: Pod, now: float) -> None:
        st = pod.status
        if not pod.spec.node_name:
            # PrepareForCreate: the status of a new pod is Pending and nothing else. One
            # instance for every new pending pod (about 460 bytes a pod): stored objects
            # are never changed in place, a status write copies it first.
            pod.status = _PENDING
            if pod.spec.scheduling_gates:
                # ... but a gated one says why it waits, as kube-apiserver's pod strategy.
                pod.status = _PENDING.model_copy(update={"conditions": [_SCHEDULING_GATED]})
            return
        if self.try_get("Node", None, pod.spec.node_name) is None:
            # Bound to a node that does not exist: no kubelet runs it, so it stays Pending
            # with nothing else in its status, as on a real cluster.
            pod.status = _PENDING
            return
        # A pod created bound (captured, or with spec.nodeName) is running at once.
        if not st.phase:
            st.phase = "Running"
        if st.phase == "Running":
            if st.start_time is None:
                st.start_time = timestamp(now)
            types = {c.type for c in st.conditions}
            for ctype in ("PodScheduled", "Ready"):
                if ctype not in types:
                    cond = ApiPodCondition(type=ctype, status="True")
                    cond.last_transition_time = st.start_time
                    st.conditions.append(cond)

    def update(self, obj: KubeObject) -> KubeObject:
        """Replace the stored object with ``obj`` (a copy of it).

        The update is validated as kube-apiserver validates one (``BackendError`` 422):
        the new object must be valid and the kind's update rules hold (a Pod's spec is
        immutable but for images, added tolerations, removed scheduling gates...; see
        :mod:`kubesched.api.validation.update`). A set ``metadata.resourceVersion`` must
        be the current one (``ConflictError`` otherwise); ``uid`` and ``creationTimestamp``
        are kept; a spec change bumps ``metadata.generation``.
        """
        kind = obj.kind or ""
        old = self._replaced(obj)
        if self.gated_fields.off:
            obj = self._drop_gated_fields(obj, old, owned=False)[0]
        if self.validate:
            errs = self._validation_errors(validate_update, obj, old)
            if errs:
                raise BackendError(str(InvalidObjectError.of(obj, errs)), 422)
        new = obj.model_copy(deep=True)
        self.defaults.apply(new)
        if isinstance(new, ResourceQuota):
            self.quota.prepare(new)
        if isinstance(new, PriorityClass):
            validate_priority_class(new, self._objects["PriorityClass"].values())  # type: ignore[arg-type]
        new.metadata.uid = old.metadata.uid
        new.metadata.creation_timestamp = old.metadata.creation_timestamp
        if old.metadata.deletion_timestamp is not None:
            new.metadata.deletion_timestamp = old.metadata.deletion_timestamp
            new.metadata.deletion_grace_period_seconds = old.metadata.deletion_grace_period_seconds
        if kind in _GENERATION_KINDS:
            gen = old.metadata.generation or 1
            if getattr(new, "spec", None) != getattr(old, "spec", None):
                gen += 1
            new.metadata.generation = gen
        if isinstance(new, DeviceTaintRule):
            _stamp_rule_taint(new, old, timestamp(self.clock.now()))  # type: ignore[arg-type]
        return self._store(new, old)

    def _replaced(self, obj: KubeObject) -> KubeObject:
        """The stored object an update of ``obj`` replaces: ``BackendError`` 400 for an
        unknown kind, ``NotFoundError``, or ``ConflictError`` when ``obj`` was read at an
        older resourceVersion."""
        kind = obj.kind or ""
        if not self._known(kind):
            raise BackendError(f"unsupported kind {kind!r}", 400)
        old = self._objects[kind].get(self._object_key(obj))
        if old is None:
            raise NotFoundError(f'{resource_name(kind)} "{obj.name}" not found')
        rv = obj.metadata.resource_version
        if rv and rv != old.metadata.resource_version:
            raise ConflictError(
                f'Operation cannot be fulfilled on {resource_name(kind)} "{obj.name}": the '
                "object has been modified; please apply your changes to the latest version "
                "and try again"
            )
        return old

    def update_status(self, obj: KubeObject) -> KubeObject:
        """Write ``obj``'s ``status`` onto the stored object, as a status subresource
        does (its other changes are ignored), and return the stored result.

        The stored object is a shallow copy of the current one with ``obj.status``: no
        deep copy and no validation, so ``obj.status`` must not be changed afterwards
        (make it with ``model_copy(update=...)``). A set ``metadata.resourceVersion``
        must be the current one (``ConflictError`` otherwise).
        """
        old = self._replaced(obj)
        # Its own metadata: the new resourceVersion is stamped on it.
        new = old.model_copy(update={"status": obj.status, "metadata": old.metadata.model_copy()})  # type: ignore[attr-defined]
        return self._store(new, old)

    def _write(self, new: KubeObject, old: KubeObject) -> KubeObject:
        """Store ``new`` (already a private copy) in place of ``old``: status writes."""
        return self._store(new, old)

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        grace_period_seconds: float | None = None,
    ) -> None:
        """Delete an object; a Pod gracefully (see :meth:`delete_pod`).

        Objects owned by the deleted one (ownerReferences) are deleted too, as the
        garbage collector's background propagation would.
        """
        obj = self.get(kind, namespace, name)
        if isinstance(obj, Pod):
            self.delete_pod(obj, grace_period_seconds)
        else:
            self._remove(obj)

    def _remove(self, obj: KubeObject) -> None:
        kind = obj.kind or ""
        current = self._objects[kind].pop(self._object_key(obj), None)
        if current is None:
            return
        self._index_owners(current, add=False)
        if kind == "Pod":
            self._index_node(current, None)  # type: ignore[arg-type]
            self._index_labels(current, None)  # type: ignore[arg-type]
        self._rv += 1
        self._kind_rv[kind] = self._rv
        gone = current.model_copy(deep=False, update={"metadata": current.metadata.model_copy()})
        gone.metadata.resource_version = str(self._rv)
        self.quota.observe(current, None)
        self._emit(kind, WatchEvent(EventType.DELETED, gone, None))
        self.quota.flush()
        uid = current.metadata.uid
        if uid:
            for dep in self.dependents(uid):
                # Background propagation, simplified: a dependent goes when this was its
                # controller or its only owner.
                refs = dep.metadata.owner_references
                ctrl = dep.metadata.controller_ref
                if not (len(refs) == 1 or (ctrl is not None and ctrl.uid == uid)):
                    continue
                if isinstance(dep, Pod):
                    self.delete_pod(dep)
                else:
                    self._remove(dep)

    # -- pods ------------------------------------------------------------------------------

    def _current_pod(self, pod: Pod) -> Pod:
        cur = self._objects["Pod"].get(pod.key)
        if cur is None or (pod.metadata.uid and cur.metadata.uid != pod.metadata.uid):
            raise NotFoundError(f'pods "{pod.name}" not found')
        return cur  # type: ignore[return-value]

    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name`` and start it (simulation: pods start at once).

        Sets ``spec.nodeName``, ``PodScheduled=True``, ``Ready=True``, phase Running and
        ``startTime`` and clears ``status.nominatedNodeName`` (unless
        :attr:`clear_nomination_on_bind` is off) in one update.
        ``ConflictError`` if the pod is bound already or terminating, ``NotFoundError``
        if it is gone (or is another pod of that name).
        """
        cur = self._current_pod(pod)
        if cur.metadata.deletion_timestamp is not None:
            raise ConflictError(f"pod {cur.name} is being deleted, cannot be assigned to a host")
        if cur.spec.node_name:
            raise ConflictError(
                f'pod {cur.name} is already assigned to node "{cur.spec.node_name}"'
            )
        spec = cur.spec.model_copy(update={"node_name": node_name})
        now = timestamp(self.clock.now())
        if cur.status is _PENDING:
            # A pod bound as created: its running status depends on the moment alone.
            update = {"metadata": cur.metadata.model_copy(), "spec": spec}
            new = cur.model_copy(update={**update, "status": _started_from_pending(now)})
        else:
            new = _copy_for_status_write(cur, spec=spec)
            _start(new.status, now)
            if self.clear_nomination_on_bind:
                new.status.nominated_node_name = None
        self._write(new, cur)

    def update_pod_status(
        self,
        pod: Pod,
        *,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
        clear_nominated_node_name: bool = False,
    ) -> None:
        """Set a condition and/or the nominated node on ``pod``'s status."""
        cur = self._current_pod(pod)
        new = _copy_for_status_write(cur)
        if condition is not None:
            _set_condition(
                new.status.conditions,
                condition.type,
                condition.status,
                timestamp(self.clock.now()),
                reason=condition.reason or None,
                message=condition.message or None,
            )
        if clear_nominated_node_name:
            new.status.nominated_node_name = None
        elif nominated_node_name is not None:
            new.status.nominated_node_name = nominated_node_name or None
        if new.status != cur.status:
            self._write(new, cur)

    def update_pod_group_status(self, group: WorkloadPodGroup, condition: PodCondition) -> None:
        """Set a condition on a Workload API PodGroup's status (the scheduler's
        ``PodGroupScheduled``); ``NotFoundError`` if the group is gone."""
        cur = self._objects["PodGroup"].get(self._object_key(group))
        if not isinstance(cur, WorkloadPodGroup):
            raise NotFoundError(f'podgroups.scheduling.k8s.io "{group.name}" not found')
        new = cur.model_copy(deep=True)
        new.status.conditions = set_status_condition(
            cur.status.conditions,
            condition.type,
            condition.status,
            condition.reason,
            condition.message,
            timestamp(self.clock.now()).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        self._write(new, cur)

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """Delete ``pod`` gracefully: set ``deletionTimestamp`` now, remove it later.

        The grace period defaults to ``spec.terminationGracePeriodSeconds`` (30). As
        upstream, an unscheduled or finished pod, or a grace period of 0, is removed at
        once. A second delete can only shorten the grace period.
        """
        cur = self._current_pod(pod)
        grace = grace_period_seconds
        if grace is None:
            grace = cur.spec.termination_grace_period_seconds
            if grace is None:
                grace = DEFAULT_TERMINATION_GRACE_PERIOD
        grace = max(0.0, float(grace))
        if not cur.spec.node_name or cur.status.phase in ("Succeeded", "Failed"):
            grace = 0.0
        now = self.clock.now()
        if grace == 0:
            self._remove(cur)
            return
        due = now + grace
        current_due = cur.metadata.deletion_timestamp
        if current_due is not None and current_due <= timestamp(due):
            return
        new = cur.model_copy(deep=True)
        new.metadata.deletion_timestamp = timestamp(due)
        new.metadata.deletion_grace_period_seconds = int(grace)
        heapq.heappush(self._deletions, (due, cur.key, cur.metadata.uid or ""))
        self._write(new, cur)

    def evict_pod(self, pod: Pod) -> EvictionResult:
        """Evict ``pod`` through the Eviction API, honouring PodDisruptionBudgets."""
        return self.disruption.evict(pod)

    def call_at(self, when: float, callback: Callable[[], None], *, progress: bool = False) -> None:
        """Run ``callback`` when :meth:`advance` reaches ``when`` (a controller's timer).

        A callback that must not run any more checks that itself (timers are not
        cancelled, as the stale deletions of :attr:`_deletions` are not). ``progress``:
        the timer moves a workload on (a pod finishing its run, a Job's deadline, a
        CronJob's schedule), however long after the last change it is due
        (:meth:`next_progress_time`).
        """
        heapq.heappush(self._timers, (when, next(self._timer_seq), callback))
        if progress:
            heapq.heappush(self._progress_timers, when)

    def next_progress_time(self) -> float | None:
        """When the next timer that moves a workload on is due, or None: a run waiting
        for it is not stalled, however long the wait."""
        now = self.clock.now()
        while self._progress_timers and self._progress_timers[0] < now:
            heapq.heappop(self._progress_timers)
        return self._progress_timers[0] if self._progress_timers else None

    def _next_deletion_time(self) -> float | None:
        while self._deletions:
            due, key, uid = self._deletions[0]
            cur = self._objects["Pod"].get(key)
            if cur is None or cur.metadata.uid != uid or cur.metadata.deletion_timestamp is None:
                heapq.heappop(self._deletions)  # stale: the pod went another way
                continue
            return due
        return None

    def next_event_time(self) -> float | None:
        """The virtual time of the next scheduled change (a pod's removal, a controller's
        timer), or None."""
        times = [
            t
            for t in (self._next_deletion_time(), self._timers[0][0] if self._timers else None)
            if t is not None
        ]
        return min(times, default=None)

    def advance(self, now: float | None = None) -> int:
        """Carry out every scheduled change due at ``now`` (default: the clock's time), in
        time order: pods' removals and controllers' timers.

        Returns how many pods were removed. Call it after moving the clock.
        """
        if now is None:
            now = self.clock.now()
        removed = 0
        while True:
            deletion = self._next_deletion_time()
            timer = self._timers[0][0] if self._timers else None
            if timer is not None and timer <= now and (deletion is None or timer < deletion):
                heapq.heappop(self._timers)[2]()
                continue
            if deletion is None or deletion > now:
                return removed
            _, key, uid = heapq.heappop(self._deletions)
            cur = self._objects["Pod"].get(key)
            if cur is None:
                continue
            node = cur.spec.node_name  # type: ignore[attr-defined]
            if node and self.node_lifecycle.is_silent(node):
                # Nobody confirms the containers stopped: the pod stays Terminating until
                # its kubelet is back (or the node is deleted and pod GC force-deletes it).
                self._stuck.setdefault(node, []).append((key, uid))
                continue
            self._remove(cur)
            removed += 1

    def release_terminating(self, node: str) -> None:
        """The kubelet of ``node`` is back: the deletions it could not confirm complete."""
        now = self.clock.now()
        for key, uid in self._stuck.pop(node, ()):
            heapq.heappush(self._deletions, (now, key, uid))

    # -- apply -----------------------------------------------------------------------------

    def apply(
        self,
        objects: Iterable[KubeObject],
        *,
        owned: bool = False,
        in_order: bool = False,
        replace: bool = True,
    ) -> list[AdmissionRejection]:
        """Load objects (from manifests) in dependency order; return what was refused.

        ``owned``: the objects are handed over, as in :meth:`create`.

        Kinds go in :data:`APPLY_ORDER` (namespaces and classes first, pods last). An
        existing object is replaced, except a Pod, which is refused as AlreadyExists;
        with ``replace=False`` every existing object is refused so, as ``kubectl create``
        is.
        A refused object does not stop the others. Controllers run once everything is
        stored, so owners adopt the ReplicaSets and Pods of a captured cluster.

        ``in_order``: the objects come in that order already; each is stored as the
        iterable yields it, so a generator's objects need not all exist at once.
        """
        start = len(self.rejections)
        if not in_order:
            objects = sorted(objects, key=lambda o: APPLY_ORDER.get(o.kind or "", 4))
        with self.paused_controllers(), self.defaults.grouped():
            for obj in objects:
                try:
                    if (
                        replace
                        and not isinstance(obj, Pod)
                        and self.try_get(obj.kind or "", obj.metadata.namespace, obj.name)
                    ):
                        fresh = obj.model_copy(deep=True)
                        fresh.metadata.resource_version = None
                        self.update(fresh)
                    else:
                        self.create(obj, owned=owned)
                except (BackendError, ValueError) as err:
                    self.rejections.append(AdmissionRejection(_describe(obj), str(err)))
        return self.rejections[start:]

    def _reject(self, source: KubeObject, err: AdmissionError) -> None:
        """Record a pod a controller could not create (and its FailedCreate event)."""
        self.rejections.append(AdmissionRejection(_describe(source), str(err)))
        self.record_event(
            RecordedEvent(
                involved_kind=source.kind or "",
                involved_namespace=source.namespace,
                involved_name=source.name,
                type="Warning",
                reason="FailedCreate",
                message=f"Error creating: {err}",
                reporting_controller=CONTROLLER_NAMES.get(source.kind or "", "controller"),
            )
        )

    # -- events, evictions and leases -------------------------------------------------------

    def record_eviction(self, record: EvictionRecord) -> None:
        """Keep an eviction for the report (who, when, why, which pod)."""
        self.evictions.append(record)

    def record_event(self, event: RecordedEvent) -> None:
        """Create a Kubernetes Event (kept in :attr:`events`)."""
        if not event.timestamp:
            event = replace(event, timestamp=self.clock.now())
        self.events.append(event)

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        """The Lease, or None."""
        return self.try_get("Lease", namespace, name)  # type: ignore[return-value]

    def create_lease(self, lease: Lease) -> Lease:
        """Create a Lease; ``ConflictError`` if it exists."""
        return self.create(lease)  # type: ignore[return-value]

    def update_lease(self, lease: Lease) -> Lease:
        """Replace a Lease if its resourceVersion is current; ``ConflictError`` otherwise."""
        if not lease.metadata.resource_version:
            raise ConflictError(
                f'leases.coordination.k8s.io "{lease.name}": resourceVersion is required'
            )
        return self.update(lease)  # type: ignore[return-value]


_PENDING = PodStatus(phase="Pending")
"""The status of every pending pod as created (shared, never changed)."""

_SCHEDULING_GATED = ApiPodCondition(
    type="PodScheduled",
    status="False",
    reason="SchedulingGated",
    message="Scheduling is blocked due to non-empty scheduling gates",
)
"""The condition kube-apiserver gives a pod created with scheduling gates."""


def _start(status: PodStatus, now: datetime) -> None:
    """Turn a pod's (private, changeable) status into the one of a pod just bound and
    started at ``now``: Running, ``PodScheduled`` and ``Ready`` true."""
    status.phase = "Running"
    status.start_time = now
    for ctype in ("PodScheduled", "Ready"):
        _set_condition(status.conditions, ctype, "True", now)


@functools.lru_cache(maxsize=8)
def _started_from_pending(now: datetime) -> PodStatus:
    """The status of a pod bound at ``now`` straight from :data:`_PENDING`. Stored objects
    are never changed in place, so the pods bound at one moment share it (a bench binds
    thousands of pods at one simulated instant: about 0.6 KiB a pod)."""
    status = _PENDING.model_copy(update={"conditions": []})
    _start(status, now)
    return status


def _copy_for_status_write(pod: Pod, spec: Any = None) -> Pod:
    """A copy of ``pod`` whose metadata, status and conditions list may be changed.

    Stored objects are never changed in place, so the rest (the spec, unless a new one
    is given) is shared: a deep copy of every pod on every bind and status update was
    the embedded cluster's largest cost.
    """
    status = pod.status.model_copy(update={"conditions": list(pod.status.conditions or ())})
    update: dict[str, Any] = {"metadata": pod.metadata.model_copy(), "status": status}
    if spec is not None:
        update["spec"] = spec
    return pod.model_copy(update=update)


def _set_condition(
    conditions: list[ApiPodCondition],
    ctype: str,
    status: str,
    now: datetime,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> None:
    """``UpdatePodCondition``: replace the condition of that type; the transition time
    moves only when the status changes."""
    for i, c in enumerate(conditions):
        if c.type == ctype:
            since = c.last_transition_time if c.status == status else now
            conditions[i] = _condition(ctype, status, reason, message, since)
            return
    conditions.append(_condition(ctype, status, reason, message, now))


@functools.lru_cache(maxsize=64)
def _condition(
    ctype: str, status: str, reason: str | None, message: str | None, since: datetime | None
) -> ApiPodCondition:
    """A pod condition to store. Stored objects are never changed in place, so the pods
    given the same condition at the same moment share one instance (a bench binds
    thousands of pods at one simulated instant: two conditions, 700 bytes a pod)."""
    return ApiPodCondition(
        type=ctype,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
    )


def _label_entry(pod: Pod | None, label: str) -> tuple[str, str] | None:
    """``(namespace, value of label)`` under which ``pod`` is indexed, or None."""
    if pod is None:
        return None
    value = (pod.metadata.labels or {}).get(label)
    return None if value is None else (pod.namespace, value)
