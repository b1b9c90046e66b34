"""The text output a person reads: the pod list, extended resources per node, gated
pods, collapsed attempts in ``--explain``, tables at 120 columns; plain YAML and metrics
without ``*_created`` series."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from kubesched import Status, hookimpl
from kubesched.api import load_manifests
from kubesched.cli import simulate_cmd
from kubesched.framework.registry import PluginRegistry
from kubesched.simulate import build_report, simulate
from kubesched.simulate.render import attempt_runs, render_summary
from kubesched.simulate.report import AttemptReport, build_report_data
from kubesched.testing import make_node, make_pod

from .test_cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _table(text: str, title: str) -> list[list[str]]:
    """The cells of each line of the rich table titled ``title`` (header line first;
    wrapped cells give lines of their own)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith(("│", "┃")):
            rows.append([c.strip() for c in re.split("[│┃]", line)[1:-1]])
    return rows


def _whole_or_cut(cell: str, value: str) -> bool:
    """Whether a table cell shows ``value`` whole, or its start and "…"."""
    return cell == value or (cell.endswith("…") and value.startswith(cell[:-1]))


def _table_width(text: str) -> int:
    """The widest line of the tables in ``text`` (lines of prose may be longer: they
    are printed whole, for the terminal to wrap)."""
    return max(len(line) for line in text.splitlines() if line[:1] in "┏┃┡│├└")


def _render(objects, width: int = 120, **kwargs) -> str:
    console = Console(record=True, width=width, no_color=True)
    render_summary(build_report(simulate(objects, seed=0)), console, **kwargs)
    return console.export_text()


# -- the pod list ------------------------------------------------------------------------


def test_pod_list_shows_node_zone_result_and_reason(example_dir: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "simulate", str(example_dir), "--seed", "1")
    assert code == 0, err
    header, *rows = _table(out, "Pods (9, by namespace)")
    assert header == ["NAMESPACE", "NAME", "NODE", "ZONE", "RESULT", "REASON"]
    by_name = {r[1]: r for r in rows}
    assert len(rows) == 9
    assert by_name["too-big"][2:5] == ["<none>", "<none>", "Unschedulable"]
    assert by_name["too-big"][5].startswith("0/4 nodes are available: ")
    assert by_name["elsewhere"][4] == "Pending"
    assert _whole_or_cut(
        by_name["elsewhere"][5],
        'no profile has schedulerName "other-scheduler"; the pod is left alone',
    )
    assert by_name["typo"][4] == "Rejected"
    assert by_name["typo"][5].startswith('pods "typo" is forbidden')
    batch = by_name["batch"]
    assert batch[4:] == ["Scheduled", ""]
    zone_of = {"node-a1": "zone-a", "node-a2": "zone-a", "node-b1": "zone-b"}
    assert batch[3] == zone_of[batch[2]]
    # The summary sections stay.
    assert "Pods per profile" in out and "Pending pods (2)" in out


def test_unlabelled_node_has_no_zone() -> None:
    objects = [
        make_node("bare").capacity(cpu="2", memory="4Gi", pods="10").obj(),
        make_pod("p").req(cpu="1").obj(),
    ]
    _, row = _table(_render(objects), "Pods (1,")
    assert row == ["default", "p", "bare", "<none>", "Scheduled", ""]


def _mixed_pods():
    """Pods over three namespaces, scheduled on two nodes or pending."""
    nodes = [
        make_node(n).capacity(cpu="2", memory="4Gi", pods="10").zone(z).obj()
        for n, z in (("n-b", "z1"), ("n-a", "z2"))
    ]
    pods = [
        make_pod("c").namespace("ns2").req(cpu="1").obj(),
        make_pod("a").namespace("ns3").req(cpu="1").obj(),
        make_pod("b").namespace("ns1").req(cpu="1").obj(),
        make_pod("huge").namespace("ns1").req(cpu="9").obj(),
        make_pod("d").namespace("ns1").req(cpu="1").obj(),
        make_pod("gated").namespace("ns2").scheduling_gates("example.com/wait").obj(),
    ]
    return [*nodes, *pods]


@pytest.mark.parametrize(
    ("sort_by", "key"),
    [
        ("namespace", lambda r: (r[0], r[1])),
        ("name", lambda r: (r[1], r[0])),
        ("node", lambda r: (r[2] == "<none>", r[2], r[0], r[1])),
        ("result", lambda r: (r[4], r[0], r[1])),
    ],
    ids=["namespace", "name", "node-unplaced-last", "result"],
)
def test_pod_list_sort(sort_by, key) -> None:
    _, *rows = _table(_render(_mixed_pods(), sort_by=sort_by), f"Pods (6, by {sort_by})")
    assert len(rows) == 6
    assert rows == sorted(rows, key=key)
    # Each order differs from the others on these pods: the flag is not ignored.
    _, *by_namespace = _table(_render(_mixed_pods()), "Pods (6, by namespace)")
    assert (rows == by_namespace) == (sort_by == "namespace")


def test_sort_by_is_validated(example_dir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cli(capsys, "simulate", str(example_dir), "--sort-by", "zone")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --sort-by: invalid choice: 'zone'" in err
    assert "'namespace', 'name', 'node', 'result'" in err


@pytest.mark.parametrize(
    ("rows", "shown", "rest"),
    [
        # Sorted by namespace and name: batch, elsewhere, too-big, then typo and web-*.
        ("3", 3, "  ... and 6 more pods: 1 Rejected, 5 Scheduled "),
        ("8", 8, "  ... and 1 more pod: 1 Scheduled "),
        ("9", 9, None),
        ("all", 9, None),
    ],
    ids=["three", "all-but-one", "exactly-all", "all"],
)
def test_pod_rows_and_the_rest_counted(example_dir: Path, capsys, rows, shown, rest) -> None:
    code, out, err = run_cli(
        capsys, "simulate", str(example_dir), "--seed", "1", "--pod-rows", rows
    )
    assert code == 0, err
    assert len(_table(out, "Pods (9, by namespace)")) == 1 + shown
    summary = [line for line in out.splitlines() if "more pod" in line]
    if rest is None:
        assert summary == []
    else:
        assert summary == [rest + "(--pod-rows all lists every pod)"]


@pytest.mark.parametrize("value", ["0", "-1", "many"], ids=["zero", "negative", "word"])
def test_pod_rows_is_validated(example_dir: Path, capsys, value) -> None:
    with pytest.raises(SystemExit):
        run_cli(capsys, "simulate", str(example_dir), "--pod-rows", value)
    assert "argument --pod-rows:" in capsys.readouterr().err


def test_the_default_lists_fifty_pods() -> None:
    objects = [
        make_node("n").capacity(cpu="64", memory="64Gi", pods="110").obj(),
        *(make_pod(f"p{i:02}").req(cpu="100m").obj() for i in range(60)),
        *(make_pod(f"q{i}").req(cpu="99").obj() for i in range(3)),
    ]
    text = _render(objects)
    assert len(_table(text, "Pods (63, by namespace)")) == 1 + 50
    assert "  ... and 13 more pods: 10 Scheduled, 3 Unschedulable " in text


# -- gated pods ----------------------------------------------------------------------------


def test_gated_pod_says_scheduling_gated_with_its_gates(tmp_path: Path, capsys) -> None:
    (tmp_path / "all.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        'status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}\n---\n'
        "apiVersion: v1\nkind: Pod\nmetadata: {name: held, namespace: default}\n"
        "spec:\n  schedulingGates: [{name: example.com/quota}, {name: example.com/review}]\n"
        "  containers: [{name: c, image: busybox}]\n"
    )
    code, out, err = run_cli(capsys, "simulate", str(tmp_path))
    assert code == 0, err
    _, row = _table(out, "Pods (1,")
    assert row == [
        "default",
        "held",
        "<none>",
        "<none>",
        "SchedulingGated",
        "gates: example.com/quota, example.com/review",
    ]
    assert (
        "  default/held (0 attempts): SchedulingGated (gates: example.com/quota, "
        "example.com/review): Scheduling is blocked due to non-empty scheduling gates"
    ) in out
    code, out, _ = run_cli(capsys, "simulate", str(tmp_path), "--explain", "held")
    assert out.startswith("Pod default/held — pending, SchedulingGated (profile ")
    assert "  scheduling gates: example.com/quota, example.com/review" in out
    code, out, _ = run_cli(capsys, "simulate", str(tmp_path), "-o", "json")
    pod = json.loads(out)["pods"][0]
    assert pod["podScheduledReason"] == "SchedulingGated"
    assert pod["schedulingGates"] == ["example.com/quota", "example.com/review"]


# -- extended resources per node ---------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "asked", "columns", "cells"),
    [
        ({}, {}, [], []),
        ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}, ["nvidia.com/gpu"], [["1/2", "50%"]]),
        (
            {"hugepages-2Mi": "2Gi", "example.com/foo": "4"},
            {"hugepages-2Mi": "1Gi", "example.com/foo": "1"},
            ["example.com/foo", "hugepages-2Mi"],
            [["1/4", "25%"], ["1Gi/2Gi", "50%"]],
        ),
    ],
    ids=["none", "gpu", "hugepages-and-foo"],
)
def test_extended_resources_in_the_node_table(extra, asked, columns, cells) -> None:
    objects = [
        make_node("big").capacity(cpu="4", memory="8Gi", pods="10", **extra).obj(),
        make_node("plain").capacity(cpu="4", memory="8Gi", pods="10").obj(),
        make_pod("p").container({"cpu": "1", "memory": "2Gi", **asked}).obj(),
    ]
    header, *rows = _table(_render(objects), "Nodes: requested / allocatable")
    expected = ["CPU (cores)", "%", "MEMORY (GiB)", "%"]
    expected += [h for name in columns for h in (name, "%")] + ["PODS", "%"]
    assert header[2:] == expected
    big = next(r for r in rows if r[1] == "big")
    plain = next(r for r in rows if r[1] == "plain")
    assert [big[6 + 2 * i : 8 + 2 * i] for i in range(len(columns))] == cells
    # A node without the resource: nothing of nothing.
    assert [plain[6 + 2 * i : 8 + 2 * i] for i in range(len(columns))] == [
        ["0/0", "-"] for _ in columns
    ]


# -- attempts in --explain ---------------------------------------------------------------


def _attempt(n: int, result: str = "error", message: str = "boom", **kw) -> AttemptReport:
    return AttemptReport(
        attempt=n,
        profile="default-scheduler",
        startedAt=float(10 * n),
        result=result,
        message=message,
        allNodes=1,
        evaluatedNodes=1,
        **kw,
    )


@pytest.mark.parametrize(
    ("history", "runs"),
    [
        ([], []),
        ([_attempt(1)], [[1]]),
        ([_attempt(i) for i in range(1, 184)], [list(range(1, 184))]),
        (
            [_attempt(1), _attempt(2), _attempt(3, "unschedulable"), _attempt(4)],
            [[1, 2], [3], [4]],
        ),
        ([_attempt(1), _attempt(2, message="other"), _attempt(3, message="other")], [[1], [2, 3]]),
        ([_attempt(1), _attempt(2, nominatedNode="n")], [[1], [2]]),
        (
            [_attempt(1, "unschedulable"), _attempt(2, "scheduled", "", node="n", feasibleNodes=1)],
            [[1], [2]],
        ),
    ],
    ids=[
        "none",
        "one",
        "183-the-same",
        "a-change-and-back",
        "message-changes",
        "nomination-changes",
        "scheduled-at-last",
    ],
)
def test_attempt_runs(history, runs) -> None:
    assert [[a.attempt for a in run] for run in attempt_runs(history)] == runs


class Flaky:
    """A Filter plugin that raises on its first ``errors`` calls, rejects the node on
    the next ``rejections``, then lets it pass."""

    name = "Flaky"
    errors = 3
    rejections = 1
    calls = 0

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, node_info):
        Flaky.calls += 1
        if Flaky.calls <= Flaky.errors:
            raise RuntimeError("kaput")
        if Flaky.calls <= Flaky.errors + Flaky.rejections:
            return Status.unschedulable("not yet")
        return None


@pytest.fixture
def flaky_cli(tmp_path: Path, monkeypatch) -> Path:
    """A one-node cluster, a pod, and a configuration whose profile runs Flaky."""
    registry = PluginRegistry.discover()
    registry.add_class(Flaky)
    monkeypatch.setattr(simulate_cmd, "_registry", lambda: registry)
    monkeypatch.setattr(Flaky, "calls", 0)
    (tmp_path / "config.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
        "  plugins: {filter: {enabled: [{name: Flaky}]}}\n"
    )
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "all.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        'status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}}\n---\n'
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        "spec: {containers: [{name: c, image: busybox}]}\n"
    )
    return tmp_path


def _explain(capsys, tmp: Path, *flags: str) -> tuple[list[list[str]], str]:
    code, out, err = run_cli(
        capsys,
        "simulate",
        str(tmp / "in"),
        "--config",
        str(tmp / "config.yaml"),
        "--explain",
        "p",
        *flags,
    )
    assert code == 0, err
    return _table(out, "Attempts")[1:], out


def test_a_pod_that_always_errs_is_one_row(flaky_cli: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(Flaky, "errors", 10**6)
    rows, out = _explain(capsys, flaky_cli)
    assert len(rows) == 1
    number, started, result, node, *_, diagnosis = rows[0]
    first, _, last = number.partition("–")
    # Retried with backoff until the run stalls: many attempts, all alike.
    assert first == "1" and int(last) > 100
    assert started.startswith("0–")
    assert (result, node) == ("error", "-")
    assert diagnosis.startswith('running "Flaky" filter plugin')
    assert f"({last} attempts in 1 row); --all-attempts lists each." in out
    rows, out = _explain(capsys, flaky_cli, "--all-attempts")
    assert [r[0] for r in rows] == [str(i) for i in range(1, int(last) + 1)]
    assert "--all-attempts lists each" not in out


def test_a_pod_whose_verdict_changes_has_a_row_per_run(flaky_cli: Path, capsys) -> None:
    rows, out = _explain(capsys, flaky_cli)
    assert [(r[0], r[2]) for r in rows] == [
        ("1–3", "error"),
        ("4", "unschedulable"),
        ("5", "scheduled"),
    ]
    assert rows[2][3] == "n"
    assert "(5 attempts in 3 rows)" in out
    Flaky.calls = 0
    rows, _ = _explain(capsys, flaky_cli, "--all-attempts")
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5"]


# -- tables at 120 columns ----------------------------------------------------------------


def test_long_volume_names_stay_on_one_line(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = run_cli(capsys, "simulate", str(EXAMPLES / "stateful-zonal"))
    assert code == 0, err
    assert _table_width(out) == 120
    header, *lines = _table(out, "Volume claims")
    volume = header.index("VOLUME")
    cells = [line[volume] for line in lines]
    # A cell per claim, on the claim's first line, and nothing on its wrapped lines.
    named = [c for c in cells if c]
    assert named and all(c.startswith("pvc-") for c in named)
    code, data, _ = run_cli(capsys, "simulate", str(EXAMPLES / "stateful-zonal"), "-o", "json")
    volumes = sorted(c["volume"] for p in json.loads(data)["pods"] for c in p["claims"])
    assert len(named) == len(volumes)
    for cell, whole in zip(sorted(named), volumes, strict=True):
        assert whole.startswith(cell.removesuffix("…"))
        # Whole, or cut with an ellipsis: never broken over lines.
        assert cell == whole or cell.endswith("…")


@pytest.mark.parametrize("case", ["zone-outage", "rolling-drain", "memory-pressure"])
def test_timeline_steps_are_whole_at_120_columns(capsys, monkeypatch, case) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    d = EXAMPLES / "whatif" / case
    args = [str(d / "cluster.yaml"), str(d / "workload.yaml"), "--timeline"]
    code, out, err = run_cli(capsys, "simulate", *args, str(d / "timeline.yaml"))
    assert code == 0, err
    assert _table_width(out) <= 120
    title = next(line for line in out.splitlines() if line.startswith("Timeline "))
    header, *lines = _table(out, title)
    assert header[:3] == ["AT (s)", "UNTIL (s)", "STEP"]
    # Each step's lines (a row starts where AT has a value) hold its whole text.
    steps: list[str] = []
    for line in lines:
        if line[0]:
            steps.append("")
        steps[-1] += line[2]
    code, data, _ = run_cli(capsys, "simulate", *args, str(d / "timeline.yaml"), "-o", "json")
    report = json.loads(data)["timeline"]["steps"]
    expected = ["".join([s["description"], *s["errors"]]).replace(" ", "") for s in report]
    assert [s.replace(" ", "") for s in steps] == expected
    assert not any("…" in s for s in steps)


# -- YAML and metrics ----------------------------------------------------------------------


def test_yaml_has_no_aliases_and_reads_back_as_the_json(capsys) -> None:
    path = str(EXAMPLES / "quickstart")
    # The report shares objects between pods (the old dumper wrote them as aliases).
    objects = load_manifests([path])
    data = build_report_data(simulate(objects, seed=0), objects=objects)
    assert "*id" in yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False)

    code, text, err = run_cli(capsys, "simulate", path, "-o", "yaml", "--reproducible")
    assert code == 0, err
    tokens = {type(t) for t in yaml.scan(text)}
    assert yaml.AnchorToken not in tokens and yaml.AliasToken not in tokens
    code, js, _ = run_cli(capsys, "simulate", path, "-o", "json", "--reproducible")
    assert yaml.safe_load(text) == json.loads(js)


CREATED = re.compile(r"^\w+_created[{ ]", re.MULTILINE)
"""A ``*_created`` sample line of the Prometheus text format."""


def test_metrics_file_has_no_created_series(example_dir: Path, tmp_path: Path, capsys) -> None:
    metrics = tmp_path / "metrics.prom"
    code, _, _ = run_cli(capsys, "simulate", str(example_dir), "--metrics", str(metrics))
    assert code == 0
    text = metrics.read_text()
    # Counters and histograms are there, with samples, but no creation timestamps.
    assert "scheduler_schedule_attempts_total{" in text
    assert "scheduler_scheduling_attempt_duration_seconds_bucket{" in text
    assert CREATED.findall(text) == []
