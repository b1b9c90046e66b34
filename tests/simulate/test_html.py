"""The HTML report's data and page, without a browser (the browser tests are in
test_html_browser.py)."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.errors import UserInputError
from kubesched.simulate import DETAIL_SUMMARY, Simulation, build_report, simulate
from kubesched.simulate.html import (
    MAX_SCORE_ROWS,
    StoryCollector,
    html_report_data,
    pending_reasons,
    render_html,
    write_html_report,
)

from .conftest import without_notices


def page_data(page: str) -> dict:
    """The data a page carries (what its script unpacks)."""
    m = re.search(r'<script id="kubesched-data" type="application/octet-stream">\s*(\S+)\s*<', page)
    assert m is not None
    return json.loads(gzip.decompress(base64.b64decode(m[1])))


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], []),
        (
            [
                "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient "
                "cpu. preemption: 0/4 nodes are available: 4 Preemption is not helpful for "
                "scheduling.."
            ],
            [
                {"reason": "Insufficient cpu", "pods": 1, "nodes": 3},
                {"reason": "node(s) had untolerated taint(s)", "pods": 1, "nodes": 1},
            ],
        ),
        (
            [
                "0/3 nodes are available: 3 Insufficient cpu.",
                "0/3 nodes are available: 2 Insufficient cpu, 1 Insufficient memory.",
            ],
            [
                {"reason": "Insufficient cpu", "pods": 2, "nodes": 5},
                {"reason": "Insufficient memory", "pods": 1, "nodes": 1},
            ],
        ),
        (
            ['no profile has schedulerName "x"; the pod is left alone', ""],
            [
                {"reason": "(no message)", "pods": 1, "nodes": 0},
                {
                    "reason": 'no profile has schedulerName "x"; the pod is left alone',
                    "pods": 1,
                    "nodes": 0,
                },
            ],
        ),
    ],
    ids=["none", "upstream-message-with-preemption", "counts-add-up", "other-shapes-whole"],
)
def test_pending_reasons(messages: list[str], expected: list[dict]) -> None:
    assert pending_reasons(messages) == expected


def test_data_follows_the_report(example_objects: list) -> None:
    run = simulate(example_objects, seed=1)
    report = build_report(run, objects=example_objects)
    data = html_report_data(run, objects=example_objects)
    pods, strings = data["pods"], data["strings"]
    keys = [
        f"{strings[ns]}/{name}" for ns, name in zip(pods["namespace"], pods["name"], strict=True)
    ]
    assert keys == [p.key for p in report.pods]
    assert [strings[r] for r in pods["result"]] == [p.result for p in report.pods]
    assert data["nodes"]["name"] == [n.name for n in report.nodes]
    assert "nvidia.com/gpu" in data["nodes"]["resources"]
    gpu = data["nodes"]["name"].index("gpu-b2")
    assert data["nodes"]["taints"][gpu] == ["dedicated=gpu:NoSchedule"]
    assert data["nodes"]["allocatable"]["nvidia.com/gpu"][gpu] == 2

    # The chosen node and the best scores are the JSON report's.
    i = keys.index("default/batch")
    story = data["stories"][str(i)]
    batch = report.pod("default/batch")
    assert pods["node"][i] == data["nodes"]["name"].index(batch.node)
    rows = story["scores"]["rows"]
    assert [(r["node"], r["total"]) for r in rows] == [(s.node, s.total) for s in batch.scores]
    first = batch.scores[0].plugins
    assert rows[0]["raw"] == [p.raw for p in first]
    assert rows[0]["normalized"] == [p.normalized for p in first]
    assert [p["weight"] for p in story["scores"]["plugins"]] == [p.weight for p in first]
    # Filter verdicts grouped by reason cover every rejected node once.
    assert sum(g["count"] for g in story["filters"]) == len(batch.filters)
    assert story["feasible"]["count"] == len(batch.scores)
    assert story["history"] == [h.model_dump(by_alias=True) for h in batch.history]
    assert data["meta"]["explainedPods"] == sum(1 for p in report.pods if p.history)


def test_summary_run_with_collector_explains_like_a_full_run(example_objects: list) -> None:
    full_run = simulate(example_objects, seed=1)
    sim = Simulation(example_objects, seed=1, detail=DETAIL_SUMMARY)
    collector = StoryCollector(sim)
    summary_run = sim.run()
    # The simulation's own records kept nothing, as --detail summary promises.
    assert all(r.diagnosis is None for rs in summary_run.attempts.values() for r in rs)
    full = html_report_data(full_run)
    condensed = html_report_data(summary_run, stories=collector)
    assert condensed["stories"] == full["stories"]
    assert condensed["meta"]["explainedPods"] == full["meta"]["explainedPods"] > 0
    # Without the collector a summary run's stories have attempts only.
    bare = html_report_data(summary_run)
    assert bare["meta"]["detail"] == "summary" and bare["meta"]["explainedPods"] == 0
    assert all(set(s) <= {"history", "preemption"} for s in bare["stories"].values())


def test_explained_pods_are_bounded(example_objects: list) -> None:
    run = simulate(example_objects, seed=1)
    data = html_report_data(run, max_explained=2, explain=["default/batch"])
    names = data["pods"]["name"]
    explained = {names[int(i)] for i, s in data["stories"].items() if "filters" in s}
    # The pod named first, then the pending pods; the rest keep their attempts only.
    assert explained == {"batch", "too-big"}
    assert all("history" in s for s in data["stories"].values())
    assert data["meta"]["explainedPods"] == 2


def test_scores_keep_the_best_and_the_chosen_node(tmp_path: Path) -> None:
    nodes = "\n---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i:02d}}}\n"
        f"status: {{allocatable: {{cpu: '{4 + i}', memory: 8Gi, pods: '110'}}}}"
        for i in range(MAX_SCORE_ROWS + 5)
    )
    (tmp_path / "c.yaml").write_text(
        nodes + "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: '1'}}}]}\n"
    )
    from kubesched.api import load_manifests

    run = simulate(load_manifests([tmp_path]))
    scores = html_report_data(run)["stories"]["0"]["scores"]
    assert scores["feasible"] == MAX_SCORE_ROWS + 5
    rows = scores["rows"]
    assert len(rows) == MAX_SCORE_ROWS
    assert [r["total"] for r in rows] == sorted((r["total"] for r in rows), reverse=True)
    assert rows[0]["rank"] == 1
    assert run.cluster.get("Pod", "default", "p").spec.node_name in {r["node"] for r in rows}


def test_page_is_self_contained(example_objects: list) -> None:
    run = simulate(example_objects, seed=1)
    data = html_report_data(run)
    page = render_html(data, title="a <b> title")
    assert page_data(page) == json.loads(json.dumps(data))
    assert "a &lt;b&gt; title" in page
    assert page.count("</script>") == 2  # the data and the script, each closed once
    # Nothing refers to another file or host: no src/href but fragments.
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # The same run gives the same bytes (gzip without a timestamp).
    assert render_html(data, title="a <b> title") == page


def test_absent_report_sections_are_null(example_objects: list) -> None:
    run = simulate(example_objects, seed=1)
    data = html_report_data(run)
    assert data["timeline"] == [] and data["timelineSteps"] is None
    assert data["bindings"] and data["bindings"] == sorted(data["bindings"])


def test_preemption_in_the_data(preemption_objects: list) -> None:
    run = simulate(preemption_objects)
    data = html_report_data(run)
    names = data["pods"]["name"]
    urgent = data["stories"][str(names.index("urgent"))]
    assert urgent["preemption"]["victims"] and urgent["preemption"]["chosen"] == "solo"
    assert urgent["preemption"]["decidedBy"]
    assert {e["reason"] for e in data["timeline"]} == {"Preempted"}
    assert len(data["timeline"]) == len(urgent["preemption"]["victims"])


def test_cli_writes_the_report(example_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    code = main(["simulate", str(example_dir), "--seed", "1", "--report", str(out), "-o", "json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)  # the usual output is unchanged
    data = page_data(out.read_text())
    assert data["pods"]["name"] == [p["name"] for p in report["pods"]]
    assert data["meta"]["detail"] == "full"


def test_cli_summary_detail_still_explains(example_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    argv = ["simulate", str(example_dir), "--detail", "summary", "--report", str(out)]
    assert main(argv) == 0
    data = page_data(out.read_text())
    assert data["meta"]["explainedPods"] > 0
    assert any("scores" in s for s in data["stories"].values())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # A folder that exists but takes no new file (a missing one is refused up front).
        (["--report", "/proc/r.html"], "cannot write the report"),
        (["--report", "{tmp}/r.html", "--explain", "default/ghost"], "no pod default/ghost"),
    ],
    ids=["unwritable", "unknown-explained-pod"],
)
def test_cli_errors(example_dir: Path, tmp_path: Path, capsys, extra: list, message: str) -> None:
    argv = ["simulate", str(example_dir), *[a.replace("{tmp}", str(tmp_path)) for a in extra]]
    assert main(argv) == 1
    err = without_notices(capsys.readouterr().err)
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_python_api(example_objects: list, tmp_path: Path) -> None:
    run = simulate(example_objects, seed=1)
    path = write_html_report(run, tmp_path / "r.html", objects=example_objects, title="T")
    assert path.read_text().count("<title>T</title>") == 1
    with pytest.raises(UserInputError, match="no pod default/ghost"):
        html_report_data(run, explain=["default/ghost"])
