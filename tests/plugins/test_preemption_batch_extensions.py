"""Preemption's batched dry run and nominated-pods Filter with active PreFilter
extensions (InterPodAffinity's, PodTopologySpread's and VolumeRestrictions' per-copy
counts) equal the per-node path."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubesched import PodInfo
from kubesched.cache import new_snapshot
from kubesched.framework.preemption_batch import NodeCopies
from kubesched.queue.nominator import Nominator
from kubesched.testing import make_framework
from kubesched_builtin.interpodaffinity import InterPodAffinity
from kubesched_builtin.podtopologyspread import PodTopologySpread
from kubesched_builtin.volumerestrictions import VolumeRestrictions

from .test_defaultpreemption import HOST, T0, T1, T2, node, pdb, pod
from .test_defaultpreemption_batch import (
    PLUGINS,
    DeclaresButTracksPods,
    assert_nominated_filter_equals_per_node,
    batched_and_per_node_victims,
    explained,
    handle,
    prefilter,
)
from .volume_objects import pvc

KEYS = ("zone", HOST)
APPS = ("a", "b", "c")

pod_spec = st.fixed_dictionaries(
    {
        "prio": st.sampled_from((0, 5, 10, 12)),
        "cpu": st.integers(1, 15).map(lambda n: f"{n * 100}m"),
        "start": st.sampled_from((T0, T1, T2)),
        "app": st.sampled_from(APPS),
        # A required anti-affinity term of the existing pod selecting the preemptor (app a).
        "anti": st.sampled_from((None, *KEYS)),
        # Whether the pod mounts the ReadWriteOncePod claim "data".
        "claim": st.booleans(),
    }
)
node_spec = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(("2", "3", "4")),
        "zone": st.sampled_from(("z1", "z2", "z3", None)),
        "taint": st.booleans(),
        "pods_on": st.lists(pod_spec, max_size=5),
    }
)
term = st.tuples(st.sampled_from(KEYS), st.sampled_from(APPS))
spread = st.fixed_dictionaries(
    {
        "key": st.sampled_from(KEYS),
        "max_skew": st.integers(1, 2),
        "app": st.sampled_from(APPS),
        "min_domains": st.sampled_from((None, 2, 4)),
        "honor_taints": st.booleans(),
    }
)
cluster = st.fixed_dictionaries(
    {
        "nodes": st.lists(node_spec, min_size=1, max_size=7),
        "nominated": st.lists(
            st.tuples(
                st.sampled_from((5, 10, 15)),
                st.integers(1, 20),
                st.integers(0, 6),
                st.sampled_from(APPS),
                st.sampled_from((None, *KEYS)),
                st.booleans(),
            ),
            max_size=3,
        ),
        "pdbs": st.lists(st.tuples(st.sampled_from(APPS), st.integers(0, 2)), max_size=2),
        "preemptor_cpu": st.integers(5, 30).map(lambda n: f"{n * 100}m"),
        "affinity": st.lists(term, max_size=2),
        "anti_affinity": st.lists(term, max_size=2),
        "spread": st.lists(spread, max_size=2, unique_by=lambda d: d["key"]),
        "zone_affinity": st.booleans(),
        "claim": st.booleans(),
        "seed": st.integers(0, 2**16),
        "min_candidates": st.integers(1, 4),
    }
)


def with_terms(b, app: str, anti: str | None, claim: bool = False):
    b = b.labels(app=app)
    if claim:
        b = b.pvc(CLAIM)
    return b if anti is None else b.pod_anti_affinity(anti, {"app": "a"})


CLAIM = "data"
"""A ReadWriteOncePod claim some pods mount."""


def build(c: dict, *plugins):
    """A framework with InterPodAffinity and PodTopologySpread for the generated cluster
    ``c``; the preemptor (label app=a, with the generated required affinity and
    anti-affinity terms and DoNotSchedule spread constraints)."""
    nodes, pods = [], []
    for i, n in enumerate(c["nodes"]):
        name = f"n{i}"
        b = node(name, cpu=n["cpu"])
        if n["zone"] is not None:
            b = b.labels({"zone": n["zone"]})
        if n.get("taint"):
            b = b.taint("dedicated", "x")
        nodes.append(b.obj())
        for j, p in enumerate(n["pods_on"]):
            pb = pod(f"{name}-p{j}", p["prio"], p["cpu"], name, p["start"])
            pods.append(with_terms(pb, p["app"], p["anti"], p.get("claim", False)).obj())
    nominator = Nominator()
    for k, (prio, cpu, at, app, anti, *claim) in enumerate(c["nominated"]):
        nominee = pod(f"nominee-{k}", prio, f"{cpu * 100}m")
        nominee = with_terms(nominee, app, anti, bool(claim and claim[0])).obj()
        nominator.add_nominated_pod(PodInfo(nominee), f"n{at % len(nodes)}")
    fw = make_framework(
        *PLUGINS,
        InterPodAffinity,
        PodTopologySpread,
        VolumeRestrictions,
        *plugins,
        args={
            "DefaultPreemption": {
                "minCandidateNodesPercentage": 0,
                "minCandidateNodesAbsolute": c["min_candidates"],
            }
        },
        **handle(
            nominator,
            [
                pvc(CLAIM, modes=("ReadWriteOncePod",)),
                *(pdb(f"pdb-{app}", {"app": app}, n) for app, n in c["pdbs"]),
            ],
            c["seed"],
        ),
    )
    fw.set_snapshot(new_snapshot(pods, nodes))
    pre = pod("preemptor", 10, c["preemptor_cpu"]).labels(app="a")
    if c.get("claim"):
        pre = pre.pvc(CLAIM)
    for key, app in c["affinity"]:
        pre = pre.pod_affinity(key, {"app": app})
    for key, app in c["anti_affinity"]:
        pre = pre.pod_anti_affinity(key, {"app": app})
    for sp in c.get("spread", ()):
        pre = pre.spread_constraint(
            sp["max_skew"],
            sp["key"],
            selector={"app": sp["app"]},
            min_domains=sp["min_domains"],
            node_taints_policy="Honor" if sp["honor_taints"] else None,
        )
    if c.get("zone_affinity"):
        pre = pre.node_affinity_in("zone", ["z1", "z2"])
    return fw, PodInfo(pre.obj())


def _active(fw, pi, plugin: str = "InterPodAffinity") -> bool:
    return plugin not in prefilter(fw, pi).skip_filter_plugins


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_victims_equal_per_node_victims(c):
    fw, pi = build(c)
    batched, per_node = batched_and_per_node_victims(fw, pi)
    # InterPodAffinity and VolumeRestrictions always describe their copies;
    # PodTopologySpread declines only when a copy would count in a domain PreFilter
    # did not see (then the per-node path runs).
    table = fw.snapshot.table
    copies = fw.pre_filter_copies(prefilter(fw, pi), pi, table, range(len(table)), ())
    assert (batched is None) == (copies is None)
    assert batched in (None, per_node)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_dry_run_equals_per_node_dry_run(c):
    assert explained(*build(c), per_node=False) == explained(*build(c), per_node=True)


def _pod(app: str, prio: int = 12) -> dict:
    return {"prio": prio, "cpu": "100m", "start": T0, "app": app, "anti": None}


NOMINATED_RAISE_THE_MINIMUM_DOMAIN = {
    # z1 (n0) holds no app=a pod, z2 (n1) one: the critical paths are (z1, 0), (z2, 1).
    # Two app=a pods nominated to n0 raise z1 to 2: the global minimum becomes z2's 1,
    # and the preemptor (app=a, maxSkew 2) fits n0 beside them: 2 + 1 - 1 <= 2.
    "nodes": [
        {"cpu": "4", "zone": "z1", "taint": False, "pods_on": []},
        {"cpu": "4", "zone": "z2", "taint": False, "pods_on": [_pod("a")]},
    ],
    "nominated": [(15, 1, 0, "a", None), (15, 1, 0, "a", None)],
    "pdbs": [],
    "preemptor_cpu": "500m",
    "affinity": [],
    "anti_affinity": [],
    "spread": [
        {"key": "zone", "max_skew": 2, "app": "a", "min_domains": None, "honor_taints": False}
    ],
    "zone_affinity": False,
    "seed": 0,
    "min_candidates": 1,
}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
@example(NOMINATED_RAISE_THE_MINIMUM_DOMAIN)
def test_batched_filter_with_nominated_pods_equals_per_node(c):
    assert_nominated_filter_equals_per_node(*build(c))


def test_removing_the_only_matching_pod_opens_the_first_pod_exception():
    """A victim's removal changes InterPodAffinity's counts on the copy: with the only
    app=a pod (on n0) removed, no pod matches the preemptor's affinity and its affinity
    to itself lets it in (upstream's first-pod exception): n0 is chosen."""
    c = {
        "nodes": [
            {
                "cpu": "2",
                "zone": "z1",
                "pods_on": [{"prio": 0, "cpu": "1500m", "start": T0, "app": "a", "anti": None}],
            },
            {
                "cpu": "2",
                "zone": "z2",
                "pods_on": [{"prio": 12, "cpu": "1500m", "start": T0, "app": "c", "anti": None}],
            },
        ],
        "nominated": [],
        "pdbs": [],
        "preemptor_cpu": "1000m",
        "affinity": [("zone", "a")],
        "anti_affinity": [],
        "seed": 0,
        "min_candidates": 2,
    }
    fw, pi = build(c)
    assert _active(fw, pi)
    result = explained(fw, pi, per_node=False)
    assert result[0].nominated_node_name == "n0"
    assert result[4] == ["default/n0-p0"]
    assert result == explained(*build(c), per_node=True)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_an_extension_without_per_copy_states_takes_the_per_node_path(c):
    fw, pi = build(c, DeclaresButTracksPods)
    state = prefilter(fw, pi)
    nodes = fw.snapshot.list()
    assert NodeCopies.of(fw, state, nodes, [list(ni.pods) for ni in nodes], pi) is None
    assert explained(*build(c, DeclaresButTracksPods), per_node=False) == explained(
        *build(c, DeclaresButTracksPods), per_node=True
    )
