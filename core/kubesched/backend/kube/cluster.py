"""KubeCluster: the ``ClusterBackend`` and ``ObjectLister`` of a real cluster, over informers."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kubesched.api import (
    WORKLOAD_API_GROUP,
    WORKLOAD_API_VERSION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    DeviceClass,
    KubeObject,
    Lease,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    ResourceClaim,
    ResourceSlice,
    Service,
    StatefulSet,
    StorageClass,
    WorkloadPodGroup,
    resolve_kind,
    set_status_condition,
)
from kubesched.api.manifests import VERSIONED_KINDS
from kubesched.backend.kube.client import (
    JSON,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    ForbiddenError,
    KubeClient,
    UnreachableError,
)
from kubesched.backend.kube.events import EventBroadcaster
from kubesched.backend.kube.informer import Informer, Resource
from kubesched.backend.kube.writer import WriterProcess
from kubesched.backend.protocol import (
    BackendError,
    EventType,
    EvictionResult,
    NotFoundError,
    PodCondition,
    RecordedEvent,
    WatchEvent,
    WatchHandler,
)
from kubesched.framework.listers import StaticLister

log = logging.getLogger(__name__)

RESOURCES: dict[str, Resource] = {
    r.kind: r
    for r in (
        Resource("Node", "/api/v1/nodes", Node),
        # As upstream's scheduler pod informer: finished pods hold no resources.
        Resource("Pod", "/api/v1/pods", Pod, "status.phase!=Succeeded,status.phase!=Failed"),
        Resource("Namespace", "/api/v1/namespaces", Namespace),
        Resource("Service", "/api/v1/services", Service),
        Resource("ReplicationController", "/api/v1/replicationcontrollers", ReplicationController),
        Resource("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClass),
        Resource(
            "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget
        ),
        Resource("ReplicaSet", "/apis/apps/v1/replicasets", ReplicaSet),
        Resource("StatefulSet", "/apis/apps/v1/statefulsets", StatefulSet),
        # Watched only when a profile's plugin reads them or registers events on them.
        Resource("PersistentVolume", "/api/v1/persistentvolumes", PersistentVolume),
        Resource("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", PersistentVolumeClaim),
        Resource("StorageClass", "/apis/storage.k8s.io/v1/storageclasses", StorageClass),
        Resource("CSINode", "/apis/storage.k8s.io/v1/csinodes", CSINode),
        Resource("CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", CSIDriver),
        Resource(
            "CSIStorageCapacity", "/apis/storage.k8s.io/v1/csistoragecapacities", CSIStorageCapacity
        ),
        # resource.k8s.io/v1: GA since v1.34, the only version a v1.36 API server serves.
        Resource("DeviceClass", "/apis/resource.k8s.io/v1/deviceclasses", DeviceClass),
        Resource("ResourceClaim", "/apis/resource.k8s.io/v1/resourceclaims", ResourceClaim),
        Resource("ResourceSlice", "/apis/resource.k8s.io/v1/resourceslices", ResourceSlice),
    )
}
"""Every kind ``kubesched run`` can watch on a cluster, with its REST collection."""

BASE_KINDS: tuple[str, ...] = (
    "Node",
    "Pod",
    "Namespace",
    "Service",
    "ReplicationController",
    "PodDisruptionBudget",
    "ReplicaSet",
    "StatefulSet",
)
"""The kinds always watched: the scheduler's and the default plugins' (preemption included).
PriorityClasses are not among them: the API server's Priority admission writes a pod's
``spec.priority``, which is all the scheduler reads (upstream's ``system:kube-scheduler``
role does not let it list them).
The others of ``RESOURCES`` are watched only when a profile needs them (``watch_kinds``),
as upstream starts an informer only for the listers its plugins asked for."""


def resource_for(kind: str) -> Resource | None:
    """The collection of ``kind`` on a cluster: a built-in kind of ``RESOURCES``, or an
    extension kind (:func:`kubesched.api.resolve_kind`, such as Coscheduling's PodGroup)
    served by a CustomResourceDefinition under ``/apis/<its apiVersion>/``, whose plural
    is the lower-cased kind made plural as the CRD generators do (``podgroups``,
    ``noderesourcetopologies``, ``networktopologies``). None when kubesched cannot read
    it."""
    resource = RESOURCES.get(kind)
    if resource is not None:
        return resource
    model = resolve_kind(kind)
    api_version = model.model_fields["api_version"].default if model is not None else None
    if model is None or not isinstance(api_version, str) or "/" not in api_version:
        return None
    return Resource(kind, f"/apis/{api_version}/{_plural(kind.lower())}", model)


def _plural(name: str) -> str:
    # kubebuilder's (gengo's) English rules, which name the CRDs of the kinds plugins read.
    if name.endswith("y") and name[-2:-1] not in ("a", "e", "i", "o", "u"):
        return name[:-1] + "ies"
    if name.endswith(("s", "x", "z", "ch", "sh")):
        return name + "es"
    return name + "s"


def versioned_resource(api_version: str, kind: str) -> Resource | None:
    """The collection of a kind read at one API version (:data:`VERSIONED_KINDS`, such as
    the Workload API's ``scheduling.k8s.io/v1alpha2`` PodGroup), or None."""
    model = VERSIONED_KINDS.get((api_version, kind))
    if model is None:
        return None
    return Resource(kind, f"/apis/{api_version}/{_plural(kind.lower())}", model)


STATUS_SUBRESOURCE = frozenset(
    {"PersistentVolume", "PersistentVolumeClaim", "Pod", "ResourceClaim"}
)
"""Kinds whose ``status`` is written through the ``/status`` subresource."""

REQUIRED_ACCESS: tuple[tuple[str, str, str, str], ...] = (
    ("create", "", "pods", "binding"),
    ("patch", "", "pods", "status"),
    ("delete", "", "pods", ""),
    ("create", "events.k8s.io", "events", ""),
    ("patch", "events.k8s.io", "events", ""),
)
"""The writes ``kubesched run`` always makes (a subset of upstream's ``system:kube-scheduler``
role); ``list``/``watch`` of each watched kind and the plugins' writes come on top."""


ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
"""Where the start-up check asks for each permission (any authenticated user may: the
built-in ``system:basic-user`` role)."""


def _resource_path(kind: str, namespace: str, name: str, sub: str = "") -> str:
    base = {"Pod": "/api/v1", "Lease": "/apis/coordination.k8s.io/v1"}[kind]
    plural = {"Pod": "pods", "Lease": "leases"}[kind]
    path = f"{base}/namespaces/{namespace}/{plural}/{name}"
    return f"{path}/{sub}" if sub else path


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_FROM_INFORMERS = ("Pod", "Node")
"""Kinds the lister reads from their informers' stores rather than keeping a copy."""


class _InformerLister(StaticLister):
    """The lister of a real cluster: the kinds plugins read, kept by the informers; Nodes
    and Pods looked up in their informers (what upstream's node and pod listers do)."""

    def __init__(self, informers: dict[str, Informer]) -> None:
        super().__init__()
        self._informers = informers

    def get_object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """Any object by kind name, or None."""
        if kind in _FROM_INFORMERS:
            informer = self._informers.get(kind)
            if informer is None:
                return None
            key = f"{namespace or 'default'}/{name}" if kind == "Pod" else name
            return informer.store.get(key)
        return super().get_object(kind, namespace, name)

    def list_objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), sorted by key."""
        if kind in _FROM_INFORMERS:
            informer = self._informers.get(kind)
            if informer is None:
                return []
            with informer.lock:
                items = sorted(informer.store.items())
            return [o for _, o in items if namespace is None or o.namespace == namespace]
        return super().list_objects(kind, namespace)


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``: changed and new
    keys, ``None`` for removed ones, lists whole. ``{}`` when they are equal."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value)
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


class _Subscription:
    """A handler's place in the dispatch: events of one kind after a list snapshot."""

    def __init__(self) -> None:
        self.handler: WatchHandler | None = None
        self.buffer: list[WatchEvent] = []
        self.stopped = False

    def stop(self) -> None:
        """Stop delivering events to this handler."""
        self.stopped = True


class KubeCluster:
    """A real cluster through the API server (its ``lister`` is what plugins read).

    Informers (one per kind of ``RESOURCES``) keep the objects; ``list`` returns an
    informer's objects and ``watch`` the changes after that list. Handlers run on one
    dispatch thread, in the order the changes happened per kind, so the scheduler's
    handlers never race each other (the scheduling loop and binding threads run beside
    them, as upstream's informer goroutines beside ``scheduleOne``). Writes (binding,
    status, deletes, events, leases) go to the API server from this process, or, once
    ``use_writer``, bindings, status patches and Events from the writer process; all but
    the leases' are ``fenced``: the client's ``fence`` (the leader elector's
    ``is_leader``, or the lease deadline the writer process reads) is asked at the
    moment each is sent.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        watch_timeout: float | None = None,
        kinds: Iterable[str] = (),
    ) -> None:
        self.client = client
        self._watch_timeout = watch_timeout
        # A SimpleQueue (C, no Condition): every watch event passes through it.
        self._dispatch: queue.SimpleQueue[tuple[_Subscription, WatchEvent] | None] = (
            queue.SimpleQueue()
        )
        # Per watched kind, the built-in ones and extension kinds alike.
        self._subs: dict[str, list[_Subscription]] = defaultdict(list)
        self.informers: dict[str, Informer] = {}
        self.lister = _InformerLister(self.informers)
        """What plugins read through ``handle.lister`` (Namespaces, Services, PDBs, PVCs,
        ...; Nodes and Pods straight from their informers), kept current by the informers."""
        self.watchable_kinds: frozenset[str] = frozenset()
        """The kinds ``list``/``watch`` serve (``EventHandlers`` skips the others)."""
        self.writes: set[str] = set()
        """Kinds plugins write through ``update`` (``Kind`` or ``Kind/status``) or
        ``create`` (``Kind/create``): their permissions are checked at start-up too."""
        self.events: EventBroadcaster | WriterProcess = EventBroadcaster(client)
        """Where Events go: the broadcaster, or the writer process once ``use_writer``."""
        self.writer: WriterProcess | None = None
        self._dispatcher: threading.Thread | None = None
        self._started = False
        self.watch_kinds((*BASE_KINDS, *kinds))

    def use_writer(self, writer: WriterProcess) -> None:
        """Send bindings, pod status patches and Events through ``writer`` (from its
        start on)."""
        self.events.close()
        self.writer = writer
        self.events = writer

    def _write(self, method: str, path: str, body: Any, content_type: str = JSON) -> None:
        """One fenced write of the scheduling hot path: through the writer process when
        there is one, else from this process."""
        if self.writer is not None:
            self.writer.request(method, path, body, content_type)
        else:
            self.client.request(method, path, body=body, content_type=content_type, fenced=True)

    def watch_kinds(self, kinds: Iterable[str]) -> list[str]:
        """Watch these kinds too (before ``start``), each a kind name or ``apiVersion/Kind``;
        returns those kubesched cannot watch on a cluster (not in ``RESOURCES``), which are
        left out."""
        unknown = []
        # A plugin that reads one group's kind of a name two groups share (GangScheduling:
        # the Workload API's PodGroup, not Coscheduling's) names it ``apiVersion/Kind``;
        # that collection is watched for the kind, so such names go first.
        for name in sorted(kinds, key=lambda k: "/" not in k):
            api_version, _, kind = name.rpartition("/")
            resource = versioned_resource(api_version, kind) if api_version else resource_for(kind)
            if resource is None:
                unknown.append(name)
                continue
            if kind in self.informers:
                if self.informers[kind].resource.path != resource.path:
                    log.debug("watching %s at %s only", kind, self.informers[kind].resource.path)
                continue
            if self._started:
                raise BackendError(f"cannot watch {kind}: the informers are started", 400)
            kwargs = {"watch_timeout": self._watch_timeout} if self._watch_timeout else {}
            self.informers[kind] = Informer(
                self.client, resource, lambda ev, k=kind: self._emit(k, ev), **kwargs
            )
        self.watchable_kinds = frozenset(self.informers)
        return unknown

    def required_access(
        self, leases: tuple[str, str] | None = None
    ) -> list[tuple[str, str, str, str, str]]:
        """``(verb, group, resource, subresource, name)`` of every permission this run
        needs: list+watch of each watched kind, the scheduler's writes, the plugins'
        writes (get+patch: ``update`` patches), the Lease when electing a leader."""
        out = [
            (verb, r.group, r.plural, "", "")
            for r in (informer.resource for informer in self.informers.values())
            for verb in ("list", "watch")
        ]
        out += [(v, g, r, sub, "") for v, g, r, sub in REQUIRED_ACCESS]
        if any(
            r.group == WORKLOAD_API_GROUP and r.plural == "podgroups"
            for r in (informer.resource for informer in self.informers.values())
        ):
            # A pod group's cycle writes its PodGroup's PodGroupScheduled condition.
            out.append(("patch", WORKLOAD_API_GROUP, "podgroups", "status", ""))
        for what in sorted(self.writes):
            kind, _, sub = what.partition("/")
            resource = resource_for(kind)
            assert resource is not None  # update() refuses the kinds it does not know
            # update() reads the object itself, and patches the object or its subresource;
            # create() posts to the collection ("Kind/create").
            accesses = (
                (("create", resource.group, resource.plural, "", ""),)
                if sub == "create"
                else (
                    ("get", resource.group, resource.plural, "", ""),
                    ("patch", resource.group, resource.plural, sub, ""),
                )
            )
            for access in accesses:
                if access not in out:
                    out.append(access)
        if leases is not None:
            # A Role may grant get/update on this Lease alone; create cannot be by name.
            out += [
                (verb, "coordination.k8s.io", "leases", "", "" if verb == "create" else leases[1])
                for verb in ("get", "create", "update")
            ]
        return out

    # -- life cycle ---------------------------------------------------------------------
    def check_access(self, *, leases: tuple[str, str] | None = None) -> None:
        """Raise ``ForbiddenError`` naming the first permission the user lacks (a
        SelfSubjectAccessReview per permission of ``required_access``; the Lease
        ``leases=(namespace, name)`` when electing a leader), or a ``BackendError`` naming
        the request when the API server cannot be asked (unreachable, credentials refused)."""
        for verb, group, resource, sub, name in self.required_access(leases):
            attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": resource}
            if sub:
                attrs["subresource"] = sub
            if resource == "leases" and leases is not None:
                attrs["namespace"] = leases[0]
            if name:
                attrs["name"] = name
            try:
                review = self.client.request(
                    "POST",
                    ACCESS_REVIEWS,
                    body={
                        "apiVersion": "authorization.k8s.io/v1",
                        "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": attrs},
                    },
                )
            except BackendError as err:
                # Name the request: "Unauthorized" alone says neither what nor where.
                raise BackendError(
                    f"POST {self.client.url(ACCESS_REVIEWS)}: {err}", err.code
                ) from err
            if not (review.get("status") or {}).get("allowed"):
                what = f"{resource}/{sub}" if sub else resource
                group_name = f"{group}/" if group else ""
                raise ForbiddenError(
                    f"the user may not {verb} {group_name}{what} (missing RBAC permission; "
                    "bind system:kube-scheduler and system:volume-scheduler, see docs/run.md)"
                )

    def start(self) -> None:
        """Start every informer's list+watch."""
        if self._started:
            return
        self._started = True
        for informer in self.informers.values():
            informer.start()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer has listed once; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.synced.wait(left):
                return False
        return True

    def synced(self) -> bool:
        """Whether every informer has listed once (``/readyz``)."""
        return all(i.synced.is_set() for i in self.informers.values())

    def start_dispatch(self) -> None:
        """Start delivering watch events to the handlers (after they saw the lists)."""
        if self._dispatcher is None:
            self._dispatcher = threading.Thread(target=self._dispatch_loop, name="dispatch")
            self._dispatcher.daemon = True
            self._dispatcher.start()

    def close(self) -> None:
        """Stop the informers, the dispatch and the event writer; close the connections."""
        for informer in self.informers.values():
            informer.stop()
        if self._dispatcher is not None:
            self._dispatch.put(None)
            self._dispatcher.join(timeout=10)
        self.events.close()
        self.client.close()

    def _emit(self, kind: str, ev: WatchEvent) -> None:
        # Called with the informer's lock held: a list snapshot and a subscription see
        # the events on either side of the same point.
        self._keep_listed(kind, ev)
        for sub in self._subs[kind]:
            if sub.stopped:
                continue
            if sub.handler is None:
                sub.buffer.append(ev)
            else:
                self._dispatch.put((sub, ev))

    def _dispatch_loop(self) -> None:
        while (item := self._dispatch.get()) is not None:
            sub, ev = item
            if not sub.stopped and sub.handler is not None:
                try:
                    sub.handler(ev)
                except Exception:  # a handler bug must not stop every informer
                    log.exception("handling %s %s failed", ev.type, ev.object.kind)

    # -- list and watch (the protocol) --------------------------------------------------
    def list(self, kind: str) -> tuple[list[KubeObject], str]:
        """The informer's objects of ``kind`` (after its first list) and a token for
        ``watch`` that resumes right after them."""
        informer = self._informer(kind)
        self.start()
        while not informer.synced.wait(1.0):
            err = informer.last_error
            if isinstance(err, ForbiddenError | UnreachableError):
                raise err
        with informer.lock:
            sub = _Subscription()
            self._subs[kind].append(sub)
            token = str(id(sub))
            return list(informer.store.values()), token

    def watch(self, kind: str, resource_version: str, handler: WatchHandler) -> _Subscription:
        """Deliver the changes of ``kind`` after the ``list`` that gave
        ``resource_version`` to ``handler``, on the dispatch thread."""
        informer = self._informer(kind)
        with informer.lock:
            sub = next((s for s in self._subs[kind] if str(id(s)) == resource_version), None)
            if sub is None:
                raise BackendError(
                    f"watch {kind}: {resource_version!r} is not a token from list({kind!r})", 400
                )
            sub.handler = handler
            for ev in sub.buffer:
                self._dispatch.put((sub, ev))
            sub.buffer.clear()
        return sub

    def _informer(self, kind: str) -> Informer:
        informer = self.informers.get(kind)
        if informer is None:
            raise BackendError(f"kubesched does not watch {kind} on a cluster", 400)
        return informer

    # -- what plugins read -------------------------------------------------------------
    def _keep_listed(self, kind: str, ev: WatchEvent) -> None:
        # The kinds plugins read through handle.lister (pods and nodes: their informers).
        if kind in _FROM_INFORMERS:
            self.lister.changed(kind)
            return
        if ev.type is EventType.DELETED:
            self.lister.remove(ev.object)
        else:
            self.lister.add(ev.object)

    # -- writes -------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject:
        """The object as the API server has it now (a GET, not the informer's copy);
        ``NotFoundError`` if it does not exist."""
        resource = resource_for(kind)
        if resource is None:
            raise BackendError(f"kubesched does not read {kind} on a cluster", 400)
        data = self.client.request("GET", resource.object_path(namespace, name))
        data.setdefault("kind", kind)
        return resource.model.model_validate(data)

    def create(self, obj: KubeObject) -> KubeObject:
        """POST ``obj`` to its collection; the object as the API server stored it."""
        kind = obj.kind or type(obj).__name__
        resource = resource_for(kind)
        if resource is None:
            raise BackendError(f"kubesched does not write {kind} on a cluster", 400)
        collection = resource.object_path(obj.namespace, "").rstrip("/")
        # Fenced as an update is: a scheduler that lost its lease creates nothing.
        data = self.client.request("POST", collection, body=obj.to_dict(), fenced=True)
        data.setdefault("kind", kind)
        return resource.model.model_validate(data)

    def update(self, obj: KubeObject) -> KubeObject:
        """Write what changed in ``obj`` since the version it was read at (its
        ``resourceVersion``): metadata and spec through the object, ``status`` through its
        ``/status`` subresource. JSON merge patches carrying that resourceVersion, so the
        API server refuses them (409 ``ConflictError``) when the object moved on, as it
        would an update; fields kubesched does not model are left as they are (a whole
        object put back would drop them). Returns the object as written."""
        kind = obj.kind or type(obj).__name__
        resource = resource_for(kind)
        if resource is None:
            raise BackendError(f"kubesched does not write {kind} on a cluster", 400)
        base = self._base_version(resource, obj)
        new, old = obj.to_dict(), base.to_dict()
        rv = obj.metadata.resource_version
        written = base
        parts: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (("", new, old),)
        if kind in STATUS_SUBRESOURCE:
            status_new, status_old = new.pop("status", None), old.pop("status", None)
            parts = (("", new, old), ("status", {"status": status_new}, {"status": status_old}))
        for sub, after, before in parts:
            patch = merge_patch(before, after)
            if not patch:
                continue
            if rv:
                patch.setdefault("metadata", {})["resourceVersion"] = rv
            data = self.client.request(
                "PATCH",
                resource.object_path(obj.namespace, obj.name, sub),
                body=patch,
                content_type=MERGE_PATCH,
                fenced=True,
            )
            data.setdefault("kind", kind)
            written = resource.model.model_validate(data)
            rv = written.metadata.resource_version
        return written

    def _base_version(self, resource: Resource, obj: KubeObject) -> KubeObject:
        # The version obj was made from: the informer's when it is that one, else the API's.
        informer = self.informers.get(resource.kind)
        current = informer.store.get(obj.key) if informer is not None else None
        rv = obj.metadata.resource_version
        if current is not None and (not rv or current.metadata.resource_version == rv):
            return current
        return self.get(resource.kind, obj.namespace, obj.name)

    def bind(self, pod: Pod, node_name: str) -> None:
        """POST the pod's ``binding`` (409 ``ConflictError`` if bound, 404 if gone)."""
        ns, name = pod.namespace or "default", pod.name
        self._write(
            "POST",
            _resource_path("Pod", ns, name, "binding"),
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, "uid": pod.metadata.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
            },
        )

    def update_pod_status(
        self,
        pod: Pod,
        *,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
        clear_nominated_node_name: bool = False,
    ) -> None:
        """Patch a condition and/or ``status.nominatedNodeName`` (strategic merge patch of
        the status subresource, as upstream's ``PatchPodStatus``)."""
        status: dict[str, Any] = {}
        if condition is not None:
            current = next(
                (c for c in (pod.status.conditions or ()) if c.type == condition.type), None
            )
            transition = (
                current.last_transition_time.strftime("%Y-%m-%dT%H:%M:%SZ")
                if current is not None
                and current.status == condition.status
                and current.last_transition_time is not None
                else _now()
            )
            status["conditions"] = [
                {
                    "type": condition.type,
                    "status": condition.status,
                    "reason": condition.reason or None,
                    "message": condition.message or None,
                    "lastProbeTime": None,
                    "lastTransitionTime": transition,
                }
            ]
        if clear_nominated_node_name:
            status["nominatedNodeName"] = None
        elif nominated_node_name:
            status["nominatedNodeName"] = nominated_node_name
        if not status:
            return
        self._write(
            "PATCH",
            _resource_path("Pod", pod.namespace or "default", pod.name, "status"),
            {"metadata": {"uid": pod.metadata.uid}, "status": status},
            STRATEGIC_MERGE_PATCH,
        )

    def update_pod_group_status(self, group: WorkloadPodGroup, condition: PodCondition) -> None:
        """Set a condition on a Workload API PodGroup: a JSON merge patch of its ``/status``
        with the whole condition list (upstream's ``PatchPodGroupStatus``)."""
        resource = versioned_resource(WORKLOAD_API_VERSION, "PodGroup")
        assert resource is not None
        conditions = set_status_condition(
            group.status.conditions,
            condition.type,
            condition.status,
            condition.reason,
            condition.message,
            _now(),
        )
        self._write(
            "PATCH",
            resource.object_path(group.namespace or "default", group.name, "status"),
            {"metadata": {"uid": group.metadata.uid}, "status": {"conditions": conditions}},
            MERGE_PATCH,
        )

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """DELETE the pod (its own grace period unless overridden; only this UID)."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": pod.metadata.uid},
        }
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = int(grace_period_seconds)
        self.client.request(
            "DELETE",
            _resource_path("Pod", pod.namespace or "default", pod.name),
            body=body,
            fenced=True,
        )

    def evict_pod(self, pod: Pod) -> EvictionResult:
        """POST an Eviction (policy/v1); the API server checks PodDisruptionBudgets."""
        ns, name = pod.namespace or "default", pod.name
        try:
            self.client.request(
                "POST",
                _resource_path("Pod", ns, name, "eviction"),
                body={
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": name, "namespace": ns},
                },
                fenced=True,
            )
        except BackendError as err:
            return EvictionResult(err.code, str(err))
        return EvictionResult(200)

    def record_event(self, event: RecordedEvent) -> None:
        """Queue an events.k8s.io/v1 Event (aggregated into series, see EventBroadcaster)."""
        self.events.record(event)

    # -- leases -------------------------------------------------------------------------
    def get_lease(self, namespace: str, name: str) -> Lease | None:
        """The Lease, or None."""
        try:
            data = self.client.request(
                "GET", _resource_path("Lease", namespace, name), election=True
            )
        except NotFoundError:
            return None
        return Lease.model_validate(data)

    def create_lease(self, lease: Lease) -> Lease:
        """Create a Lease; ``ConflictError`` if it exists."""
        ns = lease.namespace or "default"
        data = self.client.request(
            "POST",
            f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            body=_lease_body(lease),
            election=True,
        )
        return Lease.model_validate(data)

    def update_lease(self, lease: Lease) -> Lease:
        """Replace a Lease if its resourceVersion is current; ``ConflictError`` otherwise."""
        data = self.client.request(
            "PUT",
            _resource_path("Lease", lease.namespace or "default", lease.name),
            body=_lease_body(lease),
            election=True,
        )
        return Lease.model_validate(data)


def _lease_body(lease: Lease) -> dict[str, Any]:
    body = lease.to_dict()
    for field in ("acquireTime", "renewTime"):
        value = getattr(lease.spec, "acquire_time" if field == "acquireTime" else "renew_time")
        if value is not None:
            body["spec"][field] = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return body
