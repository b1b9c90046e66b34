"""Scheduler extenders against the real kube-scheduler v1.36: the same test extender
(an HTTP webhook filtering and scoring by node labels), the same objects, first through
kube-scheduler and then through ``kubesched run`` (in-process) on the real
kube-apiserver; placements and FailedScheduling messages must agree."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.config.types import Extender as ExtenderConfig
from kubesched.extenders.labels import (
    REJECT_LABEL,
    SCORE_LABEL,
    UNSCHEDULABLE_LABEL,
    LabelExtender,
)
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, EnvtestError
from tests.extenders.server import ExtenderServer, extender_server

from .conftest import Api, wait_for

pytestmark = pytest.mark.envtest


def _node(name: str, **labels: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu="4", memory="16Gi", pods=110).labels(labels).manifest()


NODES = [
    _node("a", **{REJECT_LABEL: "no-gpu-driver"}),
    _node("b", **{SCORE_LABEL: "3"}),
    _node("c", **{SCORE_LABEL: "9"}),
    _node("d", **{UNSCHEDULABLE_LABEL: "gpu-busy"}),
]
PODS = [
    # In order, each bound (or found unschedulable) before the next is created.
    ("web", "1"),  # c: the extender's score 9 outweighs the plugins' preferences
    ("train", "3500m"),  # c has 3 CPUs left: b
    ("huge", "3900m"),  # only a and d have room, and the extender fails both
]
ERROR_POD = ("broken", "100m")  # created while the extender answers 500 to filter


def _extenders(url: str) -> dict[str, Any]:
    return {
        "extenders": [
            {
                "urlPrefix": url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "httpTimeout": "5s",
            }
        ]
    }


def _first_failed_scheduling(api: Api, pod: str) -> str:
    def message() -> str | None:
        for e in api.events():
            if e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == pod:
                return e.get("note")
        return None

    return wait_for(message, 30, f"a FailedScheduling event for {pod}")


def _scenario(api: Api, server: ExtenderServer) -> dict[str, Any]:
    """Create the nodes, then the pods one by one; what became of each."""
    server.behaviour.status.clear()
    api.create_many(NODES)
    outcome: dict[str, Any] = {}
    for name, cpu in PODS:
        api.create(make_pod(name).req(cpu=cpu, memory="64Mi").manifest())
        if name == "huge":
            outcome[name] = _first_failed_scheduling(api, name)
        else:
            outcome[name] = wait_for(lambda n=name: api.node_of(n), 30, f"{name} to be bound")
    server.behaviour.status["filter"] = 500
    name, cpu = ERROR_POD
    api.create(make_pod(name).req(cpu=cpu, memory="64Mi").manifest())
    outcome[name] = _first_failed_scheduling(api, name)
    return outcome


@pytest.fixture
def server() -> Any:
    with extender_server(LabelExtender(ExtenderConfig())) as s:
        yield s


def test_placements_and_messages_agree_with_kube_scheduler(
    control_plane: ControlPlane,
    api: Api,
    in_process: Callable[..., Any],
    server: ExtenderServer,
    tmp_path: Path,
) -> None:
    settings = _extenders(server.url)
    try:
        command = control_plane.kube_scheduler_command(tmp_path, settings)
    except EnvtestError as err:
        pytest.skip(str(err))
    with (tmp_path / "kube-scheduler.log").open("w") as log:
        real = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        theirs = _scenario(api, server)
    finally:
        real.terminate()
        real.wait(30)
    real_verbs = set(server.verbs())
    api.clean()
    server.requests.clear()

    ours_runner = in_process(settings)
    try:
        ours = _scenario(api, server)
    finally:
        ours_runner.stop()

    assert theirs["web"] == "c" and theirs["train"] == "b"
    assert "1 no gpu driver" in theirs["huge"] and "1 gpu busy" in theirs["huge"]
    assert theirs["broken"] == f"failed filter with extender at URL {server.url}filter, code 500"
    assert ours == theirs
    assert set(server.verbs()) == real_verbs == {"filter", "prioritize"}


class BindingExtender(LabelExtender):
    """The label extender, binding through the API server as a real binding extender does."""

    def __init__(self, api: Api) -> None:
        super().__init__(ExtenderConfig())
        self.api = api

    def bind(self, args: Any) -> None:
        super().bind(args)
        self.api.client.request(
            "POST",
            f"/api/v1/namespaces/{args.pod_namespace}/pods/{args.pod_name}/binding",
            body={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": args.pod_name, "uid": args.pod_uid},
                "target": {"kind": "Node", "name": args.node},
            },
        )


def test_node_cache_capable_binding_extender_agrees_with_kube_scheduler(
    control_plane: ControlPlane, api: Api, in_process: Callable[..., Any], tmp_path: Path
) -> None:
    nodes = [ExtenderServer.node_of(n) for n in NODES]
    with extender_server(BindingExtender(api), nodes) as server:
        settings = {
            "extenders": [
                {
                    "urlPrefix": server.url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "bindVerb": "bind",
                    "weight": 5,
                    "nodeCacheCapable": True,
                }
            ]
        }
        try:
            command = control_plane.kube_scheduler_command(tmp_path, settings)
        except EnvtestError as err:
            pytest.skip(str(err))

        # The nodes exist before each scheduler starts, so both list them all before they
        # schedule (the request sequences compared below name every node).
        def scenario() -> dict[str, Any]:
            placed = {}
            for name, cpu in PODS[:2]:
                api.create(make_pod(name).req(cpu=cpu, memory="64Mi").manifest())
                placed[name] = wait_for(lambda n=name: api.node_of(n), 30, f"{name} to be bound")
            return placed

        api.create_many(NODES)
        with (tmp_path / "kube-scheduler.log").open("w") as log:
            real = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            theirs = scenario()
        finally:
            real.terminate()
            real.wait(30)
        their_calls = [
            (v, b["Node"] if v == "bind" else sorted(b["NodeNames"])) for v, b in server.requests
        ]
        their_bound = [(b.pod_name, b.node) for b in server.logic.bound]
        api.clean()
        server.requests.clear()
        server.logic.bound.clear()

        api.create_many(NODES)
        ours_runner = in_process(settings)
        try:
            ours = scenario()
        finally:
            ours_runner.stop()
        our_calls = [
            (v, b["Node"] if v == "bind" else sorted(b["NodeNames"])) for v, b in server.requests
        ]

    assert theirs == ours == {"web": "c", "train": "b"}
    assert their_bound == [(b.pod_name, b.node) for b in server.logic.bound]
    assert their_bound == [("web", "c"), ("train", "b")]
    # The same questions, with node names only.
    assert our_calls == their_calls
