"""``kubesched resilience`` on the worked example: its text, json and yaml reports, the
schema, and the errors of bad input."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from kubesched.cli.main import main
from kubesched.cli.resilience_cmd import render
from kubesched.resilience import json_schema
from kubesched.resilience.report import (
    FailureOutcome,
    ResilienceReport,
    ResilienceSummary,
    WorkloadOutcome,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "resilience"
SCHEMA = ROOT / "docs" / "schema" / "resilience.schema.json"
REGENERATE = "KUBESCHED_REGENERATE_SCHEMA"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_example_every_node_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "resilience", EXAMPLE, "--workers", "1")
    assert code == 0, err
    assert err == ""
    assert "6 failure(s) of 6 node(s), each played for 600s: 2 harmless, 4 with losses." in out
    lines = out.splitlines()
    worst = next(i for i, line in enumerate(lines) if "Failures, worst first" in line)
    assert "node node-a1" in lines[worst + 4]  # the first row under the header
    assert (
        "LOST Deployment default/cache: 2 → lowest 1 → 1 of 2; evicted 1, replaced 0, 1 pending"
        in out
    )
    assert (
        "VIOLATED PDB default/cache: healthy 2 → lowest 1 → 1, desired 2 (still at the end)" in out
    )
    assert "kept Deployment default/web: 3 → lowest 2 → 3 of 3; evicted 1, replaced 1" in out
    assert "LOST StatefulSet default/db: 3 → lowest 2 → 2 of 3; evicted 1, replaced 0" in out


def test_example_zones_json_validates_and_yaml_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "resilience", EXAMPLE, "--zones", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    assert report["summary"] == {
        "failures": 3,
        "harmless": 0,
        "nodes": 6,
        "podsPendingBefore": 0,
        "windowSeconds": 600.0,
    }
    first = report["failures"][0]
    assert (first["failure"], first["nodes"]) == ("zone zone-a", ["node-a1", "node-a2"])
    assert (first["workloadsLost"], first["budgetsViolated"], first["daemonPodsDown"]) == (3, 1, 2)
    cache = next(w for w in first["workloads"] if w["name"] == "default/cache")
    assert (cache["lowest"], cache["after"], cache["pending"]) == (0, 0, 2)
    assert "didn't match Pod's node affinity/selector" in cache["pendingReason"]
    code, out_yaml, _ = run_cli(capsys, "resilience", EXAMPLE, "--zones", "-o", "yaml")
    data = yaml.safe_load(out_yaml)
    for r in (data, report):
        r.pop("wallTime")
    assert data == report


def test_random_failures_are_the_same_for_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("resilience", EXAMPLE, "--random", "2", "--size", "2", "--seed", "3", "-o", "json")
    runs = []
    for _ in range(2):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, err
        runs.append([(f["failure"], f["nodes"]) for f in json.loads(out)["failures"]])
    assert runs[0] == runs[1]
    assert sorted(name for name, _ in runs[0]) == ["random #1", "random #2"]
    assert all(len(nodes) == 2 for _, nodes in runs[0])


def test_committed_schema_is_the_generated_one() -> None:
    generated = json.dumps(json_schema(), indent=2) + "\n"
    if os.environ.get(REGENERATE):
        SCHEMA.write_text(generated)
    assert SCHEMA.read_text() == generated, (
        f"{SCHEMA.relative_to(ROOT)} is stale: run "
        f"`{REGENERATE}=1 pytest tests/resilience/test_cli.py` and commit it"
    )


NO_ZONES = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/os: linux, kubernetes.io/arch: amd64}}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
"""

BAD = [
    (["resilience"], "no cluster: give CLUSTER manifests or --from-cluster"),
    (["resilience", "{tmp}/missing.yaml"], "missing.yaml"),
    (
        ["resilience", "{tmp}/c.yaml", "--zones"],
        "no node has the label topology.kubernetes.io/zone",
    ),
    (
        ["resilience", "{tmp}/c.yaml", "--random", "1", "--size", "2"],
        "--size 2 is more than the cluster's 1 node(s)",
    ),
    (["resilience", "{tmp}/c.yaml", "--size", "2"], "--size goes with --random"),
    (
        ["resilience", "{tmp}/c.yaml", "--config", "{tmp}/none.yaml"],
        "none.yaml: --config: no such file",
    ),
    (["resilience", "{tmp}/c.yaml", "--kubeconfig", "k"], "--kubeconfig goes with --from-cluster"),
    (["resilience", "{tmp}/empty.yaml"], "no Kubernetes objects found"),
]


@pytest.mark.parametrize(
    ("argv", "message"),
    BAD,
    ids=[
        "no-cluster",
        "missing-file",
        "no-zones",
        "size-above-nodes",
        "size-alone",
        "missing-config",
        "kubeconfig-alone",
        "empty",
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "c.yaml").write_text(NO_ZONES)
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    code, out, err = run_cli(capsys, *(a.format(tmp=tmp_path) for a in argv))
    assert code == 1
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert out == ""


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--for", "0", "must be greater than 0"),
        ("--for", "ten", "--for"),
        ("--random", "0", "must be at least 1"),
        ("--workers", "x", "not a whole number"),
    ],
    ids=["for-zero", "for-not-a-duration", "random-zero", "workers-not-a-number"],
)
def test_bad_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["resilience", str(EXAMPLE), flag, value])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_text_report_of_a_large_sweep_is_cut_to_the_worst() -> None:
    lost = [
        WorkloadOutcome(
            kind="Deployment",
            name=f"default/app-{i}",
            desired=2,
            before=2,
            lowest=1,
            after=1,
            kept=False,
            evicted=1,
            replaced=0,
            pending=1,
            pending_reason="full",
        )
        for i in range(15)
    ]
    failures = [
        FailureOutcome(
            failure=f"node n{i}",
            nodes=[f"n{i}"],
            workloads_lost=15 if i == 0 else 0,
            replicas_lost=15 if i == 0 else 0,
            budgets_violated=0,
            pods_pending=15 if i == 0 else 0,
            pods_evicted=0,
            daemon_pods_down=0,
            workloads=lost if i == 0 else [],
            budgets=[],
            stop="settled",
        )
        for i in range(35)
    ]
    report = ResilienceReport(
        summary=ResilienceSummary(
            failures=35, harmless=34, nodes=35, pods_pending_before=0, window_seconds=600
        ),
        failures=failures,
    )
    console = Console(file=io.StringIO(), width=200)
    render(report, console)
    out = console.file.getvalue()
    assert "35 failure(s) of 35 node(s), each played for 600s: 34 harmless, 1 with losses." in out
    assert "node n29 " in out and "node n30 " not in out
    assert "(+5 more, none worse)" in out
    assert out.count("LOST Deployment") == 12
    assert "(+3 more: -o json lists them)" in out
