"""NodePorts: a pod's host ports must be free on the node (PreFilter, Filter)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    HostPort,
    NodeInfo,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import Pod
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_PORTS

NAME = NODE_PORTS

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
"""A host port bound to this address conflicts with the same protocol/port on any address."""

PRE_FILTER_KEY: StateKey[tuple[HostPort, ...]] = StateKey("PreFilter" + NAME)
"""The pod's wanted host ports; adding or removing other pods never changes them, so
there is nothing for ``pre_filter_add_pod`` / ``remove_pod`` to do (the node's used
ports are in its NodeInfo)."""

UsedPorts = Mapping[tuple[str, int], Set[str]]
"""``NodeInfo.used_ports``: ``(protocol, port)`` to the host IPs using it."""


def get_host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The host ports of ``pod`` (upstream ``util.GetHostPorts``), for queueing hints,
    which get Pod objects; the cycle reads the same list from ``PodInfo.host_ports``.

    Ports with a ``hostPort`` > 0 of the containers and of the restartable init
    containers (sidecars, which run as long as the pod); an empty host IP means
    ``0.0.0.0`` and an empty protocol TCP.
    """
    spec = pod.spec
    containers = [c for c in spec.init_containers if c.restart_policy == "Always"]
    containers.extend(spec.containers)
    return tuple(
        HostPort(p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or "TCP", p.host_port)
        for c in containers
        for p in c.ports
        if p.host_port > 0
    )


def check_conflict(used: UsedPorts, port: HostPort) -> bool:
    """Whether ``port`` conflicts with ``used`` (upstream ``HostPortInfo.CheckConflict``).

    ``0.0.0.0`` conflicts with the protocol/port on any address; a specific address
    conflicts with the same address and with ``0.0.0.0``.
    """
    if port.port <= 0:
        return False
    ips = used.get((port.protocol or "TCP", port.port))
    if not ips:
        return False
    ip = port.ip or DEFAULT_BIND_ALL_HOST_IP
    return ip == DEFAULT_BIND_ALL_HOST_IP or DEFAULT_BIND_ALL_HOST_IP in ips or ip in ips


def fits_ports(wanted: Iterable[HostPort], used: UsedPorts) -> bool:
    """Whether none of ``wanted`` conflicts with ``used``."""
    if not used:
        return True
    return not any(check_conflict(used, p) for p in wanted)


def _ports_in_use(ports: Iterable[HostPort]) -> dict[tuple[str, int], set[str]]:
    used: dict[tuple[str, int], set[str]] = {}
    for p in ports:
        used.setdefault((p.protocol, p.port), set()).add(p.ip)
    return used


def is_schedulable_after_pod_deleted(pod: Pod, old_obj: Pod, new_obj: Any) -> QueueingHint:
    """Queue only when the deleted pod was (to be) on a node and held one of our ports."""
    deleted = old_obj
    if not deleted.spec.node_name and not deleted.status.nominated_node_name:
        return QueueingHint.SKIP
    ports = get_host_ports(deleted)
    if not ports:
        return QueueingHint.SKIP
    if fits_ports(get_host_ports(pod), _ports_in_use(ports)):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


class NodePorts:
    """Rejects nodes where one of the pod's host ports is in use (Unschedulable:
    preempting the pod that holds the port frees it). Pods without host ports skip
    the Filter."""

    name = NAME
    skips_pods_without = {"PreFilter": ("host_ports",)}
    """PreFilter answers Skip for a pod without host ports: the framework skips the call."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    @hookimpl
    def sign_pod(self, pod: Pod) -> list[tuple[str, Any]]:
        """Only the host ports the pod asks for decide."""
        return [signers.host_ports(pod)]

    @hookimpl
    def pre_filter(self, state: CycleState, pod_info: PodInfo) -> Status | None:
        # PodInfo.host_ports is GetHostPorts' list, computed once per pod.
        ports = pod_info.host_ports
        if not ports:
            return Status.skip()
        state.write(PRE_FILTER_KEY, ports)
        return None

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        ports = state.read(PRE_FILTER_KEY)
        if fits_ports(ports, node_info.used_ports):
            return None
        return Status(Code.UNSCHEDULABLE, ERR_REASON)

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Host ports are immutable, so pod updates never free one.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                is_schedulable_after_pod_deleted,
            ),
            # No hint: a new node always has free ports (upstream's choice).
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]
