"""NodePorts: host ports conflict by protocol and port, with 0.0.0.0 meaning every address."""

from __future__ import annotations

import pytest

from kubesched import ActionType, Code, EventResource, PodInfo, QueueingHint
from kubesched.api import Pod
from kubesched.cache import new_snapshot
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.nodeports import ERR_REASON, NAME, NodePorts, get_host_ports


def pod_with_ports(name: str, *ports: str, node: str | None = None, sidecar: str = "") -> Pod:
    """Ports as ``PROTO/ip/port`` (as upstream's test helper); ``sidecar`` the same for a
    restartable init container."""
    builder = make_pod(name)
    for spec in ports:
        proto, ip, port = spec.split("/")
        builder.host_port(int(port), proto, "" if ip == "0.0.0.0" else ip)
    if node:
        builder.node(node)
    m = builder.manifest()
    if not m["spec"]["containers"]:
        m["spec"]["containers"] = [{"name": "c", "image": "busybox"}]
    if sidecar:
        proto, ip, port = sidecar.split("/")
        m["spec"]["initContainers"] = [
            {
                "name": "side",
                "image": "busybox",
                "restartPolicy": "Always",
                "ports": [
                    {
                        "containerPort": int(port),
                        "hostPort": int(port),
                        "protocol": proto,
                        "hostIP": ip,
                    }
                ],
            },
            {
                "name": "init",
                "image": "busybox",
                "ports": [{"containerPort": 7, "hostPort": 7, "protocol": "TCP"}],
            },
        ]
    return Pod.model_validate(m)


CASES = [
    # (id, wanted ports, ports in use on the node, fits)
    ("no-ports", (), ("TCP/0.0.0.0/80",), True),
    ("other-port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), True),
    ("same-udp-port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), False),
    ("same-tcp-port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False),
    ("different-host-ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), True),
    ("different-protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True),
    (
        "second-udp-port-conflict",
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        False,
    ),
    (
        "first-tcp-port-conflict",
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
    ),
    ("wanted-wildcard-vs-specific", ("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), False),
    (
        "wildcard-among-wanted",
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        False,
    ),
    ("used-wildcard-vs-specific", ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False),
    ("wildcard-other-protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True),
    (
        "udp-and-tcp-wildcards",
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        False,
    ),
    ("wildcard-vs-wildcard", ("TCP/0.0.0.0/53",), ("TCP/0.0.0.0/53",), False),
    ("sctp", ("SCTP/0.0.0.0/9000",), ("SCTP/10.0.0.1/9000",), False),
]


@pytest.mark.parametrize(
    ("wanted", "used", "fits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_filter(wanted, used, fits) -> None:
    existing = pod_with_ports("existing", *used, node="n1")
    snap = new_snapshot([existing], [make_node("n1").obj(), make_node("n2").obj()])
    fw = make_framework(NodePorts)
    fw.set_snapshot(snap)
    pi = PodInfo(pod_with_ports("p", *wanted))
    state = fw.new_cycle_state()
    _, status, _ = fw.run_pre_filter_plugins(state, pi, snap.list())
    assert status.is_success()
    assert (NAME in state.skip_filter_plugins) == (not wanted)
    n1, n2 = snap.get("n1"), snap.get("n2")
    s1 = fw.run_filter_plugins(state, pi, n1)
    assert fw.run_filter_plugins(state, pi, n2).is_success()
    if fits:
        assert s1.is_success()
    else:
        assert (s1.code, s1.reasons, s1.plugin) == (Code.UNSCHEDULABLE, [ERR_REASON], NAME)


def test_sidecar_ports_are_wanted() -> None:
    pod = pod_with_ports("p", "TCP/0.0.0.0/80", sidecar="UDP/10.0.0.1/53")
    ports = {(p.ip, p.protocol, p.port) for p in get_host_ports(pod)}
    # The non-restartable init container's port 7 is not held while the pod runs.
    assert ports == {("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53)}
    existing = pod_with_ports("existing", "UDP/0.0.0.0/53", node="n1")
    snap = new_snapshot([existing], [make_node("n1").obj()])
    fw = make_framework(NodePorts)
    pi = PodInfo(pod)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, pi, snap.list())
    assert fw.run_filter_plugins(state, pi, snap.get("n1")).reasons == [ERR_REASON]


def test_existing_sidecar_ports_are_used() -> None:
    existing = pod_with_ports("existing", node="n1", sidecar="UDP/0.0.0.0/53")
    snap = new_snapshot([existing], [make_node("n1").obj()])
    fw = make_framework(NodePorts)
    pi = PodInfo(pod_with_ports("p", "UDP/0.0.0.0/53"))
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, pi, snap.list())
    assert fw.run_filter_plugins(state, pi, snap.get("n1")).reasons == [ERR_REASON]


def test_host_port_zero_is_not_a_host_port() -> None:
    m = make_pod("p").container(ports=[{"containerPort": 80}]).obj()
    assert get_host_ports(m) == ()
    fw = make_framework(NodePorts)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, PodInfo(m), [])
    assert NAME in state.skip_filter_plugins


def test_events_and_pod_deleted_hint() -> None:
    fw = make_framework(NodePorts)
    regs = {(e.resource, e.action): h for p, e, h in fw.events_to_register() if p == NAME}
    assert set(regs) == {
        (EventResource.POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD),
    }
    assert regs[(EventResource.NODE, ActionType.ADD)] is None
    hint = regs[(EventResource.POD, ActionType.DELETE)]
    pod = pod_with_ports("p", "TCP/0.0.0.0/80")
    assert hint(pod, pod_with_ports("d", "TCP/0.0.0.0/80", node="n1"), None) is QueueingHint.QUEUE
    assert hint(pod, pod_with_ports("d", "TCP/10.0.0.1/80", node="n1"), None) is QueueingHint.QUEUE
    assert hint(pod, pod_with_ports("d", "UDP/0.0.0.0/80", node="n1"), None) is QueueingHint.SKIP
    assert hint(pod, pod_with_ports("d", "TCP/0.0.0.0/81", node="n1"), None) is QueueingHint.SKIP
    assert hint(pod, pod_with_ports("d", node="n1"), None) is QueueingHint.SKIP
    # Unscheduled and not nominated: it held no port anywhere.
    assert hint(pod, pod_with_ports("d", "TCP/0.0.0.0/80"), None) is QueueingHint.SKIP
    nominated = make_pod("d").host_port(80).nominated_node("n1").obj()
    assert hint(pod, nominated, None) is QueueingHint.QUEUE


def test_hint_ports_equal_pod_info_ports() -> None:
    # Hints read ports from Pod objects, the cycle from PodInfo: the same list.
    pod = pod_with_ports("p", "TCP/0.0.0.0/80", "UDP/10.0.0.1/53", sidecar="SCTP/0.0.0.0/9")
    assert get_host_ports(pod) == PodInfo(pod).host_ports
