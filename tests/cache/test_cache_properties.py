"""Property test: random event sequences keep the cache and its incremental snapshot exact."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kubesched.api import Node, node_allocatable
from kubesched.cache import Cache, CacheError, Snapshot
from kubesched.clock import FakeClock
from kubesched.framework.pod_groups import PodGroupIndex
from kubesched.framework.types import NodeInfo, PodInfo, Resource

from .builders import ZONE as ZONE_KEY
from .builders import make_node, make_pod, on_node
from .test_snapshot import assert_table_matches

TTL = 30.0
HOSTNAME_KEY = "kubernetes.io/hostname"
NODE_NAMES = [f"n{i}" for i in range(6)]
POD_NAMES = [f"p{i}" for i in range(12)]
ZONES = [None, "A", "B", "C"]
IMAGES = {"img-a": 100, "img-b": 200, "img-c": 300}

zones = st.sampled_from(ZONES)
cpus = st.sampled_from(["1", "2", "4"])
image_sets = st.lists(st.sampled_from(sorted(IMAGES)), unique=True, max_size=3)
pod_cpu = st.sampled_from([None, 0, 100, 250])
pod_mem = st.sampled_from([None, 64, 512])
pvcs = st.sampled_from([None, "c1", "c2"])
scalars = st.sampled_from([None, None, "example.com/foo"])
apps = st.sampled_from([None, "x", "y"])


def build_node(name: str, zone: str | None, cpu: str, images: list[str]) -> Node:
    return make_node(
        name,
        zone=zone,
        cpu=cpu,
        images=[([i], IMAGES[i]) for i in images],
        labels={HOSTNAME_KEY: name},
    )


@st.composite
def pod_specs(draw: st.DrawFn) -> dict:
    return {
        "cpu": draw(pod_cpu),
        "memory": draw(pod_mem),
        "affinity": draw(st.booleans()),
        "anti_affinity": draw(st.booleans()),
        "pvc": draw(pvcs),
        "scalar": draw(scalars),
        "app": draw(apps),
    }


def build_pod(name: str, node: str, spec: dict) -> PodInfo:
    return make_pod(
        name,
        node,
        cpu=None if spec["cpu"] is None else f"{spec['cpu']}m",
        memory=None if spec["memory"] is None else f"{spec['memory']}Mi",
        affinity=spec["affinity"],
        anti_affinity=spec["anti_affinity"],
        pvcs=(spec["pvc"],) if spec["pvc"] else (),
        extra={spec["scalar"]: "1"} if spec["scalar"] else None,
        labels={"app": spec["app"]} if spec.get("app") else None,
    )


class TreeModel:
    """A naive node tree: zones in first-seen order, nodes in insertion order."""

    def __init__(self) -> None:
        self.zones: list[tuple[str | None, list[str]]] = []

    def zone_of(self, name: str) -> str | bool | None:
        for zone, members in self.zones:
            if name in members:
                return zone
        return False

    def add(self, name: str, zone: str | None) -> None:
        for z, members in self.zones:
            if z == zone:
                members.append(name)
                return
        self.zones.append((zone, [name]))

    def remove(self, name: str) -> None:
        for i, (_, members) in enumerate(self.zones):
            if name in members:
                members.remove(name)
                if not members:
                    del self.zones[i]
                return

    def list(self) -> list[str]:
        out: list[str] = []
        depth = max((len(m) for _, m in self.zones), default=0)
        for k in range(depth):
            out.extend(m[k] for _, m in self.zones if k < len(m))
        return out


@dataclass
class ModelPod:
    info: PodInfo
    assumed: bool
    finished: bool = False
    deadline: float | None = None


class CacheMachine(RuleBasedStateMachine):
    """Drives a Cache and a naive model with the same events."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(100.0)
        self.cache = Cache(self.clock, ttl=TTL)
        self.snapshot = Snapshot()  # updated incrementally after every step
        self.nodes: dict[str, tuple[Node, str | None, list[str]]] = {}
        self.tree = TreeModel()
        self.pods: dict[str, ModelPod] = {}  # by pod name
        self.assumed_order: dict[str, None] = {}  # pod names, as the cache orders them

    # --- nodes ------------------------------------------------------------------------

    @rule(name=st.sampled_from(NODE_NAMES), zone=zones, cpu=cpus, images=image_sets)
    def add_node(self, name: str, zone: str | None, cpu: str, images: list[str]) -> None:
        node = build_node(name, zone, cpu, images)
        self.cache.add_node(node)
        self._set_zone(name, zone)
        self.nodes[name] = (node, zone, images)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), zone=zones, cpu=cpus, images=image_sets)
    def update_node(
        self, data: st.DataObject, zone: str | None, cpu: str, images: list[str]
    ) -> None:
        name = data.draw(st.sampled_from(sorted(self.nodes)))
        new = build_node(name, zone, cpu, images)
        self.cache.update_node(self.nodes[name][0], new)
        self._set_zone(name, zone)
        self.nodes[name] = (new, zone, images)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.nodes)))
        self.cache.remove_node(self.nodes.pop(name)[0])
        self.tree.remove(name)

    @rule(name=st.sampled_from(NODE_NAMES))
    def remove_absent_node(self, name: str) -> None:
        if name in self.nodes:
            return
        try:
            self.cache.remove_node(make_node(name))
        except CacheError:
            pass
        else:
            raise AssertionError(f"removing absent node {name} did not fail")

    def _set_zone(self, name: str, zone: str | None) -> None:
        current = self.tree.zone_of(name)
        if current is False:
            self.tree.add(name, zone)
        elif current != zone:
            self.tree.remove(name)
            self.tree.add(name, zone)

    # --- pods -------------------------------------------------------------------------

    def _free_pod_names(self) -> list[str]:
        return [p for p in POD_NAMES if p not in self.pods]

    def _names(self, assumed: bool | None) -> list[str]:
        return sorted(n for n, p in self.pods.items() if assumed is None or p.assumed == assumed)

    @rule(data=st.data(), node=st.sampled_from(NODE_NAMES), spec=pod_specs())
    def assume_pod(self, data: st.DataObject, node: str, spec: dict) -> None:
        free = self._free_pod_names()
        if not free:
            return
        name = data.draw(st.sampled_from(free))
        info = build_pod(name, node, spec)
        self.cache.assume_pod(info)
        self.pods[name] = ModelPod(info, assumed=True)
        self.assumed_order[name] = None

    @rule(data=st.data(), node=st.sampled_from(NODE_NAMES), spec=pod_specs())
    def add_new_pod(self, data: st.DataObject, node: str, spec: dict) -> None:
        free = self._free_pod_names()
        if not free:
            return
        name = data.draw(st.sampled_from(free))
        info = build_pod(name, node, spec)
        self.cache.add_pod(info)
        self.pods[name] = ModelPod(info, assumed=False)

    @precondition(lambda self: any(p.assumed for p in self.pods.values()))
    @rule(data=st.data())
    def finish_binding(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self._names(assumed=True)))
        assert self.cache.finish_binding(self.pods[name].info) is True
        self.pods[name].finished = True
        self.pods[name].deadline = self.clock.now() + TTL

    @precondition(lambda self: any(p.assumed for p in self.pods.values()))
    @rule(data=st.data())
    def forget_pod(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self._names(assumed=True)))
        self.cache.forget_pod(self.pods.pop(name).info)
        del self.assumed_order[name]

    @precondition(lambda self: any(p.assumed for p in self.pods.values()))
    @rule(data=st.data(), elsewhere=st.sampled_from([None, *NODE_NAMES]))
    def confirm_pod(self, data: st.DataObject, elsewhere: str | None) -> None:
        name = data.draw(st.sampled_from(self._names(assumed=True)))
        info = self.pods[name].info
        added = on_node(info, elsewhere) if elsewhere else info
        self.cache.add_pod(added)
        self.pods[name] = ModelPod(added, assumed=False)
        del self.assumed_order[name]

    @precondition(lambda self: any(not p.assumed for p in self.pods.values()))
    @rule(data=st.data(), spec=pod_specs())
    def update_pod(self, data: st.DataObject, spec: dict) -> None:
        name = data.draw(st.sampled_from(self._names(assumed=False)))
        old = self.pods[name].info
        new = build_pod(name, old.node_name, spec)
        self.cache.update_pod(old, new)
        self.pods[name].info = new

    @precondition(lambda self: self.pods)
    @rule(data=st.data(), without_node=st.booleans())
    def remove_pod(self, data: st.DataObject, without_node: bool) -> None:
        name = data.draw(st.sampled_from(self._names(assumed=None)))
        info = self.pods.pop(name).info
        self.cache.remove_pod(on_node(info, "") if without_node else info)
        self.assumed_order.pop(name, None)

    @rule(seconds=st.sampled_from([0.5, 10.0, 29.0, 31.0]))
    def tick(self, seconds: float) -> None:
        self.clock.step(seconds)
        now = self.clock.now()
        expected = [
            n
            for n in self.assumed_order
            if self.pods[n].finished
            and self.pods[n].deadline is not None
            and now > self.pods[n].deadline
        ]
        expired = self.cache.cleanup_assumed_pods()
        assert [p.name for p in expired] == expected
        for n in expected:
            del self.pods[n]
            del self.assumed_order[n]

    @rule(data=st.data(), kind=st.sampled_from(["assume", "forget", "add", "update", "remove"]))
    def refused_event(self, data: st.DataObject, kind: str) -> None:
        """An event the state machine refuses leaves everything as it was."""
        if kind in ("assume", "add"):
            candidates = self._names(assumed=None if kind == "assume" else False)
        elif kind == "forget":
            candidates = self._names(assumed=False) + self._free_pod_names()
        elif kind == "update":
            candidates = self._names(assumed=True) + self._free_pod_names()
        else:
            candidates = self._free_pod_names()
        if not candidates:
            return
        name = data.draw(st.sampled_from(candidates))
        info = (
            self.pods[name].info
            if name in self.pods
            else build_pod(
                name,
                "n0",
                {
                    "cpu": 1,
                    "memory": None,
                    "affinity": False,
                    "anti_affinity": False,
                    "pvc": None,
                    "scalar": None,
                },
            )
        )
        before = self.cache.pod_count(), self.cache.assumed_pod_count(), self.cache.node_count()
        call = {
            "assume": self.cache.assume_pod,
            "forget": self.cache.forget_pod,
            "add": self.cache.add_pod,
            "update": lambda p: self.cache.update_pod(p, p),
            "remove": self.cache.remove_pod,
        }[kind]
        try:
            call(info)
        except CacheError:
            pass
        else:
            raise AssertionError(f"{kind} of {name} was not refused")
        assert (
            self.cache.pod_count(),
            self.cache.assumed_pod_count(),
            self.cache.node_count(),
        ) == before

    # --- checks -----------------------------------------------------------------------

    @invariant()
    def cache_matches_model(self) -> None:
        dump = self.cache.dump()
        pods_by_node: dict[str, set[str]] = {}
        for p in self.pods.values():
            pods_by_node.setdefault(p.info.node_name, set()).add(p.info.uid)
        # NodeInfos: every node with a Node, and every node some pod is on.
        assert set(dump.nodes) == set(self.nodes) | set(pods_by_node)
        assert dump.assumed_pods == {self.pods[n].info.uid for n in self.assumed_order}
        for name, ni in dump.nodes.items():
            assert {p.uid for p in ni.pods} == pods_by_node.get(name, set())
            assert (ni.node is None) == (name not in self.nodes)
            check_requested(ni)
        assert self.cache.node_names() == self.tree.list()

    @invariant()
    def incremental_snapshot_equals_fresh_one(self) -> None:
        inc = self.snapshot
        self.cache.update_snapshot(inc)
        fresh = Snapshot()
        self.cache.update_snapshot(fresh)

        order = self.tree.list()
        assert [ni.name for ni in inc.list()] == order == [ni.name for ni in fresh.list()]
        # The pod group indexes, kept current from the changed nodes, equal fresh ones
        # (reading the domains of a key makes the incremental index maintain it).
        for index_of in (Snapshot.pods_by_labels, Snapshot.pods_by_affinity_terms):
            assert group_summary(index_of(inc)) == group_summary(index_of(fresh))
        assert set(inc.node_info_map) == set(order) == set(fresh.node_info_map)
        for a, b in zip(inc.list(), fresh.list(), strict=True):
            assert a is inc.node_info_map[a.name]
            assert a.node is b.node is self.nodes[a.name][0]
            assert [p.uid for p in a.pods] == [p.uid for p in b.pods]
            assert a.requested == b.requested
            assert a.non_zero_requested == b.non_zero_requested
            assert a.allocatable == b.allocatable
            assert a.allocatable == Resource.from_mapping(node_allocatable(a.node))
            assert a.used_ports == b.used_ports and a.pvc_ref_counts == b.pvc_ref_counts
            check_requested(a)
            assert image_counts(a) == image_counts(b) == self.expected_images(a.name)

        def with_pods(pred) -> list[str]:
            return [
                n
                for n in order
                if any(pred(p.info) for p in self.pods.values() if p.info.node_name == n)
            ]

        aff = with_pods(lambda p: p.has_affinity())
        anti = with_pods(lambda p: bool(p.required_anti_affinity_terms))
        for s in (inc, fresh):
            assert [ni.name for ni in s.have_pods_with_affinity_list()] == aff
            assert [ni.name for ni in s.have_pods_with_required_anti_affinity_list()] == anti
            assert all(ni is s.node_info_map[ni.name] for ni in s.have_pods_with_affinity_list())
            assert all(
                ni is s.node_info_map[ni.name]
                for ni in s.have_pods_with_required_anti_affinity_list()
            )
            assert_table_matches(s)
        assert (
            inc.used_pvc_set
            == fresh.used_pvc_set
            == {
                f"{p.info.namespace}/{v.persistent_volume_claim.claim_name}"
                for p in self.pods.values()
                if p.info.node_name in self.nodes
                for v in p.info.pod.spec.volumes
                if v.persistent_volume_claim is not None
            }
        )
        for columns in ("requested", "allocatable"):
            a, b = getattr(inc.table, columns), getattr(fresh.table, columns)
            zeros = np.zeros(len(order), dtype=np.int64)
            for key in a.keys() | b.keys():
                assert np.array_equal(a.get(key, zeros), b.get(key, zeros)), (columns, key)
        assert np.array_equal(inc.table.non_zero_cpu, fresh.table.non_zero_cpu)
        assert np.array_equal(inc.table.non_zero_memory, fresh.table.non_zero_memory)

    def expected_images(self, name: str) -> dict[str, tuple[int, int]]:
        return {
            img: (IMAGES[img], sum(img in imgs for _, _, imgs in self.nodes.values()))
            for img in self.nodes[name][2]
        }


def group_summary(index: PodGroupIndex) -> dict:
    """Every group's pod count, pods per node and pods per zone and per hostname."""
    return {
        key: (
            g.count,
            dict(g.nodes),
            {k: dict(index.domains(g, k)) for k in (ZONE_KEY, HOSTNAME_KEY)},
        )
        for key, g in index.groups.items()
    }


def image_counts(ni: NodeInfo) -> dict[str, tuple[int, int]]:
    return {k: (v.size, v.num_nodes) for k, v in ni.image_states.items()}


def check_requested(ni: NodeInfo) -> None:
    """A node's totals are the sums over its pods."""
    total = Resource()
    for p in ni.pods:
        total.add(p.requests)
    total.allowed_pod_number = len(ni.pods)
    assert ni.requested == total, ni.name
    assert ni.non_zero_requested.milli_cpu == sum(p.non_zero_cpu for p in ni.pods)
    assert ni.non_zero_requested.memory == sum(p.non_zero_memory for p in ni.pods)


CacheMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCacheProperties = CacheMachine.TestCase
