"""Cluster watch events turned into cache and queue updates, as upstream's event handlers do."""

from __future__ import annotations

import logging
from typing import Any

from kubesched.api import Node, Pod, resolve_kind
from kubesched.backend.protocol import EventType, Watch, WatchEvent
from kubesched.cache import CacheError
from kubesched.framework.events import ActionType, ClusterEvent, EventResource
from kubesched.framework.types import PodInfo, pod_uid
from kubesched.scheduler.scheduler import ASSIGNED_POD_DELETE, Scheduler

log = logging.getLogger(__name__)

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
UNSCHEDULED_POD_ADD = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd"
)

_NODE_UPDATES = (
    ("allocatable", ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"),
    ("labels", ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"),
    ("taints", ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"),
    ("conditions", ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"),
    ("annotations", ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"),
    ("declaredFeatures", ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeDeclaredFeatureChange"),
)

OTHER_KINDS = (
    "Namespace",
    "Service",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "ResourceClaim",
    "ResourceSlice",
    "DeviceClass",
    "DeviceTaintRule",
)
"""Kinds whose changes only move pods (plugins read them through the lister, or watch them
through the client, as DynamicResources does)."""

EXTENSION_KINDS = (
    EventResource.POD_GROUP.value,
    EventResource.ELASTIC_QUOTA.value,
    EventResource.NODE_RESOURCE_TOPOLOGY.value,
)
"""Plugin-defined kinds (``kubesched.kinds`` entry points) that are event resources too:
watched like ``OTHER_KINDS`` when a plugin package registered the kind, so that a
plugin's ``events_to_register`` on them (Coscheduling: PodGroup Add/Update;
CapacityScheduling: ElasticQuota; NodeResourceTopologyMatch: NodeResourceTopology
Add/Update) works."""


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """The scheduling-relevant changes of a Node update (upstream
    ``NodeSchedulingPropertiesChange``); ``spec.unschedulable`` counts as a taint change."""
    events = []
    if bool(old.spec.unschedulable) != bool(new.spec.unschedulable):
        events.append(
            ClusterEvent(
                EventResource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"
            )
        )
    values = {
        "allocatable": lambda n: n.status.allocatable,
        "labels": lambda n: n.metadata.labels,
        "taints": lambda n: n.spec.taints,
        "conditions": lambda n: [(c.type, c.status) for c in (n.status.conditions or ())],
        "annotations": lambda n: n.metadata.annotations,
        "declaredFeatures": lambda n: n.status.declared_features,
    }
    for field, action, label in _NODE_UPDATES:
        if values[field](old) != values[field](new):
            events.append(ClusterEvent(EventResource.NODE, action, label))
    return events


def pod_update_event(old: PodInfo, new: PodInfo, resource: EventResource) -> ClusterEvent:
    """The kind of a pod update for move requests: labels changed, scaled down, or other."""
    action = ActionType(0)
    if old.labels != new.labels:
        action |= ActionType.UPDATE_POD_LABEL
    if any(new.requests.get(k, 0) < v for k, v in old.requests.items()):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    if resource is EventResource.UNSCHEDULED_POD and old.tolerations != new.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATIONS
    if old.pod.status.resource_claim_statuses != new.pod.status.resource_claim_statuses:
        action |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    if not action:
        action = ActionType.UPDATE_OTHER
    return ClusterEvent(resource, action)


def _terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def _assigned(pod: Pod) -> bool:
    return bool(pod.spec.node_name)


class EventHandlers:
    """Subscribes a Scheduler to a backend's Nodes, Pods and other kinds.

    Bound pods go to the cache (and move pending pods that may now fit); unbound pods
    of a profile's scheduler go to the queue; the moment a pod is bound it leaves the
    queue and enters the cache. Node changes update the cache and move the pods whose
    rejecting plugins registered that kind of change.
    """

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.watches: list[Watch] = []
        # As upstream: with gang scheduling on, a new pod may complete a gang whose pods
        # PreEnqueue holds back, so its arrival is a cluster event too.
        self._pod_add_moves = scheduler.config.feature_gates.enabled("GangScheduling")

    def connect(self, backend: Any) -> None:
        """List and watch Nodes first (pods need their nodes), then Pods and the rest."""
        extension = tuple(k for k in EXTENSION_KINDS if resolve_kind(k) is not None)
        # A backend may watch only some kinds (a real cluster: those it has informers for).
        watchable = getattr(backend, "watchable_kinds", None)
        for kind, handler in (
            ("Node", self.on_node),
            ("Pod", self.on_pod),
            *((k, self.on_other) for k in OTHER_KINDS + extension),
        ):
            if watchable is not None and kind not in watchable:
                continue
            objects, rv = backend.list(kind)
            for obj in objects:
                handler(WatchEvent(EventType.ADDED, obj))
            self.watches.append(backend.watch(kind, rv, handler))

    def disconnect(self) -> None:
        """Stop every watch."""
        for w in self.watches:
            w.stop()
        self.watches.clear()

    # -- nodes --------------------------------------------------------------------------
    def on_node(self, ev: WatchEvent) -> None:
        """A Node was added, changed or deleted."""
        s = self.scheduler
        node = ev.object
        if ev.type is EventType.ADDED:
            s.cache.add_node(node)
            s.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)
        elif ev.type is EventType.MODIFIED:
            s.cache.update_node(ev.old, node)
            for event in node_update_events(ev.old, node):
                s.queue.move_all_to_active_or_backoff_queue(event, ev.old, node)
        else:
            try:
                s.cache.remove_node(node)
            except CacheError as err:
                log.warning("%s", err)

    # -- pods ---------------------------------------------------------------------------
    def on_pod(self, ev: WatchEvent) -> None:
        """A Pod was added, changed or deleted.

        As upstream's informer (field selector ``status.phase!=Succeeded,Failed``), a
        finished pod is not seen: one that finishes (a kubelet eviction) is a deletion.
        """
        if _terminal(ev.object):
            if ev.type is EventType.MODIFIED and not _terminal(ev.old):
                self.on_pod(WatchEvent(EventType.DELETED, ev.old))
            return
        pod = ev.object
        key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        if ev.type is EventType.DELETED:
            self.scheduler.pods.pop(key, None)
        else:
            self.scheduler.pods[key] = pod
        if ev.type is EventType.ADDED:
            if _assigned(pod):
                self._add_to_cache(pod)
            elif self._responsible(pod):
                self.scheduler.queue.add(pod)
                if self._pod_add_moves:
                    self.scheduler.queue.move_all_to_active_or_backoff_queue(
                        UNSCHEDULED_POD_ADD, None, pod
                    )
        elif ev.type is EventType.MODIFIED:
            old = ev.old
            if _assigned(old):
                self._update_in_cache(old, pod)
            elif _assigned(pod):
                # Just bound: it leaves the queue, its node counts it for good.
                if self._responsible(old):
                    self._delete_from_queue(old)
                self._add_to_cache(pod)
            elif self._responsible(pod):
                if self.scheduler.cache.assumed_pod_info(pod_uid(pod)) is None:
                    event = pod_update_event(
                        PodInfo(old), PodInfo(pod), EventResource.UNSCHEDULED_POD
                    )
                    self.scheduler.queue.update(old, pod, event)
            elif self._responsible(old):
                self._delete_from_queue(old)
        elif _assigned(pod):
            self._delete_from_cache(pod)
        elif self._responsible(pod):
            self._delete_from_queue(pod)

    def _responsible(self, pod: Pod) -> bool:
        return self.scheduler.framework_for(pod) is not None

    def _add_to_cache(self, pod: Pod) -> None:
        s = self.scheduler
        assumed = s.cache.assumed_pod_info(pod_uid(pod))
        # The bind of a pod this scheduler assumed: reuse what was computed for it.
        pod_info = assumed.for_version(pod) if assumed is not None else PodInfo(pod)
        try:
            s.cache.add_pod(pod_info)
        except CacheError as err:
            log.error("%s", err)
            return
        s.queue.assigned_pod_added(pod_info)

    def _update_in_cache(self, old: Pod, new: Pod) -> None:
        s = self.scheduler
        old_info, new_info = PodInfo(old), PodInfo(new)
        try:
            s.cache.update_pod(old_info, new_info)
        except CacheError as err:
            log.error("%s", err)
            return
        s.queue.assigned_pod_updated(
            old_info, new_info, pod_update_event(old_info, new_info, EventResource.ASSIGNED_POD)
        )

    def _delete_from_cache(self, pod: Pod) -> None:
        s = self.scheduler
        try:
            s.cache.remove_pod(PodInfo(pod))
        except CacheError as err:
            log.error("%s", err)
            return
        s.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, pod, None)

    def _delete_from_queue(self, pod: Pod) -> None:
        s = self.scheduler
        s.queue.delete(pod)
        fwk = s.framework_for(pod)
        if fwk is not None:
            fwk.reject_waiting_pod(pod_uid(pod))

    # -- other kinds --------------------------------------------------------------------
    def on_other(self, ev: WatchEvent) -> None:
        """A Namespace, Service or extension kind changed: move the pods whose plugins care."""
        obj = ev.object
        resource = EventResource(obj.kind or type(obj).__name__)
        action = {
            EventType.ADDED: ActionType.ADD,
            EventType.MODIFIED: ActionType.UPDATE,
            EventType.DELETED: ActionType.DELETE,
        }[ev.type]
        self.scheduler.queue.move_all_to_active_or_backoff_queue(
            ClusterEvent(resource, action), ev.old, obj
        )
