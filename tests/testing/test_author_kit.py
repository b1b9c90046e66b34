"""kubesched.testing as a plugin author uses it for upstream-style tables: FilterRun, ScoreRun,
skip sets, manifests, Handle fakes and preemption from the outside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched import (
    Code,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    Status,
    UserInputError,
    hookimpl,
)
from kubesched.api import Namespace, Node, Pod, PodDisruptionBudget
from kubesched.testing import (
    RecordingClient,
    RecordingEventRecorder,
    assert_batch_matches_per_node,
    assert_statuses,
    dry_run_preemption,
    dry_run_preemption_each_offset,
    framework_for,
    make_framework,
    make_node,
    make_pod,
    objects_from,
    run_filter,
    run_score,
    static_lister,
)

HOST = "kubernetes.io/hostname"


class Picky:
    """PreFilter skips pods labelled ``skip``, narrows to ``only``, rejects ``reject``;
    Filter wants the ``ok`` label; ``filter_nodes`` is buggy on node ``liar``."""

    name = "Picky"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def pre_filter(self, pod) -> PreFilterResult | Status | None:
        labels = pod.metadata.labels
        if "skip" in labels:
            return Status(Code.SKIP)
        if "reject" in labels:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "rejected at PreFilter")
        if "only" in labels:
            return PreFilterResult(frozenset({labels["only"]}))
        return None

    @hookimpl
    def filter(self, node_info: NodeInfo) -> Status | None:
        if "ok" not in node_info.node.metadata.labels:
            return Status(Code.UNSCHEDULABLE, "not ok")
        return None

    @hookimpl
    def filter_nodes(self, nodes) -> list[Status | None]:
        return [
            None if ni.name == "liar" else self.filter(ni)  # the bug
            for ni in nodes.infos
        ]


NODES = [make_node("a").labels(ok="1"), make_node("b"), make_node("c").labels(ok="1")]


@pytest.mark.parametrize(
    ("labels", "pre_code", "skipped", "node_names", "per_node", "mapping"),
    [
        (
            {},
            Code.SUCCESS,
            set(),
            None,
            {"a": None, "b": "not ok", "c": None},
            {"a": None, "b": "not ok", "c": None},
        ),
        (
            {"skip": "1"},
            Code.SUCCESS,
            {"Picky"},
            None,
            {"a": None, "b": None, "c": None},
            {"a": None, "b": None, "c": None},
        ),
        (
            {"only": "b"},
            Code.SUCCESS,
            set(),
            {"b"},
            {"b": "not ok"},
            {
                "a": (
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    "node(s) didn't satisfy plugin(s) [Picky]",
                ),
                "b": "not ok",
                "c": (
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    "node(s) didn't satisfy plugin(s) [Picky]",
                ),
            },
        ),
        (
            {"reject": "1"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            set(),
            None,
            {},
            dict.fromkeys("abc", "rejected at PreFilter"),
        ),
    ],
    ids=["filter", "prefilter-skip", "prefilter-narrows", "prefilter-rejects"],
)
def test_run_filter_shows_what_pre_filter_did(
    labels, pre_code, skipped, node_names, per_node, mapping
) -> None:
    run = run_filter(make_framework(Picky), make_pod("p").labels(labels), NODES)
    assert run.pre_filter.code is pre_code
    assert run.skipped == skipped
    assert run.node_names == (None if node_names is None else frozenset(node_names))
    assert_statuses(run.per_node, per_node)
    assert_statuses(run.batch, per_node)
    assert_statuses(run, mapping)


def test_run_filter_fails_when_the_batch_path_disagrees() -> None:
    nodes = [*NODES, make_node("liar")]
    with pytest.raises(AssertionError, match=r"liar: filter .*not ok.*, batch Status\(Success\)"):
        run_filter(make_framework(Picky), make_pod("p"), nodes)


class Spread:
    """Score: the node's ``w`` label; PreScore skips pods labelled ``skip``; PreFilter
    rejects pods labelled ``reject``."""

    name = "Spread"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def pre_filter(self, pod) -> Status | None:
        if "reject" in pod.metadata.labels:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no")
        return None

    @hookimpl
    def pre_score(self, pod, nodes) -> Status | None:
        return Status(Code.SKIP) if "skip" in pod.metadata.labels else None

    @hookimpl
    def score(self, node_info: NodeInfo) -> int:
        return int(node_info.node.metadata.labels.get("w", "0"))


WEIGHTED = [make_node(n).labels(w=str(i * 10)) for i, n in enumerate("abcd")]


@pytest.mark.parametrize(
    ("labels", "kwargs", "expected", "skipped"),
    [
        ({}, {}, {"a": 0, "b": 10, "c": 20, "d": 30}, False),
        ({}, {"feasible": ["b", "d"]}, {"b": 10, "d": 30}, False),
        ({}, {"feasible": []}, {}, False),
        ({"skip": "1"}, {}, {}, True),
        ({"reject": "1"}, {"pre_filter": False}, {"a": 0, "b": 10, "c": 20, "d": 30}, False),
    ],
    ids=["all-nodes", "feasible-subset", "no-feasible-node", "skipped", "without-prefilter"],
)
def test_run_score_on_feasible_nodes_and_says_skipped(labels, kwargs, expected, skipped) -> None:
    fw = make_framework(Spread)
    scores = run_score(fw, make_pod("p").labels(labels), WEIGHTED, raw=True, **kwargs)
    assert dict(scores) == expected
    assert scores.skipped is skipped
    assert scores.skipped_plugins == ({"Spread"} if skipped else set())


def test_run_score_refuses_feasible_nodes_outside_the_snapshot() -> None:
    with pytest.raises(KeyError, match="'z'"):
        run_score(make_framework(Spread), make_pod("p"), WEIGHTED, feasible=["a", "z"])


# -- assert_batch_matches_per_node honours the skip sets ------------------------------------


def _zone_nodes() -> list:
    return [
        make_node(f"n{i}").labels({HOST: f"n{i}", "zone": f"z{i % 2}"}).capacity(cpu="4", pods=20)
        for i in range(4)
    ]


EXISTING = [
    make_pod("web-0").labels(app="web").node("n0"),
    make_pod("db-0").labels(app="db").node("n1"),
]


@pytest.mark.parametrize(
    ("plugin", "pod", "compared"),
    [
        ("InterPodAffinity", make_pod("plain"), ()),
        (
            "InterPodAffinity",
            make_pod("anti").labels(app="web").pod_anti_affinity(HOST, {"app": "web"}),
            ("filter_nodes",),
        ),
        ("PodTopologySpread", make_pod("plain"), ()),
        (
            "PodTopologySpread",
            make_pod("spread")
            .labels(app="web")
            .spread_constraint(1, "zone", selector={"app": "web"}),
            ("filter_nodes",),
        ),
        (
            "PodTopologySpread",
            make_pod("soft")
            .labels(app="web")
            .spread_constraint(1, "zone", "ScheduleAnyway", selector={"app": "web"}),
            ("score_nodes",),
        ),
    ],
    ids=[
        "ipa-skips",
        "ipa-anti-affinity",
        "pts-skips",
        "pts-hard-constraint",
        "pts-soft-constraint",
    ],
)
def test_assert_batch_matches_per_node_on_skipping_plugins(plugin, pod, compared) -> None:
    fw = framework_for(plugin)
    got = assert_batch_matches_per_node(fw, plugin, pod, _zone_nodes(), pods=EXISTING)
    assert got == compared


# -- objects from manifests ----------------------------------------------------------------

NODE_YAML = """
apiVersion: v1
kind: Node
metadata: {name: from-yaml, labels: {ok: "1"}}
---
apiVersion: v1
kind: Node
metadata: {name: second}
"""


def test_objects_from_manifests_of_every_shape(tmp_path: Path) -> None:
    path = tmp_path / "ns.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n")
    objs = objects_from(
        NODE_YAML,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
        path,
        [make_node("built")],
    )
    assert [(type(o).__name__, o.metadata.name) for o in objs] == [
        ("Node", "from-yaml"),
        ("Node", "second"),
        ("Pod", "p"),
        ("Namespace", "prod"),
        ("Node", "built"),
    ]


def test_run_filter_takes_manifests() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    run = run_filter(make_framework(Picky), pod, NODE_YAML)
    assert_statuses(run, {"from-yaml": None, "second": "not ok"})


def test_invalid_manifest_names_the_field() -> None:
    with pytest.raises(UserInputError) as err:
        objects_from({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": 3}})
    assert err.value.path == "metadata.labels"


# -- Handle fakes and preemption -----------------------------------------------------------


def _node(name: str):
    return make_node(name).capacity(cpu="2", memory="8Gi", pods=10).labels({HOST: name})


def _pod(name: str, prio: int, node: str | None = None, **labels: str):
    b = make_pod(name).uid(name).priority(prio).req(cpu="1").labels(labels)
    return b.node(node).start_time("2026-01-01T00:00:00Z") if node else b


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "keep-db", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "db"}}},
    "status": {"disruptionsAllowed": 0},
}
VICTIMS = [
    _pod("db-a", 1, "a", app="db"),
    _pod("web-a", 3, "a", app="web"),
    _pod("web-b1", 1, "b", app="web"),
    _pod("web-b2", 2, "b", app="web"),
    _pod("high-c", 100, "c"),
    _pod("high-c2", 100, "c"),
]


def _preemption_framework(client=None, recorder=None) -> Any:
    from kubesched_builtin.defaultpreemption import DefaultPreemption
    from kubesched_builtin.noderesources.fit import NodeResourcesFit

    return make_framework(
        NodeResourcesFit,
        DefaultPreemption,
        lister=static_lister(
            PDB, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        ),
        client=client,
        event_recorder=recorder,
    )


def test_static_lister_serves_any_kind_from_manifests() -> None:
    lister = static_lister(PDB, Namespace.model_validate({"metadata": {"name": "prod"}}))
    assert [p.metadata.name for p in lister.list_pod_disruption_budgets("default")] == ["keep-db"]
    assert isinstance(lister.list_objects("PodDisruptionBudget")[0], PodDisruptionBudget)
    assert lister.get_namespace("prod") is not None


def test_static_lister_lists_pods_by_label() -> None:
    def labelled(name: str, namespace: str, labels: dict[str, str]) -> dict:
        meta = {"name": name, "namespace": namespace, "labels": labels}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }

    lister = static_lister(
        labelled("web-b", "default", {"group": "web"}),
        labelled("web-a", "default", {"group": "web"}),
        labelled("db", "default", {"group": "db"}),
        labelled("web-x", "prod", {"group": "web"}),
    )
    names = [p.metadata.name for p in lister.list_pods_with_label("default", "group", "web")]
    assert names == ["web-a", "web-b"]  # sorted by key, other namespaces left out
    assert lister.list_pods_with_label("default", "group", "none") == []


@pytest.mark.parametrize(
    ("offset", "expected_candidates", "chosen"),
    [
        (0, {"a": ["default/web-a"], "b": ["default/web-b1"]}, "b"),
        (1, {"b": ["default/web-b1"], "a": ["default/web-a"]}, "b"),
        (2, {"a": ["default/web-a"], "b": ["default/web-b1"]}, "b"),
    ],
    ids=["offset-0", "offset-1", "offset-2-wraps"],
)
def test_dry_run_preemption_with_a_fixed_offset(offset, expected_candidates, chosen) -> None:
    fw = _preemption_framework()
    run = dry_run_preemption(
        fw, _pod("urgent", 10), [_node("a"), _node("b"), _node("c")], pods=VICTIMS, offset=offset
    )
    assert run.potential == ["a", "b", "c"]  # Filter said Insufficient cpu on each
    assert run.victims == expected_candidates
    assert list(run.victims) == (["b", "a"] if offset == 1 else ["a", "b"])
    # a's victim is web-a (db-a is reprieved first: its PDB allows no disruption); b's
    # victim web-b1 has the lower priority.
    assert run.chosen is not None and run.chosen.name == chosen
    assert run.decided_by == "lowest highest-priority victim"
    # Three candidates wanted (the minimum of 100, capped at 3 nodes): c is tried too.
    assert {n: s.message() for n, s in run.statuses.items()} == {
        "c": "No preemption victims found for incoming pod"
    }


def test_dry_run_preemption_every_offset_agrees_on_the_choice() -> None:
    fw = _preemption_framework()
    runs = dry_run_preemption_each_offset(
        fw, _pod("urgent", 10), [_node("a"), _node("b"), _node("c")], pods=VICTIMS
    )
    assert [r.offset for r in runs] == [0, 1, 2]
    assert {r.chosen.name for r in runs if r.chosen} == {"b"}


@pytest.mark.parametrize(
    ("node_statuses", "absent_status", "potential"),
    [
        ({"a": Code.UNSCHEDULABLE}, None, ["a"]),
        ({"a": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}, Status(Code.UNSCHEDULABLE), ["b", "c"]),
        ({}, None, []),
    ],
    ids=["only-a", "absent-nodes-unschedulable", "nothing-potential"],
)
def test_dry_run_preemption_with_given_node_statuses(
    node_statuses, absent_status, potential
) -> None:
    fw = _preemption_framework()
    run = dry_run_preemption(
        fw,
        _pod("urgent", 10),
        [_node("a"), _node("b"), _node("c")],
        pods=VICTIMS,
        node_statuses=node_statuses,
        absent_status=absent_status,
    )
    assert run.potential == potential
    if "c" in potential:
        assert "c" in run.statuses  # tried, and no victims make room on it


def test_recording_client_and_recorder_see_the_preemption() -> None:
    client, recorder = RecordingClient(), RecordingEventRecorder()
    fw = _preemption_framework(client, recorder)
    nodes = [_node("a"), _node("b"), _node("c")]
    statuses = run_filter(fw, _pod("urgent", 10), nodes, pods=VICTIMS)
    preemptor = PodInfo(_pod("urgent", 10).obj())
    result = fw.run_post_filter_plugins(statuses.state, preemptor, dict(statuses))
    assert result[0] is not None and result[0].nominated_node_name == "b"
    assert [c.pod for c in client.of("delete_pod")] == ["default/web-b1"]
    assert client.of("update_pod_status")[0].condition.type == "DisruptionTarget"
    assert [(e.object, e.reason) for e in recorder.events] == [("Pod default/web-b1", "Preempted")]


def test_recording_client_raises_not_found_for_missing_pods() -> None:
    from kubesched import NotFoundError

    client = RecordingClient(missing={"default/gone"})
    with pytest.raises(NotFoundError):
        client.delete_pod(make_pod("gone").obj())
    client.bind(make_pod("here").obj(), "n")
    assert [(c.method, c.pod, c.node) for c in client.calls] == [("bind", "default/here", "n")]


def test_objects_are_the_api_types() -> None:
    objs = objects_from(NODE_YAML)
    assert all(isinstance(o, Node) for o in objs)
    assert isinstance(objects_from(make_pod("p"))[0], Pod)
