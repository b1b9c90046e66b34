"""Strict decoding against the recorded kube-apiserver schema: unknown and duplicate fields,
wrong types, apiVersion/kind, and what is accepted.

The messages were checked against the real kube-apiserver v1.36.2 (``fieldValidation=Strict``,
the JSON ones are in ``tests/fixtures/apiserver/invalid-objects.json``; a YAML body's
duplicate keys are compared live in ``tests/kube/test_strict_decoding_parity.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import parse_manifests, parse_object
from kubesched.api.manifests import DecodingError, load_manifests
from kubesched.api.schema import served_kind, server_version, serves_group
from kubesched.errors import UserInputError

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
CONTAINERS = "  containers: [{name: c, image: i}]\n"


def _refusal(text: str) -> DecodingError:
    with pytest.raises(DecodingError) as exc:
        parse_manifests(text, source="f.yaml")
    return exc.value


def test_the_schema_is_kube_apiservers() -> None:
    assert server_version().startswith("v1.36.")
    pod = served_kind("v1", "Pod")
    assert pod is not None and pod.namespaced and pod.resource == "pods"
    node = served_kind("v1", "Node")
    assert node is not None and not node.namespaced
    assert served_kind("policy/v1beta1", "PodDisruptionBudget") is None
    assert serves_group("policy") and serves_group("") and not serves_group("example.com")


# id: (YAML text, the server's message after "Pod in version "v1" cannot be handled as a Pod: ")
REFUSED = {
    "unknown-fields-sorted-by-key": (
        POD + "spec:\n  nodeSelectr: {a: b}\n  foo: 1\n  containers: [{name: c, image: i, x: 2}]\n",
        'strict decoding error: unknown field "spec.containers[0].x", unknown field "spec.foo", '
        'unknown field "spec.nodeSelectr"',
    ),
    "unknown-top-level-and-metadata": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x, lables: {a: b}}\nstatus2: {}\nspec:\n"
        + CONTAINERS,
        'strict decoding error: unknown field "metadata.lables", unknown field "status2"',
    ),
    "duplicate-keys": (
        POD + "spec:\n  priority: 1\n  priority: 2\n" + CONTAINERS,
        "strict decoding error: yaml: unmarshal errors:\n"
        '  line 6: key "priority" already set in map',
    ),
    "duplicate-key-named-by-the-line-of-its-value": (
        POD + "spec:\n  containers: []\n  containers:\n  - {name: c, image: i}\n",
        "strict decoding error: yaml: unmarshal errors:\n"
        '  line 7: key "containers" already set in map',
    ),
    "duplicate-keys-then-unknown-fields": (
        POD + "spec:\n  priority: 1\n  priority: 2\n  foo: 1\n" + CONTAINERS,
        'strict decoding error: yaml: unmarshal errors:\n  line 6: key "priority" already set '
        'in map, unknown field "spec.foo"',
    ),
    "string-for-int32": (
        POD + "spec:\n  containers: [{name: c, image: i, ports: [{containerPort: '80'}]}]\n",
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports."
        "containerPort of type int32",
    ),
    "fraction-for-int32": (
        POD + "spec:\n  containers: [{name: c, image: i, ports: [{containerPort: 1.5}]}]\n",
        "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers."
        "ports.containerPort of type int32",
    ),
    "int32-overflow": (
        POD + "spec:\n  containers: [{name: c, image: i, ports: [{containerPort: 3000000000}]}]\n",
        "json: cannot unmarshal number 3000000000 into Go struct field ContainerPort.spec."
        "containers.ports.containerPort of type int32",
    ),
    "list-for-map": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: [a]}\nspec:\n" + CONTAINERS,
        "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type "
        "map[string]string",
    ),
    "number-in-string-list": (
        POD + "spec:\n  containers: [{name: c, image: i, args: [1]}]\n",
        "json: cannot unmarshal number into Go struct field Container.spec.containers.args of "
        "type string",
    ),
    "string-for-struct": (
        POD + "spec:\n  affinity: x\n" + CONTAINERS,
        "json: cannot unmarshal string into Go struct field PodSpec.spec.affinity of type "
        "v1.Affinity",
    ),
    "string-for-bool": (
        POD + "spec:\n  hostNetwork: 'yes'\n" + CONTAINERS,
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
    ),
    "type-error-wins-over-unknown-fields": (
        POD + "spec:\n  foo: 1\n  containers: 'abc'\n",
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type "
        "[]v1.Container",
    ),
}


@pytest.mark.parametrize(("text", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_refused_in_the_servers_words(text: str, message: str) -> None:
    err = _refusal(text)
    assert err.message == 'Pod in version "v1" cannot be handled as a Pod: ' + message
    assert str(err) == f"f.yaml: document 1 (Pod default/x): {err.message}"
    assert err.problems  # each field is a problem with its path


def test_problems_carry_the_field_paths() -> None:
    err = _refusal(POD + "spec:\n  nodeSelectr: {a: b}\n  containers: [{name: c, bogus: 1}]\n")
    assert [p.path for p in err.problems] == ["spec.containers[0].bogus", "spec.nodeSelectr"]
    err = _refusal(POD + "spec:\n  containers: [{name: c, ports: [{containerPort: x}]}]\n")
    assert [p.path for p in err.problems] == ["spec.containers[0].ports[0].containerPort"]


def test_json_lists_fields_in_document_order_and_duplicates_by_path(tmp_path: Path) -> None:
    f = tmp_path / "p.json"
    f.write_text(
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "zzz": 1, "aaa": 2},'
        ' "spec": {"nodeSelector": {"a": "b", "a": "c"}, "containers": [{"name": "c"}]},'
        ' "beta": 1}'
    )
    with pytest.raises(DecodingError) as exc:
        load_manifests([f])
    assert exc.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "metadata.zzz", unknown field "metadata.aaa", '
        'duplicate field "spec.nodeSelector.a", unknown field "beta"'
    )


def test_duplicate_keys_are_named_by_their_line_in_the_file() -> None:
    text = POD + "spec:\n" + CONTAINERS + "---\n" + POD.replace("x", "y") + "spec:\n"
    text += "  containers: [{name: c, image: i, name: d}]\n"
    err = _refusal(text)
    assert err.obj == "document 2 (Pod default/y)"
    assert err.message.endswith('line 11: key "name" already set in map')
    assert err.path == "spec.containers[0].name"


def test_a_merge_key_is_not_a_duplicate() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n"
        "  labels: &l {a: b}\n  annotations:\n    <<: *l\n    c: d\n"
    )
    (node,) = parse_manifests(text)
    assert node.metadata.annotations == {"a": "b", "c": "d"}


# id: (YAML text, the message)
KIND_REFUSED = {
    "no-api-version": (
        "kind: Pod\nmetadata: {name: x}\n",
        "error validating data: apiVersion not set",
    ),
    "no-kind": ("apiVersion: v1\nmetadata: {name: x}\n", "error validating data: kind not set"),
    "unserved-version": (
        "apiVersion: v2\nkind: Pod\nmetadata: {name: x}\n",
        'no matches for kind "Pod" in version "v2"',
    ),
    "kind-of-another-group": (
        "apiVersion: apps/v1\nkind: Pod\nmetadata: {name: x}\n",
        'no matches for kind "Pod" in version "apps/v1"',
    ),
    "removed-pdb-version": (
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n",
        'no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"',
    ),
    "removed-storageclass-version": (
        "apiVersion: storage.k8s.io/v1beta1\nkind: StorageClass\nmetadata: {name: x}\n",
        'no matches for kind "StorageClass" in version "storage.k8s.io/v1beta1"',
    ),
    "removed-group": (
        "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata: {name: x}\n",
        'no matches for kind "DaemonSet" in version "extensions/v1beta1"',
    ),
}


@pytest.mark.parametrize(("text", "message"), KIND_REFUSED.values(), ids=KIND_REFUSED.keys())
def test_api_version_and_kind_are_checked(text: str, message: str) -> None:
    assert _refusal(text).message == message


def test_a_program_may_leave_out_the_api_version() -> None:
    spec = {"containers": [{"name": "c", "image": "i"}]}
    pod = parse_object({"kind": "Pod", "metadata": {"name": "x"}, "spec": spec})
    assert pod.kind == "Pod"
    with pytest.raises(DecodingError, match=r'unknown field "spec\.nodeSelectr"'):
        parse_object({"kind": "Pod", "metadata": {"name": "x"}, "spec": {"nodeSelectr": {}}})


# Fields no model reads, which the API has: accepted.
ACCEPTED = {
    "probes-env-mounts-security": (
        "  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}\n"
        "  volumes: [{name: v, emptyDir: {sizeLimit: 1Gi}}, {name: s, secret: {secretName: s}}]\n"
        "  containers:\n  - name: c\n    image: i\n    imagePullPolicy: IfNotPresent\n"
        "    env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n"
        "    livenessProbe: {httpGet: {path: /, port: http, scheme: HTTPS}}\n"
        "    lifecycle: {preStop: {exec: {command: [sh]}}}\n"
        "    volumeMounts: [{name: v, mountPath: /v}]\n"
        "    securityContext: {capabilities: {drop: [ALL]}, procMount: Default}\n"
        "    ports: [{name: http, containerPort: 80}]\n"
    ),
    "nulls": "  nodeSelector: null\n  containers: [{name: c, image: i, env: null}]\n",
    "int-or-string": (
        "  containers:\n  - {name: c, image: i, readinessProbe: {tcpSocket: {port: web}}}\n"
    ),
}


@pytest.mark.parametrize("spec", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_fields_the_api_has_are_accepted(spec: str) -> None:
    (pod,) = parse_manifests(POD + "spec:\n" + spec)
    assert pod.kind == "Pod"


# id: (pod spec YAML, the field, the server's detail)
ENUMS = {
    "dns-policy": (
        "  dnsPolicy: Sometimes\n" + CONTAINERS,
        "spec.dnsPolicy",
        'Unsupported value: "Sometimes": supported values: "ClusterFirstWithHostNet", '
        '"ClusterFirst", "Default", "None"',
    ),
    "image-pull-policy": (
        "  containers: [{name: c, image: i, imagePullPolicy: Whenever}]\n",
        "spec.containers[0].imagePullPolicy",
        'Unsupported value: "Whenever": supported values: "Always", "IfNotPresent", "Never"',
    ),
    "probe-scheme": (
        "  containers: [{name: c, image: i, startupProbe: {httpGet: {port: 1, scheme: FTP}}}]\n",
        "spec.containers[0].startupProbe.httpGet.scheme",
        'Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
    ),
    "os-name": (
        "  os: {name: plan9}\n" + CONTAINERS,
        "spec.os",
        'Unsupported value: "plan9": supported values: "linux", "windows"',
    ),
}


@pytest.mark.parametrize(("spec", "path", "detail"), ENUMS.values(), ids=ENUMS.keys())
def test_enumerations_of_unmodelled_fields_are_validated(spec: str, path: str, detail: str) -> None:
    with pytest.raises(UserInputError) as exc:
        parse_manifests(POD + "spec:\n" + spec, source="f.yaml")
    assert exc.value.message == 'Pod "x" is invalid'
    assert [(p.path, p.message) for p in exc.value.problems] == [(path, detail)]


def test_enumerations_are_validated_in_templates_with_their_path() -> None:
    text = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n"
        "  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
        "          restartPolicy: Never\n          dnsPolicy: X\n"
        "          containers: [{name: c, image: i}]\n"
    )
    with pytest.raises(UserInputError) as exc:
        parse_manifests(text)
    assert exc.value.message == 'CronJob.batch "c" is invalid'
    assert exc.value.path == "spec.jobTemplate.spec.template.spec.dnsPolicy"


@pytest.mark.parametrize(
    "source",
    [
        "azureFile: {secretName: s, shareName: x}",
        "portworxVolume: {volumeID: v}",
        "storageos: {volumeName: v}",
        "vsphereVolume: {volumePath: /p}",
        "cephfs: {monitors: [m]}",
        "fc: {wwids: [w]}",
    ],
    ids=["azureFile", "portworxVolume", "storageos", "vsphereVolume", "cephfs", "fc"],
)
def test_persistent_volumes_with_any_in_tree_source(source: str) -> None:
    text = (
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec:\n"
        f"  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteOnce]\n  {source}\n"
    )
    (pv,) = parse_manifests(text)
    assert pv.kind == "PersistentVolume"
    with pytest.raises(UserInputError) as exc:
        parse_manifests(text + "  nfs: {server: s, path: /p}\n")
    assert exc.value.problems[0].message == "Forbidden: may not specify more than 1 volume type"
