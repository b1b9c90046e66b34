"""kubesched.testing: the helpers, the assertions and the pytest fixtures plugin authors use."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kubesched import Code, NodeInfo, PodInfo, PreFilterResult, Status, hookimpl
from kubesched.testing import (
    ExtensionPointError,
    assert_batch_matches_per_node,
    assert_scores,
    assert_statuses,
    make_framework,
    make_node,
    make_pod,
    placements,
    profile_framework,
    run_filter,
    run_score,
)

ERR = "node(s) had no gate label"


class Gate:
    """Filter: nodes need the ``gate`` label; PreFilter narrows to ``only`` if asked."""

    name = "Gate"

    def __init__(self, args: Any, handle: Any) -> None:
        self.events: list[tuple[str, str, str]] = []

    @hookimpl
    def pre_filter(self, pod, nodes) -> PreFilterResult | Status | None:
        only = pod.metadata.annotations.get("only")
        if only == "none":
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod wants no node")
        return PreFilterResult(frozenset({only})) if only else None

    @hookimpl
    def filter(self, node_info: NodeInfo) -> Status | None:
        if "gate" not in node_info.node.metadata.labels:
            return Status(Code.UNSCHEDULABLE, ERR)
        return None

    @hookimpl
    def pre_bind(self, pod_info: PodInfo, node_name: str) -> Status | None:
        self.events.append(("pre_bind", pod_info.key, node_name))
        return None

    @hookimpl
    def post_bind(self, pod_info: PodInfo, node_name: str) -> None:
        self.events.append(("post_bind", pod_info.key, node_name))


class Weight:
    """Score: the ``weight`` label; a buggy ``score_nodes`` when ``buggy`` is set."""

    name = "Weight"
    buggy = False

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def score(self, node_info: NodeInfo) -> int:
        return int(node_info.node.metadata.labels.get("weight", "0"))

    @hookimpl
    def score_nodes(self, nodes) -> list[int]:
        out = [self.score(ni) for ni in nodes.infos]
        return [v + 1 for v in out] if self.buggy else out


NODES = [
    make_node("a").labels(gate="1", weight="2"),
    make_node("b"),
    make_node("c").labels(gate=""),
]


def test_run_filter_returns_each_nodes_status() -> None:
    statuses = run_filter(make_framework(Gate), make_pod("p"), NODES)
    assert_statuses(statuses, {"a": None, "b": (Code.UNSCHEDULABLE, ERR), "c": Code.SUCCESS})
    assert statuses["b"].plugin == "Gate"


def test_run_filter_applies_pre_filter_narrowing_and_rejection() -> None:
    fw = make_framework(Gate)
    narrowed = run_filter(fw, make_pod("p").annotations({"only": "c"}), NODES)
    assert_statuses(
        narrowed,
        {"a": Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "b": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
         "c": None},
    )  # fmt: skip
    rejected = run_filter(fw, make_pod("p").annotations({"only": "none"}), NODES)
    assert_statuses(rejected, dict.fromkeys("abc", "pod wants no node"))


def test_assert_statuses_prints_a_table_of_the_differences() -> None:
    statuses = run_filter(make_framework(Gate), make_pod("p"), NODES)
    with pytest.raises(AssertionError) as err:
        assert_statuses(statuses, {"a": None, "b": None, "c": "other", "d": None})
    text = str(err.value)
    assert text.splitlines()[0] == "statuses differ on 3 of 4 node(s):"
    assert re.search(rf"✗ b +Success +Unschedulable: {re.escape(ERR)} \[Gate\]", text)
    assert "  a     Success" in text
    assert "✗ d" in text and "(missing)" in text


def test_run_score_and_assert_scores() -> None:
    fw = make_framework(Weight)
    nodes = [make_node("a").labels(weight="1"), make_node("b").labels(weight="4")]
    assert run_score(fw, make_pod("p"), nodes, raw=True) == {"a": 1, "b": 4}
    assert_scores(run_score(fw, make_pod("p"), nodes), {"a": 1, "b": 4})
    with pytest.raises(AssertionError, match=r"✗ b +5 +4 \(-1\)"):
        assert_scores({"a": 1, "b": 4}, {"a": 1, "b": 5})
    assert_scores({"a": 1, "b": 4}, {"a": 1, "b": 5}, tolerance=1)


def test_run_score_with_weights_and_errors() -> None:
    class Tilt(Weight):
        name = "Tilt"

        @hookimpl
        def score(self, node_info: NodeInfo) -> int:
            return 200  # outside 0..100 and no normalize_score: an error

    fw = make_framework(Weight, weights={"Weight": 3})
    nodes = [make_node("a").labels(weight="10"), make_node("b").labels(weight="20")]
    assert run_score(fw, make_pod("p"), nodes, plugin="Weight") == {"a": 10, "b": 20}
    with pytest.raises(ExtensionPointError, match="invalid score 200"):
        run_score(make_framework(Tilt), make_pod("p"), nodes)


def test_run_score_totals_of_a_default_profile() -> None:
    fw = profile_framework()
    nodes = [make_node("small").capacity(cpu="2", memory="4Gi"),
             make_node("big").capacity(cpu="16", memory="64Gi")]  # fmt: skip
    totals = run_score(fw, make_pod("p").req(cpu="1", memory="1Gi"), nodes)
    assert totals["big"] > totals["small"]


def test_assert_batch_matches_per_node() -> None:
    nodes = [make_node(n).labels(weight=str(i)) for i, n in enumerate("abcd")]
    assert_batch_matches_per_node(make_framework(Weight), "Weight", make_pod("p"), nodes)

    class Buggy(Weight):
        name = "Buggy"
        buggy = True

    with pytest.raises(AssertionError, match="Buggy: score_nodes disagrees with score"):
        assert_batch_matches_per_node(make_framework(Buggy), "Buggy", make_pod("p"), nodes)
    with pytest.raises(AssertionError, match="neither filter_nodes nor score_nodes"):
        assert_batch_matches_per_node(make_framework(Gate), "Gate", make_pod("p"), nodes)


def test_binding_cycle_hooks_run_through_the_runtime() -> None:
    fw = make_framework(Gate)
    state, pi = fw.new_cycle_state(), PodInfo(make_pod("p").obj())
    assert fw.run_pre_bind_plugins(state, pi, "a").is_success()
    fw.run_post_bind_plugins(state, pi, "a")
    assert fw.plugin("Gate").events == [
        ("pre_bind", "default/p", "a"),
        ("post_bind", "default/p", "a"),
    ]


# -- the pytest plugin's fixtures (registered by kubesched's pytest11 entry point) --------


def test_fixtures_come_from_the_kubesched_pytest_plugin(request) -> None:
    plugin = request.config.pluginmanager.get_plugin("kubesched")
    assert plugin is not None and plugin.__name__ == "kubesched.testing.pytest_plugin"


def test_framework_for_an_installed_plugin_by_name(framework_for) -> None:
    fw = framework_for("TaintToleration")
    statuses = run_filter(fw, make_pod("p"), [make_node("a"), make_node("b").taint("k", "v")])
    assert_statuses(statuses, {"a": None, "b": "node(s) had untolerated taint(s)"})
    with pytest.raises(LookupError, match="'Nope' is not installed"):
        framework_for("Nope")


def test_framework_for_with_args(framework_for) -> None:
    fw = framework_for("NodeResourcesFit", args={"scoringStrategy": {"type": "MostAllocated"}})
    nodes = [make_node("small").capacity(cpu="2", memory="4Gi"),
             make_node("big").capacity(cpu="16", memory="64Gi")]  # fmt: skip
    scores = run_score(fw, make_pod("p").req(cpu="1", memory="1Gi"), nodes)
    assert scores["small"] > scores["big"]


def test_embedded_cluster_and_snapshot(embedded_cluster, fake_clock, snapshot) -> None:
    embedded_cluster.apply([make_node("n").obj(), make_pod("p").obj()])
    assert [p.metadata.name for p in embedded_cluster.pods()] == ["p"]
    assert embedded_cluster.now() == fake_clock.now() == 0.0
    snap = snapshot([make_node("a"), make_node("b")], pods=[make_pod("x").node("a")])
    assert [len(ni.pods) for ni in snap.list()] == [1, 0]


def test_simulate_small(simulate_small) -> None:
    run = simulate_small(*(make_pod(f"p{i}").req(cpu="3") for i in range(4)), nodes=3)
    where = placements(run)
    assert sorted(n for n in where.values() if n) == ["node-0", "node-1", "node-2"]
    assert list(where.values()).count(None) == 1
