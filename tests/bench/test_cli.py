"""``kubesched bench``: text and JSON output, errors without tracebacks."""

from __future__ import annotations

import json

import pytest

import kubesched.cli.bench_cmd as bench_cmd
from kubesched.cli.main import main

from .test_runner import without_preemption

SMALL = ["--nodes", "10", "--pods", "20", "--no-isolate"]


def test_text_table(capsys) -> None:
    assert main(["bench", "basic", "unschedulable", *SMALL, "--breakdown"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("kubesched ") and "CPUs" in lines[0]
    header = lines[1].split()
    assert header[:6] == ["WORKLOAD", "NODES", "PODS", "SCHEDULED", "PENDING", "PODS/S"]
    basic = lines[2].split()
    assert basic[:5] == ["basic", "10", "20", "20", "0"]
    unsched = lines[3].split()
    assert unsched[:5] == ["unschedulable", "10", "20", "18", "2"]
    assert "breakdown of the scheduling time" in out
    assert "FILTER" in out and "SCORE" in out and "BIND" in out


def test_json_report(capsys, tmp_path) -> None:
    saved = tmp_path / "r.json"
    code = main(["bench", "all", *SMALL, "--output", "json", "--repeat", "2", "--save", str(saved)])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert json.loads(saved.read_text()) == data
    env = data["environment"]
    assert {"kubesched_version", "python_version", "cpu_count"} <= set(env)
    names = [r["workload"] for r in data["results"]]
    assert names == list(bench_cmd.WORKLOADS)
    for r in data["results"]:
        assert {
            "workload", "nodes", "pods", "pods_per_second", "p50_ms", "p99_ms",
            "peak_memory_mb", "setup_memory_mb", "setup_s", "schedule_s", "breakdown",
            "scheduled", "pending",
        } <= set(r)  # fmt: skip
        assert r["setup_memory_mb"] >= 0  # tiny sizes may not grow the RSS
        assert (r["nodes"], r["pods"], r["repeat"], len(r["runs"])) == (10, 20, 2, 2)
        assert r["breakdown"] is None
        assert r["pending"] == r["expected_unschedulable"]


def test_percentage_option(capsys) -> None:
    assert main(["bench", *SMALL, "--percentage-of-nodes-to-score", "100", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["options"]["percentage_of_nodes_to_score"] == 100
    assert data["results"][0]["percentage_of_nodes_to_score"] == 100


def test_profile_files_per_workload(tmp_path, capsys) -> None:
    base = tmp_path / "p.prof"
    assert main(["bench", "basic", "topology-spread", *SMALL, "--profile", str(base)]) == 0
    assert (tmp_path / "p-basic.prof").exists()
    assert (tmp_path / "p-topology-spread.prof").exists()
    assert "p-basic.prof" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "nope", *SMALL], "unknown workload 'nope'"),
        (["bench", "preemption", *SMALL], "needs the plugin DefaultPreemption"),
    ],
)
def test_errors(monkeypatch, capsys, argv, message) -> None:
    monkeypatch.setattr(bench_cmd, "_registry", without_preemption)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "argument --nodes: must be at least 1, not 0"),
        (["--nodes", "-3"], "argument --nodes: must be at least 1, not -3"),
        (["--nodes", "many"], "argument --nodes: not a whole number: 'many'"),
        (["--pods", "0"], "argument --pods: must be at least 1, not 0"),
        (["--pods", "-1"], "argument --pods: must be at least 1, not -1"),
        (["--repeat", "0"], "argument --repeat: must be at least 1, not 0"),
        (["--percentage-of-nodes-to-score", "101"], "must be within 0..100, not 101"),
        (["--percentage-of-nodes-to-score", "half"], "not a whole number: 'half'"),
        (["--timeout", "0"], "argument --timeout: must be greater than 0, not 0"),
        (["--timeout", "-5"], "argument --timeout: must be greater than 0, not -5"),
        (["--timeout", "nan"], "argument --timeout: must be greater than 0, not nan"),
        (["--timeout", "soon"], "argument --timeout: not a number: 'soon'"),
        (["--save", "no/such/folder/r.json"], "the folder no/such/folder does not exist"),
    ],
    ids=[
        "nodes-0", "nodes-negative", "nodes-word", "pods-0", "pods-negative", "repeat-0",
        "pct-101", "pct-word", "timeout-0", "timeout-negative", "timeout-nan", "timeout-word",
        "save-no-folder",
    ],
)  # fmt: skip
def test_bad_arguments_are_refused_before_any_run(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_save_refuses_a_folder_and_a_file_as_folder(tmp_path, capsys) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    for path, message in (
        (tmp_path, f"cannot write {tmp_path}: it is a folder"),
        (afile / "r.json", f"cannot write {afile / 'r.json'}: {afile} is not a folder"),
    ):
        with pytest.raises(SystemExit):
            main(["bench", "--save", str(path)])
        assert message in capsys.readouterr().err
