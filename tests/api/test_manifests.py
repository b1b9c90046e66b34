"""Loading manifests: kinds, Lists, multi-document files, directories, stdin, and errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kubesched.api import (
    KINDS,
    Deployment,
    Node,
    Pod,
    PriorityClass,
    RuntimeClass,
    load_manifests,
    parse_manifests,
    parse_object,
    parse_objects,
)
from kubesched.errors import UserInputError

SEED = Path(__file__).resolve().parent.parent / "fixtures" / "k8s-docs"

C = {"name": "c", "image": "busybox"}
"""A valid container, for pods that must pass validation."""


def test_kinds_cover_the_objects_we_read() -> None:
    # The built-in kinds; a plugin's (PodGroup) is added once an earlier test loads one.
    assert {kind for kind, cls in KINDS.items() if cls.__module__.startswith("kubesched.")} == {
        "Pod",
        "Node",
        "Namespace",
        "Service",
        "ReplicaSet",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "ReplicationController",
        "PriorityClass",
        "PodDisruptionBudget",
        "RuntimeClass",
        "Lease",
        "KubeletConfiguration",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        "LimitRange",
        "ResourceQuota",
        "Workload",
    }
    assert all(cls.model_fields["kind"].default == kind for kind, cls in KINDS.items())


SEED_OBJECTS = sorted(p.name for p in SEED.glob("*.yaml") if not p.name.startswith("config-"))


@pytest.mark.parametrize("name", SEED_OBJECTS, ids=SEED_OBJECTS)
def test_every_k8s_docs_fixture_parses(name: str) -> None:
    objs = load_manifests([SEED / name])
    assert len(objs) == 1
    assert objs[0].metadata.name
    assert type(objs[0]) is KINDS[objs[0].kind]


def test_seed_fixture_contents() -> None:
    objs = {
        o.metadata.name: o
        for o in load_manifests(
            [
                SEED / n
                for n in (
                    "pod-with-node-affinity.yaml",
                    "deployment-web-server.yaml",
                    "priorityclass-high-priority-nonpreempting.yaml",
                    "runtimeclass-kata-fc.yaml",
                )
            ]
        )
    }
    pod = objs["with-node-affinity"]
    assert isinstance(pod, Pod)
    na = pod.spec.affinity.node_affinity
    req = na.required_during_scheduling_ignored_during_execution
    assert req.node_selector_terms[0].match_expressions[0].values == [
        "antarctica-east1",
        "antarctica-west1",
    ]
    assert na.preferred_during_scheduling_ignored_during_execution[0].weight == 1
    dep = objs["web-server"]
    assert isinstance(dep, Deployment) and dep.spec.replicas == 3
    aff = dep.spec.template.spec.affinity
    assert aff.pod_affinity.required_during_scheduling_ignored_during_execution[0].topology_key == (
        "kubernetes.io/hostname"
    )
    pc = objs["high-priority-nonpreempting"]
    assert isinstance(pc, PriorityClass) and pc.preemption_policy == "Never"
    assert isinstance(objs["kata-fc"], RuntimeClass)


def test_all_seed_fixtures_load_as_a_directory_except_configs(tmp_path: Path) -> None:
    # A directory each: the fixtures are separate scenarios that reuse object names (one
    # input naming an object twice is refused as AlreadyExists).
    loaded = 0
    for name in SEED_OBJECTS:
        folder = tmp_path / Path(name).stem
        folder.mkdir()
        (folder / name).write_text((SEED / name).read_text())
        loaded += len(load_manifests([folder]))
    assert loaded == len(SEED_OBJECTS)


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = """
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
---
# only a comment
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: ns}
spec: {containers: [{name: c, image: busybox}]}
"""
    objs = parse_manifests(text)
    assert [o.key for o in objs] == ["n1", "ns/p1"]
    assert isinstance(objs[0], Node) and isinstance(objs[1], Pod)


@pytest.mark.parametrize("list_kind", ["List", "PodList", "NodeList"])
def test_list_documents_expand(list_kind: str) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": list_kind,
        "items": [
            {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [C]}},
            {"kind": "Node", "metadata": {"name": "b"}},
        ],
    }
    assert [o.key for o in parse_objects(doc)] == ["default/a", "b"]
    with pytest.raises(UserInputError, match="parse_objects"):
        parse_object(doc)


def test_empty_list_expands_to_nothing() -> None:
    assert parse_objects({"kind": "List", "items": None}) == []


def test_list_item_errors_name_the_item() -> None:
    doc = {
        "kind": "List",
        "items": [
            {"kind": "Pod", "metadata": {"name": "ok"}, "spec": {"containers": [C]}},
            {"kind": "Pod", "spec": {"priority": "high"}},
        ],
    }
    with pytest.raises(UserInputError) as exc:
        parse_objects(doc, source="l.yaml", index=0)
    assert exc.value.obj == "document 1 items[1]"
    assert [p.path for p in exc.value.problems] == ["spec.priority"]


def test_bad_quantity_names_file_object_and_field_path() -> None:
    doc = {
        "kind": "Pod",
        "metadata": {"name": "web-0"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
    }
    with pytest.raises(UserInputError) as exc:
        parse_object(doc, source="pods.yaml", index=2)
    err = exc.value
    assert err.source == "pods.yaml"
    assert err.obj == "document 3 (Pod default/web-0)"
    assert [str(p) for p in err.problems] == [
        "spec.containers[0].resources.requests.cpu: quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    ]
    assert str(err).startswith(
        "pods.yaml: document 3 (Pod default/web-0): invalid object: spec.containers[0]"
    )


def test_nameless_object_is_named_by_document_number() -> None:
    with pytest.raises(UserInputError) as exc:
        parse_object({"kind": "Node", "spec": {"taints": [{"key": 1}]}}, source="f", index=2)
    assert exc.value.obj == "document 3"
    assert exc.value.problems[0].path == "spec.taints[0].key"


def test_several_problems_are_all_reported() -> None:
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  overhead: {cpu: lots}
  containers:
  - resources: {limits: {memory: 1x}}
"""
    with pytest.raises(UserInputError) as exc:
        parse_manifests(text, source="p.yaml")
    assert {p.path for p in exc.value.problems} == {
        "spec.overhead.cpu",
        "spec.containers[0].resources.limits.memory",
    }


def test_a_value_of_the_wrong_type_stops_decoding_as_the_server_does() -> None:
    # kube-apiserver reports Go's first type error alone, before any validation.
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  priority: high
  containers:
  - resources: {limits: {memory: 1x}}
"""
    with pytest.raises(UserInputError) as exc:
        parse_manifests(text, source="p.yaml")
    assert [p.path for p in exc.value.problems] == ["spec.priority"]
    assert str(exc.value) == (
        'p.yaml: document 1 (Pod default/p): Pod in version "v1" cannot be handled as a Pod: '
        "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "s"}},
            'no matches for kind "Widget" in version "v1"',
        ),
        ({"metadata": {"name": "x"}}, "error validating data: apiVersion not set, kind not set"),
        (["a", "b"], "expected a mapping"),
        ("just text", "expected a mapping"),
    ],
    ids=["unknown-kind", "missing-kind", "list-document", "scalar-document"],
)
def test_bad_documents(doc, message: str) -> None:
    with pytest.raises(UserInputError, match="^f.yaml: .*" + message.replace("(", r"\(")[:40]):
        parse_object(doc, source="f.yaml", index=0)


def test_unknown_kind_names_the_object() -> None:
    with pytest.raises(UserInputError) as exc:
        parse_object({"kind": "Widget", "metadata": {"name": "s", "namespace": "x"}})
    assert exc.value.obj == "Widget s"


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: b\nspec: {}\n")
    with pytest.raises(UserInputError) as exc:
        load_manifests([f])
    assert exc.value.source == str(f)
    assert "invalid YAML" in exc.value.message
    assert "line 6" in exc.value.message


def test_json_file_and_json_error(tmp_path: Path) -> None:
    good = tmp_path / "node.json"
    good.write_text('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}')
    assert [o.key for o in load_manifests([good])] == ["n1"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"apiVersion": "v1", "kind": "Node",\n "metadata": }')
    with pytest.raises(UserInputError, match=r"invalid JSON: .*line 2"):
        load_manifests([bad])


def test_directory_is_recursive_sorted_and_filtered(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    (tmp_path / "b" / "c.yml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: c}\n")
    (tmp_path / "b" / "b.json").write_text(
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}'
    )
    (tmp_path / "notes.txt").write_text("apiVersion: v1\nkind: Secret\n")
    (tmp_path / "README.md").write_text("# not a manifest\n")
    assert [o.key for o in load_manifests([tmp_path])] == ["a", "b", "c"]


def test_paths_are_read_in_the_order_given(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: one}\n")
    (tmp_path / "2.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: two}\n")
    objs = load_manifests([str(tmp_path / "2.yaml"), tmp_path / "1.yaml"])
    assert [o.key for o in objs] == ["two", "one"]


def test_missing_path() -> None:
    with pytest.raises(UserInputError, match=r"no-such\.yaml: no such file or directory"):
        load_manifests(["/nonexistent/no-such.yaml"])


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    )
    assert [o.key for o in load_manifests(["-"])] == ["n"]


def test_stdin_errors_name_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO("apiVersion: v1\nkind: Pod\nspec: {priority: x}\n")
    )
    with pytest.raises(UserInputError) as exc:
        load_manifests(["-"])
    assert exc.value.source == "<stdin>"
    assert exc.value.obj == "document 1"


@pytest.mark.parametrize(
    ("doc", "problems"),
    [
        (
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n"
            "  capacity: {storage: lots}\n"
            "  accessModes: [ReadWriteOncePod, Sometimes]\n",
            ["spec.capacity.storage"],
        ),
        (
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n"
            "  capacity: {storage: 1Gi}\n"
            "  accessModes: [ReadWriteOncePod, Sometimes]\n  csi: {driver: d, volumeHandle: h}\n",
            ["spec.accessModes", "spec.accessModes"],
        ),
        (
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n"
            "volumeBindingMode: Later\n",
            ["provisioner", "volumeBindingMode"],
        ),
        (
            "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n}\nspec:\n  drivers:\n"
            "  - {name: d, allocatable: {count: -1}}\n",
            ["spec.drivers[0].nodeID", "spec.drivers[0].allocatable.count"],
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  volumes:\n"
            "  - {name: v, gcePersistentDisk: {pdName: d, readOnly: maybe}}\n",
            ["spec.volumes[0].gcePersistentDisk.readOnly"],
        ),
    ],
    ids=["pv-quantity", "pv-access-modes", "storageclass", "csinode", "pod-volume"],
)
def test_storage_objects_report_field_paths(doc: str, problems: list[str]) -> None:
    with pytest.raises(UserInputError) as excinfo:
        parse_manifests(doc, source="s.yaml")
    assert [p.path for p in excinfo.value.problems] == problems
    assert excinfo.value.source == "s.yaml"


# --- hostile input: bombs, depth, size -------------------------------------------------------

BILLION_LAUGHS = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c, image: i}]\n"
    "  volumes:\n  - name: v\n    ephemeral:\n"
    '      a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"      {chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n"
        for i in range(8)
    )
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BILLION_LAUGHS, "YAML aliases expand a document beyond 1000000 nodes"),
        (
            "apiVersion: v1\nkind: Pod\nspec: " + "[" * 5000 + "]" * 5000 + "\n",
            "exceeded maximum nesting depth",
        ),
        (
            "apiVersion: v1\nkind: Pod\nspec:\n"
            + "".join("  " * (i + 1) + "k:\n" for i in range(2000)),
            "exceeded maximum nesting depth",
        ),
    ],
    ids=["alias-bomb", "deep-flow", "deep-block"],
)
def test_hostile_yaml_is_refused_quickly(text: str, message: str) -> None:
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(UserInputError, match=message) as exc:
        parse_manifests(text, source="evil.yaml")
    took = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert exc.value.source == "evil.yaml"
    assert took < 5 and peak < 64 * 1024 * 1024


def test_deep_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(
        '{"apiVersion": "v1", "kind": "Pod", "spec": ' + "[" * 200_000 + "]" * 200_000 + "}"
    )
    with pytest.raises(UserInputError, match="nested too deeply") as exc:
        load_manifests([path])
    assert exc.value.source == str(path)


def test_huge_file_is_refused_unread(tmp_path: Path) -> None:
    from kubesched.api.manifests import MAX_MANIFEST_BYTES

    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:  # sparse: no disk, nothing to read
        f.truncate(MAX_MANIFEST_BYTES + 1)
    with pytest.raises(UserInputError, match="larger than 256 MiB"):
        load_manifests([path])


def test_aliases_that_do_not_explode_are_fine() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: &l {a: b}}\n"
        "status: {capacity: &c {cpu: '1'}, allocatable: *c}\n"
    )
    (node,) = parse_manifests(text)
    assert node.status.allocatable == node.status.capacity
