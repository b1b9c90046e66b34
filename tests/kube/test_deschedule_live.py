"""``kubesched deschedule --from-cluster`` against a real kube-apiserver: read-only, and the
policy runs on the copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import Api
from .test_snapshot import READ_ONLY_RULES, _grant, _state

pytestmark = pytest.mark.envtest

USER = "deschedule-reader"


@pytest.fixture(scope="module")
def reader(control_plane: ControlPlane) -> Path:
    """A kubeconfig of a user with no permission at all (the test grants what it needs)."""
    return control_plane.add_user(USER)


def _busy_small_node(api: Api) -> None:
    """Nodes "big" (8 cpu) and "small" (2 cpu), each running one pod (1.5 cpu) of the
    ReplicaSet "web"; a finished pod on "small"."""
    api.create_many(
        [
            make_node("big").capacity(cpu="8", memory="16Gi", pods=110).manifest(),
            make_node("small").capacity(cpu="2", memory="4Gi", pods=110).manifest(),
        ]
    )
    template = make_pod("t").labels(app="web").req(cpu="1500m").manifest()
    rs = api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]},
            },
        }
    )
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}
    for i, node in enumerate(("big", "small")):
        pod = make_pod(f"web-{i}").labels(app="web").req(cpu="1500m").node(node).manifest()
        pod["metadata"].pop("uid")
        pod["metadata"]["ownerReferences"] = [{**owner, "uid": rs["metadata"]["uid"]}]
        api.create(pod)
    done = make_pod("done").req(cpu="100m").node("small").manifest()
    done["metadata"].pop("uid")
    created = api.create(done)
    created["status"] = {"phase": "Succeeded"}
    api.client.request("PUT", "/api/v1/namespaces/default/pods/done/status", body=created)


def test_deschedule_from_cluster_moves_a_pod_off_the_busy_node(
    api: Api, reader: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _busy_small_node(api)
    _grant(api, USER, READ_ONLY_RULES)
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "descheduler/v1alpha2",
                "kind": "DeschedulerPolicy",
                "profiles": [
                    {
                        "name": "p",
                        "pluginConfig": [
                            {
                                "name": "LowNodeUtilization",
                                "args": {
                                    "thresholds": {"cpu": 20},
                                    "targetThresholds": {"cpu": 50},
                                },
                            }
                        ],
                        "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
                    }
                ],
            }
        )
    )
    before = _state(api)
    code = main(
        ["deschedule", str(policy), "--from-cluster", "--kubeconfig", str(reader), "-o", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    # "small" runs web-1 at 75 % cpu, "big" web-0 at 18.75 %; the finished pod on "small"
    # holds nothing. web-1 keeps its cpu on "small" while it terminates (its grace period),
    # so its replacement fits "big" only.
    (e,) = report["evictions"]
    assert (e["pod"], e["node"], e["evicted"]) == ("default/web-1", "small", True)
    assert e["replacementNode"] == "big", json.dumps(report)
    (s,) = report["strategies"]
    assert s["goalMet"] is True
    assert s["utilization"]["overBefore"] == ["small"] and s["utilization"]["overAfter"] == []
    assert _state(api) == before  # nothing was written to the cluster
