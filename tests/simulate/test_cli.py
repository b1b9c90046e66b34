"""``kubesched simulate`` end to end on a tiny cluster written to files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.simulate import SCHEMA_VERSION, SimulationReport

from .conftest import without_notices


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_text_summary(example_dir: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "simulate", str(example_dir), "--seed", "1")
    assert code == 0, err
    assert "Pods per profile" in out
    assert "default-scheduler" in out and "other-scheduler (no such profile)" in out
    assert "zone-a" in out and "node-a1" in out and "zone total" in out
    assert "Pending pods (2)" in out
    assert "default/too-big (2 attempts): 0/4 nodes are available:" in out
    assert "Rejected by admission (1)" in out and "Pod default/typo" in out
    assert "\x1b[" not in out  # no colours when stdout is not a terminal


def test_json(example_dir: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "simulate", str(example_dir), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["schemaVersion"] == SCHEMA_VERSION
    report = SimulationReport.model_validate(data)
    batch = report.pod("default/batch")
    assert batch.result == "scheduled" and batch.scores and batch.filters
    assert report.pod("default/too-big").node is None


def test_yaml(example_dir: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "simulate", str(example_dir), "-o", "yaml")
    assert code == 0
    report = SimulationReport.model_validate(yaml.safe_load(out))
    assert report.pod("default/typo").result == "rejected"


def test_json_explain_narrows_the_detail(example_dir: Path, capsys) -> None:
    code, out, _ = run_cli(
        capsys, "simulate", str(example_dir), "-o", "json", "--explain", "default/batch"
    )
    assert code == 0
    pods = {f"{p['namespace']}/{p['name']}": p for p in json.loads(out)["pods"]}
    assert pods["default/batch"]["history"]
    assert not pods["default/too-big"]["history"] and not pods["default/too-big"]["filters"]


def test_explain_scheduled_pod(example_dir: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "simulate", str(example_dir), "--explain", "default/batch")
    assert code == 0
    assert out.startswith("Pod default/batch — scheduled")
    assert "node-a2: NodeResourcesFit: Insufficient cpu" in out
    assert "gpu-b2: TaintToleration:" in out
    assert "Scores in the last attempt, best first" in out
    assert "NodeResourcesBalancedAllocation" in out
    assert "Chosen node: node-" in out


def test_explain_pending_pod_groups_nodes(example_dir: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "simulate", str(example_dir), "--explain", "default/too-big")
    assert code == 0
    assert "node-a1, node-a2, node-b1: NodeResourcesFit: Insufficient cpu" in out
    assert "Chosen node: none" in out


def test_metrics_file(example_dir: Path, tmp_path: Path, capsys) -> None:
    metrics = tmp_path / "metrics.prom"
    code, _, _ = run_cli(capsys, "simulate", str(example_dir), "--metrics", str(metrics))
    assert code == 0
    text = metrics.read_text()
    assert "scheduler_schedule_attempts_total" in text
    assert 'result="scheduled"' in text


def test_same_seed_same_json(example_dir: Path, capsys) -> None:
    outputs = []
    for _ in range(2):
        code, out, _ = run_cli(capsys, "simulate", str(example_dir), "-o", "json", "--seed", "7")
        assert code == 0
        data = json.loads(out)
        del data["wallTimeSeconds"]
        outputs.append(data)
    assert outputs[0] == outputs[1]


def test_no_progress_output_when_not_a_tty(example_dir: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "simulate", str(example_dir), "-o", "json")
    assert code == 0 and without_notices(err) == ""


# name: (files to write, arguments ({tmp}: their directory, {ex}: the good example), message)
BAD_INPUT = {
    "malformed-yaml": (
        {"bad.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n"},
        ["{tmp}/bad.yaml"],
        "bad.yaml: invalid YAML",
    ),
    "unknown-kind": (
        {"w.yaml": "apiVersion: v1\nkind: Widget\nmetadata: {name: x}\n"},
        ["{ex}", "{tmp}/w.yaml"],
        'w.yaml: document 1 (Widget x): no matches for kind "Widget" in version "v1"',
    ),
    "bad-field": (
        {
            "p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
            "  - name: c\n    resources: {requests: {cpu: lots}}\n"
        },
        ["{tmp}/p.yaml"],
        "p.yaml: document 1 (Pod default/x): invalid object: "
        "spec.containers[0].resources.requests.cpu",
    ),
    "invalid-per-api-server": (
        {
            "p.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad name!}\nspec:\n  containers:\n"
            "  - {name: c, image: i, resources: {requests: {cpu: '-1'}}}\n"
            "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "      - {topologyKey: zone, labelSelector: {matchLabels: {app: '{{bad}}'}}}\n"
        },
        ["{tmp}/p.yaml"],
        'p.yaml: document 2 (Pod default/bad name!): Pod "bad name!" is invalid:\n'
        '  - metadata.name: Invalid value: "bad name!": a lowercase RFC 1123 subdomain',
    ),
    "missing-path": ({}, ["{ex}", "{tmp}/nope.yaml"], "nope.yaml: no such file or directory"),
    "bad-config": (
        {
            "cfg.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n"
            "    score:\n      enabled: [{name: NoSuchPlugin}]\n"
        },
        ["{ex}", "--config", "{tmp}/cfg.yaml"],
        'cfg.yaml: profiles[0]: invalid profile "a": profiles[0].plugins.score.enabled[0]: '
        'plugin "NoSuchPlugin" is not installed',
    ),
    "config-field": (
        {
            "cfg.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\nparallelism: -1\n"
        },
        ["{ex}", "--config", "{tmp}/cfg.yaml"],
        "cfg.yaml: KubeSchedulerConfiguration: invalid configuration: parallelism",
    ),
    "missing-config": (
        {},
        ["{ex}", "--config", "{tmp}/none.yaml"],
        "none.yaml: --config: no such file",
    ),
    "explain-unknown-pod": (
        {},
        ["{ex}", "--explain", "default/ghost"],
        "--explain: no pod default/ghost in the simulation",
    ),
    "explain-malformed": (
        {},
        ["{ex}", "--explain", "a/b/c"],
        "--explain: 'a/b/c' is not NAMESPACE/POD",
    ),
    "empty-directory": ({}, ["{tmp}/empty"], "empty: no Kubernetes objects found"),
}


@pytest.mark.parametrize(("files", "args", "message"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
@pytest.mark.parametrize("output", ["text", "json"])
def test_bad_input(
    example_dir: Path,
    tmp_path_factory,
    capsys,
    files: dict[str, str],
    args: list[str],
    message: str,
    output: str,
) -> None:
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "empty").mkdir()
    for name, body in files.items():
        (tmp / name).write_text(body)
    argv = [a.format(tmp=tmp, ex=example_dir) for a in args]
    code, out, err = run_cli(capsys, "simulate", *argv, "-o", output)
    err = without_notices(err)
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and message in err, err
    assert "Traceback" not in err


def test_every_error_of_an_invalid_object_is_listed(tmp_path: Path, capsys) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
        "  - {name: c, image: i, resources: {requests: {cpu: '-1', memory: 2Gi}, "
        "limits: {memory: 1Gi}}}\n  tolerations: [{key: k, operator: Exists, value: v}]\n"
    )
    code, out, err = run_cli(capsys, "simulate", str(tmp_path / "p.yaml"))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f'error: {tmp_path / "p.yaml"}: document 1 (Pod default/x): Pod "x" is invalid:',
        '  - spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater '
        "than or equal to 0",
        '  - spec.containers[0].resources.requests: Invalid value: "2Gi": must be less than or '
        "equal to memory limit of 1Gi",
        '  - spec.tolerations[0].operator: Invalid value: "v": value must be empty when '
        "`operator` is 'Exists'",
    ]


def test_check_invariants_summary(example_dir: Path, capsys) -> None:
    code, out, err = run_cli(
        capsys, "simulate", str(example_dir), "-o", "json", "--check-invariants"
    )
    assert code == 0 and json.loads(out)
    err = without_notices(err)
    assert err.startswith("invariants: ") and err.rstrip().endswith("no violation")
