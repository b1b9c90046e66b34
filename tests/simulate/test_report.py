"""build_report: counts, per-pod explanations consistent with the records, node totals."""

from __future__ import annotations

import pytest

from kubesched.api import pod_requests
from kubesched.errors import UserInputError
from kubesched.simulate import (
    SCHEMA_VERSION,
    SimulationReport,
    build_report,
    build_report_data,
    simulate,
)


@pytest.fixture
def run(example_objects):
    return simulate(example_objects, seed=1)


@pytest.fixture
def report(run, example_objects) -> SimulationReport:
    return build_report(run, objects=example_objects)


def test_header(report: SimulationReport) -> None:
    assert report.schema_version == SCHEMA_VERSION
    assert report.seed == 1
    assert report.profiles == ["default-scheduler"]


def test_results(report: SimulationReport) -> None:
    results = {p.key: p.result for p in report.pods}
    assert results["default/batch"] == "scheduled"
    assert results["default/too-big"] == "pending"
    assert results["default/typo"] == "rejected"
    assert results["default/elsewhere"] == "pending"
    web = [p for p in report.pods if p.labels.get("app") == "web"]
    assert len(web) == 5 and all(p.result == "scheduled" and p.node for p in web)


def test_summary_counts_the_pods(report: SimulationReport) -> None:
    rows = {row.profile: row for row in report.summary}
    default = rows["default-scheduler"]
    assert (default.scheduled, default.pending, default.rejected) == (6, 1, 1)
    ours = [p for p in report.pods if p.profile == "default-scheduler"]
    assert default.attempts == sum(p.attempts for p in ours)
    other = rows["other-scheduler"]
    assert not other.served and other.pending == 1 and other.attempts == 0


def test_rejected_pod_keeps_labels_and_message(report: SimulationReport) -> None:
    typo = report.pod("default/typo")
    assert typo.node is None and typo.labels == {"app": "typo"}
    assert "no PriorityClass with name hihg" in typo.message
    assert [r.object for r in report.rejections] == ["Pod default/typo"]


def test_unserved_pod_says_why(report: SimulationReport) -> None:
    pod = report.pod("default/elsewhere")
    assert not pod.served and "other-scheduler" in pod.message and pod.attempts == 0


def test_pending_pod_diagnosis(report: SimulationReport) -> None:
    pod = report.pod("default/too-big")
    assert pod.message.startswith("0/4 nodes are available:")
    assert "Insufficient cpu" in pod.message
    by_node = {f.node: f for f in pod.filters}
    assert set(by_node) == {"node-a1", "node-a2", "node-b1", "gpu-b2"}
    assert by_node["node-a1"].plugin == "NodeResourcesFit"
    assert by_node["gpu-b2"].plugin == "TaintToleration"
    assert pod.scores == []
    assert [a.result for a in pod.history] == ["unschedulable"] * pod.attempts


def test_filters_and_scores_match_the_records(run, report: SimulationReport) -> None:
    checked = 0
    for pod in report.pods:
        records = run.attempts.get(pod.uid or "", [])
        if not records:
            continue
        last = records[-1]
        assert pod.attempts == len(records) == len(pod.history)
        assert {f.node for f in pod.filters} == set(last.diagnosis.node_to_status)
        for f in pod.filters:
            status = last.diagnosis.node_to_status[f.node]
            expected = (status.plugin, status.reasons, status.code.display)
            assert (f.plugin, f.reasons, f.code) == expected
        if last.scores is None:
            assert pod.scores == []
            continue
        assert {s.node for s in pod.scores} == set(last.feasible)
        totals = [s.total for s in pod.scores]
        assert totals == sorted(totals, reverse=True)
        for s in pod.scores:
            assert s.total == sum(p.weighted for p in s.plugins)
            for p in s.plugins:
                assert p.weighted == p.normalized * p.weight and 0 <= p.normalized <= 100
        if pod.result == "scheduled":
            assert pod.node == last.node_name
            assert pod.scores[0].total == max(totals)
            assert pod.node in {s.node for s in pod.scores if s.total == max(totals)}
        checked += 1
    assert checked >= 5


def test_node_requested_is_the_sum_of_its_pods(run, report: SimulationReport) -> None:
    pods = {p.key: p for p in run.cluster.pods()}
    for node in report.nodes:
        on_node = [pods[k] for k in node.pods]
        assert all(p.spec.node_name == node.name for p in on_node)
        assert node.requested.cpu == sum(pod_requests(p).get("cpu", 0) for p in on_node)
        assert node.requested.memory == sum(pod_requests(p).get("memory", 0) for p in on_node)
        assert node.requested.pods == len(on_node)
        # ... and what the scheduler's cache believes.
        info = run.scheduler.cache.get_node(node.name)
        assert node.requested.cpu == info.requested.milli_cpu
        assert node.requested.memory == info.requested.memory
        assert node.requested.pods == len(info.pods)
    placed = sorted(k for n in report.nodes for k in n.pods)
    assert placed == sorted(p.key for p in report.pods if p.result == "scheduled")


def test_node_fields(report: SimulationReport) -> None:
    gpu = next(n for n in report.nodes if n.name == "gpu-b2")
    assert gpu.zone == "zone-b"
    assert gpu.taints == ["dedicated=gpu:NoSchedule"]
    assert gpu.allocatable.cpu == 8000 and gpu.allocatable.memory == 16 * 1024**3
    assert gpu.allocatable.pods == 110 and gpu.allocatable.scalar == {"nvidia.com/gpu": 2}


def test_preemption_victims(preemption_objects) -> None:
    report = build_report(simulate(preemption_objects, seed=0))
    urgent = report.pod("default/urgent")
    assert urgent.result == "scheduled" and urgent.node == "solo"
    assert urgent.preemption is not None
    assert sorted(v.name for v in urgent.preemption.victims) == ["low-1", "low-2"]
    assert {v.node for v in urgent.preemption.victims} == {"solo"}
    for name in ("low-1", "low-2"):
        victim = report.pod(f"default/{name}")
        assert victim.result == "preempted" and victim.preempted_by == "default/urgent"
        assert victim.node == "solo"
    assert report.summary[0].preempted == 2
    assert report.nodes[0].pods == ["default/urgent"]


def test_explain_keeps_detail_only_for_the_pods_named(run) -> None:
    report = build_report(run, explain=["default/too-big"])
    for pod in report.pods:
        assert bool(pod.filters or pod.history) == (pod.key == "default/too-big")


def test_explain_of_a_bare_name_means_the_default_namespace(run) -> None:
    report = build_report(run, explain=["batch"])
    assert report.pod("default/batch").history


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("default/nope", "no pod default/nope in the simulation"),
        ("a/b/c", "'a/b/c' is not NAMESPACE/POD"),
    ],
    ids=["missing", "malformed"],
)
def test_explain_errors(run, key: str, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        build_report(run, explain=[key])


def test_summary_detail_drops_explanations(run) -> None:
    report = build_report(run, detail="summary")
    assert report.detail == "summary"
    assert all(not (p.filters or p.scores or p.history) for p in report.pods)
    assert report.pod("default/too-big").message.startswith("0/4 nodes")


def test_data_equals_the_models(run, example_objects) -> None:
    data = build_report_data(run, objects=example_objects)
    assert build_report(run, objects=example_objects).to_dict() == data
    assert SimulationReport.model_validate(data).to_dict() == data


def test_json_round_trip(report: SimulationReport) -> None:
    again = SimulationReport.model_validate_json(report.to_json())
    assert again == report


def test_events_on_request(run) -> None:
    assert build_report(run).events is None
    events = build_report(run, include_events=True).events
    assert events and {"Scheduled", "FailedScheduling"} <= {e.reason for e in events}
