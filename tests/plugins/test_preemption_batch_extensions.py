"""Preemption's batched dry run and nominated-pods Filter with an active PreFilter
extension (InterPodAffinity's per-copy counts) equal the per-node path."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched import PodInfo
from kubesched.cache import new_snapshot
from kubesched.framework.preemption_batch import NodeCopies
from kubesched.framework.types import NodeBatch
from kubesched.queue.nominator import Nominator
from kubesched.testing import make_framework
from kubesched_builtin.interpodaffinity import InterPodAffinity

from .test_defaultpreemption import HOST, T0, T1, T2, node, pdb, pod
from .test_defaultpreemption_batch import (
    PLUGINS,
    DeclaresButTracksPods,
    explained,
    handle,
    outcome,
    prefilter,
)

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
    }
)
node_spec = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(("2", "3", "4")),
        "zone": st.sampled_from(("z1", "z2", None)),
        "pods_on": st.lists(pod_spec, max_size=5),
    }
)
term = st.tuples(st.sampled_from(KEYS), st.sampled_from(APPS))
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
            ),
            max_size=3,
        ),
        "pdbs": st.lists(st.tuples(st.sampled_from(APPS), st.integers(0, 2)), max_size=2),
        "preemptor_cpu": st.integers(5, 30).map(lambda n: f"{n * 100}m"),
        "affinity": st.lists(term, max_size=2),
        "anti_affinity": st.lists(term, max_size=2),
        "seed": st.integers(0, 2**16),
        "min_candidates": st.integers(1, 4),
    }
)


def with_terms(b, app: str, anti: str | None):
    b = b.labels(app=app)
    return b if anti is None else b.pod_anti_affinity(anti, {"app": "a"})


def build(c: dict, *plugins):
    """A framework with InterPodAffinity for the generated cluster ``c``; the preemptor
    (label app=a, with the generated required affinity and anti-affinity terms)."""
    nodes, pods = [], []
    for i, n in enumerate(c["nodes"]):
        name = f"n{i}"
        b = node(name, cpu=n["cpu"])
        if n["zone"] is not None:
            b = b.labels({"zone": n["zone"]})
        nodes.append(b.obj())
        for j, p in enumerate(n["pods_on"]):
            pb = pod(f"{name}-p{j}", p["prio"], p["cpu"], name, p["start"])
            pods.append(with_terms(pb, p["app"], p["anti"]).obj())
    nominator = Nominator()
    for k, (prio, cpu, at, app, anti) in enumerate(c["nominated"]):
        nominee = with_terms(pod(f"nominee-{k}", prio, f"{cpu * 100}m"), app, anti).obj()
        nominator.add_nominated_pod(PodInfo(nominee), f"n{at % len(nodes)}")
    fw = make_framework(
        *PLUGINS,
        InterPodAffinity,
        *plugins,
        args={
            "DefaultPreemption": {
                "minCandidateNodesPercentage": 0,
                "minCandidateNodesAbsolute": c["min_candidates"],
            }
        },
        **handle(
            nominator, [pdb(f"pdb-{app}", {"app": app}, n) for app, n in c["pdbs"]], c["seed"]
        ),
    )
    fw.set_snapshot(new_snapshot(pods, nodes))
    pre = pod("preemptor", 10, c["preemptor_cpu"]).labels(app="a")
    for key, app in c["affinity"]:
        pre = pre.pod_affinity(key, {"app": app})
    for key, app in c["anti_affinity"]:
        pre = pre.pod_anti_affinity(key, {"app": app})
    return fw, PodInfo(pre.obj())


def _active(fw, pi) -> bool:
    return "InterPodAffinity" not in prefilter(fw, pi).skip_filter_plugins


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_victims_equal_per_node_victims(c):
    fw, pi = build(c)
    state = prefilter(fw, pi)
    plugin = fw.plugin("DefaultPreemption")
    nodes = fw.snapshot.list()
    pdbs = plugin.evaluator.pdbs_for(nodes)
    batched = plugin.select_victims_on_nodes(state.clone(), pi, nodes, pdbs)
    assert batched is not None  # InterPodAffinity describes its copies: no fallback
    per_node = [plugin.select_victims_on_node(state.clone(), pi, ni.clone(), pdbs) for ni in nodes]
    assert outcome(batched) == outcome(per_node)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_dry_run_equals_per_node_dry_run(c):
    assert explained(*build(c), per_node=False) == explained(*build(c), per_node=True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_batched_filter_with_nominated_pods_equals_per_node(c):
    fw, pi = build(c)
    state = prefilter(fw, pi)
    table = fw.snapshot.table
    verdicts, error = fw.run_filter_batch_with_nominated_pods(
        state, pi, NodeBatch(table, list(range(len(table))))
    )
    assert error is None
    for ni, got in zip(fw.snapshot.list(), verdicts.tolist(), strict=True):
        want = fw.run_filter_plugins_with_nominated_pods(state, pi, ni)
        if want.is_success():
            assert got is None, ni.name
        else:
            assert got is not None, ni.name
            assert (got.code, got.reasons, got.plugin) == (want.code, want.reasons, want.plugin)


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
