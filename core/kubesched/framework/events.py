"""Cluster events that plugins register so that the queue knows when to retry a pod."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum
from typing import Any


class ActionType(IntFlag):
    """What happened to an object (upstream ``framework.ActionType``)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_OTHER = 4096
    """An update that none of the specific update kinds above describes."""
    UPDATE_NODE_DECLARED_FEATURE = 8192
    """A Node's ``status.declaredFeatures`` changed (upstream ``UpdateNodeDeclaredFeature``)."""
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_OTHER
        | UPDATE_NODE_DECLARED_FEATURE
    )
    """Any update, including kinds of update not listed separately."""
    ALL = ADD | DELETE | UPDATE


_ALL = ActionType.ALL.value


class EventResource(StrEnum):
    """The kind of object an event is about. ``ASSIGNED_POD`` / ``UNSCHEDULED_POD`` split
    pods by whether they are bound, as upstream does; ``POD`` matches both."""

    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    SERVICE = "Service"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    POD_GROUP = "PodGroup"
    ELASTIC_QUOTA = "ElasticQuota"
    NODE_RESOURCE_TOPOLOGY = "NodeResourceTopology"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    DEVICE_TAINT_RULE = "DeviceTaintRule"
    WILDCARD = "*"


class QueueingHint(Enum):
    """A queueing-hint function's answer: is the rejected pod worth retrying now?"""

    QUEUE = "Queue"
    SKIP = "QueueSkip"


QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]
"""``hint(pod, old_obj, new_obj) -> QueueingHint``: decides, for one rejected pod, whether
an event (``old_obj`` is ``None`` for an add, ``new_obj`` ``None`` for a delete) may
make it schedulable. An exception counts as ``QUEUE``."""


@dataclass(frozen=True)
class ClusterEvent:
    """An event on a kind of resource: ``ClusterEvent(EventResource.NODE, ActionType.ADD)``.

    ``label`` names the event in metrics (``scheduler_queue_incoming_pods_total{event}``).
    """

    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """True when ``incoming`` is an event this registration is interested in."""
        # Plain ints: IntFlag arithmetic builds enum members, which is slow on this path.
        action = self.action.value
        if self.resource is EventResource.WILDCARD and action == _ALL:
            return True
        if not action & incoming.action.value:
            return False
        if self.resource is EventResource.WILDCARD or self.resource is incoming.resource:
            return True
        return self.resource is EventResource.POD and incoming.resource in (
            EventResource.ASSIGNED_POD,
            EventResource.UNSCHEDULED_POD,
        )

    def display(self) -> str:
        """The metrics label: ``label`` if set, else ``<Resource><Action>``."""
        if self.label:
            return self.label
        return f"{self.resource.value}{_action_name(self.action)}"


def _action_name(action: ActionType) -> str:
    if action == ActionType.ALL:
        return "All"
    if action == ActionType.UPDATE:
        return "Update"
    # Iterating a flag class yields only its single-bit members (Python >= 3.11).
    return "|".join(m.name.title().replace("_", "") for m in ActionType if m in action)


@dataclass(frozen=True)
class ClusterEventWithHint:
    """A plugin's registration: the event, and optionally a hint to filter it per pod."""

    event: ClusterEvent
    queueing_hint: QueueingHintFn | None = None


WILDCARD_EVENT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "WildCardEvent")
"""Matches every event; what a rejecting plugin that registers nothing is given."""
