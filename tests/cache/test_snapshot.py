"""Snapshot: the lister, building one for tests, and the cache's incremental updates."""

from __future__ import annotations

import pytest

from kubesched.cache import Cache, CacheError, Snapshot, new_snapshot
from kubesched.clock import FakeClock
from kubesched.framework.types import PodInfo

from .builders import make_node, make_pod


def assert_table_matches(snap: Snapshot) -> None:
    """The numpy columns hold exactly the listed NodeInfos' values, row by row."""
    t = snap.table
    infos = snap.list()
    assert t.names == [ni.name for ni in infos]
    assert len(t.infos) == len(infos) and all(a is b for a, b in zip(t.infos, infos, strict=True))
    assert t.index == {ni.name: i for i, ni in enumerate(infos)}
    for i, ni in enumerate(infos):
        for name, col in t.requested.items():
            expected = len(ni.pods) if name == "pods" else ni.requested.get(name)
            assert col[i] == expected, (ni.name, name)
        for name, col in t.allocatable.items():
            assert col[i] == ni.allocatable.get(name), (ni.name, name)
        assert t.non_zero_cpu[i] == ni.non_zero_requested.milli_cpu
        assert t.non_zero_memory[i] == ni.non_zero_requested.memory


def names(infos: list) -> list[str]:
    return [ni.name for ni in infos]


@pytest.fixture
def cache() -> Cache:
    c = Cache(FakeClock(), ttl=30)
    for i, zone in enumerate(["A", "A", "B", "B", "C"]):
        c.add_node(make_node(f"n{i}", zone=zone))
    return c


@pytest.fixture
def snap(cache: Cache) -> Snapshot:
    s = Snapshot()
    cache.update_snapshot(s)
    return s


# --- the lister -----------------------------------------------------------------------


def test_empty_snapshot() -> None:
    s = Snapshot()
    assert s.list() == [] and s.num_nodes() == 0 and len(s) == 0
    assert s.generation == 0
    assert len(s.table) == 0
    assert s.node_infos() is s and s.storage_infos() is s


def test_first_update_lists_nodes_in_tree_order(cache: Cache, snap: Snapshot) -> None:
    assert names(snap.list()) == ["n0", "n2", "n4", "n1", "n3"]
    assert snap.num_nodes() == 5
    assert snap.get("n3") is snap.node_info_map["n3"]
    assert snap.generation > 0
    assert_table_matches(snap)


def test_get_unknown_node(snap: Snapshot) -> None:
    with pytest.raises(KeyError) as exc:
        snap.get("x")
    assert exc.value.args[0] == 'nodeinfo not found for node name "x"'


def test_from_objects() -> None:
    nodes = [make_node("a", zone="Z1"), make_node("b", zone="Z1"), make_node("c", zone="Z2")]
    pods = [
        make_pod("p1", "a", cpu="1", affinity=True),
        make_pod("p2", "c", cpu="2", anti_affinity=True, pvcs=("data",)),
        make_pod("p3", "gone", cpu="3", pvcs=("orphan",)),  # its node is not listed
    ]
    s = Snapshot.from_objects([pods[0].pod, *pods[1:]], nodes)
    assert names(s.list()) == ["a", "c", "b"]
    assert s.get("a").requested.milli_cpu == 1000
    assert names(s.have_pods_with_affinity_list()) == ["a", "c"]
    assert names(s.have_pods_with_required_anti_affinity_list()) == ["c"]
    assert s.is_pvc_used_by_pods("default/data")
    assert not s.is_pvc_used_by_pods("default/orphan")
    with pytest.raises(KeyError):
        s.get("gone")
    assert_table_matches(s)
    assert names(new_snapshot(pods, nodes).list()) == ["a", "c", "b"]


# --- incremental updates --------------------------------------------------------------


def test_no_change_is_a_no_op(cache: Cache, snap: Snapshot) -> None:
    infos, table, gen = snap.list(), snap.table, snap.generation
    before = list(infos)
    cache.update_snapshot(snap)
    assert snap.list() is infos and snap.table is table and snap.generation == gen
    assert all(a is b for a, b in zip(before, snap.list(), strict=True))


def test_pod_change_copies_only_its_node(cache: Cache, snap: Snapshot) -> None:
    before = dict(snap.node_info_map)
    table = snap.table
    old_n1 = snap.get("n1")
    pod = make_pod("p", "n1", cpu="750m", memory="1Gi")
    cache.assume_pod(pod)
    cache.update_snapshot(snap)

    assert snap.table is table  # patched, not rebuilt
    for name, ni in snap.node_info_map.items():
        assert (ni is before[name]) is (name != "n1"), name
    n1 = snap.get("n1")
    assert n1.pods == [pod] and old_n1.pods == []  # the old copy was not touched
    assert snap.list()[snap.table.index["n1"]] is n1
    assert_table_matches(snap)
    assert snap.table.requested["cpu"][snap.table.index["n1"]] == 750

    cache.forget_pod(pod)
    cache.update_snapshot(snap)
    assert snap.get("n1").pods == []
    assert snap.get("n0") is before["n0"]
    assert_table_matches(snap)


def test_several_changes_between_updates(cache: Cache, snap: Snapshot) -> None:
    before = dict(snap.node_info_map)
    for k, i in enumerate((0, 3, 0, 4)):
        cache.add_pod(make_pod(f"p{k}", f"n{i}", cpu="1"))
    cache.update_snapshot(snap)
    changed = {name for name, ni in snap.node_info_map.items() if ni is not before[name]}
    assert changed == {"n0", "n3", "n4"}
    assert snap.get("n0").requested.milli_cpu == 2000
    assert_table_matches(snap)


def test_new_scalar_resource_gets_a_column(cache: Cache, snap: Snapshot) -> None:
    cache.add_pod(make_pod("gpu", "n2", extra={"nvidia.com/gpu": "1"}))
    cache.update_snapshot(snap)
    assert snap.table.requested["nvidia.com/gpu"].tolist() == [0, 1, 0, 0, 0]
    assert_table_matches(snap)


def test_node_update_rewrites_allocatable(cache: Cache, snap: Snapshot) -> None:
    table = snap.table
    cache.update_node(make_node("n4", zone="C"), make_node("n4", zone="C", cpu="64"))
    cache.update_snapshot(snap)
    assert snap.table is table  # same zone: same order, patched
    assert snap.table.allocatable["cpu"][table.index["n4"]] == 64000
    assert_table_matches(snap)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ("add-node", ["n0", "n2", "n4", "n1", "n3", "n5"]),
        ("remove-node", ["n0", "n2", "n4", "n3"]),
        ("remove-node-with-pods", ["n0", "n2", "n4", "n3"]),
        ("zone-change", ["n0", "n2", "n4", "n3", "n1"]),
    ],
    ids=["add-node", "remove-node", "remove-node-with-pods", "zone-change"],
)
def test_node_set_changes_rebuild_the_list(
    cache: Cache, snap: Snapshot, event: str, expected: list[str]
) -> None:
    untouched = snap.get("n0")
    table = snap.table
    if event == "add-node":
        cache.add_node(make_node("n5", zone="A"))
    elif event == "remove-node":
        cache.remove_node(make_node("n1"))
    elif event == "remove-node-with-pods":
        cache.add_pod(make_pod("p", "n1", anti_affinity=True, pvcs=("c",)))
        cache.update_snapshot(snap)
        cache.remove_node(make_node("n1"))
    else:
        cache.update_node(make_node("n1", zone="A"), make_node("n1", zone="C"))
    cache.update_snapshot(snap)
    assert names(snap.list()) == expected == cache.node_names()
    assert snap.table is not table
    assert snap.get("n0") is untouched
    assert snap.have_pods_with_required_anti_affinity_list() == []
    assert snap.used_pvc_set == set()
    assert set(snap.node_info_map) == set(expected)
    assert_table_matches(snap)


def test_affinity_lists_follow_pods(cache: Cache, snap: Snapshot) -> None:
    aff = make_pod("aff", "n1", affinity=True)
    anti = make_pod("anti", "n3", anti_affinity=True)
    both = make_pod("both", "n0", affinity=True, anti_affinity=True)
    for p in (aff, anti, both):
        cache.add_pod(p)
    cache.update_snapshot(snap)
    # Both lists keep the node list's order.
    assert names(snap.have_pods_with_affinity_list()) == ["n0", "n1", "n3"]
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n0", "n3"]

    # A node that keeps its affinity pods but changes gets its new copy in the lists.
    cache.add_pod(make_pod("plain", "n3", cpu="1"))
    cache.update_snapshot(snap)
    n3 = snap.get("n3")
    assert snap.have_pods_with_affinity_list()[2] is n3
    assert snap.have_pods_with_required_anti_affinity_list()[1] is n3

    cache.remove_pod(both)
    cache.remove_pod(aff)
    cache.update_snapshot(snap)
    assert names(snap.have_pods_with_affinity_list()) == ["n3"]
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n3"]
    assert all(
        ni is snap.get(ni.name)
        for ni in snap.have_pods_with_affinity_list()
        + snap.have_pods_with_required_anti_affinity_list()
    )


def test_used_pvc_set(cache: Cache, snap: Snapshot) -> None:
    a = make_pod("a", "n0", pvcs=("shared", "only-a"))
    b = make_pod("b", "n2", pvcs=("shared",))
    c = make_pod("c", "n2", pvcs=("shared",), namespace="other")
    for p in (a, b, c):
        cache.add_pod(p)
    cache.update_snapshot(snap)
    assert snap.used_pvc_set == {"default/shared", "default/only-a", "other/shared"}
    cache.remove_pod(a)
    cache.update_snapshot(snap)
    assert snap.used_pvc_set == {"default/shared", "other/shared"}
    assert snap.is_pvc_used_by_pods("default/shared")
    assert not snap.is_pvc_used_by_pods("default/only-a")
    cache.remove_pod(b)
    cache.remove_pod(c)
    cache.update_snapshot(snap)
    assert snap.used_pvc_set == set()


def test_snapshot_never_sees_nodes_without_node_object(cache: Cache, snap: Snapshot) -> None:
    cache.add_pod(make_pod("early", "later-node", cpu="1"))
    cache.update_snapshot(snap)
    assert "later-node" not in snap.node_info_map
    assert snap.num_nodes() == 5


def test_two_snapshots_from_one_cache(cache: Cache, snap: Snapshot) -> None:
    other = Snapshot()
    cache.update_snapshot(other)
    cache.add_pod(make_pod("p", "n2", cpu="1"))
    cache.add_node(make_node("n9", images=[(["img"], 1)]))
    cache.update_snapshot(snap)
    cache.update_snapshot(other)
    for s in (snap, other):
        assert s.get("n2").requested.milli_cpu == 1000
        assert s.get("n9").image_states["img"].num_nodes == 1
        assert_table_matches(s)


def test_inconsistent_snapshot_is_repaired_then_reported(cache: Cache, snap: Snapshot) -> None:
    del snap.node_info_list[0]  # a bug elsewhere corrupted the snapshot
    with pytest.raises(CacheError) as exc:
        cache.update_snapshot(snap)
    assert str(exc.value) == (
        "snapshot state is not consistent, length of NodeInfoList=4 not equal to length of "
        "nodes in tree=5 , length of NodeInfoMap=5, length of nodes in cache=5, trying to recover"
    )
    # Repaired: the next update is clean and the snapshot is complete.
    cache.update_snapshot(snap)
    assert names(snap.list()) == cache.node_names()
    assert_table_matches(snap)


def test_patch_falls_back_to_rebuild_when_rows_are_off(cache: Cache, snap: Snapshot) -> None:
    snap.table.index["n1"] = 0  # corrupt the row index
    cache.add_pod(make_pod("p", "n1", cpu="1"))
    cache.update_snapshot(snap)
    assert names(snap.list()) == cache.node_names()
    assert snap.get("n1").requested.milli_cpu == 1000
    assert_table_matches(snap)


def test_snapshot_copies_are_independent_of_the_cache(cache: Cache, snap: Snapshot) -> None:
    pod: PodInfo = make_pod("p", "n1", cpu="1")
    cache.add_pod(pod)
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    cache.remove_pod(pod)
    assert n1.pods == [pod] and n1.requested.milli_cpu == 1000
