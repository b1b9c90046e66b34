"""``kubesched deschedule`` on the worked example, its outputs, schema and errors."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.deschedule import json_schema

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "deschedule"
SCHEMA = ROOT / "docs" / "schema" / "deschedule.schema.json"
REGENERATE = "KUBESCHED_REGENERATE_SCHEMA"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_example_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "deschedule", EXAMPLE / "policy.yaml", EXAMPLE / "cluster.yaml"
    )
    assert code == 0, err
    assert "2 pod(s) evicted, 4 refused" in out
    assert "RemovePodsViolatingNodeTaints" in out and "node-b" in out
    assert "notice" not in err
    assert "LowNodeUtilization: under all of [cpu 20, memory 20, pods 20]: node-b, node-c" in out


def test_example_json_validates_and_says_where_pods_went(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(
        capsys, "deschedule", EXAMPLE / "policy.yaml", EXAMPLE / "cluster.yaml", "-o", "json"
    )
    assert code == 0
    report = json.loads(out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    went = {e["pod"]: e.get("replacementNode") for e in report["evictions"] if e["evicted"]}
    assert went == {"default/api-0": "node-b", "default/web-2": "node-b"}
    refused = [e for e in report["evictions"] if not e["evicted"]]
    assert refused and all("disruption budget" in e["refused"] for e in refused)
    goals = {s["strategy"]: s["goalMet"] for s in report["strategies"]}
    assert goals["RemovePodsViolatingNodeTaints"] is True
    (lnu,) = [s for s in report["strategies"] if s["strategy"] == "LowNodeUtilization"]
    assert lnu["utilization"]["low"] == {"cpu": 20, "memory": 20, "pods": 20}
    assert lnu["utilization"]["overBefore"] == ["node-a"]
    assert lnu["utilization"]["underBefore"] == ["node-b", "node-c"]
    code, out_yaml, _ = run_cli(
        capsys, "deschedule", EXAMPLE / "policy.yaml", EXAMPLE / "cluster.yaml", "-o", "yaml"
    )
    assert yaml.safe_load(out_yaml) == report


def test_committed_schema_is_the_generated_one() -> None:
    generated = json.dumps(json_schema(), indent=2) + "\n"
    if os.environ.get(REGENERATE):
        SCHEMA.write_text(generated)
    assert SCHEMA.read_text() == generated, (
        f"{SCHEMA.relative_to(ROOT)} is stale: run "
        f"`{REGENERATE}=1 pytest tests/deschedule/test_cli.py` and commit it"
    )


BAD = [
    ("missing", None, "no such file"),
    ("not-yaml", "a: [", "not valid YAML"),
    ("wrong-kind", "apiVersion: v1\nkind: Pod\n", "expected apiVersion descheduler/v1alpha2"),
    (
        "unknown-key",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    plugin: {}\n",
        "profiles[0].plugin",
    ),
    (
        "top-level-local-storage",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nevictLocalStoragePods: true\n",
        "set it in DefaultEvictor's args",
    ),
    (
        "duplicate-profile",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n  - name: p\n",
        'profiles[1].name: Duplicate value: "p"',
    ),
    (
        "negative-limit",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nmaxNoOfPodsToEvictTotal: -1\n",
        "maxNoOfPodsToEvictTotal",
    ),
    (
        "unknown-plugin",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    plugins: {balance: {enabled: [Nope]}}\n",
        'profiles[0] "p": plugin "Nope" (in plugins.balance) is not installed',
    ),
    (
        "wrong-extension-point",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    plugins: {balance: {enabled: [PodLifeTime]}}\n",
        'plugin "PodLifeTime" does not extend balance',
    ),
    (
        "bad-args",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    pluginConfig:\n      - name: DefaultEvictor\n        args: {}\n"
        "      - name: LowNodeUtilization\n        args:\n"
        "          thresholds: {cpu: 120}\n          targetThresholds: {cpu: 130}\n"
        "    plugins: {balance: {enabled: [LowNodeUtilization]}}\n",
        "pluginConfig[1].args",
    ),
    (
        "thresholds-over-targets",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    pluginConfig:\n      - name: LowNodeUtilization\n        args:\n"
        "          thresholds: {cpu: 60}\n          targetThresholds: {cpu: 50}\n"
        "    plugins: {balance: {enabled: [LowNodeUtilization]}}\n",
        "thresholds' cpu percentage is greater than targetThresholds'",
    ),
    (
        "unknown-arg",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "  - name: p\n    pluginConfig:\n      - name: PodLifeTime\n        args:\n"
        "          maxPodLifeTimeSecond: 5\n"
        "    plugins: {deschedule: {enabled: [PodLifeTime]}}\n",
        "pluginConfig[0].args.maxPodLifeTimeSecond",
    ),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_policy_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "policy.yaml"
    if text is not None:
        path.write_text(text)
    code, _, err = run_cli(capsys, "deschedule", path, EXAMPLE / "cluster.yaml")
    assert code != 0
    assert str(path) in err and message in err
    assert "Traceback" not in err


def page_data(text: str) -> dict[str, Any]:
    """The data a report page carries (gzip, base64, in its ``kubesched-data`` script)."""
    packed = re.search(r'<script id="kubesched-data"[^>]*>\s*(.*?)\s*</script>', text, re.S)
    assert packed is not None
    return json.loads(gzip.decompress(base64.b64decode(packed.group(1))))


def test_html_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    argv = ["deschedule", EXAMPLE / "policy.yaml", EXAMPLE / "cluster.yaml", "--report", page]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    text = page.read_text()
    parser = HTMLParser()
    parser.feed(text)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    # The simulation report's page, with the deschedule report as data (the JSON's form).
    assert 'id="deschedule"' in text and 'id="cluster"' in text
    data = page_data(text)
    argv = ["deschedule", EXAMPLE / "policy.yaml", EXAMPLE / "cluster.yaml", "-o", "json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert data["deschedule"] == json.loads(out)
    assert "node-b" in data["nodes"]["name"]
    assert any(e["pod"] == "default/api-0" for e in data["deschedule"]["evictions"])


def test_html_report_folder_must_exist(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "deschedule",
                str(EXAMPLE / "policy.yaml"),
                "--report",
                str(tmp_path / "no" / "r.html"),
            ]
        )
    assert exit_.value.code == 2
    assert "does not exist" in capsys.readouterr().err


def test_sort_plugins_are_passed_over_with_a_notice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = yaml.safe_load((EXAMPLE / "policy.yaml").read_text())
    policy["profiles"][0]["plugins"]["sort"] = {"enabled": ["Topology"]}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    code, out, err = run_cli(capsys, "deschedule", path, EXAMPLE / "cluster.yaml", "-o", "json")
    assert code == 0, err
    assert f'notice: {path}: profiles[0] "default": plugins.sort is not modelled' in err
    assert any("plugins.sort is not modelled" in n for n in json.loads(out)["notices"])
