"""End to end: every example under ``examples/`` runs and gives its documented outcome.

Each test loads an example's manifests (and configuration) exactly as a user would,
schedules them on the embedded cluster with a fixed seed and asserts what the example's
README promises: where each pod lands, which pods stay pending and the diagnosis those
get (upstream's message, character for character, where the outcome is deterministic),
and that a second run with the same seed gives the same placement.

The ``scheduling-docs`` scenarios reproduce the worked examples of the Kubernetes scheduling docs;
each README says which section the outcome comes from.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kubesched.api import load_manifests
from kubesched.api.quantity import Quantity
from kubesched.api.resources import pod_requests
from kubesched.cli.main import main as main_cli
from kubesched.config import load_config
from kubesched.deschedule import load_policy
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import SimulationRun, simulate
from kubesched.simulate.timeline import load_timeline
from kubesched_contrib.trimaran.metrics import read_metrics_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUICKSTART = EXAMPLES / "quickstart"
DOCS_EXAMPLES = EXAMPLES / "scheduling-docs"

MiB = 1024**2
GiB = 1024**3


# -- helpers ---------------------------------------------------------------------------


def run_example(*paths: Path, config: Path | None = None, seed: int = 0) -> SimulationRun:
    cfg = load_config(config) if config is not None else None
    return simulate(load_manifests(paths), config=cfg, seed=seed)


def placement(run: SimulationRun) -> dict[str, str | None]:
    """``namespace/name`` → node name (None when pending) for every pod in the cluster."""
    return {
        f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name for p in run.cluster.pods()
    }


def pod(run: SimulationRun, name: str, namespace: str = "default"):
    for p in run.cluster.pods(namespace):
        if p.metadata.name == name:
            return p
    raise AssertionError(f"no pod {namespace}/{name}; pods: {sorted(placement(run))}")


def pods_of(run: SimulationRun, app: str, namespace: str = "default") -> list:
    return [p for p in run.cluster.pods(namespace) if (p.metadata.labels or {}).get("app") == app]


def nodes(run: SimulationRun) -> dict:
    return {n.metadata.name: n for n in run.cluster.objects("Node")}


def diagnosis(run: SimulationRun, p) -> str:
    """The pending pod's diagnosis, checked to be the same in its last attempt, its
    ``PodScheduled`` condition and its last ``FailedScheduling`` event."""
    assert p.spec.node_name is None, f"{p.metadata.name} is on {p.spec.node_name}"
    records = run.attempts.get(p.metadata.uid) or []
    assert records, f"{p.metadata.name} was never attempted"
    last = records[-1]
    assert last.result != "scheduled"
    cond = [c for c in (p.status.conditions or []) if c.type == "PodScheduled"]
    assert len(cond) == 1 and cond[0].status == "False" and cond[0].reason == "Unschedulable"
    events = [
        e
        for e in run.cluster.events
        if e.involved_kind == "Pod"
        and e.involved_name == p.metadata.name
        and e.involved_namespace == p.metadata.namespace
        and e.reason == "FailedScheduling"
    ]
    assert events, f"no FailedScheduling event for {p.metadata.name}"
    assert cond[0].message == last.message == events[-1].message
    return last.message


def assert_deterministic(
    first: SimulationRun, *paths: Path, config: Path | None = None, seed: int = 0
):
    again = run_example(*paths, config=config, seed=seed)
    assert placement(again) == placement(first)


def zone_of(run: SimulationRun, node_name: str, key: str = "zone") -> str:
    return nodes(run)[node_name].metadata.labels[key]


def requested_on(run: SimulationRun, node_name: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for p in run.cluster.pods():
        if p.spec.node_name == node_name:
            total.update(pod_requests(p))
    return dict(total)


def preemption_installed() -> bool:
    return "DefaultPreemption" in default_registry()


# -- every file parses -------------------------------------------------------------------


def _example_files() -> list[Path]:
    return sorted(
        f for f in EXAMPLES.rglob("*") if f.is_file() and f.suffix in (".yaml", ".yml", ".json")
    )


def _kind(path: Path) -> str | None:
    """The kubesched kind of a file that holds no Kubernetes objects, if any."""
    docs = list(yaml.safe_load_all(path.read_text()))
    if (
        path.suffix == ".json"
        and isinstance(docs[0], dict)
        and {"window", "data"} <= docs[0].keys()
    ):
        return "WatcherMetrics"  # load-watcher's node metrics, read by the Trimaran plugins
    for kind in ("KubeSchedulerConfiguration", "Timeline", "DeschedulerPolicy"):
        if any(isinstance(d, dict) and d.get("kind") == kind for d in docs):
            return kind
    return None


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_file_parses(path: Path):
    kind = _kind(path)
    if kind == "KubeSchedulerConfiguration":
        cfg = load_config(path)
        assert cfg.profiles
    elif kind == "Timeline":
        timeline, _ = load_timeline(path)
        assert timeline.spec.steps
    elif kind == "DeschedulerPolicy":
        assert load_policy(str(path)).profiles
    elif kind == "WatcherMetrics":
        assert read_metrics_file(str(path))
    else:
        assert load_manifests([path])


def _manifest_dirs() -> list[Path]:
    """Each directory a README tells the user to pass to ``kubesched simulate``."""
    dirs = [QUICKSTART]
    for scenario in sorted(p for p in DOCS_EXAMPLES.iterdir() if p.is_dir()):
        dirs.append(scenario / "manifests" if (scenario / "manifests").is_dir() else scenario)
    return dirs


@pytest.mark.parametrize("path", _manifest_dirs(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_directory_loads_as_one_path(path: Path):
    """The folder given to ``kubesched simulate`` holds manifests only (no config)."""
    objs = load_manifests([path])
    assert any(o.kind == "Node" for o in objs)
    assert not any(_kind(f) for f in path.rglob("*.yaml"))


def test_every_example_has_a_readme():
    assert (QUICKSTART / "README.md").is_file()
    assert (DOCS_EXAMPLES / "README.md").is_file()
    assert (EXAMPLES / "whatif" / "README.md").is_file()
    assert (EXAMPLES / "capacity" / "README.md").is_file()
    assert (EXAMPLES / "gang-scheduling" / "README.md").is_file()
    assert (EXAMPLES / "deschedule" / "README.md").is_file()
    assert (EXAMPLES / "resilience" / "README.md").is_file()
    for scenario in DOCS_EXAMPLES.iterdir():
        if scenario.is_dir():
            assert (scenario / "README.md").is_file(), scenario


# -- quickstart ---------------------------------------------------------------------------

QUICKSTART_CACHE_MSG = (
    "0/12 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated "
    "taint(s), 9 node(s) didn't match Pod's node affinity/selector. "
    "no new claims to deallocate, preemption: 0/12 nodes "
    "are available: 12 Preemption is not helpful for scheduling."
)
QUICKSTART_REPORT_MSG = (
    "0/12 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated "
    "taint(s), 4 Insufficient memory, 9 Insufficient cpu. "
    "no new claims to deallocate, preemption: not eligible due to "
    "preemptionPolicy=Never."
)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_quickstart(seed: int):
    run = run_example(QUICKSTART, seed=seed)
    assert run.rejections == []
    ns = nodes(run)
    assert len(ns) == 12
    zone = {n: o.metadata.labels["topology.kubernetes.io/zone"] for n, o in ns.items()}
    gpu_nodes = {"gpu-1", "gpu-2"}
    cordoned = "medium-6"
    where = placement(run)

    # The node agent: one per node, on all 12 (GPU and cordoned nodes included).
    agents = pods_of(run, "node-agent", "monitoring")
    assert sorted(p.spec.node_name for p in agents) == sorted(ns)

    # web: 6 pods on 6 different nodes, 2 per zone, none on GPU or cordoned nodes.
    web = [p.spec.node_name for p in pods_of(run, "web", "shop")]
    assert len(web) == 6 and None not in web
    assert len(set(web)) == 6
    assert Counter(zone[n] for n in web) == {"us-east-1a": 2, "us-east-1b": 2, "us-east-1c": 2}
    assert not set(web) & (gpu_nodes | {cordoned})

    # api: 3 pods in the general pool (the medium nodes), not on the cordoned one.
    api = [p.spec.node_name for p in pods_of(run, "api", "shop")]
    assert len(api) == 3 and None not in api
    assert all(ns[n].metadata.labels["pool"] == "general" and n != cordoned for n in api)

    # db: db-0..2, one per zone, on the three SSD medium nodes.
    assert {where[f"shop/db-{i}"] for i in range(3)} == {"medium-1", "medium-2", "medium-3"}

    # batch: all 4 placed, on the small or medium nodes.
    batch = [p.spec.node_name for p in pods_of(run, "batch", "shop")]
    assert len(batch) == 4 and None not in batch
    assert not set(batch) & (gpu_nodes | {cordoned})

    # The GPU job: both pods on the GPU nodes (they tolerate dedicated=gpu:NoSchedule).
    train = [p.spec.node_name for p in pods_of(run, "train", "shop")]
    assert len(train) == 2 and set(train) <= gpu_nodes
    for g in gpu_nodes:
        assert requested_on(run, g).get("nvidia.com/gpu", 0) <= 4

    # Only the node agent runs on the cordoned node and on the GPU nodes besides train.
    assert [n for n in where.values() if n == cordoned] == [cordoned]
    others_on_gpu = [
        k
        for k, n in where.items()
        if n in gpu_nodes and not k.startswith(("monitoring/node-agent-", "shop/train-"))
    ]
    assert others_on_gpu == []

    # Exactly two pods pending, with upstream's diagnoses.
    pending = sorted(k for k, n in where.items() if n is None)
    assert pending == ["shop/cache", "shop/report"]
    assert diagnosis(run, pod(run, "cache", "shop")) == QUICKSTART_CACHE_MSG
    assert diagnosis(run, pod(run, "report", "shop")) == QUICKSTART_REPORT_MSG

    # No node over its allocatable.
    for name, node in ns.items():
        req = requested_on(run, name)
        assert req.get("cpu", 0) <= Quantity(node.status.allocatable["cpu"]).milli_value()

    assert_deterministic(run, QUICKSTART, seed=seed)


def test_quickstart_priorities_from_classes():
    run = run_example(QUICKSTART)
    prio = {p.metadata.name.rsplit("-", 2)[0]: p.spec.priority for p in run.cluster.pods("shop")}
    assert prio["web"] == prio["api"] == 100000
    assert prio["batch"] == 10
    assert prio["cache"] == 1000  # the globalDefault class "standard"
    assert {p.spec.priority for p in pods_of(run, "node-agent", "monitoring")} == {1000}


def test_quickstart_whole_folder_equals_both_subfolders():
    whole = run_example(QUICKSTART)
    parts = run_example(QUICKSTART / "cluster", QUICKSTART / "workload")
    assert placement(whole) == placement(parts)


# -- the scheduling docs: inter-pod affinity --------------------------------------------------


def test_redis_web_colocation():
    """Each web server is co-located with a cache, on three separate nodes."""
    path = DOCS_EXAMPLES / "redis-web-colocation"
    run = run_example(path)
    cache = [p.spec.node_name for p in pods_of(run, "store")]
    web = [p.spec.node_name for p in pods_of(run, "web-store")]
    assert sorted(cache) == ["node-1", "node-2", "node-3"]
    assert sorted(web) == ["node-1", "node-2", "node-3"]
    for node in ("node-1", "node-2", "node-3"):
        on_node = sorted(
            p.metadata.labels["app"] for p in run.cluster.pods() if p.spec.node_name == node
        )
        assert on_node == ["store", "web-store"]
    assert_deterministic(run, path)


# -- the scheduling docs: pod topology spread ----------------------------------------------


def _existing_unmoved(run: SimulationRun, expected: dict[str, str]) -> None:
    for name, node in expected.items():
        assert pod(run, name).spec.node_name == node


def test_topology_spread_one_constraint():
    """The incoming pod can only be placed onto a node in zone B (node3 or node4)."""
    path = DOCS_EXAMPLES / "topology-spread-one-constraint"
    run = run_example(path)
    _existing_unmoved(run, {"existing-1": "node1", "existing-2": "node2", "existing-3": "node3"})
    node = pod(run, "mypod").spec.node_name
    assert node in {"node3", "node4"}
    assert zone_of(run, node) == "zoneB"
    # Between the two, the default scoring prefers the emptier node4 (LeastAllocated and
    # BalancedAllocation count the running pod's default requests on node3).
    assert node == "node4"
    assert_deterministic(run, path)


def test_topology_spread_two_constraints():
    """Zone constraint → zone B; node constraint → node4: the only valid placement is node4."""
    path = DOCS_EXAMPLES / "topology-spread-two-constraints"
    run = run_example(path)
    _existing_unmoved(run, {"existing-1": "node1", "existing-2": "node2", "existing-3": "node3"})
    assert pod(run, "mypod").spec.node_name == "node4"
    for seed in (1, 2, 3):
        assert pod(run_example(path, seed=seed), "mypod").spec.node_name == "node4"


def test_topology_spread_conflicting():
    """Zone constraint → zone B only; node constraint → node2 only; empty intersection:
    mypod stays Pending."""
    path = DOCS_EXAMPLES / "topology-spread-conflicting"
    run = run_example(path)
    assert diagnosis(run, pod(run, "mypod")) == (
        "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    # Every node was rejected by PodTopologySpread.
    last = run.attempts[pod(run, "mypod").metadata.uid][-1]
    assert sorted(last.diagnosis.node_to_status) == ["node1", "node2", "node3"]
    assert {s.plugin for s in last.diagnosis.node_to_status.values()} == {"PodTopologySpread"}
    assert_deterministic(run, path)


def test_topology_spread_node_affinity():
    """zoneC is excluded by node affinity, so mypod goes to zone B instead of zone C."""
    path = DOCS_EXAMPLES / "topology-spread-node-affinity"
    run = run_example(path)
    node = pod(run, "mypod").spec.node_name
    assert node is not None and zone_of(run, node) == "zoneB"
    assert node == "node4"
    assert_deterministic(run, path)


def test_topology_spread_without_node_affinity_would_pick_zone_c():
    """Control for the previous test: without the affinity the empty zone C wins (skew)."""
    objs = load_manifests([DOCS_EXAMPLES / "topology-spread-node-affinity"])
    for o in objs:
        if o.kind == "Pod" and o.metadata.name == "mypod":
            o.spec.affinity = None
    run = simulate(objs, seed=0)
    assert pod(run, "mypod").spec.node_name == "node5"


# -- the scheduling docs: taints and tolerations -------------------------------------------


def test_taints():
    """Two tolerations of three taints: cannot schedule; all three tolerated: fits."""
    path = DOCS_EXAMPLES / "taints"
    run = run_example(path)
    assert pod(run, "all-tolerations").spec.node_name == "node1"
    assert diagnosis(run, pod(run, "two-tolerations")) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/1 nodes "
        "are available: 1 Preemption is not helpful for scheduling."
    )
    last = run.attempts[pod(run, "two-tolerations").metadata.uid][-1]
    assert last.diagnosis.node_to_status["node1"].plugin == "TaintToleration"
    assert_deterministic(run, path)


# -- the scheduling docs: scheduling profiles ----------------------------------------------


def test_two_profiles_added_affinity():
    """foo-scheduler's addedAffinity applies in addition to the pod's own node affinity."""
    base = DOCS_EXAMPLES / "two-profiles"
    run = run_example(base / "manifests", config=base / "scheduler-config.yaml")
    foo_nodes = {"node-1", "node-2"}
    assert pod(run, "foo-1").spec.node_name in foo_nodes
    assert pod(run, "foo-2").spec.node_name in foo_nodes
    assert pod(run, "default-on-node-3").spec.node_name == "node-3"
    assert pod(run, "default-not-foo").spec.node_name in {"node-3", "node-4"}
    profile = {r.pod_key: r.profile for recs in run.attempts.values() for r in recs}
    assert profile["default/foo-1"] == profile["default/foo-on-node-3"] == "foo-scheduler"
    assert profile["default/default-on-node-3"] == "default-scheduler"
    assert diagnosis(run, pod(run, "foo-on-node-3")) == (
        "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't match scheduler-enforced node affinity. "
        "no new claims to deallocate, preemption: 0/4 nodes are "
        "available: 4 Preemption is not helpful for scheduling."
    )
    # A pod naming a scheduler that no profile serves is left alone.
    other = pod(run, "other-scheduler")
    assert other.spec.node_name is None
    assert other.metadata.uid not in run.attempts
    assert_deterministic(run, base / "manifests", config=base / "scheduler-config.yaml")


def test_two_profiles_foo_pods_never_leave_foo_nodes():
    base = DOCS_EXAMPLES / "two-profiles"
    for seed in range(8):
        run = run_example(base / "manifests", config=base / "scheduler-config.yaml", seed=seed)
        assert {pod(run, f"foo-{i}").spec.node_name for i in (1, 2)} <= {"node-1", "node-2"}


# -- the scheduling docs: pod overhead -----------------------------------------------------


def test_pod_overhead():
    """The scheduler looks for a node with 2.25 CPU and 320 MiB: the 2-CPU node does not
    fit (its containers alone would); big-node shows 2250m (56%) CPU and 320Mi (1%)."""
    path = DOCS_EXAMPLES / "pod-overhead"
    run = run_example(path)
    p = pod(run, "test-pod")
    assert {k: str(v) for k, v in p.spec.overhead.items()} == {"cpu": "250m", "memory": "120Mi"}
    assert pod_requests(p) == {"cpu": 2250, "memory": 320 * MiB}
    assert p.spec.node_name == "big-node"
    assert requested_on(run, "big-node") == {"cpu": 2250, "memory": 320 * MiB}
    assert 2250 * 100 // 4000 == 56 and round(320 * MiB * 100 / (32 * GiB)) == 1
    last = run.attempts[p.metadata.uid][-1]
    small = last.diagnosis.node_to_status["small-node"]
    assert small.plugin == "NodeResourcesFit" and small.reasons == ["Insufficient cpu"]
    assert_deterministic(run, path)


# -- the scheduling docs: priority and preemption ------------------------------------------


@pytest.mark.skipif(
    not preemption_installed(), reason="DefaultPreemption plugin is not installed yet"
)
def test_priority_preemption():
    """nginx (high-priority) preempts the cheapest victim — a low-priority pod on node-a,
    the most recently started one — and is scheduled there; the non-preempting pod of the
    same priority stays pending."""
    path = DOCS_EXAMPLES / "priority-preemption"
    run = run_example(path)
    where = placement(run)
    assert where == {
        "default/low-1": "node-a",
        "default/medium-1": "node-b",
        "default/medium-2": "node-b",
        "default/nginx": "node-a",
        "default/nginx-nonpreempting": None,
    }
    nginx = pod(run, "nginx")
    assert nginx.spec.priority == 1000000
    assert any(r.nominated_node == "node-a" for r in run.attempts[nginx.metadata.uid])
    preempted = [e for e in run.cluster.events if e.reason == "Preempted"]
    assert [(e.involved_name, e.message) for e in preempted] == [
        ("low-2", f"Preempted by pod {nginx.metadata.uid} on node node-a")
    ]
    assert diagnosis(run, pod(run, "nginx-nonpreempting")) == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to "
        "preemptionPolicy=Never."
    )
    assert_deterministic(run, path)


# -- the scheduling docs: bin packing ------------------------------------------------------


def _nodes_used(run: SimulationRun) -> Counter[str]:
    placed = [p.spec.node_name for p in pods_of(run, "accel")]
    assert len(placed) == 6 and None not in placed
    return Counter(placed)


@pytest.mark.parametrize("config", ["most-allocated.yaml", "requested-to-capacity-ratio.yaml"])
def test_bin_packing(config: str):
    """With the default (LeastAllocated) scoring the six pods spread over all four nodes;
    with MostAllocated or RequestedToCapacityRatio they pack onto two (4 + 2)."""
    base = DOCS_EXAMPLES / "bin-packing"
    default = _nodes_used(run_example(base / "manifests"))
    assert len(default) == 4
    assert sorted(default.values()) == [1, 1, 2, 2]
    run = run_example(base / "manifests", config=base / config)
    packed = _nodes_used(run)
    assert sorted(packed.values()) == [2, 4]
    assert len(packed) < len(default)
    assert_deterministic(run, base / "manifests", config=base / config)


# -- the CLI, one smoke test per example (when ``kubesched simulate`` exists) ------------------


def _cli_has_simulate() -> bool:
    from kubesched.cli.main import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            build_parser().parse_args(["simulate", str(QUICKSTART)])
    except SystemExit:
        return False
    return True


def _cli_cases() -> list[tuple[str, list[str], Path | None]]:
    """(id, manifest paths, config) of each example's README command."""
    s = DOCS_EXAMPLES
    cases: list[tuple[str, list[Path], Path | None]] = [("quickstart", [QUICKSTART], None)]
    for name in (
        "redis-web-colocation",
        "topology-spread-one-constraint",
        "topology-spread-two-constraints",
        "topology-spread-conflicting",
        "topology-spread-node-affinity",
        "taints",
        "pod-overhead",
        "priority-preemption",
    ):
        cases.append((name, [s / name], None))
    cases.append(
        ("two-profiles", [s / "two-profiles/manifests"], s / "two-profiles/scheduler-config.yaml")
    )
    cases.append(("bin-packing-default", [s / "bin-packing/manifests"], None))
    cases.append(
        (
            "bin-packing-most-allocated",
            [s / "bin-packing/manifests"],
            s / "bin-packing/most-allocated.yaml",
        )
    )
    cases.append(
        (
            "bin-packing-requested-to-capacity-ratio",
            [s / "bin-packing/manifests"],
            s / "bin-packing/requested-to-capacity-ratio.yaml",
        )
    )
    return cases


@pytest.mark.parametrize("case", _cli_cases(), ids=lambda c: c[0])
def test_cli_smoke(case):
    """``kubesched simulate ... --output json`` runs the example, exits 0 and reports the
    same placement and diagnoses as the Python API."""
    if not _cli_has_simulate():
        pytest.skip("`kubesched simulate` is not available yet")
    from kubesched.cli.main import main

    _, paths, config = case
    argv = ["simulate", *map(str, paths), "--seed", "0", "--output", "json", "--no-progress"]
    if config is not None:
        argv += ["--config", str(config)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["schemaVersion"] == "kubesched.io/simulation/v1"
    gone = {"preempted", "deleted"}  # reported, but no longer in the cluster
    reported = {
        f"{p['namespace']}/{p['name']}": p["node"] for p in doc["pods"] if p["result"] not in gone
    }
    run = run_example(*paths, config=config, seed=0)
    assert reported == placement(run)
    for entry in doc["pods"]:
        if entry["node"] is None:
            p = pod(run, entry["name"], entry["namespace"])
            records = run.attempts.get(p.metadata.uid)
            if records:
                assert entry["result"] == "pending"
                assert entry["message"] == records[-1].message, entry["name"]
            else:  # never attempted: a scheduler no profile serves
                assert entry["served"] is False
    if case[0] == "priority-preemption":
        victims = [
            (p["name"], p["node"], p["preemptedBy"]) for p in doc["pods"] if p["result"] in gone
        ]
        assert victims == [("low-2", "node-a", "default/nginx")]


# -- stateful-zonal ----------------------------------------------------------------------

STATEFUL = EXAMPLES / "stateful-zonal"
ZONE_KEY = "topology.kubernetes.io/zone"


def test_stateful_zonal_provisions_each_claim_in_its_pods_zone() -> None:
    run = run_example(STATEFUL, seed=1)
    zones = {name: n.metadata.labels[ZONE_KEY] for name, n in nodes(run).items()}
    db = sorted(pods_of(run, "db"), key=lambda p: int(p.metadata.name.rsplit("-", 1)[1]))
    assert len(db) == 6 and all(p.spec.node_name for p in db)
    per_zone = Counter(zones[p.spec.node_name] for p in db)
    # Zone c has room for one 20Gi disk; the spread puts the first three in three zones.
    assert per_zone["eu-west-1c"] == 1
    assert len({zones[p.spec.node_name] for p in db[:3]}) == 3
    for p in db:
        claim = run.cluster.get("PersistentVolumeClaim", "default", f"data-{p.metadata.name}")
        assert claim.status.phase == "Bound"
        assert claim.metadata.annotations["volume.kubernetes.io/selected-node"] == p.spec.node_name
        volume = run.cluster.get("PersistentVolume", None, claim.spec.volume_name)
        assert volume.spec.claim_ref.name == claim.metadata.name
        (term,) = volume.spec.node_affinity.required.node_selector_terms
        assert [(r.key, r.values) for r in term.match_expressions] == [
            (ZONE_KEY, [zones[p.spec.node_name]])
        ]
    # At most two of the driver's volumes per node (CSINode allocatable.count).
    assert max(Counter(p.spec.node_name for p in db).values()) <= 2
    left = {c.metadata.name: c.capacity.value() for c in run.cluster.objects("CSIStorageCapacity")}
    assert left == {"zonal-ssd-a": 60 * GiB, "zonal-ssd-b": 40 * GiB, "zonal-ssd-c": 5 * GiB}
    assert placement(run) == placement(run_example(STATEFUL, seed=1))


def test_stateful_zonal_reports_claims_and_the_storage_diagnosis() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main_cli(["simulate", str(STATEFUL), "--seed", "1", "--output", "json"])
    assert code == 0
    report = json.loads(out.getvalue())
    pods = {p["name"]: p for p in report["pods"]}
    claims = pods["db-0"]["claims"]
    assert [(c["name"], c["phase"], c["provisioned"], c["storageClass"]) for c in claims] == [
        ("data-db-0", "Bound", True, "zonal-ssd")
    ]
    assert claims[0]["selectedNode"] == pods["db-0"]["node"]
    assert claims[0]["topology"][0].startswith("topology.kubernetes.io/zone in (eu-west-1")
    # A replica placed after zone c filled up saw its nodes rejected for lack of storage.
    rejected = {
        (f["node"], tuple(f["reasons"]))
        for p in report["pods"]
        for f in p["filters"]
        if f["plugin"] == "VolumeBinding"
    }
    assert ("node-3", ("node(s) did not have enough free storage",)) in rejected


# -- gang-scheduling ---------------------------------------------------------------------

GANG = EXAMPLES / "gang-scheduling"
TOO_BIG = (
    "0/4 nodes are available: 4 Insufficient cpu. no new claims to deallocate, preemption: "
    "0/4 nodes are available: 4 No preemption victims found for incoming pod."
)


def _gang_pods(*gates: str) -> dict[str, dict]:
    argv = ["simulate", str(GANG), "--seed", "0", "--output", "json", "--no-progress", *gates]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main_cli(argv)
    assert code == 0, err.getvalue()
    return {p["name"]: p for p in json.loads(out.getvalue())["pods"]}


def test_gang_scheduling_as_its_readme_says() -> None:
    pods = _gang_pods("--feature-gates", "GenericWorkload=true,GangScheduling=true")
    assert all(pods[f"train-{i}"]["node"] for i in range(4))
    assert all(pods[f"web-{i}"]["node"] for i in range(2))
    for i in range(5):
        assert pods[f"too-big-{i}"]["node"] is None
        assert pods[f"too-big-{i}"]["message"] == TOO_BIG
    for i in range(2):
        assert pods[f"eval-{i}"]["node"] is None
        assert pods[f"eval-{i}"]["message"].startswith("never tried: a PreEnqueue plugin")


def test_gang_scheduling_without_its_gates_binds_pods_one_by_one() -> None:
    pods = _gang_pods()
    assert all(pods[f"eval-{i}"]["node"] for i in range(2))
    # As many as fit beside the others (no node has room for a fifth 4-CPU pod).
    assert 0 < sum(pods[f"too-big-{i}"]["node"] is not None for i in range(5)) < 5


# -- dra-taint-rule ----------------------------------------------------------------------

DRA_TAINT_RULE = EXAMPLES / "dra-taint-rule"


@pytest.mark.parametrize(
    ("gates", "on_gpu_0", "on_gpu_1", "pending"),
    [(("--feature-gates", "DRADeviceTaintRules=true"), 2, 1, 1), ((), 2, 2, 0)],
    ids=["gate-on-drains-gpu-1", "gate-off-rule-ignored"],
)
def test_dra_taint_rule_as_its_readme_says(
    gates: tuple[str, ...], on_gpu_0: int, on_gpu_1: int, pending: int
) -> None:
    code, out, err = _simulate_cli(str(DRA_TAINT_RULE), *gates, "--output", "json")
    assert code == 0, err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    assert pods["burn-in"]["node"] == "gpu-1"
    nodes = [p["node"] for p in pods.values()]
    assert (nodes.count("gpu-0"), nodes.count("gpu-1"), nodes.count(None)) == (
        on_gpu_0,
        on_gpu_1,
        pending,
    )
    if pending:
        (waiting,) = [p for p in pods.values() if p["node"] is None]
        assert waiting["name"].startswith("train-")
        assert waiting["message"].startswith(
            "0/2 nodes are available: 2 cannot allocate all claims."
        )
    ignored = "notice: DeviceTaintRule drain-gpu-1: ignored:"
    assert (ignored in err) is (not gates)


# -- dra-fabric --------------------------------------------------------------------------

DRA_FABRIC = EXAMPLES / "dra-fabric"
SCRATCH_EVICTION = (
    "DeletionByDeviceTaintManager: NoExecute taint example.com/ecc-errors=true:NoExecute of "
    "device gpu.example.com/local-0/gpu-0 (claim scratch-gpu) tolerated for 60s"
)


def _simulate_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main_cli(["simulate", *argv, "--seed", "0", "--no-progress"])
    return code, out.getvalue(), err.getvalue()


def test_dra_fabric_as_its_readme_says() -> None:
    code, out, err = _simulate_cli(str(DRA_FABRIC), "--output", "json")
    assert code == 0, err
    doc = json.loads(out)
    pods = {p["name"]: p for p in doc["pods"]}
    bound = {
        name: (p["node"], p["history"][-1]["finishedAt"], p["result"]) for name, p in pods.items()
    }
    assert bound == {
        "web": ("local-0", 0.0, "scheduled"),
        "scratch": ("local-0", 0.0, "evicted"),
        "infer-0": ("fabric-0", 30.0, "scheduled"),
        "infer-1": ("fabric-0", 30.0, "scheduled"),
    }
    assert doc["virtualTimeSeconds"] == 70.0
    (eviction,) = doc["evictions"]
    assert {k: eviction[k] for k in ("time", "pod", "node", "by", "reason", "message")} == {
        "time": 60.0,
        "pod": "default/scratch",
        "node": "local-0",
        "by": "device-taint-manager",
        "reason": SCRATCH_EVICTION,
        "message": "Device Taint manager: deleting due to NoExecute taint",
    }
    assert eviction["details"] == {
        "conditionReason": "DeletionByDeviceTaintManager",
        "claim": "scratch-gpu",
        "device": "gpu.example.com/local-0/gpu-0",
        "taint": "example.com/ecc-errors=true:NoExecute",
        "tolerationSeconds": 60,
    }
    assert pods["scratch"]["eviction"]["by"] == "device-taint-manager"
    assert [s["evicted"] for s in doc["summary"]] == [1]


def test_dra_fabric_text_lists_the_device_taint_eviction() -> None:
    code, out, err = _simulate_cli(str(DRA_FABRIC))
    assert code == 0, err
    assert "Evictions (1)" in out
    assert f"60s default/scratch from local-0 by device-taint-manager: {SCRATCH_EVICTION}" in (
        " ".join(out.split())
    )
    code, out, err = _simulate_cli(str(DRA_FABRIC), "--explain", "default/scratch")
    assert code == 0, err
    text = " ".join(out.split())
    assert (
        "Evicted at 60s from node local-0 by the device taint manager "
        "(a NoExecute taint of a DRA device)"
    ) in text
    assert f"why: {SCRATCH_EVICTION}" in text
    assert "message: Device Taint manager: deleting due to NoExecute taint" in text


def test_dra_fabric_eviction_counts_in_its_timeline_step(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.yaml"
    timeline.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubesched.io/v1alpha1",
                "kind": "Timeline",
                "metadata": {"name": "bad-gpu"},
                "spec": {
                    "steps": [
                        {"at": "20s", "action": "cordon", "nodes": ["local-0"]},
                        {"at": "45s", "action": "uncordon", "nodes": ["local-0"]},
                    ]
                },
            }
        )
    )
    code, out, err = _simulate_cli(str(DRA_FABRIC), "--timeline", str(timeline), "--output", "json")
    assert code == 0, err
    steps = json.loads(out)["timeline"]["steps"]
    assert [(s["at"], s["scheduled"], s["evicted"], s["evictedBy"]) for s in steps] == [
        (20.0, 2, [], {}),
        (45.0, 0, ["default/scratch"], {"device-taint-manager": 1}),
    ]
