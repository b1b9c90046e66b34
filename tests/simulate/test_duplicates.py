"""The same object twice in the input is refused as kube-apiserver refuses creating it
again (AlreadyExists), naming both documents, never silently replaced."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from kubesched.api import parse_object
from kubesched.simulate.driver import Simulation
from tests.simulate.test_cli import run_cli

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
NODE_BIG = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    "status: {allocatable: {cpu: '8', memory: 8Gi, pods: '110'}}\n"
)
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p%s}\nspec: {containers: [{name: c, image: i}]}\n"
)
DEPLOY = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n"
    "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
    "    spec: {containers: [{name: c, image: i}]}\n"
)
NODE_LIST = (
    "apiVersion: v1\nkind: List\nitems:\n"
    "- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n"
    "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
)

# id: (files in order, message after "error: ")
DUPLICATES = {
    "node-in-two-files": (
        {"a.yaml": NODE, "b.yaml": NODE_BIG},
        'b.yaml: Node n1: Error from server (AlreadyExists): error when creating "b.yaml": '
        'nodes "n1" already exists (b.yaml document 1 repeats Node n1 of a.yaml document 1)',
    ),
    "deployment-twice-in-one-file": (
        {"a.yaml": NODE + "---\n" + DEPLOY + "---\n" + DEPLOY},
        "a.yaml: Deployment default/web: Error from server (AlreadyExists): error when creating "
        '"a.yaml": deployments.apps "web" already exists (a.yaml document 3 repeats Deployment '
        "default/web of a.yaml document 2)",
    ),
    "list-item-repeats-a-document": (
        {"a.yaml": NODE, "b.yaml": "# nodes\n---\n" + NODE_LIST},
        'nodes "n1" already exists (b.yaml document 1 items[1] repeats Node n1 of a.yaml '
        "document 1)",
    ),
    "explicit-default-namespace-is-the-implicit-one": (
        {
            "a.yaml": NODE
            + "---\n"
            + POD % ""
            + "---\n"
            + (POD % "").replace("{name: p}", "{name: p, namespace: default}")
        },
        'pods "p" already exists (a.yaml document 3 repeats Pod default/p of a.yaml document 2)',
    ),
}


@pytest.mark.parametrize(("files", "message"), DUPLICATES.values(), ids=DUPLICATES.keys())
def test_duplicate_is_refused_naming_both_documents(
    tmp_path: Path, capsys, files: dict[str, str], message: str
) -> None:
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    code, out, err = run_cli(capsys, "simulate", *(str(tmp_path / f) for f in files))
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err.replace(f"{tmp_path}/", ""), err
    assert "Traceback" not in err


def test_duplicate_on_stdin_is_named_as_kubectl_names_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(NODE + "---\n" + NODE))
    code, _, err = run_cli(capsys, "simulate", "-")
    assert code == 1
    assert (
        'error when creating "STDIN": nodes "n1" already exists (<stdin> document 2 repeats '
        "Node n1 of <stdin> document 1)"
    ) in err


# id: (documents) that are distinct objects
DISTINCT = {
    "same-name-other-namespace": [
        POD % "",
        (POD % "").replace("{name: p}", "{name: p, namespace: other}"),
    ],
    "same-name-other-kind": [DEPLOY, DEPLOY.replace("kind: Deployment", "kind: ReplicaSet")],
    "generate-name": [
        (POD % "").replace("{name: p}", "{generateName: p-}"),
        (POD % "").replace("{name: p}", "{generateName: p-}"),
    ],
}


@pytest.mark.parametrize("docs", DISTINCT.values(), ids=DISTINCT.keys())
def test_distinct_objects_are_not_duplicates(tmp_path: Path, capsys, docs: list[str]) -> None:
    (tmp_path / "in.yaml").write_text("---\n".join([NODE_BIG, *docs]))
    code, _, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"))
    assert code == 0, err


def test_the_embedded_cluster_refuses_a_second_create() -> None:
    """Objects handed to the Python API: the second is refused as kube-apiserver refuses it,
    and the first stays."""
    small = parse_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    big = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"size": "big"}},
        }
    )
    sim = Simulation([small, big])
    try:
        assert [str(r) for r in sim.rejections] == ['Node n1: nodes "n1" already exists']
        # The first Node stays (with the labels every kubelet sets), not the second's.
        assert "size" not in sim.cluster.get("Node", None, "n1").metadata.labels
    finally:
        sim.close()
