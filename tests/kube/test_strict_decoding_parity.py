"""YAML manifests are decoded as kube-apiserver decodes a YAML body: unknown fields in key
order, repeated keys by line, the first type error alone — compared with the real server."""

from __future__ import annotations

import pytest
import yaml

from kubesched.api import parse_manifests
from kubesched.api.manifests import DecodingError
from kubesched.testing.envtest import ControlPlane

pytestmark = pytest.mark.envtest

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default}\n"

CASES = {
    "unknown-fields": POD + "spec:\n  zeta: 1\n  containers: [{name: c, image: i, alpha: 1}]\n",
    "repeated-keys": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: default}\n"
        "spec:\n  replicas: 1\n  replicas: 2\n  selector: {matchLabels: {a: b}}\n"
        "  template:\n    metadata: {labels: {a: b, a: c}}\n"
        "    spec: {containers: [{name: c, image: i}]}\n  extra: 1\n"
    ),
    "repeated-top-level-key": POD + "spec: {containers: [{name: c, image: i}]}\nspec: {x: 1}\n",
    "type-error": POD + "spec:\n  foo: 1\n  containers: [{name: c, image: i, args: [1]}]\n",
    "configmap-number": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\ndata: {a: 1}\n"
    ),
}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_yaml_refusals_read_like_the_servers(control_plane: ControlPlane, text: str) -> None:
    manifest = yaml.safe_load(text)
    code, answer = control_plane.dry_run_create(manifest, yaml_text=text)
    assert code == 400, answer
    with pytest.raises(DecodingError) as exc:
        parse_manifests(text)
    assert exc.value.message == answer["message"]
