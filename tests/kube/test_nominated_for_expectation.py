"""NominatedNodeNameForExpectation and ClearingNominatedNodeNameAfterBinding on a real
cluster: ``status.nominatedNodeName`` names the chosen node while PreBind waits, and is gone
once the pod is bound, for the real kube-scheduler and for ``kubesched run`` alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.envtest import ControlPlane

from .conftest import Api, kube_scheduler_running, kubesched_running, wait_for
from .test_storage import (
    claim,
    local_pv,
    nodes,
    pod_with_claim,
    pv_controller,  # noqa: F401  (a fixture storage_api uses)
    storage_api,  # noqa: F401  (a fixture: the claims and volumes deleted after a test)
    storage_class,
    wait_for_selected_node,
)

pytestmark = pytest.mark.envtest

SCHEDULERS = ["kube-scheduler", "kubesched"]


@pytest.fixture
def scheduler(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    tmp_path: Path,
) -> Callable[[bool], AbstractContextManager[None]]:
    """Start the scheduler under test with NominatedNodeNameForExpectation on or off."""

    @contextmanager
    def running(gate: bool) -> Iterator[None]:
        flag = f"--feature-gates=NominatedNodeNameForExpectation={str(gate).lower()}"
        if request.param == "kube-scheduler":
            with kube_scheduler_running(control_plane, tmp_path, args=(flag,)):
                yield
        else:
            with kubesched_running(control_plane, flag.split("=", 1)[1], tmp_path / "kubesched"):
                yield

    return running


def status_of(api: Api, name: str) -> dict[str, Any]:
    return (api.pod(name) or {}).get("status", {})


@pytest.mark.usefixtures("storage_api")
@pytest.mark.parametrize("scheduler", SCHEDULERS, indirect=True)
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_a_pod_waiting_in_prebind_is_nominated_to_its_chosen_node(
    api: Api, scheduler: Callable[[bool], AbstractContextManager[None]], gate: bool
) -> None:
    """A claim no provisioner serves keeps VolumeBinding's PreBind waiting."""
    nodes(api, 2)
    api.create(storage_class("csi", "WaitForFirstConsumer", provisioner="csi.example.com"))
    api.create(claim("data", "csi"))
    with scheduler(gate):
        api.create(pod_with_claim("app", "data"))
        selected = wait_for_selected_node(api, "data")
        if gate:
            nominated = wait_for(
                lambda: status_of(api, "app").get("nominatedNodeName"), 10, "the nomination"
            )
            assert nominated == selected
        else:
            assert "nominatedNodeName" not in status_of(api, "app")
        assert api.node_of("app") is None


@pytest.mark.usefixtures("storage_api")
@pytest.mark.parametrize("scheduler", SCHEDULERS, indirect=True)
def test_the_nomination_is_cleared_when_the_pod_binds(
    api: Api, scheduler: Callable[[bool], AbstractContextManager[None]]
) -> None:
    nodes(api, 2)
    api.create(storage_class("local", "WaitForFirstConsumer"))
    api.create(local_pv("pv-n1", "n1", "local"))
    api.create(claim("data", "local"))
    with scheduler(True):
        api.create(pod_with_claim("app", "data"))
        assert wait_for(lambda: api.node_of("app"), 30, "the pod to be bound") == "n1"
        assert "nominatedNodeName" not in status_of(api, "app")
