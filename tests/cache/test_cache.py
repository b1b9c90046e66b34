"""Cache: the pod state machine, its errors, TTL expiry, nodes, image states, metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from kubesched.cache import Cache, CacheError, PodState, Snapshot
from kubesched.clock import FakeClock
from kubesched.framework.types import PodInfo
from kubesched.metrics import Metrics

from .builders import make_node, make_pod, on_node

TTL = 30.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def cache(clock: FakeClock) -> Cache:
    c = Cache(clock, ttl=TTL)
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    return c


def cpu_on(cache: Cache, node: str) -> int:
    return cache.get_node(node).requested.milli_cpu


# --- the state machine, table-driven ------------------------------------------------

P1 = make_pod("p", "n1", cpu="100m")
P1_BIGGER = make_pod("p", "n1", cpu="300m")  # same uid, new version
P1_ON_N2 = on_node(P1, "n2")
P1_NO_NODE = on_node(P1, "")


def _expire(cache: Cache, clock: FakeClock, _pod: PodInfo) -> None:
    clock.step(TTL + 1)
    cache.cleanup_assumed_pods()


OPS: dict[str, Callable[[Cache, FakeClock, PodInfo], object]] = {
    "assume": lambda c, _clk, p: c.assume_pod(p),
    "finish": lambda c, _clk, p: c.finish_binding(p),
    "forget": lambda c, _clk, p: c.forget_pod(p),
    "add": lambda c, _clk, p: c.add_pod(p),
    "update": lambda c, _clk, p: c.update_pod(P1, p),
    "remove": lambda c, _clk, p: c.remove_pod(p),
    "expire": _expire,
}

# (steps, expected state: None = not in cache, "assumed", "added"; cpu on n1, n2)
TRANSITIONS = [
    ("initial-assume", [("assume", P1)], "assumed", 100, 0),
    ("assumed-add-confirms", [("assume", P1), ("add", P1)], "added", 100, 0),
    ("assumed-add-other-node-moves", [("assume", P1), ("add", P1_ON_N2)], "added", 0, 100),
    ("assumed-add-new-version", [("assume", P1), ("add", P1_BIGGER)], "added", 300, 0),
    ("assumed-forget", [("assume", P1), ("forget", P1)], None, 0, 0),
    ("assumed-finish-expire", [("assume", P1), ("finish", P1), ("expire", P1)], None, 0, 0),
    (
        "expired-add-readds",
        [("assume", P1), ("finish", P1), ("expire", P1), ("add", P1)],
        "added",
        100,
        0,
    ),
    ("binding-never-expires", [("assume", P1), ("expire", P1)], "assumed", 100, 0),
    (
        "added-never-expires",
        [("assume", P1), ("finish", P1), ("add", P1), ("expire", P1)],
        "added",
        100,
        0,
    ),
    ("initial-add", [("add", P1)], "added", 100, 0),
    ("added-update", [("add", P1), ("update", P1_BIGGER)], "added", 300, 0),
    ("added-remove", [("add", P1), ("remove", P1)], None, 0, 0),
    ("assumed-remove", [("assume", P1), ("remove", P1)], None, 0, 0),
    ("added-remove-without-node-name", [("add", P1), ("remove", P1_NO_NODE)], None, 0, 0),
    ("deleted-add-again", [("add", P1), ("remove", P1), ("add", P1)], "added", 100, 0),
    ("forgotten-assume-again", [("assume", P1), ("forget", P1), ("assume", P1)], "assumed", 100, 0),
]


@pytest.mark.parametrize(
    ("steps", "state", "cpu_n1", "cpu_n2"),
    [t[1:] for t in TRANSITIONS],
    ids=[t[0] for t in TRANSITIONS],
)
def test_transitions(
    cache: Cache,
    clock: FakeClock,
    steps: list[tuple[str, PodInfo]],
    state: str | None,
    cpu_n1: int,
    cpu_n2: int,
) -> None:
    for op, pod in steps:
        OPS[op](cache, clock, pod)
    if state is None:
        with pytest.raises(CacheError, match="does not exist in scheduler cache"):
            cache.get_pod(P1)
        assert cache.pod_state(P1) is None
    else:
        assert cache.get_pod(P1).uid == P1.uid
        assert cache.is_assumed_pod(P1) is (state == "assumed")
    assert cache.assumed_pod_count() == (1 if state == "assumed" else 0)
    assert cache.pod_count() == (0 if state is None else 1)
    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (cpu_n1, cpu_n2)


REF = "uid-default-p(default/p)"
ERRORS = [
    (
        "assume-twice",
        [("assume", P1)],
        ("assume", P1),
        f"pod {REF} is in the cache, so can't be assumed",
    ),
    (
        "assume-added",
        [("add", P1)],
        ("assume", P1),
        f"pod {REF} is in the cache, so can't be assumed",
    ),
    ("assume-without-node", [], ("assume", P1_NO_NODE), f"pod {REF} has no node name"),
    ("forget-unknown", [], ("forget", P1), f"pod {REF} wasn't assumed so cannot be forgotten"),
    (
        "forget-added",
        [("add", P1)],
        ("forget", P1),
        f"pod {REF} wasn't assumed so cannot be forgotten",
    ),
    (
        "forget-on-other-node",
        [("assume", P1)],
        ("forget", P1_ON_N2),
        f"pod {REF} was assumed on n2 but assigned to n1",
    ),
    ("add-twice", [("add", P1)], ("add", P1), f"pod {REF} was already in added state"),
    ("add-without-node", [], ("add", P1_NO_NODE), f"pod {REF} has no node name"),
    (
        "confirm-without-node",
        [("assume", P1)],
        ("add", P1_NO_NODE),
        f"pod {REF} has no node name, so can't be added",
    ),
    (
        "update-unknown",
        [],
        ("update", P1_BIGGER),
        f"pod {REF} is not added to scheduler cache, so cannot be updated",
    ),
    (
        "update-assumed",
        [("assume", P1)],
        ("update", P1_BIGGER),
        f"assumed pod {REF} should not be updated",
    ),
    (
        "update-to-other-node",
        [("add", P1)],
        ("update", P1_ON_N2),
        f"pod {REF} updated on a different node .* scheduler cache is corrupted",
    ),
    (
        "remove-unknown",
        [],
        ("remove", P1),
        f"pod {REF} is not found in scheduler cache, so cannot be removed from it",
    ),
    (
        "remove-forgotten",
        [("assume", P1), ("forget", P1)],
        ("remove", P1),
        f"pod {REF} is not found in scheduler cache",
    ),
    (
        "remove-from-other-node",
        [("add", P1)],
        ("remove", P1_ON_N2),
        f"pod {REF} was added to n1 but removed from n2: scheduler cache is corrupted",
    ),
]


@pytest.mark.parametrize(
    ("setup", "step", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_errors(
    cache: Cache,
    clock: FakeClock,
    setup: list[tuple[str, PodInfo]],
    step: tuple[str, PodInfo],
    message: str,
) -> None:
    for op, pod in setup:
        OPS[op](cache, clock, pod)
    before = (
        cache.pod_count(),
        cache.assumed_pod_count(),
        cpu_on(cache, "n1"),
        cpu_on(cache, "n2"),
    )
    op, pod = step
    with pytest.raises(CacheError, match=message.replace("(", r"\(").replace(")", r"\)")):
        OPS[op](cache, clock, pod)
    # A refused event changes nothing.
    after = (cache.pod_count(), cache.assumed_pod_count(), cpu_on(cache, "n1"), cpu_on(cache, "n2"))
    assert after == before


def test_get_pod_returns_cached_version(cache: Cache) -> None:
    cache.add_pod(P1_BIGGER)
    assert cache.get_pod(P1) is P1_BIGGER
    with pytest.raises(CacheError, match=r"pod uid-default-q\(default/q\) does not exist"):
        cache.get_pod(make_pod("q", "n1"))


# --- finish binding and expiry --------------------------------------------------------


def test_finish_binding_sets_deadline(cache: Cache, clock: FakeClock) -> None:
    cache.assume_pod(P1)
    assert cache.pod_state(P1) == PodState(P1, None, False)
    assert cache.finish_binding(P1) is True
    assert cache.pod_state(P1) == PodState(P1, clock.now() + TTL, True)
    assert cache.finish_binding(P1, now=5.0) is True
    assert cache.pod_state(P1).deadline == 5.0 + TTL


@pytest.mark.parametrize(
    "setup",
    [[], [("add", P1)], [("assume", P1), ("forget", P1)]],
    ids=["unknown", "already-added", "forgotten"],
)
def test_finish_binding_of_non_assumed_pod_is_ignored(
    cache: Cache, clock: FakeClock, setup: list[tuple[str, PodInfo]]
) -> None:
    # Upstream ignores it: the Add (or Delete) event can beat the binding cycle here.
    for op, pod in setup:
        OPS[op](cache, clock, pod)
    assert cache.finish_binding(P1) is False
    state = cache.pod_state(P1)
    assert state is None or state.deadline is None


@pytest.mark.parametrize(
    ("step", "expired"),
    [(TTL - 1, False), (TTL, False), (TTL + 0.001, True), (10 * TTL, True)],
    ids=["before-deadline", "at-deadline", "just-after", "long-after"],
)
def test_expiry_at_deadline(cache: Cache, clock: FakeClock, step: float, expired: bool) -> None:
    cache.assume_pod(P1)
    cache.finish_binding(P1)
    clock.step(step)
    assert cache.cleanup_assumed_pods() == ([P1] if expired else [])
    assert cache.is_assumed_pod(P1) is not expired
    assert cpu_on(cache, "n1") == (0 if expired else 100)


def test_binding_in_progress_never_expires(cache: Cache, clock: FakeClock) -> None:
    cache.assume_pod(P1)
    for _ in range(5):
        clock.step(1000 * TTL)
        assert cache.cleanup_assumed_pods() == []
    assert cache.is_assumed_pod(P1)
    cache.finish_binding(P1)
    clock.step(TTL + 1)
    assert cache.cleanup_assumed_pods() == [P1]


def test_ttl_zero_never_expires(clock: FakeClock) -> None:
    cache = Cache(clock, ttl=0)
    cache.assume_pod(P1)
    cache.finish_binding(P1)
    assert cache.pod_state(P1) == PodState(P1, None, True)
    clock.step(1e9)
    assert cache.cleanup_assumed_pods() == []
    assert cache.is_assumed_pod(P1)


def test_negative_ttl_rejected(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="ttl must not be negative"):
        Cache(clock, ttl=-1)


def test_cleanup_expires_only_due_pods_in_assume_order(cache: Cache, clock: FakeClock) -> None:
    pods = [make_pod(f"p{i}", "n1" if i % 2 else "n2", cpu="10m") for i in range(6)]
    for p in pods:
        cache.assume_pod(p)
    for p in pods[:4]:
        cache.finish_binding(p)  # deadline now + 30
    clock.step(20)
    cache.finish_binding(pods[3])  # restarted: deadline now + 30
    clock.step(15)
    assert cache.cleanup_assumed_pods() == pods[:3]
    assert cache.assumed_pod_count() == 3
    assert cache.cleanup_assumed_pods(now=clock.now() + 100) == [pods[3]]


def test_explicit_now_for_cleanup(cache: Cache) -> None:
    cache.assume_pod(P1)
    cache.finish_binding(P1, now=0.0)
    assert cache.cleanup_assumed_pods(now=TTL) == []
    assert cache.cleanup_assumed_pods(now=TTL + 1) == [P1]


def test_expired_pod_on_unknown_node_drops_the_node(cache: Cache, clock: FakeClock) -> None:
    pod = make_pod("ghost", "n9", cpu="1")
    cache.assume_pod(pod)
    assert cache.node_count() == 3
    cache.finish_binding(pod)
    clock.step(TTL + 1)
    cache.cleanup_assumed_pods()
    assert cache.node_count() == 2
    with pytest.raises(CacheError, match="node n9 does not exist in scheduler cache"):
        cache.get_node("n9")


# --- nodes ----------------------------------------------------------------------------


def test_pod_before_its_node(clock: FakeClock) -> None:
    cache = Cache(clock)
    pod = make_pod("early", "n1", cpu="500m")
    cache.add_pod(pod)
    ghost = cache.get_node("n1")
    assert ghost.node is None
    assert ghost.requested.milli_cpu == 500
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.list() == []
    assert cache.node_names() == []

    info = cache.add_node(make_node("n1", cpu="2"))
    assert info.node is not None
    assert info.requested.milli_cpu == 500
    assert info.allocatable.milli_cpu == 2000
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["n1"]
    assert snap.get("n1").pods == [pod]


def test_node_removed_with_pods_remaining(cache: Cache) -> None:
    a, b = make_pod("a", "n1", cpu="100m"), make_pod("b", "n1", cpu="200m")
    cache.add_pod(a)
    cache.assume_pod(b)
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["n1", "n2"]

    cache.remove_node(make_node("n1"))
    assert cache.node_count() == 2
    ghost = cache.get_node("n1")
    assert ghost.node is None and ghost.requested.milli_cpu == 300
    assert ghost.image_states == {}
    assert cache.node_names() == ["n2"]
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["n2"]
    assert "n1" not in snap.node_info_map
    with pytest.raises(KeyError, match='nodeinfo not found for node name "n1"'):
        snap.get("n1")

    cache.remove_pod(a)
    assert cache.node_count() == 2
    cache.forget_pod(b)  # the last pod: the NodeInfo goes for good
    assert cache.node_count() == 1
    with pytest.raises(CacheError, match="node n1 does not exist"):
        cache.get_node("n1")
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["n2"]


def test_node_removed_and_re_added_keeps_its_pods(cache: Cache) -> None:
    pod = make_pod("a", "n1", cpu="100m")
    cache.add_pod(pod)
    cache.remove_node(make_node("n1"))
    cache.add_node(make_node("n1", cpu="8"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1.pods == [pod]
    assert n1.allocatable.milli_cpu == 8000


def test_remove_node_without_pods(cache: Cache) -> None:
    cache.remove_node(make_node("n2"))
    assert cache.node_count() == 1
    assert cache.node_names() == ["n1"]


def test_remove_unknown_node(cache: Cache) -> None:
    with pytest.raises(CacheError, match=r"^node n9 is not found$"):
        cache.remove_node(make_node("n9"))


def test_remove_node_twice_while_pods_remain(cache: Cache) -> None:
    cache.add_pod(P1)
    cache.remove_node(make_node("n1"))
    with pytest.raises(CacheError, match='node "n1" in group "" was not found'):
        cache.remove_node(make_node("n1"))


def test_add_node_returns_a_copy(cache: Cache) -> None:
    info = cache.add_node(make_node("n3", cpu="2"))
    info.add_pod(make_pod("x", "n3", cpu="1"))
    info.image_states["fake"] = None  # type: ignore[assignment]
    fresh = cache.get_node("n3")
    assert fresh.pods == [] and fresh.requested.milli_cpu == 0
    assert fresh.image_states == {}


def test_update_node_changes_allocatable_and_zone(clock: FakeClock) -> None:
    cache = Cache(clock)
    for name, zone in [("a1", "A"), ("a2", "A"), ("b1", "B")]:
        cache.add_node(make_node(name, zone=zone))
    assert cache.node_names() == ["a1", "b1", "a2"]
    snap = Snapshot()
    cache.update_snapshot(snap)
    info = cache.update_node(make_node("a1", zone="A"), make_node("a1", zone="B", cpu="32"))
    assert info.allocatable.milli_cpu == 32000
    assert cache.node_names() == ["a2", "b1", "a1"]
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["a2", "b1", "a1"]
    assert snap.table.names == ["a2", "b1", "a1"]
    assert snap.table.allocatable["cpu"].tolist() == [4000, 4000, 32000]


def test_update_unknown_node_adds_it(cache: Cache) -> None:
    cache.update_node(None, make_node("n3"))
    assert cache.node_names() == ["n1", "n2", "n3"]
    assert cache.node_count() == 3


def test_update_node_without_node_object_puts_it_back_in_the_tree(cache: Cache) -> None:
    cache.add_pod(P1)
    cache.remove_node(make_node("n1"))
    cache.update_node(make_node("n1"), make_node("n1"))
    assert cache.node_names() == ["n2", "n1"]


def test_add_node_twice_with_new_zone_moves_it(clock: FakeClock) -> None:
    cache = Cache(clock)
    cache.add_node(make_node("x", zone="A"))
    cache.add_node(make_node("y", zone="A"))
    cache.add_node(make_node("x", zone="B"))
    assert cache.node_names() == ["y", "x"]
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.num_nodes() == 2


# --- image states ---------------------------------------------------------------------


def _images(cache: Cache, node: str) -> dict[str, tuple[int, int]]:
    return {k: (v.size, v.num_nodes) for k, v in cache.get_node(node).image_states.items()}


def test_image_states_count_nodes(clock: FakeClock) -> None:
    cache = Cache(clock)
    cache.add_node(make_node("a", images=[(["nginx:1", "nginx@sha256:1"], 100), (["redis"], 50)]))
    cache.add_node(make_node("b", images=[(["nginx:1"], 100)]))
    cache.add_node(make_node("c", images=[(["busybox"], 5)]))
    assert _images(cache, "a") == {
        "nginx:1": (100, 2),
        "nginx@sha256:1": (100, 1),
        "redis": (50, 1),
    }
    assert _images(cache, "b") == {"nginx:1": (100, 2)}
    assert _images(cache, "c") == {"busybox": (5, 1)}

    # b drops nginx and pulls redis.
    cache.update_node(make_node("b"), make_node("b", images=[(["redis"], 50)]))
    assert _images(cache, "a") == {
        "nginx:1": (100, 1),
        "nginx@sha256:1": (100, 1),
        "redis": (50, 2),
    }
    assert _images(cache, "b") == {"redis": (50, 2)}

    cache.remove_node(make_node("a"))
    assert _images(cache, "b") == {"redis": (50, 1)}
    assert cache._images.keys() == {"redis", "busybox"}  # unused images are dropped

    # Re-adding the same node does not count it twice.
    cache.add_node(make_node("b", images=[(["redis"], 50)]))
    assert _images(cache, "b") == {"redis": (50, 1)}


def test_image_states_in_snapshot_follow_other_nodes_without_copying(clock: FakeClock) -> None:
    cache = Cache(clock)
    img = [(["app:1"], 1000)]
    cache.add_node(make_node("a", images=img))
    cache.add_node(make_node("b"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    a = snap.get("a")
    assert a.image_states["app:1"].num_nodes == 1

    cache.add_node(make_node("c", images=img))
    cache.update_snapshot(snap)
    assert snap.get("a") is a  # not copied...
    assert a.image_states["app:1"].num_nodes == 2  # ...yet current
    assert snap.get("c").image_states["app:1"].num_nodes == 2

    cache.remove_node(make_node("c"))
    cache.update_snapshot(snap)
    assert snap.get("a") is a
    assert a.image_states["app:1"].num_nodes == 1


def test_image_size_change_on_its_only_node_reaches_the_snapshot(clock: FakeClock) -> None:
    # The image leaves its last node and comes back with another size: a new image
    # state upstream, so the long-lived snapshot must not keep the old size.
    cache = Cache(clock)
    cache.add_node(make_node("a", images=[(["app:1"], 30_000_000)]))
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.update_node(
        make_node("a", images=[(["app:1"], 30_000_000)]),
        make_node("a", images=[(["app:1"], 900_000_000)]),
    )
    cache.update_snapshot(snap)
    fresh = Snapshot()
    cache.update_snapshot(fresh)
    assert fresh.get("a").image_states["app:1"].size == 900_000_000
    assert snap.get("a").image_states["app:1"].size == 900_000_000


def test_dump_is_a_detached_copy(cache: Cache) -> None:
    cache.add_node(make_node("n3", images=[(["x"], 1)]))
    cache.add_pod(P1)
    q = make_pod("q", "n9")
    cache.assume_pod(q)
    dump = cache.dump()
    assert set(dump.nodes) == {"n1", "n2", "n3", "n9"}
    assert dump.assumed_pods == {q.uid}
    assert dump.nodes["n1"].pods == [P1]
    assert dump.nodes["n9"].node is None
    dump.nodes["n3"].image_states["x"].num_nodes = 99
    assert _images(cache, "n3") == {"x": (1, 1)}


def test_counts(cache: Cache) -> None:
    cache.add_pod(make_pod("a", "n1"))
    cache.assume_pod(make_pod("b", "n2"))
    cache.assume_pod(make_pod("c", "n7"))
    assert (cache.node_count(), cache.pod_count(), cache.assumed_pod_count()) == (3, 3, 2)


def test_metrics_cache_size(clock: FakeClock) -> None:
    metrics = Metrics()
    cache = Cache(clock, metrics=metrics)
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("a", "n1"))
    cache.assume_pod(make_pod("b", "n1"))
    cache.assume_pod(make_pod("c", "n2"))
    cache.cleanup_assumed_pods()

    def value(kind: str) -> float | None:
        return metrics.registry.get_sample_value("scheduler_cache_size", {"type": kind})

    assert (value("nodes"), value("pods"), value("assumed_pods")) == (2, 3, 2)
    cache.forget_pod(make_pod("c", "n2"))
    cache.update_metrics()
    assert (value("nodes"), value("pods"), value("assumed_pods")) == (1, 2, 1)


def test_cleanup_loop_runs_until_stopped(clock: FakeClock) -> None:
    cache = Cache(clock)
    cache.assume_pod(P1)
    cache.finish_binding(P1)
    clock.step(TTL + 1)
    stop = threading.Event()
    thread = cache.run_cleanup_loop(stop, period=0.001)
    try:
        for _ in range(2000):
            if not cache.is_assumed_pod(P1):
                break
            threading.Event().wait(0.001)
        assert not cache.is_assumed_pod(P1)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_concurrent_binding_and_snapshots(clock: FakeClock) -> None:
    cache = Cache(clock)
    for i in range(20):
        cache.add_node(make_node(f"n{i}", zone=f"z{i % 3}"))
    pods = [make_pod(f"p{i}", f"n{i % 20}", cpu="10m") for i in range(400)]
    errors: list[BaseException] = []

    def binder(chunk: list[PodInfo]) -> None:
        try:
            for p in chunk:
                cache.assume_pod(p)
                cache.finish_binding(p)
                cache.add_pod(p)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=binder, args=(pods[i::4],)) for i in range(4)]
    snap = Snapshot()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        cache.update_snapshot(snap)
    for t in threads:
        t.join()
    cache.update_snapshot(snap)
    assert errors == []
    assert sum(len(n.pods) for n in snap.list()) == 400
    assert snap.table.requested["cpu"].tolist() == [200] * 20
