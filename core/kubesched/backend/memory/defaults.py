"""What a real control plane sets on Nodes and Namespaces that a manifest may leave out.

kube-apiserver labels every Namespace ``kubernetes.io/metadata.name`` and copies a Node's
capacity into an absent ``status.allocatable``; every kubelet labels its Node with its
hostname, OS and architecture and reports an allocatable figure for each resource of its
capacity. The embedded cluster has no kubelets, so it sets what they would, and says so
(:func:`kubesched.notices.notice`), grouping the Nodes that got the same change into one
notice: 5,000 Nodes without labels make one line, not 5,000.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubesched.api import KubeObject, Namespace, Node
from kubesched.notices import notice

__all__ = [
    "DEFAULT_ARCH",
    "DEFAULT_OS",
    "LABEL_ARCH",
    "LABEL_HOSTNAME",
    "LABEL_METADATA_NAME",
    "LABEL_OS",
    "ObjectDefaults",
]

LABEL_METADATA_NAME = "kubernetes.io/metadata.name"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
DEFAULT_OS = "linux"
DEFAULT_ARCH = "amd64"

_NAMES_SHOWN = 3
"""How many Nodes a grouped notice names before "and N more"."""


def _kubelet_labels(node: Node) -> list[str]:
    """Add the labels every kubelet sets (its hostname, and its OS and architecture as
    ``status.nodeInfo`` reports them, else linux/amd64); the ``key=value`` pairs added."""
    info = node.status.node_info
    wanted = {
        LABEL_HOSTNAME: node.name,
        LABEL_OS: (info.operating_system if info is not None else None) or DEFAULT_OS,
        LABEL_ARCH: (info.architecture if info is not None else None) or DEFAULT_ARCH,
    }
    labels = node.metadata.labels
    added = []
    for key, value in wanted.items():
        if key not in labels:
            labels[key] = value
            # The hostname differs on every node: name the rule, so nodes group.
            added.append(f"{key}=<node name>" if key == LABEL_HOSTNAME else f"{key}={value}")
    return added


def _allocatable(node: Node) -> list[str]:
    """Complete ``status.allocatable`` from the capacity; the resources the kubelet's part
    added (a wholly absent allocatable is the API server's own default, not noticed)."""
    status = node.status
    if not status.allocatable:
        # SetDefaults_NodeStatus (kube-apiserver): allocatable = capacity.
        status.allocatable = dict(status.capacity)
        return []
    missing = sorted(k for k in status.capacity if k not in status.allocatable)
    for k in missing:
        # A kubelet reports an allocatable figure for every resource of its capacity:
        # capacity less its reservations, which a manifest cannot tell us.
        status.allocatable[k] = status.capacity[k]
    return missing


def _describe_nodes(names: list[str]) -> str:
    if len(names) == 1:
        return f"Node {names[0]}"
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = len(names) - _NAMES_SHOWN
    return f"{len(names)} Nodes ({shown}{f' and {more} more' if more > 0 else ''})"


class ObjectDefaults:
    """Sets the defaults above on the Nodes and Namespaces a cluster stores.

    Notices about Nodes wait while :meth:`grouped` is open (a whole manifest load), then
    come out one per distinct change, naming the Nodes it concerned.
    """

    def __init__(self) -> None:
        self._pending: dict[str, list[str]] = {}
        self._held = 0

    def apply(self, obj: KubeObject) -> None:
        """Default ``obj`` (a private copy about to be stored) in place."""
        if isinstance(obj, Namespace):
            # NamespaceDefaultLabelName: set, and overwritten, on every create and update.
            obj.metadata.labels[LABEL_METADATA_NAME] = obj.name
        elif isinstance(obj, Node):
            labels = _kubelet_labels(obj)
            if labels:
                self._note(
                    "lacks labels every kubelet sets; set " + ", ".join(labels),
                    obj.name,
                )
            resources = _allocatable(obj)
            if resources:
                self._note(
                    f"status.allocatable lacks {', '.join(resources)}; set to the capacity, "
                    "as a kubelet without reservations reports",
                    obj.name,
                )

    def _note(self, message: str, node: str) -> None:
        self._pending.setdefault(message, []).append(node)
        if not self._held:
            self.flush()

    def flush(self) -> None:
        """Make the notices held so far."""
        pending, self._pending = self._pending, {}
        for message, names in pending.items():
            notice(message, obj=_describe_nodes(names))

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """Hold the Node notices until the block ends, grouped by change."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self.flush()
