"""``kubesched capacity`` end to end on the examples, its schemas and its errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from kubesched.capacity import (
    CapacityFitReport,
    CapacityNodesReport,
    CapacityRemoveReport,
    json_schemas,
)
from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "capacity"
QUICKSTART = ROOT / "examples" / "quickstart"
SCHEMAS = ROOT / "docs" / "schema"
REGENERATE = "KUBESCHED_REGENERATE_SCHEMA"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_fit_text(capsys) -> None:
    code, out, err = run_cli(capsys, "capacity", "fit", EXAMPLE / "probe.yaml", QUICKSTART)
    assert code == 0, err
    assert out.startswith("12 more Deployment shop/reports fit on 12 nodes")
    assert "Stopped: 0/12 nodes are available:" in out
    assert "Per zone" in out and "Per node" in out


def test_fit_json_and_yaml_agree(capsys) -> None:
    _, out, _ = run_cli(capsys, "capacity", "fit", EXAMPLE / "probe.yaml", QUICKSTART, "-o", "json")
    from_json = CapacityFitReport.model_validate(json.loads(out))
    _, out, _ = run_cli(capsys, "capacity", "fit", EXAMPLE / "probe.yaml", QUICKSTART, "-o", "yaml")
    from_yaml = CapacityFitReport.model_validate(yaml.safe_load(out))
    assert from_json.count == from_yaml.count == 12
    assert from_json.nodes == from_yaml.nodes
    assert sum(n.count for n in from_json.nodes) == 12


def test_fit_max(capsys) -> None:
    code, out, _ = run_cli(
        capsys, "capacity", "fit", EXAMPLE / "probe.yaml", QUICKSTART, "--max", "3"
    )
    assert code == 0
    assert out.startswith("3 more")
    assert "Stopped at --max" in out


def run_nodes(capsys, *templates: str, output: str = "text") -> tuple[int, str, str]:
    """``capacity nodes`` of the example's workload on the quickstart with ``templates``."""
    flags = [a for t in templates for a in ("--node-template", EXAMPLE / "templates" / t)]
    return run_cli(
        capsys, "capacity", "nodes", EXAMPLE / "workload", QUICKSTART, *flags, "-o", output
    )


def test_nodes_text(capsys) -> None:
    code, out, err = run_nodes(capsys, "general.yaml", "large.yaml")
    assert code == 0, err
    assert "Workload: 30 pods; 18 pending on the cluster as it is." in out
    assert "Add 6 node(s): 6 × general (cost 6)." in out
    assert "Alternative: 2 × large (cost 7)" in out
    assert "may not be optimal" in out


def test_nodes_json(capsys) -> None:
    code, out, _ = run_nodes(capsys, "large.yaml", output="json")
    assert code == 0
    report = CapacityNodesReport.model_validate(json.loads(out))
    assert report.plan is not None and report.plan.nodes == {"large": 2}
    assert report.plan.pending == 0
    assert len(report.plan.placements) == report.workload_pods == 30


def test_remove_text(capsys) -> None:
    code, out, err = run_cli(capsys, "capacity", "remove", QUICKSTART)
    assert code == 0, err
    assert out.startswith("4 of 12 node(s) can be removed, saving cost 4 of 12; 3 pod(s) move.")
    assert "Removable, in the order tried" in out and "Kept" in out
    assert "NotUnderutilized: cpu utilisation 0.65 is not below 0.5" in out
    # What examples/capacity/README.md says of it.
    _, out, _ = run_cli(capsys, "capacity", "remove", QUICKSTART, "-o", "json")
    report = CapacityRemoveReport.model_validate(json.loads(out))
    assert [r.name for r in report.removable] == ["medium-6", "small-1", "small-2", "small-4"]
    assert report.removable[0].empty
    assert all(len(r.moved) == 1 for r in report.removable[1:])
    kept = {k.name: k for k in report.kept}
    assert {n for n, k in kept.items() if k.reason == "NotUnderutilized"} == {
        "gpu-1",
        "gpu-2",
        "medium-3",
        "small-3",
    }
    assert kept["medium-1"].blocking_pod == "shop/db-1"
    assert kept["medium-2"].blocking_pod == "shop/db-0"
    for node in ("medium-4", "medium-5"):
        assert kept[node].reason == "NoPlaceToMovePods"
        assert "didn't match pod anti-affinity rules" in kept[node].message


def test_remove_json_follows_the_text(capsys) -> None:
    code, out, _ = run_cli(
        capsys,
        "capacity",
        "remove",
        QUICKSTART,
        "-o",
        "json",
        "--scale-down-utilization-threshold",
        "0.3",
    )
    assert code == 0
    report = CapacityRemoveReport.model_validate(json.loads(out))
    assert report.utilization_threshold == 0.3
    # At 0.3 only the cordoned, nearly empty medium-6 is under the threshold.
    assert [r.name for r in report.removable] == ["medium-6"]
    assert report.removable[0].empty
    assert len(report.kept) == report.nodes - 1 == 11


@pytest.mark.parametrize("value", ["1.5", "-0.1", "half"])
def test_remove_threshold_must_be_a_fraction(capsys, value: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["capacity", "remove", str(QUICKSTART), "--scale-down-utilization-threshold", value])
    assert exit_.value.code == 2
    assert "--scale-down-utilization-threshold" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "missing.yaml"], "missing.yaml: no such file or directory"),
        (["fit", QUICKSTART / "workload" / "00-namespaces.yaml"], "expected exactly one Pod"),
        (["fit", EXAMPLE / "probe.yaml", "--config", "nope.yaml"], "nope.yaml"),
        (["remove", "missing/"], "missing: no such file or directory"),
        (
            ["nodes", EXAMPLE / "workload", "--node-template", EXAMPLE / "probe.yaml"],
            "a node template file holds Nodes only",
        ),
    ],
    ids=["missing-file", "no-template", "missing-config", "remove-missing", "template-not-a-node"],
)
def test_errors_are_one_line_and_exit_1(capsys, argv, message) -> None:
    code, _, err = run_cli(capsys, "capacity", *argv)
    assert code == 1
    assert message in err
    assert "Traceback" not in err


def test_max_must_be_positive(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["capacity", "fit", str(EXAMPLE / "probe.yaml"), "--max", "0"])
    assert exit_.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_committed_schemas_are_the_generated_ones() -> None:
    for name, schema in json_schemas().items():
        path = SCHEMAS / name
        generated = json.dumps(schema, indent=2) + "\n"
        if os.environ.get(REGENERATE):
            path.write_text(generated)
        assert path.read_text() == generated, (
            f"{path.relative_to(ROOT)} is stale: run "
            f"`{REGENERATE}=1 pytest tests/capacity/test_cli.py` and commit it"
        )


def test_outputs_validate_against_the_committed_schemas(capsys) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    code, out, _ = run_cli(
        capsys, "capacity", "fit", EXAMPLE / "probe.yaml", QUICKSTART, "-o", "json"
    )
    assert code == 0
    jsonschema.validate(
        json.loads(out), json.loads((SCHEMAS / "capacity-fit.schema.json").read_text())
    )
    code, out, _ = run_nodes(capsys, "general.yaml", output="json")
    assert code == 0
    jsonschema.validate(
        json.loads(out), json.loads((SCHEMAS / "capacity-nodes.schema.json").read_text())
    )
    code, out, _ = run_cli(capsys, "capacity", "remove", QUICKSTART, "-o", "json")
    assert code == 0
    jsonschema.validate(
        json.loads(out), json.loads((SCHEMAS / "capacity-remove.schema.json").read_text())
    )
