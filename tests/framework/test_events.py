"""Which registered cluster events match an incoming event."""

import pytest

from kubesched import ActionType, ClusterEvent, EventResource
from kubesched.framework.events import WILDCARD_EVENT

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
NODE_TAINT = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)


@pytest.mark.parametrize(
    ("registered", "incoming", "matches"),
    [
        (
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            NODE_TAINT,
            True,
        ),
        (ClusterEvent(EventResource.NODE, ActionType.ADD), NODE_TAINT, False),
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE), NODE_TAINT, True),
        (ClusterEvent(EventResource.POD, ActionType.DELETE), ASSIGNED_POD_DELETE, True),
        (ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), ASSIGNED_POD_DELETE, True),
        (
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.DELETE),
            ASSIGNED_POD_DELETE,
            False,
        ),
        (ClusterEvent(EventResource.NODE, ActionType.ALL), ASSIGNED_POD_DELETE, False),
        (ClusterEvent(EventResource.WILDCARD, ActionType.ADD), NODE_ADD, True),
        (WILDCARD_EVENT, ASSIGNED_POD_DELETE, True),
    ],
    ids=[
        "node-add-or-taint",
        "add-not-taint",
        "any-update",
        "pod-covers-assigned",
        "assigned-pod",
        "unscheduled-not-assigned",
        "other-resource",
        "wildcard-resource",
        "wildcard-event",
    ],
)
def test_matches(registered, incoming, matches):
    assert registered.matches(incoming) is matches


def test_display_labels():
    assert NODE_ADD.display() == "NodeAdd"
    assert ClusterEvent(EventResource.NODE, ActionType.UPDATE).display() == "NodeUpdate"
    assert NODE_TAINT.display() == "NodeUpdateNodeTaint"
    assert (
        ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeCreated").display() == "NodeCreated"
    )
    assert WILDCARD_EVENT.display() == "WildCardEvent"
