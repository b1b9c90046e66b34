"""KubeCluster: the ``ClusterBackend`` and ``ObjectLister`` of a real cluster, over informers."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesched.api import (
    KubeObject,
    Lease,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)
from kubesched.backend.kube.client import (
    STRATEGIC_MERGE_PATCH,
    ForbiddenError,
    KubeClient,
    UnreachableError,
)
from kubesched.backend.kube.events import EventBroadcaster
from kubesched.backend.kube.informer import Informer, Resource
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
    )
}
"""The kinds the scheduler and the built-in plugins (preemption included) read."""

REQUIRED_ACCESS: tuple[tuple[str, str, str, str], ...] = (
    *(
        (verb, group, resource, "")
        for group, resource in (
            ("", "nodes"),
            ("", "pods"),
            ("", "namespaces"),
            ("", "services"),
            ("", "replicationcontrollers"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("policy", "poddisruptionbudgets"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
        )
        for verb in ("list", "watch")
    ),
    ("create", "", "pods", "binding"),
    ("patch", "", "pods", "status"),
    ("delete", "", "pods", ""),
    ("create", "events.k8s.io", "events", ""),
    ("patch", "events.k8s.io", "events", ""),
)
"""What ``kubesched run`` needs (a subset of upstream's ``system:kube-scheduler`` role)."""

LEASE_ACCESS: tuple[tuple[str, str, str, str], ...] = tuple(
    (verb, "coordination.k8s.io", "leases", "") for verb in ("get", "create", "update")
)


def _resource_path(kind: str, namespace: str, name: str, sub: str = "") -> str:
    base = {"Pod": "/api/v1", "Lease": "/apis/coordination.k8s.io/v1"}[kind]
    plural = {"Pod": "pods", "Lease": "leases"}[kind]
    path = f"{base}/namespaces/{namespace}/{plural}/{name}"
    return f"{path}/{sub}" if sub else path


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    status, deletes, events, leases) go straight to the API server.
    """

    def __init__(self, client: KubeClient, *, watch_timeout: float | None = None) -> None:
        self.client = client
        self._dispatch: queue.Queue[tuple[_Subscription, WatchEvent] | None] = queue.Queue()
        self._subs: dict[str, list[_Subscription]] = {k: [] for k in RESOURCES}
        self.informers: dict[str, Informer] = {}
        for kind, resource in RESOURCES.items():
            kwargs = {"watch_timeout": watch_timeout} if watch_timeout else {}
            self.informers[kind] = Informer(
                client, resource, lambda ev, k=kind: self._emit(k, ev), **kwargs
            )
        self.lister = StaticLister()
        """What plugins read through ``handle.lister`` (Namespaces, Services, PDBs, ...),
        kept current by the informers."""
        self.watchable_kinds = frozenset(RESOURCES)
        """The kinds ``list``/``watch`` serve (``EventHandlers`` skips the others)."""
        self.events = EventBroadcaster(client)
        self.may_write: Callable[[], bool] | None = None
        """When set, binds, status writes and deletes are refused while it returns False
        (a replica that lost its lease never acts on it)."""
        self._dispatcher: threading.Thread | None = None
        self._started = False

    # -- life cycle ---------------------------------------------------------------------
    def check_access(self, *, leases: tuple[str, str] | None = None) -> None:
        """Raise ``ForbiddenError`` naming the first permission the user lacks (a
        SelfSubjectAccessReview per permission of ``REQUIRED_ACCESS``, plus the Lease
        ``leases=(namespace, name)`` when electing a leader)."""
        checks = list(REQUIRED_ACCESS)
        if leases is not None:
            checks += [(v, g, r, s) for v, g, r, s in LEASE_ACCESS]
        for verb, group, resource, sub in checks:
            attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": resource}
            if sub:
                attrs["subresource"] = sub
            if resource == "leases" and leases is not None:
                attrs["namespace"] = leases[0]
                if verb != "create":  # a Role may grant get/update on this Lease alone
                    attrs["name"] = leases[1]
            review = self.client.request(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                body={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "spec": {"resourceAttributes": attrs},
                },
            )
            if not (review.get("status") or {}).get("allowed"):
                what = f"{resource}/{sub}" if sub else resource
                group_name = f"{group}/" if group else ""
                raise ForbiddenError(
                    f"the user may not {verb} {group_name}{what} (missing RBAC permission; "
                    "see docs/run.md for the ClusterRole kubesched needs)"
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
        while True:
            item = self._dispatch.get()
            try:
                if item is None:
                    return
                sub, ev = item
                if not sub.stopped and sub.handler is not None:
                    try:
                        sub.handler(ev)
                    except Exception:  # a handler bug must not stop every informer
                        log.exception("handling %s %s failed", ev.type, ev.object.kind)
            finally:
                self._dispatch.task_done()

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
        # The kinds plugins read through handle.lister (not pods and nodes: the snapshot).
        if kind in ("Pod", "Node"):
            return
        if ev.type is EventType.DELETED:
            self.lister.remove(ev.object)
        else:
            self.lister.add(ev.object)

    # -- writes -------------------------------------------------------------------------
    def _check_leading(self, what: str) -> None:
        if self.may_write is not None and not self.may_write():
            raise BackendError(f"not the leader any more: {what} not sent", 503)

    def bind(self, pod: Pod, node_name: str) -> None:
        """POST the pod's ``binding`` (409 ``ConflictError`` if bound, 404 if gone)."""
        self._check_leading(f"binding of {pod.key}")
        ns, name = pod.namespace or "default", pod.name
        self.client.request(
            "POST",
            _resource_path("Pod", ns, name, "binding"),
            body={
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
        self._check_leading(f"status of {pod.key}")
        self.client.request(
            "PATCH",
            _resource_path("Pod", pod.namespace or "default", pod.name, "status"),
            body={"metadata": {"uid": pod.metadata.uid}, "status": status},
            content_type=STRATEGIC_MERGE_PATCH,
        )

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """DELETE the pod (its own grace period unless overridden; only this UID)."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": pod.metadata.uid},
        }
        self._check_leading(f"deletion of {pod.key}")
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = int(grace_period_seconds)
        self.client.request(
            "DELETE", _resource_path("Pod", pod.namespace or "default", pod.name), body=body
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
            data = self.client.request("GET", _resource_path("Lease", namespace, name))
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
        )
        return Lease.model_validate(data)

    def update_lease(self, lease: Lease) -> Lease:
        """Replace a Lease if its resourceVersion is current; ``ConflictError`` otherwise."""
        data = self.client.request(
            "PUT",
            _resource_path("Lease", lease.namespace or "default", lease.name),
            body=_lease_body(lease),
        )
        return Lease.model_validate(data)


def _lease_body(lease: Lease) -> dict[str, Any]:
    body = lease.to_dict()
    for field in ("acquireTime", "renewTime"):
        value = getattr(lease.spec, "acquire_time" if field == "acquireTime" else "renew_time")
        if value is not None:
            body["spec"][field] = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return body
